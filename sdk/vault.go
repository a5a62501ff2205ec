package sdk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Placeholders look like "[[PII_EMAIL_3f9a1c2b]]": a label derived from the
// detector ID and eight hex digits of an HMAC keyed with a secret drawn for
// the exchange. They cannot be predicted without the secret, and the vault
// of an exchange restores only its own.
const (
	placeholderOpen  = "[["
	placeholderClose = "]]"
	placeholderHex   = 8
	// maxLabel bounds the label so that the hold-back window of a stream is
	// bounded too.
	maxLabel = 40
	// maxPlaceholder is the longest placeholder: the hold-back window.
	maxPlaceholder = len(placeholderOpen) + maxLabel + 1 + placeholderHex + len(placeholderClose)
)

// vault maps this exchange's placeholders to the values they replace. It is
// used by one exchange, from one goroutine at a time.
type vault struct {
	secret []byte
	byKey  map[string]string // detector + "\x00" + value -> placeholder
	values map[string]string // placeholder -> value
	tags   map[string]string // keyed tag (the hex digits) -> placeholder
	order  []string
}

func newVault(secret []byte) *vault {
	return &vault{secret: secret, byKey: map[string]string{}, values: map[string]string{}, tags: map[string]string{}}
}

// label turns a detector ID into a placeholder label: "pii.email" ->
// "PII_EMAIL".
func label(detector string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(detector) {
		switch {
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= maxLabel {
			break
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		s = "X" + s
	}
	if len(s) > maxLabel {
		s = s[:maxLabel]
	}
	return s
}

// placeholder returns the placeholder of value found by detector, minting
// it on first use. The same value always gets the same placeholder within
// the exchange; two values never share one.
func (v *vault) placeholder(detector, value string) string {
	key := detector + "\x00" + value
	if p, ok := v.byKey[key]; ok {
		return p
	}
	lab := label(detector)
	for n := 0; ; n++ {
		m := hmac.New(sha256.New, v.secret)
		m.Write([]byte(key))
		if n > 0 {
			m.Write([]byte(strconv.Itoa(n)))
		}
		tag := hex.EncodeToString(m.Sum(nil))[:placeholderHex]
		p := placeholderOpen + lab + "_" + tag + placeholderClose
		// Tags are unique within the exchange, so that a tag alone names
		// one of its placeholders (see restore).
		if _, taken := v.tags[tag]; !taken {
			v.byKey[key] = p
			v.values[p] = value
			v.tags[tag] = p
			v.order = append(v.order, p)
			return p
		}
	}
}

// parsePlaceholder reports whether s starts with a complete
// placeholder-shaped token and returns its length.
func parsePlaceholder(s string) (int, bool) {
	if !strings.HasPrefix(s, placeholderOpen) {
		return 0, false
	}
	i := len(placeholderOpen)
	start := i
	for i < len(s) && i-start <= maxLabel+1+placeholderHex {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 'a' && c <= 'f' {
			i++
			continue
		}
		break
	}
	body := s[start:i]
	if !strings.HasPrefix(s[i:], placeholderClose) || len(body) < placeholderHex+2 {
		return 0, false
	}
	u := len(body) - placeholderHex - 1
	if body[u] != '_' || body[0] < 'A' || body[0] > 'Z' {
		return 0, false
	}
	for _, c := range body[:u] {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return 0, false
		}
	}
	for _, c := range body[u+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return 0, false
		}
	}
	return i + len(placeholderClose), true
}

// couldStart reports whether s (a tail of text) could be the beginning of a
// placeholder that the next piece of text completes.
func couldStart(s string) bool {
	if len(s) == 0 || len(s) >= maxPlaceholder {
		return false
	}
	if s == "[" {
		return true
	}
	if !strings.HasPrefix(s, placeholderOpen) {
		return false
	}
	for i := len(placeholderOpen); i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 'a' && c <= 'f' || c == ']' && i == len(s)-1) {
			return false
		}
	}
	return true
}

// holdBack returns the length of the tail of s that must wait for more text
// because it could be the start of a placeholder.
func holdBack(s string) int {
	from := max(0, len(s)-maxPlaceholder)
	for i := len(s) - 1; i >= from; i-- {
		if s[i] == '[' && couldStart(s[i:]) {
			// Prefer the earliest start ("[[" over its second '[').
			if i > 0 && s[i-1] == '[' && couldStart(s[i-1:]) {
				return len(s) - (i - 1)
			}
			return len(s) - i
		}
	}
	return 0
}

// restoreResult is what restoring a text found.
type restoreResult struct {
	text     string
	restored int
	mangled  int            // placeholders of this exchange left in place (spliced tags)
	foreign  []foreignToken // placeholder-shaped tokens not of this exchange
}

type foreignToken struct {
	start, end int // in the restored text
	label      string
}

// owner tells who minted a placeholder-shaped token.
type owner int

const (
	ownerForeign owner = iota // not minted by this exchange
	ownerExact                // one of this exchange's placeholders, intact
	ownerTag                  // this exchange's tag under a mangled label
	ownerSpliced              // a tag spliced from two of this exchange's tags
)

// whose decides whether tok, a complete placeholder-shaped token, is this
// exchange's. The keyed tag is the placeholder's identity: the label is
// cosmetic and a model may mangle it ("[[PIPII_PHONE_3f9a1c2b]]": a prefix
// duplicated; "[[II_PHONE_…]]": cut), so a token carrying a tag minted here
// is ours and names exactly one value (tags are unique per exchange). A
// model that quotes its context in pieces may also splice the head of one
// of our tags to the tail of another: ours too, but naming no value, it is
// left in place. Only a tag that is neither is foreign; the chance that a
// tag minted elsewhere passes as a splice of this exchange's n tags is at
// most 7·n²/16⁸ (under 2·10⁻⁷ for 10 placeholders), and a tag minted
// elsewhere can never be restored here.
func (v *vault) whose(tok string) (owner, string) {
	if _, ok := v.values[tok]; ok {
		return ownerExact, tok
	}
	n := len(tok) - len(placeholderClose)
	tag := tok[n-placeholderHex : n]
	if p, ok := v.tags[tag]; ok {
		return ownerTag, p
	}
	for k := 1; k < placeholderHex; k++ {
		head, tail := false, false
		for t := range v.tags {
			head = head || t[:k] == tag[:k]
			tail = tail || t[k:] == tag[k:]
			if head && tail {
				return ownerSpliced, ""
			}
		}
	}
	return ownerForeign, ""
}

// restore replaces this exchange's placeholders in s by their values (also
// under a mangled label, see whose). When jsonText is true, s is itself
// JSON (tool arguments) and values are inserted JSON-string escaped.
// Placeholder-shaped tokens that this vault did not mint are left in place
// and reported.
func (v *vault) restore(s string, jsonText bool) restoreResult {
	res := restoreResult{text: s}
	if !strings.Contains(s, placeholderOpen) {
		return res
	}
	var b strings.Builder
	b.Grow(len(s) + 64)
	last := 0
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], placeholderOpen)
		if j < 0 {
			break
		}
		i += j
		n, ok := parsePlaceholder(s[i:])
		if !ok {
			i++
			continue
		}
		tok := s[i : i+n]
		who, p := v.whose(tok)
		if who == ownerSpliced {
			res.mangled++
			i += n
			continue
		}
		b.WriteString(s[last:i])
		if who != ownerForeign {
			val := v.values[p]
			if jsonText {
				val = jsonEscape(val)
			}
			b.WriteString(val)
			res.restored++
		} else {
			start := b.Len()
			b.WriteString(tok)
			lab := tok[len(placeholderOpen) : n-len(placeholderClose)-placeholderHex-1]
			res.foreign = append(res.foreign, foreignToken{start: start, end: b.Len(), label: lab})
		}
		i += n
		last = i
	}
	if last == 0 {
		return res
	}
	b.WriteString(s[last:])
	res.text = b.String()
	return res
}

// jsonEscape escapes s for the inside of a JSON string.
func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == utf8.RuneError:
			b.WriteString(`\u`)
			h := strconv.FormatInt(int64(r), 16)
			b.WriteString(strings.Repeat("0", 4-len(h)) + h)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

package sdk

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"slices"
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

// Vault maps one exchange's placeholders to the values they replace. The
// guard fills it while redacting a request and restores the response with
// it; the CLI saves it ([Vault.WriteTo]) and loads it ([ReadVault]) to
// restore an answer that came back another way ([Vault.Restore]). Both
// restore with the same rules: only this vault's placeholders (by their
// keyed tag, also under a label the model mangled), never another's.
//
// A Vault holds raw values: write it where only its owner can read it. It
// is used by one exchange, from one goroutine at a time.
type Vault struct {
	// Policy and Destination name what the values were redacted for.
	Policy      string
	Destination string

	secret []byte
	byKey  map[string]string // detector + "\x00" + value -> placeholder
	values map[string]string // placeholder -> value
	tags   map[string]string // keyed tag (the hex digits) -> placeholder
	order  []string
	echo   canaryEcho // the canary line placed in the request, never shown
}

func newVault(secret []byte) *Vault {
	return &Vault{secret: secret, byKey: map[string]string{}, values: map[string]string{}, tags: map[string]string{}}
}

// Len returns the number of placeholders in the vault.
func (v *Vault) Len() int { return len(v.order) }

// vaultFile is a vault's form on disk.
type vaultFile struct {
	Version      int               `json:"version"`
	Policy       string            `json:"policy"`
	Destination  string            `json:"destination"`
	Placeholders map[string]string `json:"placeholders"`
}

// WriteTo writes the vault as JSON (placeholders and the raw values they
// stand for). It implements io.WriterTo.
func (v *Vault) WriteTo(w io.Writer) (int64, error) {
	data, err := json.MarshalIndent(vaultFile{Version: 1, Policy: v.Policy, Destination: v.Destination, Placeholders: v.values}, "", "  ")
	if err != nil {
		return 0, err
	}
	n, err := w.Write(append(data, '\n'))
	return int64(n), err
}

// maxVaultFile bounds what ReadVault reads.
const maxVaultFile = 64 << 20

// ReadVault reads a vault written by [Vault.WriteTo]. The vault can restore
// but not mint placeholders.
func ReadVault(r io.Reader) (*Vault, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxVaultFile+1))
	if err != nil {
		return nil, err
	}
	var f vaultFile
	if len(data) > maxVaultFile || json.Unmarshal(data, &f) != nil || f.Version != 1 {
		return nil, errors.New("not an aishield vault")
	}
	v := newVault(nil)
	v.Policy, v.Destination = f.Policy, f.Destination
	for p, val := range f.Placeholders {
		n, ok := parsePlaceholder(p)
		if !ok || n != len(p) {
			return nil, errors.New("not an aishield vault: a placeholder is malformed")
		}
		tag := p[n-len(placeholderClose)-placeholderHex : n-len(placeholderClose)]
		v.values[p], v.tags[tag] = val, p
		v.order = append(v.order, p)
	}
	slices.Sort(v.order)
	return v, nil
}

// RestoreStats counts what restoring did.
type RestoreStats struct {
	// Restored counts the placeholders replaced by their values.
	Restored int
	// Foreign counts placeholder-shaped tokens this vault did not mint,
	// left in place.
	Foreign int
}

// RestoreString returns s with this vault's placeholders replaced by their
// values; placeholder-shaped tokens of anyone else are left in place.
func (v *Vault) RestoreString(s string) (string, RestoreStats) {
	res := v.restore(s, false)
	return res.text, RestoreStats{Restored: res.restored, Foreign: len(res.foreign)}
}

// Restore copies r to w with this vault's placeholders replaced by their
// values, as the text arrives: it holds back only a tail that could be the
// start of a placeholder. Placeholder-shaped tokens of anyone else are left
// in place and counted.
func (v *Vault) Restore(r io.Reader, w io.Writer) (RestoreStats, error) {
	var st RestoreStats
	var pending string
	buf := make([]byte, 32<<10)
	for {
		n, rerr := r.Read(buf)
		pending += string(buf[:n])
		cut := len(pending)
		if rerr == nil {
			cut -= v.holdBack(pending)
		}
		res := v.restore(pending[:cut], false)
		st.Restored += res.restored
		st.Foreign += len(res.foreign)
		if _, err := io.WriteString(w, res.text); err != nil {
			return st, err
		}
		pending = pending[cut:]
		if errors.Is(rerr, io.EOF) {
			return st, nil
		}
		if rerr != nil {
			return st, rerr
		}
	}
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
func (v *Vault) placeholder(detector, value string) string {
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
// because it could be the start of a placeholder or of an echo of the
// exchange's canary line.
func (v *Vault) holdBack(s string) int {
	return max(placeholderHold(s), v.echo.hold(s))
}

// placeholderHold returns the length of the tail of s that could be the
// start of a placeholder.
func placeholderHold(s string) int {
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

// trimCut removes from the end of a complete text (the answer is over: a
// max_tokens cut, the end of a stream) what the hold-back was waiting for
// and will never come: the start of a placeholder ("[[PII_EMAIL") or of
// the canary line. Half a placeholder is never delivered.
func (v *Vault) trimCut(s string) string {
	if n := placeholderHold(s); n >= len(placeholderOpen)+1 {
		s = s[:len(s)-n]
	}
	if n := v.echo.hold(s); n > 0 {
		s = s[:len(s)-n]
	}
	return s
}

// canaryEcho strips the exchange's own canary from its answer. The guard
// places a canary line in the request (before: the text ahead of the
// token, token, after); a model may repeat it, whole or in part, and the
// caller must not see it. Another exchange's canary is not touched: it is
// foreign material, for the verifier to report.
type canaryEcho struct {
	before, token, after string
}

// setCanary makes the vault strip line, the canary line the guard placed
// in the request, and its token.
func (v *Vault) setCanary(line, token string) {
	i := strings.Index(line, token)
	if token == "" || i < 0 {
		return
	}
	v.echo = canaryEcho{before: line[:i], token: token, after: line[i+len(token):]}
}

// minEcho is the shortest part of the canary line's wording (before or
// after the token) stripped along with the token: shorter pieces are
// likely the answer's own punctuation.
const minEcho = 3

// strip removes every echo of the canary from s: the token with the part
// of the line's wording that surrounds it in s.
func (e canaryEcho) strip(s string) string {
	if e.token == "" || !strings.Contains(s, e.token) {
		return s
	}
	var b strings.Builder
	last := 0
	for {
		i := strings.Index(s[last:], e.token)
		if i < 0 {
			break
		}
		start, end := last+i, last+i+len(e.token)
		// The longest end of the wording before the token that precedes it.
		for k := 0; k < len(e.before); k++ {
			if suf := e.before[k:]; len(suf) >= minEcho && strings.HasSuffix(s[last:start], suf) {
				start -= len(suf)
				break
			}
		}
		// The longest start or end of the wording after the token that
		// follows it ("…do not repeat it)." cut short either way).
		best := 0
		for k := 0; k < len(e.after); k++ {
			if pre := e.after[:len(e.after)-k]; len(pre) > best && len(pre) >= minEcho && strings.HasPrefix(s[end:], pre) {
				best = len(pre)
			}
			if suf := e.after[k:]; len(suf) > best && len(suf) >= minEcho && strings.HasPrefix(s[end:], suf) {
				best = len(suf)
			}
		}
		end += best
		b.WriteString(s[last:start])
		last = end
	}
	b.WriteString(s[last:])
	return b.String()
}

// hold returns the length of the tail of s that could still become an echo
// of the canary: the start of the line from any point of its wording before
// the token, or a whole token followed by what could be the start of the
// wording after it.
func (e canaryEcho) hold(s string) int {
	if e.token == "" {
		return 0
	}
	whole := e.before + e.token + e.after
	from := max(0, len(s)-len(whole))
	for i := from; i < len(s); i++ {
		tail := s[i:]
		for k := 0; k <= len(e.before); k++ {
			// (The first bytes are compared before the strings: most
			// offsets differ there.)
			if rest := whole[k:]; len(tail) < len(rest) && rest[0] == tail[0] && strings.HasPrefix(rest, tail) && (k == len(e.before) || len(tail) >= minEcho) {
				return len(s) - i
			}
		}
		if t, ok := strings.CutPrefix(tail, e.token); ok && len(t) < len(e.after) {
			for k := 0; k < len(e.after); k++ {
				if strings.HasPrefix(e.after[k:], t) {
					return len(s) - i
				}
			}
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
func (v *Vault) whose(tok string) (owner, string) {
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
func (v *Vault) restore(s string, jsonText bool) restoreResult {
	s = v.echo.strip(s)
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

package classifiers

import (
	"bytes"
	"math/bits"
)

// The generic-assignment grammar of secret.generic. A keyword hit
// (genericKeys, through the Aho-Corasick prefilter) is read as
//
//	assignment = key shape value
//	key        = name bytes around the keyword (at most genericKeyMax each side)
//	shape      = op                       key = v, key := v, key ::= v, key ?= v,
//	                                      key .= v, key: v, key => v, key -> "v",
//	                                      key - "v" (YAML list), Kotlin/Swift/TS
//	                                      key: String = v, Go key string = v
//	           | "key" , "v" )            setProperty("K", "v"), Header.Set,
//	                                      os.Setenv, put("K", "v")
//	           | "key" ] = v              env["K"] = v
//	           | <key> v </               XML element
//	           | ?key=v &sig=v            URL query
//	value      = quoted string | bare token, at most genericValueMax bytes
//
// and the value model rejects identifiers, member access, calls, variable
// references, templates, placeholders and masks (genericValueOK). Every
// step reads a bounded number of bytes, and a keyword hit inside the last
// value read is skipped (scanState.genericLo, genericTo), so a text is read
// in linear time however many keywords its values hold.

const (
	genericKeyMax   = 40   // key name bytes read on each side of the keyword
	genericValueMax = 4096 // longer values are data, not a secret
)

var genericKeys = []string{"password", "passwd", "pwd", "secret", "api_key", "apikey", "api-key", "access_token",
	"auth_token", "client_secret", "token", "mot_de_passe", "motdepasse", "mdp", "passwort", "contrasena", "private_key",
	"secret_key", "access_key", "credential", "key", "sig="}

// genericRead is the assignment read after one keyword hit.
type genericRead struct {
	ok     bool // a value was read (it may still be rejected)
	open   bool // the text ended before the value did (lo > 0: inside it)
	lo, hi int  // the value
	quoted bool
	weak   bool // the key is only "...Key" or a URL "sig"
	code   bool // a bare value followed by code: an operator, ',', ')', '{'
	// the key name and the keyword in it
	ks, ke, kwLo, kwHi int
}

// keySecretWords are the words that, just before "key" at a camelCase,
// '_' or '-' boundary, make it a secret's name (accessKey, AccountKey,
// x-api-key, STRIPE_SECRET_KEY). Other names ending in "key" (sortKey,
// cacheKey, primaryKey, publicKey) hold no secret.
var keySecretWords = map[string]bool{
	"access": true, "account": true, "secret": true, "private": true, "api": true, "auth": true, "signing": true,
	"master": true, "encryption": true, "client": true, "app": true, "service": true, "subscription": true,
	"storage": true, "license": true, "licence": true, "shared": true, "consumer": true, "webhook": true,
	"host": true, "function": true, "admin": true, "hmac": true, "crypt": true, "cipher": true, "decryption": true,
	"sas": true, "sendgrid": true, "stripe": true, "mailgun": true, "openai": true, "anthropic": true,
}

// genericTypes are the type names that may sit between a key and '=' in
// typed declarations (Go var k string = v, Kotlin/Swift/TS k: String = v).
var genericTypes = []string{"string", "String", "str", "&str", "NSString", "NSString*", "*string", "char*", "[]byte"}

func isLowerByte(b byte) bool { return b >= 'a' && b <= 'z' }
func isUpperByte(b byte) bool { return b >= 'A' && b <= 'Z' }
func isKeyByte(b byte) bool   { return isWordByte(b) || b == '-' || b == '.' }

// keyWordBefore returns the lower-cased last word of text[ks:start]: the
// letters before start back to a capital, '_', '-' or ks.
func keyWordBefore(dst, text []byte, ks, start int) []byte {
	i := start
	if i > ks && (text[i-1] == '_' || text[i-1] == '-') {
		i--
	}
	j := i
	for j > ks && j-i < 24 && (isLowerByte(text[j-1]) || isUpperByte(text[j-1])) {
		j--
		if isUpperByte(text[j]) && (j == ks || !isUpperByte(text[j-1])) {
			break
		}
	}
	return asciiLowerBytes(dst, text[j:i])
}

// readGeneric reads the assignment around the keyword text[start:end]. A
// key that names no secret (password_hash, token_len: notSecretKey) reads
// nothing; it is checked last, once an assignment was read, because most
// keyword hits in prose are no assignment at all.
func readGeneric(text []byte, start, end int) genericRead {
	r := readAssignment(text, start, end)
	if r.ok || r.open {
		var kb [64]byte
		if notSecretKey(asciiLowerBytes(kb[:0], text[r.kwLo:r.ke])) {
			return genericRead{}
		}
	}
	return r
}

// readAssignment is readGeneric without the notSecretKey check.
func readAssignment(text []byte, start, end int) (r genericRead) {
	n := len(text)
	kw := end - start
	if kw == 3 && (text[start]|0x20) == 'k' && (text[start+1]|0x20) == 'e' {
		// "key" is a common word: only a key ending at a camelCase, '_'
		// or '-' boundary, or a whole word right before '=', can be one
		// (see below). Prose ("the key to", "keyboard") is rejected here,
		// before anything is read.
		if end < n && isKeyByte(text[end]) {
			return r
		}
		if (start == 0 || !isKeyByte(text[start-1])) && (end >= n || text[end] != '=') {
			return r
		}
	}
	ks := start
	for ks > 0 && start-ks < genericKeyMax && isKeyByte(text[ks-1]) {
		ks--
	}
	ke := end
	for ke < n && ke-end < genericKeyMax && isKeyByte(text[ke]) {
		ke++
	}
	var kb [64]byte
	r.ks, r.ke, r.kwLo, r.kwHi = ks, ke, start, end
	if kw == 3 && (text[start]|0x20) != 'k' && !keywordAlone(text, start, end) {
		return r // simdPackage, gpwdx: mdp and pwd stand alone or start a word
	}
	url := ks > 0 && (text[ks-1] == '?' || text[ks-1] == '&')
	switch {
	case kw == 4 && text[end-1] == '=': // "sig=": only in a URL query
		if ks != start || !url {
			return r
		}
		r.weak = true
		return readValue(text, end, true, r)
	case kw == 3 && (text[start]|0x20) == 'k' && (text[start+1]|0x20) == 'e': // "key"
		if ke != end {
			return r // keyboard, keys, accessKeyId
		}
		switch {
		case ks == start:
			// a whole word: ?key=v in a URL, Key=v in a log line
			if !(url && text[start] == 'k' || text[start] == 'K' && start > 0 && text[start-1] == ' ') || end >= n || text[end] != '=' {
				return r
			}
			r.weak = true
			return readValue(text, end+1, url, r)
		case text[start] == 'K' && (isLowerByte(text[start-1]) || isDigit(text[start-1])),
			text[start-1] == '_' || text[start-1] == '-':
			if !keySecretWords[string(keyWordBefore(kb[:0], text, ks, start))] {
				return r
			}
			r.weak = true
		default:
			return r
		}
	}
	i := ke
	open := ks > 0 && (text[ks-1] == '"' || text[ks-1] == '\'') // the key is inside a string
	// Key shapes: "key", <key>, ("key", ...), ["key"] = ...
	if ks > 0 && ke < n {
		switch q := text[ks-1]; {
		case q == '<' && text[ke] == '>':
			r = readValueUntil(text, ke+1, '<', r)
			if r.ok && !r.open && (r.hi+1 >= n || text[r.hi+1] != '/') {
				r.ok, r.open = false, r.hi+1 >= n // the closing tag may still come
			}
			return r
		case (q == '"' || q == '\'') && text[ke] == q:
			i, open = ke+1, false
			j := ks - 1
			for j > 0 && (text[j-1] == ' ' || text[j-1] == '\t') {
				j--
			}
			k := skipBlanks(text, i)
			if j > 0 && text[j-1] == '(' && k < n && text[k] == ',' {
				k = skipBlanks(text, k+1)
				if k < n && (text[k] == '"' || text[k] == '\'' || text[k] == '`') {
					return readValue(text, k, false, r)
				}
				return r
			}
			if i < n && text[i] == ']' {
				i++
			}
		}
	}
	i = skipBlanks(text, i)
	if i >= n {
		r.open = true
		return r
	}
	quotedOnly := false
	// The operator, told by its first byte (the next one: 0 at the end).
	var c1 byte
	if i+1 < n {
		c1 = text[i+1]
	}
	switch c := text[i]; {
	case c == ':' && c1 == ':' && i+2 < n && text[i+2] == '=':
		i += 3
	case c == ':' && c1 == '=', c == '?' && c1 == '=', c == '.' && c1 == '=', c == '=' && c1 == '>':
		i += 2
	case c == '-' && c1 == '>':
		i += 2
		quotedOnly = true
	case c == '-' && i > ke && c1 == ' ':
		i++
		quotedOnly = true
	case c == ':':
		if c1 == ':' {
			return r
		}
		i++
		// k: String = v
		if t := skipType(text, skipBlanks(text, i)); t > 0 {
			if t = skipBlanks(text, t); t < n && text[t] == '=' {
				i = t + 1
			}
		}
	case c == '=':
		i++
	default:
		// Go: var k string = v
		t := skipType(text, i)
		if t <= 0 || t == i {
			return r
		}
		if t = skipBlanks(text, t); t >= n || text[t] != '=' {
			return r
		}
		i = t + 1
	}
	if i < n && (text[i] == '=' || text[i] == '~') {
		return r // == comparison, =~ match
	}
	i = skipBlanks(text, i)
	if quotedOnly && (i >= n || (text[i] != '"' && text[i] != '\'')) {
		return r
	}
	if open && i < n && text[ks-1] == text[i] {
		return r // "PWD="+dir: the quote ends the key's own string
	}
	return readValue(text, i, url, r)
}

func hasAt(text []byte, i int, s string) bool {
	return len(text)-i >= len(s) && string(text[i:i+len(s)]) == s
}

func skipBlanks(text []byte, i int) int {
	for i < len(text) && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	return i
}

// skipType returns the end of a genericTypes name at text[i] followed by a
// blank, or 0.
func skipType(text []byte, i int) int {
	if i >= len(text) {
		return 0
	}
	switch text[i] {
	case 's', 'S', '&', 'N', '*', 'c', '[':
	default:
		return 0 // no type name starts otherwise: prose is rejected at once
	}
	// The word up to the next blank, if it is no longer than the longest
	// type name, is looked up.
	j := i
	for j < len(text) && j-i <= genericTypeMax && text[j] != ' ' && text[j] != '\t' {
		j++
	}
	if j >= len(text) || j-i > genericTypeMax || !isGenericType(text[i:j]) {
		return 0
	}
	return j
}

// genericTypeMax is the length of the longest genericTypes name.
const genericTypeMax = len("NSString*")

func isGenericType(w []byte) bool {
	for _, t := range genericTypes {
		if string(w) == t {
			return true
		}
	}
	return false
}

// readValue reads the quoted or bare value at text[i]. A string prefix
// (b"", r"", @"", L"", u8"") is skipped. In a URL query a bare value ends at
// '&'.
func readValue(text []byte, i int, url bool, r genericRead) genericRead {
	n := len(text)
	if i < n && i+1 < n && (text[i+1] == '"' || text[i+1] == '\'') && bytes.IndexByte([]byte("bBrRuUfL@"), text[i]) >= 0 {
		i++
	} else if hasAt(text, i, `u8"`) {
		i += 2
	}
	if i >= n {
		r.open = true
		return r
	}
	if q := text[i]; q == '"' || q == '\'' || q == '`' {
		r.quoted = true
		return readValueUntil(text, i+1, q, r)
	}
	lo := i
	for i < n && i-lo <= genericValueMax {
		if k := valueStop[text[i]]; k != 0 {
			if k&stopEnd != 0 || url && k&stopURL != 0 {
				break
			}
			if k&stopOpen != 0 {
				return r // a call, an index expression or a composite literal
			}
		}
		i++
	}
	if i-lo > genericValueMax {
		r.lo, r.hi = lo, i // too long: read, not reported
		return r
	}
	if i < n {
		switch b := text[i]; b {
		case ',', ')', '}', ']':
			// an argument or a field of a literal in code, not a value
			// that goes on after the bracket
			r.code = (i+1 >= n || !isAlnum(text[i+1])) && identLike(text[lo:i])
			r.open = i+1 >= n
		case ' ', '\t':
			// an expression goes on: a + b, a ? b : c, a || b
			const ops = "+-*/%|&?:<>=."
			k := skipBlanks(text, i)
			r.code = k+1 < n && bytes.IndexByte([]byte(ops), text[k]) >= 0 &&
				(text[k+1] == ' ' || text[k+1] == '\t' || bytes.IndexByte([]byte(ops), text[k+1]) >= 0)
			r.open = k+1 >= n
		}
	}
	// A bare value that reaches the end of the text ends there, but a
	// streamed text may still continue it, or show it is code.
	r.ok, r.lo, r.hi = true, lo, i
	r.open = r.open || i >= n
	return r
}

// valueStop says how readValue treats a byte of a bare value: stopEnd
// ends it (white space and controls, , ; " ' } ) ] < >), stopURL ends it
// in a URL query (& #), stopOpen makes it code (( [ {); 0 goes on.
var valueStop = func() (t [256]uint8) {
	for c := 0; c <= ' '; c++ {
		t[c] = stopEnd
	}
	for _, c := range []byte(",;\"'})]<>") {
		t[c] = stopEnd
	}
	t['&'], t['#'] = stopURL, stopURL
	t['('], t['['], t['{'] = stopOpen, stopOpen, stopOpen
	return t
}()

const (
	stopEnd = 1 << iota
	stopURL
	stopOpen
)

// readValueUntil reads a value ending at byte q (or a newline) from
// text[i]; a backslash escapes the next byte.
func readValueUntil(text []byte, i int, q byte, r genericRead) genericRead {
	n := len(text)
	lo := i
	for i < n && i-lo <= genericValueMax {
		b := text[i]
		if b == q || b == '\n' {
			r.ok, r.lo, r.hi = true, lo, i
			return r
		}
		if b == '\\' {
			i++
		}
		i++
	}
	if i >= n && i-lo <= genericValueMax {
		// an unterminated value at the end of the text ends there, but a
		// streamed text may still continue it.
		r.ok, r.open, r.lo, r.hi = true, true, lo, n
		return r
	}
	r.lo, r.hi = lo, i // too long: read, not reported
	return r
}

// keywordAlone reports whether the short keyword text[start:end] (mdp,
// pwd) is a word or starts one: not glued to a lower-case letter before it
// (unless it starts with a capital after one) nor followed by one.
func keywordAlone(text []byte, start, end int) bool {
	if start > 0 && isAlnum(text[start-1]) && !(isUpperByte(text[start]) && isLowerByte(text[start-1])) {
		return false
	}
	return end >= len(text) || !isLowerByte(text[end])
}

// wordyValue reports values made of words and no digits: prose, names and
// labels (same-origin, "extended master secret", SuperSecretToken,
// response.data.access_token). A word (a run of letters split at case
// changes) of two or more letters without a vowel, other than an acronym
// of up to four capitals, marks random letters (XyJkNoAsoHlamq) instead.
// %XX escapes count as separators.
func wordyValue(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	letters := 0
	ws := 0 // start of the current word
	for i := 0; i <= len(v); i++ {
		c := byte(' ')
		if i < len(v) {
			c = v[i]
		}
		if c == '%' && i+2 < len(v) && isHexByte(v[i+1]) && isHexByte(v[i+2]) {
			if i-ws >= 2 && !hasVowel(v[ws:i]) && !(i-ws <= 4 && isUpperByte(v[i-1])) {
				return false
			}
			i += 2
			ws = i + 1
			continue
		}
		if isDigit(c) {
			return false
		}
		letter := isLowerByte(c) || isUpperByte(c)
		if letter {
			letters++
		}
		// A word ends before a separator, before a capital that follows a
		// lower-case letter, and before the capital that starts a word
		// after a run of capitals (XMLResponse: XML, Response).
		end := !letter ||
			(i > ws && isUpperByte(c) && isLowerByte(v[i-1])) ||
			(i > ws+1 && isUpperByte(v[i-1]) && isUpperByte(v[i-2]) && isLowerByte(c))
		if !end {
			continue
		}
		we := i
		if letter && isLowerByte(c) {
			we = i - 1
		}
		if we-ws >= 2 && !hasVowel(v[ws:we]) && !(we-ws <= 4 && isUpperByte(v[we-1])) {
			return false
		}
		if letter {
			ws = we
		} else {
			ws = i + 1
		}
	}
	return letters*2 >= len(v)
}

func isHexByte(c byte) bool { return isDigit(c) || (c|0x20) >= 'a' && (c|0x20) <= 'f' }

// identLike reports a name as programmers write it: word bytes (and '$')
// not starting with a digit, at most two runs of digits, and no word of
// four or more letters without a vowel (testRSA2048PrivateKey, hs,
// line_js_1), unlike a random token (ghp_aB3dE5fG7hJ9kL1m).
func identLike(v []byte) bool {
	if len(v) == 0 || isDigit(v[0]) {
		return false
	}
	runs, ws := 0, 0
	for i := 0; i <= len(v); i++ {
		c := byte('_')
		if i < len(v) {
			c = v[i]
		}
		if !isWordByte(c) && c != '$' {
			return false
		}
		if isDigit(c) && (i == 0 || !isDigit(v[i-1])) {
			runs++
		}
		letter := isLowerByte(c) || isUpperByte(c)
		if letter && !(i > ws && isUpperByte(c) && isLowerByte(v[i-1])) {
			continue
		}
		if i-ws >= 4 && !hasVowel(v[ws:i]) {
			return false
		}
		ws = i
		if !letter {
			ws = i + 1
		}
	}
	return runs <= 2
}

// memberPath reports a bare value that is a member access or a qualified
// name: names joined by '.' or "?." (hs.session.secret, line_js_1.x).
func memberPath(v []byte) bool {
	if bytes.IndexByte(v, '.') < 0 {
		return false // one part
	}
	parts := 0
	for p := range bytes.SplitSeq(v, []byte(".")) {
		if !identLike(bytes.TrimSuffix(p, []byte("?"))) {
			return false
		}
		parts++
	}
	return parts >= 2
}

// constantValue reports a signed number or a hexadecimal constant of at
// most 64 bits (-0x3f879678, +12345678, 0xdeadbeef).
func constantValue(v []byte) bool {
	if v[0] == '-' || v[0] == '+' {
		return len(v) > 1 && isDigit(v[1])
	}
	if len(v) > 2 && v[0] == '0' && (v[1]|0x20) == 'x' && len(v) <= 18 {
		for _, c := range v[2:] {
			if !isHexByte(c) {
				return false
			}
		}
		return true
	}
	return false
}

// namesItself reports a value that holds its key's name or keyword
// (encryptionKey: "encryptionKey1024", _authToken=MYTOKEN1), ignoring
// ASCII case. The keyword lies inside the key name, so a value holding the
// name holds the keyword: when the keyword is long enough to count (5
// bytes) it alone is searched for, else the name is.
func namesItself(text []byte, r genericRead, val []byte) bool {
	if len(val) > 256 {
		return false
	}
	ks := r.ks
	for ks < r.ke && (text[ks] == '_' || text[ks] == '-' || text[ks] == '.' || text[ks] == '$') {
		ks++ // bytes.TrimLeft(key, "_-.$") without building its set
	}
	key, kw := text[ks:r.ke], text[r.kwLo:r.kwHi]
	keyIn, kwIn := len(key) >= 5 && len(key) <= len(val), len(kw) >= 5 && len(kw) <= len(val)
	if ks > r.kwLo || r.kwHi > r.ke {
		// the keyword is not inside the name: both are searched
		return keyIn && containsFold(val, key) || kwIn && containsFold(val, kw)
	}
	if len(kw) >= 5 {
		return kwIn && containsFold(val, kw)
	}
	return keyIn && containsFold(val, key)
}

// containsFold reports whether v holds s, ASCII case ignored (other bytes
// compare as they are).
func containsFold(v, s []byte) bool {
	if len(s) == 0 {
		return true
	}
	first := asciiFold[s[0]]
	for i := 0; i+len(s) <= len(v); i++ {
		if asciiFold[v[i]] != first {
			continue
		}
		j := 1
		for j < len(s) && asciiFold[v[i+j]] == asciiFold[s[j]] {
			j++
		}
		if j == len(s) {
			return true
		}
	}
	return false
}

// jenkinsSecret reports a Jenkins encrypted secret, {base64}, whose braces
// the placeholder model would otherwise read as a template.
func jenkinsSecret(v []byte) bool {
	if len(v) < 24 || v[0] != '{' || v[len(v)-1] != '}' || !bytes.HasPrefix(v, []byte("{AQAAAB")) {
		return false
	}
	for _, c := range v[1 : len(v)-1] {
		if !isAlnum(c) && c != '+' && c != '/' && c != '=' {
			return false
		}
	}
	return true
}

func hasVowel(w []byte) bool {
	for _, c := range w {
		switch c | 0x20 {
		case 'a', 'e', 'i', 'o', 'u', 'y':
			return true
		}
	}
	return false
}

// maskedValue reports values that show where a secret goes without one:
// runs of x or *, an ellipsis, <...> or printf verbs.
func maskedValue(v []byte) bool {
	// One pass: runs of x (either case), '*' and '.', "…" and "•••", a
	// '<' before the first '>', and '%' before s, d or v. A byte that none
	// of these uses (maskByte) only ends the runs.
	xs, stars, dots := 0, 0, 0
	lt, gt := false, false // a '<' seen; the first '>' seen
	for i := 0; i < len(v); i++ {
		if !maskByte[v[i]] {
			for i+1 < len(v) && !maskByte[v[i+1]] {
				i++
			}
			xs, stars, dots = 0, 0, 0
			continue
		}
		c := v[i]
		if c|0x20 == 'x' {
			stars, dots = 0, 0
			if xs++; xs == 4 {
				return true
			}
			continue
		}
		xs = 0
		if c == '*' {
			dots = 0
			if stars++; stars == 3 {
				return true
			}
			continue
		}
		stars = 0
		if c == '.' {
			if dots++; dots == 3 {
				return true
			}
			continue
		}
		dots = 0
		switch c {
		case '<':
			lt = true
		case '>':
			if !gt && lt {
				return true
			}
			gt = true
		case '%':
			if i+1 < len(v) && (v[i+1] == 's' || v[i+1] == 'd' || v[i+1] == 'v') {
				return true
			}
		case 0xE2:
			if bytes.HasPrefix(v[i:], []byte("…")) || bytes.HasPrefix(v[i:], []byte("•••")) {
				return true
			}
		}
	}
	return false
}

// valueBits is charClass with valueMask added for the bytes of maskByte.
var valueBits = func() (t [256]uint8) {
	for c := range t {
		t[c] = charClass[c]
		if maskByte[c] {
			t[c] |= valueMask
		}
	}
	return t
}()

const (
	valueClasses = 0x0f // the charClass bits
	valueMask    = 0x10
)

// maskByte marks the bytes maskedValue looks at: x, X, '*', '.', '<',
// '>', '%' and 0xE2 (the first byte of "…" and "•").
var maskByte = func() (t [256]bool) {
	for _, c := range []byte("xX*.<>%\xe2") {
		t[c] = true
	}
	return t
}()

// genericValueOK is the value model: long enough, not code, not a
// placeholder or mask, mixed characters and enough entropy.
func genericValueOK(st *scanState, r genericRead, val []byte) (float64, bool) {
	if len(val) < 8 || len(val) > genericValueMax {
		return 0, false
	}
	if jenkinsSecret(val) {
		val = val[1 : len(val)-1]
	} else if !r.quoted && (r.code || memberPath(val) || val[0] == '&' || val[0] == '*' || val[0] == '!') {
		return 0, false
	}
	if val[0] == '/' || val[0] == '~' || constantValue(val) || wordyValue(val) || namesItself(st.text, r, val) {
		return 0, false // paths, constants, prose, names
	}
	// One pass gives the character classes (charClasses) and whether
	// any byte maskedValue looks at is present: most secrets hold none.
	var m uint8
	for _, c := range val {
		m |= valueBits[c]
	}
	if bits.OnesCount8(m&valueClasses) < 2 || placeholderBytes(val) || m&valueMask != 0 && maskedValue(val) {
		return 0, false
	}
	h := st.s.entropy.of(val)
	if h < 3.0 || (r.weak && len(val) < 16) {
		return 0, false
	}
	return h, true
}

// genericHit reads the assignment around a keyword hit and reports its
// value.
func genericHit(st *scanState, d *detector, start, end int) {
	text := st.text
	if start >= st.genericLo && start < st.genericTo {
		return // inside a value already read
	}
	r := readGeneric(text, start, end)
	if r.hi > r.lo {
		st.genericLo, st.genericTo = r.lo, r.hi
	}
	if !r.ok {
		return
	}
	val := text[r.lo:r.hi]
	h, ok := genericValueOK(st, r, val)
	if !ok {
		return
	}
	conf := 0.6
	if h >= 3.8 && !r.weak {
		conf = 0.75
	}
	st.emit(d.idx, r.lo, r.hi, conf, val, maskFixed)
}

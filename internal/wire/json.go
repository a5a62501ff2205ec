package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// This file is the JSON layer of the package: a one-pass decoder into the
// raw tree, and rewriting by splicing. A body is decoded once; texts are
// changed in the tree and recorded as edits; Encode then rewrites only the
// bytes of the edited values in the original body (located by a second,
// skipping pass that descends only along the edited paths), so an allowed
// body is never re-encoded, and a redacted one keeps its key order,
// spacing, number spelling and unknown fields byte for byte.

// maxDepth bounds nesting, like encoding/json.
const maxDepth = 10000

// decode parses body into a raw tree. It is strict where parsers disagree,
// as I-JSON (RFC 7493) asks, so that what the guard reads is what any
// receiver reads: it refuses invalid UTF-8 and lone surrogate escapes
// (which encoding/json replaces by U+FFFD and other parsers keep), an
// object with two members of the same name (encoding/json keeps the last,
// other parsers the first, so a value could hide behind its twin), and
// trailing data.
func decode(body []byte) (any, error) {
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: invalid UTF-8", ErrBody)
	}
	p := parser{data: body}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBody, err)
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, fmt.Errorf("%w: data after the JSON value at offset %d", ErrBody, p.pos)
	}
	return v, nil
}

type parser struct {
	data []byte
	pos  int
}

type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

func (p *parser) fail(msg string) error { return &syntaxError{msg: msg, off: p.pos} }

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of JSON input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.lit("true")
	case c == 'f':
		return false, p.lit("false")
	case c == 'n':
		return nil, p.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, p.fail(fmt.Sprintf("invalid character %q looking for a value", p.data[p.pos]))
}

func (p *parser) lit(s string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(s)) {
		return p.fail("invalid literal")
	}
	p.pos += len(s)
	return nil
}

func (p *parser) object(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.fail("exceeded max depth")
	}
	p.pos++ // '{'
	m := map[string]any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a string object key")
		}
		ks := p.pos
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			p.pos = ks
			return nil, p.fail("duplicate object key" + keyName(k))
		}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':' after an object key")
		}
		p.pos++
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		done, err := p.next('}', "expected ',' or '}' after an object value")
		if err != nil {
			return nil, err
		}
		if done {
			return m, nil
		}
	}
}

func (p *parser) array(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.fail("exceeded max depth")
	}
	p.pos++ // '['
	a := []any{}
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return a, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		done, err := p.next(']', "expected ',' or ']' after an array element")
		if err != nil {
			return nil, err
		}
		if done {
			return a, nil
		}
	}
}

// next consumes what follows an object member or array element: a ','
// (and the space after it), or the closing byte, which sets done. Anything
// else is the error msg.
func (p *parser) next(closing byte, msg string) (done bool, err error) {
	p.space()
	if p.pos >= len(p.data) {
		return false, p.fail("unexpected end of JSON input")
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		p.space()
		return false, nil
	case closing:
		p.pos++
		return true, nil
	}
	return false, p.fail(msg)
}

// number checks the JSON number grammar and returns it as json.Number.
func (p *parser) number() (any, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.fail("invalid number")
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			p.pos = i
			return nil, p.fail("invalid number")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		if i == j {
			p.pos = i
			return nil, p.fail("invalid number")
		}
	}
	p.pos = i
	return json.Number(d[start:i]), nil
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special reports whether any byte of the 8-byte word w is '"', '\\' or a
// control character (below 0x20).
func special(w uint64) bool {
	q := w ^ (lsb * '"')
	b := w ^ (lsb * '\\')
	return ((q-lsb)&^q|(b-lsb)&^b|(w-lsb*0x20)&^w)&msb != 0
}

// stringEnd scans the string whose opening quote is at d[start] and
// returns the offset just past its closing quote, and whether it holds
// escapes.
func stringEnd(d []byte, start int) (int, bool, error) {
	i := start + 1
	escaped := false
	for {
		for i+8 <= len(d) && !special(binary.LittleEndian.Uint64(d[i:])) {
			i += 8
		}
		if i >= len(d) {
			return 0, false, &syntaxError{msg: "unexpected end of JSON input in a string", off: i}
		}
		switch c := d[i]; {
		case c == '"':
			return i + 1, escaped, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(d) {
				return 0, false, &syntaxError{msg: "unexpected end of JSON input in a string", off: i}
			}
			switch d[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(d) {
					return 0, false, &syntaxError{msg: "unexpected end of JSON input in a string", off: i}
				}
				for _, h := range d[i+2 : i+6] {
					if unhex(h) < 0 {
						return 0, false, &syntaxError{msg: "invalid \\u escape", off: i}
					}
				}
				i += 6
			default:
				return 0, false, &syntaxError{msg: "invalid escape in a string", off: i}
			}
		case c < 0x20:
			return 0, false, &syntaxError{msg: "invalid control character in a string", off: i}
		default:
			i++
		}
	}
}

func unhex(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

func (p *parser) str() (string, error) {
	end, escaped, err := stringEnd(p.data, p.pos)
	if err != nil {
		return "", err
	}
	raw := p.data[p.pos+1 : end-1]
	if !escaped {
		p.pos = end
		return string(raw), nil
	}
	s, ok := unescape(raw)
	if !ok {
		return "", p.fail("lone surrogate escape in a string")
	}
	p.pos = end
	return s, nil
}

// keyName renders a duplicate key for an error message when it is a plain
// field name (lower-case letters and '_', as API field names are), so that
// a key that is data (an address, a token used as a map key) is never
// shown; "" otherwise.
func keyName(k string) string {
	if len(k) == 0 || len(k) > 32 {
		return ""
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; (c < 'a' || c > 'z') && c != '_' {
			return ""
		}
	}
	return " " + strconv.Quote(k)
}

// unescape decodes the inside of a valid JSON string with escapes, as
// encoding/json does; ok is false when it holds a lone surrogate escape
// (which encoding/json would turn into U+FFFD, and the string holds U+FFFD
// there).
func unescape(raw []byte) (s string, ok bool) {
	ok = true
	// The decoded string is never longer than raw (an escape decodes to
	// fewer bytes than it takes): one buffer, handed over as the string.
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			j := bytes.IndexByte(raw[i:], '\\')
			if j < 0 {
				j = len(raw) - i
			}
			b.Write(raw[i : i+j])
			i += j
			continue
		}
		switch raw[i+1] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := hex4(raw[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(raw[i+2:])); r2 != utf8.RuneError {
						b.WriteRune(r2)
						i += 6
						continue
					}
				}
				r, ok = utf8.RuneError, false
			}
			b.WriteRune(r)
			continue
		default: // '"', '\\', '/'
			b.WriteByte(raw[i+1])
		}
		i += 2
	}
	return b.String(), ok
}

func hex4(b []byte) rune {
	return unhex(b[0])<<12 | unhex(b[1])<<8 | unhex(b[2])<<4 | unhex(b[3])
}

// appendString appends s as a JSON string, escaped like encoding/json
// without HTML escaping (control characters, '"', '\\', U+2028, U+2029;
// invalid UTF-8 becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	const hexd = "0123456789abcdef"
	b = slices.Grow(b, len(s)+len(s)/16+8)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight plain ASCII bytes at a time.
		for i+8 <= len(s) {
			w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if special(w) || w&msb != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexd[c>>4], hexd[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexd[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// encode writes a tree as JSON without HTML escaping (object keys sorted).
// It is used only for what has no original bytes (synthesized events) and
// as the fallback of a rewrite.
func encode(root any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(256)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // drop the Encoder's newline
}

// editOp is the kind of an edit.
type editOp uint8

const (
	opReplace editOp = iota // replace the value at path by raw
	opAppend                // append raw to the array at path
	opAdd                   // add member key: raw to the object at path
	opDelete                // delete the member at path
)

// edit is one change of a document, applied by splicing.
type edit struct {
	op   editOp
	path Path
	key  string
	raw  []byte
}

// doc is a decoded body with its original bytes and the edits made to it.
// The tree is always up to date; the edits say which bytes to rewrite.
type doc struct {
	body  []byte
	root  any
	edits []edit
}

// setSegment replaces the text of segs[i], a segment of d (Request.Set and
// Response.Set).
func (d *doc) setSegment(segs []Segment, i int, text string) error {
	if i < 0 || i >= len(segs) {
		return fmt.Errorf("wire: segment %d out of range", i)
	}
	if !set(&d.root, segs[i].Path, text) {
		return fmt.Errorf("wire: segment %d at %s is not a string", i, segs[i].Path)
	}
	d.replace(segs[i].Path, text)
	segs[i].Text = text
	return nil
}

// replace records that the value at p is now v (a string, or any raw JSON
// given as json.RawMessage).
func (d *doc) replace(p Path, v any) {
	var raw []byte
	switch t := v.(type) {
	case string:
		raw = appendString(nil, t)
	case json.RawMessage:
		raw = t
	default:
		raw, _ = json.Marshal(v)
	}
	for i := range d.edits {
		if d.edits[i].op == opReplace && pathEqual(d.edits[i].path, p) {
			d.edits[i].raw = raw
			return
		}
	}
	d.edits = append(d.edits, edit{op: opReplace, path: slices.Clone(p), raw: raw})
}

func (d *doc) add(e edit) { d.edits = append(d.edits, e) }

func pathEqual(a, b Path) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// encode returns the body with the edits applied: the original bytes when
// there are none, a splice of them otherwise, and a re-encoding of the
// tree only if the edits cannot be located (which a consistent tree
// never causes).
func (d *doc) encode() ([]byte, error) {
	if len(d.edits) == 0 && d.body != nil {
		return d.body, nil
	}
	if d.body != nil {
		if out, ok := splice(d.body, d.edits); ok {
			return out, nil
		}
	}
	return encode(d.root)
}

// span is what the locator found of a value: its bytes, and when it is an
// object member, where its key starts and the bounds of the removable
// member (with one adjacent comma).
type span struct {
	found            bool
	start, end       int // the value
	delStart, delEnd int // the member and one comma, for opDelete
	empty            bool
}

// splice applies edits to body. It reports false when an edit's path is
// not found or edits overlap.
func splice(body []byte, edits []edit) ([]byte, bool) {
	spans := make([]span, len(edits))
	l := locator{d: body, edits: edits, spans: spans}
	idx := make([]int, len(edits))
	for i := range idx {
		idx[i] = i
	}
	pos := skipSpace(body, 0)
	if _, ok := l.walk(pos, 0, idx, -1, -1); !ok {
		return nil, false
	}
	type cut struct {
		start, end int
		parts      [][]byte
	}
	cuts := make([]cut, 0, len(edits))
	for i, e := range edits {
		s := spans[i]
		if !s.found {
			return nil, false
		}
		switch e.op {
		case opReplace:
			cuts = append(cuts, cut{s.start, s.end, [][]byte{e.raw}})
		case opAppend:
			if body[s.start] != '[' {
				return nil, false
			}
			at := s.end - 1 // the closing bracket
			if s.empty {
				cuts = append(cuts, cut{at, at, [][]byte{e.raw}})
			} else {
				cuts = append(cuts, cut{at, at, [][]byte{{','}, e.raw}})
			}
		case opAdd:
			if body[s.start] != '{' {
				return nil, false
			}
			at := s.start + 1
			k := appendString(nil, e.key)
			if s.empty {
				cuts = append(cuts, cut{at, at, [][]byte{k, {':'}, e.raw}})
			} else {
				cuts = append(cuts, cut{at, at, [][]byte{k, {':'}, e.raw, {','}}})
			}
		case opDelete:
			if s.delEnd <= s.delStart {
				return nil, false
			}
			cuts = append(cuts, cut{s.delStart, s.delEnd, nil})
		}
	}
	slices.SortStableFunc(cuts, func(a, b cut) int { return a.start - b.start })
	n := len(body)
	for i, c := range cuts {
		if i > 0 && c.start < cuts[i-1].end {
			return nil, false
		}
		n -= c.end - c.start
		for _, p := range c.parts {
			n += len(p)
		}
	}
	out := make([]byte, 0, n)
	last := 0
	for _, c := range cuts {
		out = append(out, body[last:c.start]...)
		for _, p := range c.parts {
			out = append(out, p...)
		}
		last = c.end
	}
	return append(out, body[last:]...), true
}

// locator finds the spans of the edited paths, descending only into the
// containers on those paths and skipping everything else.
type locator struct {
	d     []byte
	edits []edit
	spans []span
}

func skipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// skip returns the offset just past the value at i.
func skip(d []byte, i int) int {
	if i >= len(d) {
		return -1
	}
	switch d[i] {
	case '"':
		end, _, err := stringEnd(d, i)
		if err != nil {
			return -1
		}
		return end
	case '{', '[':
		depth := 0
		for i < len(d) {
			switch d[i] {
			case '"':
				end, _, err := stringEnd(d, i)
				if err != nil {
					return -1
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		for i < len(d) {
			switch d[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

// walk visits the value at i, at depth of the paths of the edits in idx
// (their elements before depth matched), and returns the offset just past
// it. For a member value, keyStart and prevEnd locate its key and the end
// of the previous member's value (-1: first member). Containers on an
// edited path are parsed once, on the way down; everything else is
// skipped.
func (l *locator) walk(i, depth int, idx []int, keyStart, prevEnd int) (int, bool) {
	if i >= len(l.d) {
		return 0, false
	}
	var here, deeper []int
	for _, k := range idx {
		if len(l.edits[k].path) == depth {
			here = append(here, k)
		} else {
			deeper = append(deeper, k)
		}
	}
	end := -1
	switch {
	case len(deeper) > 0 && l.d[i] == '{':
		end = l.object(i, depth, deeper)
	case len(deeper) > 0 && l.d[i] == '[':
		end = l.array(i, depth, deeper)
	default:
		end = skip(l.d, i)
	}
	if end < 0 {
		return 0, false
	}
	for _, k := range here {
		s := span{found: true, start: i, end: end}
		if l.d[i] == '{' || l.d[i] == '[' {
			j := skipSpace(l.d, i+1)
			s.empty = j < len(l.d) && (l.d[j] == '}' || l.d[j] == ']')
		}
		if keyStart >= 0 {
			next := skipSpace(l.d, end)
			switch {
			case next < len(l.d) && l.d[next] == ',':
				s.delStart, s.delEnd = keyStart, skipSpace(l.d, next+1)
			case prevEnd >= 0:
				s.delStart, s.delEnd = prevEnd, end
			default:
				s.delStart, s.delEnd = keyStart, end
			}
		}
		l.spans[k] = s
	}
	return end, true
}

// object walks the members of the object at i and returns its end.
func (l *locator) object(i, depth int, deeper []int) int {
	j := skipSpace(l.d, i+1)
	prev := -1
	var met []int // the edits whose key this object has shown
	for j < len(l.d) && l.d[j] != '}' {
		ks := j
		kend, escaped, err := stringEnd(l.d, j)
		if err != nil {
			return -1
		}
		var key string
		if escaped {
			key, _ = unescape(l.d[j+1 : kend-1])
		} else {
			key = string(l.d[j+1 : kend-1])
		}
		j = skipSpace(l.d, kend)
		if j >= len(l.d) || l.d[j] != ':' {
			return -1
		}
		j = skipSpace(l.d, j+1)
		var sub []int
		for _, k := range deeper {
			if s, ok := l.edits[k].path[depth].(string); ok && s == key {
				sub = append(sub, k)
			}
		}
		// decode refuses duplicate keys, so each edited key is met once;
		// a body where one is met twice is not the decoded one: the splice
		// fails rather than guess which member the tree holds.
		for _, k := range sub {
			if slices.Contains(met, k) {
				return -1
			}
		}
		met = append(met, sub...)
		if prev, j = l.member(j, depth, sub, ks, prev); prev < 0 {
			return -1
		}
	}
	if j >= len(l.d) {
		return -1
	}
	return j + 1
}

// member walks (when edits lie below it) or skips the value at j, an
// object member (its key at ks, the previous member's value ending at
// prev) or an array element (ks and prev -1), and returns the value's end
// and where the next one starts; the end is -1 on malformed input.
func (l *locator) member(j, depth int, sub []int, ks, prev int) (end, next int) {
	if len(sub) > 0 {
		var ok bool
		if end, ok = l.walk(j, depth+1, sub, ks, prev); !ok {
			return -1, j
		}
	} else if end = skip(l.d, j); end < 0 {
		return -1, j
	}
	next = skipSpace(l.d, end)
	if next < len(l.d) && l.d[next] == ',' {
		next = skipSpace(l.d, next+1)
	}
	return end, next
}

// array walks the elements of the array at i and returns its end.
func (l *locator) array(i, depth int, deeper []int) int {
	j := skipSpace(l.d, i+1)
	for n := 0; j < len(l.d) && l.d[j] != ']'; n++ {
		var sub []int
		for _, k := range deeper {
			if x, ok := l.edits[k].path[depth].(int); ok && x == n {
				sub = append(sub, k)
			}
		}
		var end int
		if end, j = l.member(j, depth, sub, -1, -1); end < 0 {
			return -1
		}
	}
	if j >= len(l.d) {
		return -1
	}
	return j + 1
}

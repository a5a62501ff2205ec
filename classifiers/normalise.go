package classifiers

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Normalisation. A value can be written so that no detector reads it as
// written: in compatibility forms (fullwidth "ｊｅａｎ＠ａｃｍｅ．ｆｒ",
// fullwidth digits), split by invisible characters (a zero-width space or
// a soft hyphen inside an address), percent-encoded
// ("jean.dupont%40acme-corp.fr"), or base64- or hex-encoded (the values of
// a Kubernetes Secret, an Authorization: Basic header). Before detection a
// chunk is read through views:
//
//   - the normalised view: NFKC (compatibility forms become their plain
//     letters and digits) with invisible characters removed (Unicode's
//     default-ignorable code points: zero-width spaces and joiners, word
//     joiner, BOM, soft hyphen, bidirectional controls, variation
//     selectors, tags). The detectors read this view instead of the chunk.
//   - up to two decoded views (maxDecodePasses): each replaces, in the view
//     before it, the runs of consecutive %XX triples, the runs of 32 hex
//     digits or more, and the runs of 16 base64 characters or more
//     (standard or URL alphabet, padding allowed) that decode to printable
//     UTF-8 text, by that text. The detectors read each decoded view too,
//     and keep only the findings that touch a decoded run (the others were
//     found in the view before). The second pass finds what the first
//     decoded still encodes (base64 of a percent-encoded address).
//
// Every view keeps a map to the text it was built from: bytes it copied
// map one to one, and each place it changed (a normalised character with
// the marks that compose with it, a removed invisible character, a decoded
// run) maps as a whole to the bytes it replaced. A finding's Start and End
// are mapped through the views back to the chunk: a value that touches a
// changed place spans all of it, so a value inside a base64 run spans the
// whole run, and a value with a zero-width space inside spans that space
// too. Redaction then replaces every byte the value was written with.
//
// Most text needs none of it, and pays one pass eight bytes at a time: a
// view is built only where the chunk holds a byte of 0x80 or more (and then
// only where the characters change under NFKC or are invisible: accented
// letters are left as they are), a '%' followed by two hex digits, or a run
// of 16 bytes that may be base64.

// Encodings a value can be found under (Finding.Encoding).
const (
	EncodingPercent = "percent"
	EncodingHex     = "hex"
	EncodingBase64  = "base64"
)

// Kinds of changed places, in increasing precedence when a finding touches
// several (the outermost decoding is named).
const (
	encNone uint8 = iota
	encNormalised
	encPercent
	encHex
	encBase64
)

func encodingName(e uint8) string {
	switch e {
	case encPercent:
		return EncodingPercent
	case encHex:
		return EncodingHex
	case encBase64:
		return EncodingBase64
	}
	return ""
}

// Bounds of candidate decoding.
const (
	maxDecodePasses = 2  // decoded views after the normalised one
	minBase64Run    = 16 // base64 characters (12 decoded bytes)
	minHexRun       = 32 // hex digits (16 decoded bytes)
	// A view may grow past its source (NFKC expands some characters,
	// "ﷺ" to 33 bytes) by at most growBudget times the source plus
	// growSlack bytes; past that, characters are left as they are.
	growBudget = 3
	growSlack  = 4096
)

// view is a text the detectors read in place of the one it was built
// from (its parent view's, or the chunk when parent is nil), with the map
// back to it. segs are the changed places, sorted and disjoint in both
// texts; outside them bytes map one to one.
type view struct {
	text    []byte
	segs    []vseg
	srcLen  int
	parent  *view
	decoded bool // some seg is a decoded run
}

// vseg is a changed place: text[vLo:vHi] of the view stands for
// src[oLo:oHi]. An invisible character removed has vLo == vHi.
type vseg struct {
	vLo, vHi, oLo, oHi int
	enc                uint8
}

// segAt returns the index of the last seg with vLo <= p, or -1.
func (v *view) segAt(p int) int {
	lo, hi := 0, len(v.segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v.segs[m].vLo <= p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// startUp maps the view offset p (< len(text)), a value's first byte, to
// the source offset where that value starts.
func (v *view) startUp(p int) int {
	k := v.segAt(p)
	if k < 0 {
		return p
	}
	g := &v.segs[k]
	if p < g.vHi {
		return g.oLo
	}
	return g.oHi + p - g.vHi
}

// endUp maps the view offset q (> 0), a value's end, to the source offset
// where that value ends.
func (v *view) endUp(q int) int {
	p := q - 1
	k := v.segAt(p)
	if k < 0 {
		return q
	}
	g := &v.segs[k]
	if p < g.vHi {
		return g.oHi
	}
	return g.oHi + p - g.vHi + 1
}

// boundaryUp maps a position between bytes of the view to one of the
// source (the start of what follows it).
func (v *view) boundaryUp(p int) int {
	if p >= len(v.text) {
		return v.srcLen
	}
	return v.startUp(p)
}

// down maps the source offset o to the view: where what starts at o is.
func (v *view) down(o int) int {
	lo, hi := 0, len(v.segs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if v.segs[m].oLo <= o {
			lo = m + 1
		} else {
			hi = m
		}
	}
	k := lo - 1
	if k < 0 {
		return o
	}
	g := &v.segs[k]
	if o < g.oHi {
		return g.vLo
	}
	return g.vHi + o - g.oHi
}

// spanUp maps the value text[start:end] of the view to its source, with
// the highest kind of changed place it touches.
func (v *view) spanUp(start, end int) (int, int, uint8) {
	enc := encNone
	for k := max(0, v.segAt(start)); k < len(v.segs) && v.segs[k].vLo < end; k++ {
		g := &v.segs[k]
		if g.vHi > start { // an invisible character removed inside counts
			enc = max(enc, g.enc)
		}
	}
	return v.startUp(start), v.endUp(end), enc
}

// touchesDecoded reports whether text[start:end] touches a decoded run.
func (v *view) touchesDecoded(start, end int) bool {
	for k := max(0, v.segAt(start)); k < len(v.segs) && v.segs[k].vLo < end; k++ {
		if g := &v.segs[k]; g.enc >= encPercent && g.vHi > start {
			return true
		}
	}
	return false
}

// toRoot maps a value of the view through every view back to the chunk.
func (v *view) toRoot(start, end int) (int, int, uint8) {
	enc := encNone
	for w := v; w != nil; w = w.parent {
		var e uint8
		start, end, e = w.spanUp(start, end)
		enc = max(enc, e)
	}
	return start, end, enc
}

// viewBuilder builds a view of src; nothing is copied until the first
// change.
type viewBuilder struct {
	src     []byte
	buf     []byte // out's array when large enough (a recycled view's), or nil
	segBuf  []vseg // segs' array (a recycled view's), or nil
	out     []byte
	segs    []vseg
	done    int // src[:done] is in out
	limit   int // out may not grow past it
	decoded bool
	plain   bool // every character through norm's properties (nonASCII's reference, for tests)
	scratch []byte
	nfkc    [1 << nfkcCacheBits]nfkcEntry // see normalised
}

func (b *viewBuilder) replace(lo, hi int, repl []byte, enc uint8) bool {
	if b.out == nil {
		if need := len(b.src) + len(b.src)/16 + 64; cap(b.buf) >= need {
			b.out = b.buf[:0]
		} else {
			b.out = make([]byte, 0, need)
		}
	}
	if len(b.out)+(lo-b.done)+len(repl) > b.limit {
		return false
	}
	b.out = append(b.out, b.src[b.done:lo]...)
	vLo := len(b.out)
	b.out = append(b.out, repl...)
	if b.segs == nil {
		b.segs = b.segBuf[:0]
	}
	if len(b.segs) == cap(b.segs) {
		// Four times as many: a text that changes at every character
		// (fullwidth forms) copies its places a third as often as
		// append's doubling would.
		b.segs = append(make([]vseg, 0, max(4*len(b.segs), 64)), b.segs...)
	}
	b.segs = append(b.segs, vseg{vLo: vLo, vHi: len(b.out), oLo: lo, oHi: hi, enc: enc})
	b.done = hi
	if enc >= encPercent {
		b.decoded = true
	}
	return true
}

func (b *viewBuilder) view(parent *view) *view {
	if len(b.segs) == 0 {
		return nil
	}
	b.out = append(b.out, b.src[b.done:]...)
	return &view{text: b.out, segs: b.segs, srcLen: len(b.src), parent: parent, decoded: b.decoded}
}

// Word constants of newView's eight-byte steps.
const (
	onesBytes = 0x0101010101010101
	pctBytes  = '%' * onesBytes
)

// newView returns the view of src (itself a view's text, parent, or the
// chunk) that normalise and decode ask for, or nil when it would not
// differ from src.
func newView(src []byte, parent *view, normalise, decode bool) *view {
	b := viewBuilder{src: src, limit: growBudget*len(src) + growSlack}
	b.walk(normalise, decode, 0, len(src))
	return b.view(parent)
}

// redecode returns the view of parent's text that normalises and decodes
// again what parent decoded (its decoded runs' bytes), or nil. The view's
// text is built in buf when it is large enough (and its
// changed places in segBuf).
func redecode(parent *view, buf []byte, segBuf []vseg) *view {
	src := parent.text
	b := viewBuilder{src: src, buf: buf, segBuf: segBuf, limit: growBudget*len(src) + growSlack}
	for _, g := range parent.segs {
		if g.enc >= encPercent && g.vLo >= b.done {
			b.walk(true, true, g.vLo, g.vHi)
		}
	}
	return b.view(parent)
}

// normaliseChunk returns the normalised view of a chunk (nil when it is
// the chunk itself) and where in that view decoding may apply (nil when
// nowhere). It is the cost every chunk pays, so it reads sixteen bytes at
// a time past what needs nothing: ASCII words that are not all in
// 0x2B..0x7A (a run of 16 base64 or hex characters holds such a word, and
// prose has a space or a sign in nearly every word), and words whose
// bytes of 0x80 or more are Latin-1 letters. The view's text is built in
// buf when it is large enough, and the places in candBuf's array.
func normaliseChunk(src, buf []byte, segBuf []vseg, candBuf []cand) (*view, []cand) {
	b := viewBuilder{src: src, buf: buf, segBuf: segBuf, limit: growBudget*len(src) + growSlack}
	cands := candBuf[:0]
	n := len(src)
	floor := 0 // runs are not looked for before it
	inRange := func(c byte) bool { return c >= 0x2B && c <= 0x7A }
	pct := func(i int) {
		if i+2 < n && isHex(src[i+1]) && isHex(src[i+2]) {
			cands = append(cands, cand{at: i, pct: true})
		}
	}
	// The '%' bytes apart, with bytes.IndexByte (vectorised).
	for i := 0; ; i++ {
		k := bytes.IndexByte(src[i:], '%')
		if k < 0 {
			break
		}
		i += k
		pct(i)
	}
	for i := 0; i < n; {
		if i+16 <= n {
			w := src[i : i+16 : i+16] // one bounds check for both words
			x0 := binary.LittleEndian.Uint64(w[:8])
			x1 := binary.LittleEndian.Uint64(w[8:])
			a0 := (x0 + 0x5555555555555555) &^ (x0 + 0x0505050505050505) &^ x0 & hiBits
			a1 := (x1 + 0x5555555555555555) &^ (x1 + 0x0505050505050505) &^ x1 & hiBits
			if a0 != hiBits && a1 != hiBits && ((x0|x1)&hiBits == 0 || latin1Word(x0) && latin1Word(x1)) {
				i += 16
				continue
			}
		}
		end := min(i+8, n)
		if end-i == 8 {
			w := i
			x := binary.LittleEndian.Uint64(src[w:])
			m := x & hiBits
			if m == 0 {
				if (x+0x5555555555555555)&^(x+0x0505050505050505)&^x&hiBits != hiBits {
					i += 8
					continue
				}
				// A word of bytes in range: the run around it.
				lo, hi := w, w+8
				for lo > floor && inRange(src[lo-1]) {
					lo--
				}
				for hi < n && inRange(src[hi]) {
					hi++
				}
				if hi-lo >= minBase64Run && encodedStreak(src[lo:hi]) {
					cands = append(cands, cand{at: lo})
				}
				i, floor = hi, hi
				continue
			}
			if m&0x8000000000000000 == 0 {
				// Its bytes of 0x80 or more, by their bits: a Latin-1
				// letter (0xC3, a continuation byte) before an ASCII
				// byte of the word needs nothing.
				for m != 0 {
					k := bits.TrailingZeros64(m) >> 3
					if w+k+2 >= n || src[w+k] != 0xC3 || src[w+k+1] >= 0xC0 || src[w+k+2] >= utf8.RuneSelf {
						break
					}
					m &^= 0x8080 << (8 * k)
				}
				if m == 0 {
					i += 8
					floor = i
					continue
				}
			}
		}
		// A word with a byte of 0x80 or more, or the last bytes.
		for i < end {
			c := src[i]
			switch {
			case c < utf8.RuneSelf:
				i++
				if inRange(c) && i == n {
					lo := i
					for lo > floor && inRange(src[lo-1]) {
						lo--
					}
					if n-lo >= minBase64Run && encodedStreak(src[lo:]) {
						cands = append(cands, cand{at: lo})
					}
				}
			case c == 0xC3 && i+2 < n && src[i+1] < 0xC0 && src[i+2] < utf8.RuneSelf:
				i += 2 // a Latin-1 letter before ASCII, the usual case
				floor = i
			default:
				i = b.nonASCII(i)
				floor = i
			}
		}
	}
	// The '%' were listed first.
	if !slices.IsSortedFunc(cands, func(a, b cand) int { return a.at - b.at }) {
		slices.SortFunc(cands, func(a, b cand) int { return a.at - b.at })
	}
	v := b.view(nil)
	if v != nil {
		for i := range cands {
			cands[i].at = v.down(cands[i].at) // ASCII: copied as it is
		}
	}
	if len(cands) == 0 {
		return v, nil
	}
	return v, cands
}

// latin1Word reports whether the bytes of 0x80 or more of x (little
// endian) are all Latin-1 letters (U+00C0..U+00FF: 0xC3 and a continuation
// byte, both in x), which NFKC leaves alone and which no mark can follow
// in x (a mark's bytes are neither): the word needs no normalisation.
func latin1Word(x uint64) bool {
	h := x & hiBits
	lead := zeroBytes(x ^ 0xC3C3C3C3C3C3C3C3)
	cont := h &^ (x << 1) // 10xxxxxx
	return h == lead|cont && cont == lead<<8 && lead>>56 == 0
}

// decodeCands returns the decoded view of src at the places normaliseChunk
// listed, or nil. The view's text is built in buf when it is large enough (and its
// changed places in segBuf).
func decodeCands(src []byte, parent *view, cands []cand, buf []byte, segBuf []vseg) *view {
	b := viewBuilder{src: src, buf: buf, segBuf: segBuf, limit: growBudget*len(src) + growSlack}
	next := 0 // the end of the last run read: a '%' inside it was read with it
	for _, c := range cands {
		switch {
		case c.pct && c.at >= next:
			next = b.percent(c.at)
		case !c.pct:
			// A run that a percent run's hex digits began is read from
			// where that one ended.
			next = max(next, b.ranged(max(c.at, next)))
		}
	}
	return b.view(parent)
}

// cand is a place decoding may apply: a '%' before two hex digits, or the
// start of a run of 16 bytes or more in 0x2B..0x7A (where base64 and hex
// runs lie).
type cand struct {
	at  int
	pct bool
}

// walk reads src[from:to], eight bytes at a time past plain ASCII: with
// normalise, it normalises what NFKC changes and removes invisible
// characters; with decode, it decodes percent, hex and base64 runs. A run
// of 16 base64 characters is found without reading it byte by byte: per
// word, a mask of the bytes in 0x2B..0x7A (no carry crosses bytes), and
// the count of such bytes that ended the words before.
func (b *viewBuilder) walk(normalise, decode bool, from, to int) {
	src := b.src
	n := len(src)
	carry := 0 // bytes in 0x2B..0x7A just before i
	i := from
	for i < to {
		if i+8 <= to {
			x := binary.LittleEndian.Uint64(src[i:])
			var m uint64
			if normalise {
				m = x & hiBits
			}
			if decode {
				m |= zeroBytes(x ^ pctBytes)
				inr := (x + 0x5555555555555555) &^ (x + 0x0505050505050505) &^ x & hiBits
				if inr == hiBits {
					carry += 8
					i += 8
					continue
				}
				out := ^inr & hiBits
				if carry+bits.TrailingZeros64(out)>>3 >= minBase64Run {
					i, carry = b.ranged(i-carry), 0
					continue
				}
				carry = bits.LeadingZeros64(out) >> 3
			}
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
			carry = 0
		}
		c := src[i]
		if carry >= minBase64Run && (c < 0x2B || c > 0x7A) {
			b.ranged(i - carry) // a run that ended at a word's end
		}
		switch {
		case c >= utf8.RuneSelf:
			carry = 0
			if !normalise {
				i++
				continue
			}
			// Latin-1 letters before ASCII, the usual case, at once.
			if c == 0xC3 && i+2 < n && src[i+1] < 0xC0 && src[i+2] < utf8.RuneSelf {
				i += 2
				continue
			}
			i = b.nonASCII(i)
		case c == '%' && decode:
			carry = 0
			i = b.percent(i)
		case decode && c >= 0x2B && c <= 0x7A:
			carry++
			i++
			if i < to && (src[i] < 0x2B || src[i] > 0x7A) {
				if carry >= minBase64Run {
					i = b.ranged(i - carry)
				}
				carry = 0
			}
		default:
			carry = 0
			i++
		}
	}
	if carry >= minBase64Run {
		b.ranged(i - carry)
	}
}

// encodedStreak reports whether r holds minBase64Run bytes in a row of
// one base64 alphabet (a path such as "/doc/effective_go" mixes them).
func encodedStreak(r []byte) bool {
	std, url := 0, 0
	for _, c := range r {
		switch {
		case isAlnum(c):
			std++
			url++
		case c == '+' || c == '/':
			std, url = std+1, 0
		case c == '-' || c == '_':
			std, url = 0, url+1
		default:
			std, url = 0, 0
		}
		if std >= minBase64Run || url >= minBase64Run {
			return true
		}
	}
	return false
}

// rangeEnd returns where the run of bytes in 0x2B..0x7A at src[at] ends.
func rangeEnd(src []byte, at int) int {
	for at < len(src) && src[at] >= 0x2B && src[at] <= 0x7A {
		at++
	}
	return at
}

// ranged decodes the base64 and hex runs of 16 bytes or more in the run
// of bytes in 0x2B..0x7A at src[at], and returns where that run ends.
func (b *viewBuilder) ranged(at int) int {
	src := b.src
	e := rangeEnd(src, at)
	for p := at; p < e; {
		if !isEncodedByte(src[p]) {
			p++
			continue
		}
		q := p
		for q < e && isEncodedByte(src[q]) {
			q++
		}
		if q-p >= minBase64Run && p >= b.done {
			q = max(q, b.run(p))
		}
		p = q
	}
	return e
}

// nonASCII normalises the characters from src[i] (a byte of 0x80 or more)
// to the next ASCII byte, and returns where it stopped.
func (b *viewBuilder) nonASCII(i int) int {
	src := b.src
	hi := i
	for hi < len(src) && src[hi] >= utf8.RuneSelf {
		hi++
	}
	if stableRunes(src[i:hi]) {
		return hi
	}
	// Character by character: those NFKC leaves alone (by stableRune,
	// else by their properties: no decomposition, nothing to combine with
	// on the left, not invisible) are passed; at any other, the segment
	// it belongs to (from the character before when it combines with it)
	// is normalised.
	prev := -1 // where the character before p starts, when in this run
	if i > b.done {
		prev = i - 1
	}
	for p := i; p < hi; {
		if c := fullwidthASCII(src[p:hi]); c != 0 && !b.plain {
			// A fullwidth form of an ASCII sign, letter or digit that
			// nothing after it combines with: its ASCII byte (what the
			// path below gives, without norm's lookups).
			b.scratch = append(b.scratch[:0], c)
			if !b.replace(p, p+3, b.scratch, encNormalised) {
				return len(src)
			}
			prev, p = -1, p+3
			continue
		}
		r, size := utf8.DecodeRune(src[p:hi])
		if stableRune(r) {
			prev, p = p, p+size
			continue
		}
		props := norm.NFKC.Properties(src[p:hi])
		if props.Decomposition() == nil && props.BoundaryBefore() && !isIgnorable(r) {
			prev, p = p, p+size
			continue
		}
		start := p
		if prev >= b.done && !props.BoundaryBefore() {
			start = prev
		}
		q := start + norm.NFKC.NextBoundary(src[start:hi], true)
		if q <= p {
			q = p + size
		}
		seg := src[start:q]
		b.scratch = b.normalised(seg)
		if !bytes.Equal(b.scratch, seg) && !b.replace(start, q, b.scratch, encNormalised) {
			return len(src) // past the growth bound: the rest as it is
		}
		prev, p = -1, q
	}
	return hi
}

// fullwidthASCII returns the ASCII byte whose fullwidth form (U+FF01..
// U+FF5E, EF BC 81..EF BD 9E) s starts with, when s ends there or goes on
// with another such form, or 0. Such a form is its own segment under NFKC:
// it starts with a boundary (its ASCII letter composes with nothing before
// it) and so does the form after it; what else may follow (a combining
// mark) is left to norm.
func fullwidthASCII(s []byte) byte {
	c := fullwidthAt(s)
	if c == 0 || len(s) > 3 && fullwidthAt(s[3:]) == 0 {
		return 0
	}
	return c
}

// fullwidthAt returns the ASCII byte of the fullwidth form s starts with,
// or 0.
func fullwidthAt(s []byte) byte {
	if len(s) < 3 || s[0] != 0xEF {
		return 0
	}
	switch c := s[2]; s[1] {
	case 0xBC: // U+FF00..U+FF3F
		if c >= 0x81 && c <= 0xBF {
			return c - 0x81 + 0x21
		}
	case 0xBD: // U+FF40..U+FF5E
		if c >= 0x80 && c <= 0x9E {
			return c - 0x80 + 0x60
		}
	}
	return 0
}

// normalised returns seg in NFKC without invisible characters, in
// b.scratch. Segments of up to four bytes (one character, the usual case)
// are looked up first in a small cache of those the builder met: a text of
// fullwidth forms repeats a few characters, and norm's Append costs a
// fresh reordering buffer per call.
func (b *viewBuilder) normalised(seg []byte) []byte {
	if len(seg) > 4 {
		return dropIgnorable(norm.NFKC.Append(b.scratch[:0], seg...))
	}
	key := uint64(len(seg)) << 32
	for k, c := range seg {
		key |= uint64(c) << (8 * k)
	}
	e := &b.nfkc[(key*0x9E3779B97F4A7C15)>>(64-nfkcCacheBits)]
	if e.key == key && e.n > 0 {
		return append(b.scratch[:0], e.out[:e.n-1]...)
	}
	out := dropIgnorable(norm.NFKC.Append(b.scratch[:0], seg...))
	if len(out) < len(e.out) {
		e.key, e.n = key, uint8(len(out)+1)
		copy(e.out[:], out)
	}
	return out
}

// nfkcEntry caches the normalised form of a segment of up to four bytes
// (key: its length, then its bytes): out[:n-1], n == 0 for an empty entry.
type nfkcEntry struct {
	key uint64
	n   uint8
	out [15]byte
}

const nfkcCacheBits = 6

// ignorableAt returns where the first invisible character of s starts,
// or -1. Only a few lead bytes can start one (isIgnorable's ranges).
func ignorableAt(s []byte) int {
	for i := 0; i < len(s); {
		switch s[i] {
		case 0xC2, 0xCD, 0xD8, 0xE1, 0xE2, 0xE3, 0xEF, 0xF0, 0xF3:
			r, size := utf8.DecodeRune(s[i:])
			if isIgnorable(r) {
				return i
			}
			i += size
		default:
			i++
		}
	}
	return -1
}

// stableRunes reports, cheaply, whether every character of s (bytes of
// 0x80 or more) is one that NFKC leaves alone, that no mark follows, and
// that is not invisible: the letters of the Latin, Greek, Cyrillic,
// Armenian, Hebrew, Arabic, Devanagari and Thai alphabets, CJK ideographs,
// kana and Hangul syllables, and the common typographic punctuation
// (TestStableRunes checks every one against NFKC). Anything else goes to
// the full check.
func stableRunes(s []byte) bool {
	for i := 0; i < len(s); {
		var r rune
		if c := s[i]; c >= 0xC2 && c < 0xE0 && i+1 < len(s) && s[i+1]&0xC0 == 0x80 {
			r = rune(c&0x1F)<<6 | rune(s[i+1]&0x3F)
			i += 2
		} else {
			var size int
			r, size = utf8.DecodeRune(s[i:])
			i += size
		}
		if !stableRune(r) {
			return false
		}
	}
	return true
}

func stableRune(r rune) bool {
	switch {
	case r < 0xC0:
		return r == 0xAB || r == 0xBB || r == 0xA7 || r == 0xB0 || r == 0xA9 || r == 0xAE
	case r <= 0x17F: // Latin-1 and Latin Extended-A letters
		return r != 0x132 && r != 0x133 && r != 0x13F && r != 0x140 && r != 0x149 && r != 0x17F
	case r < 0x386:
		return r >= 0x180 && r <= 0x1C3 || r >= 0x1CD && r <= 0x1EF || r >= 0x1F4 && r <= 0x24F
	case r <= 0x3CE: // Greek
		return r != 0x387 && r != 0x38B && r != 0x38D && r != 0x3A2
	case r < 0x400:
		return false
	case r <= 0x482: // Cyrillic, its combining marks aside
		return true
	case r < 0x48A:
		return false
	case r <= 0x52F:
		return true
	case r <= 0x586: // Armenian
		return r >= 0x531 && r <= 0x556 || r >= 0x561
	case r <= 0x64A: // Hebrew and Arabic letters
		return r >= 0x5D0 && r <= 0x5EA || r >= 0x621
	case r <= 0x939: // Devanagari letters
		return r >= 0x905 && r != 0x929 && r != 0x931 && r != 0x934
	case r <= 0xE30: // Thai consonants
		return r >= 0xE01
	case r <= 0x1EFF: // Latin Extended Additional (Vietnamese)
		return r >= 0x1E00 && r != 0x1E9A && r != 0x1E9B
	case r <= 0x201E: // dashes, quotes
		return r >= 0x2013 && r != 0x2017
	case r <= 0x20AC:
		return r == 0x20AC
	case r <= 0x30FA: // CJK punctuation, kana
		return r >= 0x3001 && r <= 0x3003 || r >= 0x3041 && r <= 0x3096 || r >= 0x30A1
	case r <= 0x9FFF: // CJK ideographs
		return r >= 0x4E00
	case r <= 0xD7A3: // Hangul syllables
		return r >= 0xAC00
	}
	return false
}

// isIgnorable reports Unicode's default-ignorable code points: characters
// that render as nothing (zero-width space, joiners, word joiner, BOM,
// soft hyphen, bidirectional controls, variation selectors, tags).
func isIgnorable(r rune) bool {
	switch {
	case r == 0xAD, r == 0x34F, r == 0x61C, r == 0x115F, r == 0x1160, r == 0x17B4, r == 0x17B5, r == 0x3164, r == 0xFEFF, r == 0xFFA0:
		return true
	case r >= 0x180B && r <= 0x180F, r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x206F,
		r >= 0xFE00 && r <= 0xFE0F, r >= 0xFFF0 && r <= 0xFFF8, r >= 0x1BCA0 && r <= 0x1BCA3, r >= 0x1D173 && r <= 0x1D17A,
		r >= 0xE0000 && r <= 0xE0FFF:
		return true
	}
	return false
}

// dropIgnorable removes the default-ignorable characters of s in place.
func dropIgnorable(s []byte) []byte {
	out := s[:0]
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		if !isIgnorable(r) {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return out
}

// percent decodes the run of %XX triples at src[i] when it decodes to
// printable UTF-8, and returns where it stopped.
func (b *viewBuilder) percent(i int) int {
	src := b.src
	j := i
	for j+2 < len(src) && src[j] == '%' && isHex(src[j+1]) && isHex(src[j+2]) {
		j += 3
	}
	if j == i {
		return i + 1
	}
	dec := b.scratch[:0]
	for k := i; k < j; k += 3 {
		dec = append(dec, unhex(src[k+1])<<4|unhex(src[k+2]))
	}
	b.scratch = dec
	if printableText(dec) {
		b.replace(i, j, dec, encPercent)
	}
	return j
}

func unhex(c byte) byte {
	if c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}

// isEncodedByte reports the bytes of a base64 run, either alphabet.
func isEncodedByte(c byte) bool { return isAlnum(c) || c == '+' || c == '/' || c == '-' || c == '_' }

// run decodes the hex or base64 run around src[i] (which starts a word of
// bytes that may all be base64) when it decodes to printable UTF-8, and
// returns where the run ends.
func (b *viewBuilder) run(i int) int {
	src := b.src
	lo := i
	for lo > b.done && isEncodedByte(src[lo-1]) {
		lo--
	}
	hi := i
	for hi < len(src) && isEncodedByte(src[hi]) {
		hi++
	}
	if hi == i {
		return i + 1
	}
	if hi-lo < minBase64Run {
		return hi
	}
	r := src[lo:hi]
	if len(r) >= minHexRun && len(r)%2 == 0 && allHex(r) {
		dec := b.scratch[:0]
		for k := 0; k < len(r); k += 2 {
			dec = append(dec, unhex(r[k])<<4|unhex(r[k+1]))
		}
		b.scratch = dec
		if printableText(dec) {
			b.replace(lo, hi, dec, encHex)
			return hi
		}
	}
	end := hi
	for end < len(src) && end-hi < 2 && src[end] == '=' {
		end++
	}
	if len(r)%4 == 1 || mixedAlphabets(r) {
		return hi // not a whole number of bytes, or not base64
	}
	// The head first: most long runs (images, keys, compressed data) are
	// binary, and say so in their first bytes.
	head := r[:min(len(r), 64)&^3]
	if len(head) == len(r) {
		head = r
	}
	b.scratch = decodeBase64(b.scratch[:0], head)
	if !printableText(b.scratch) {
		return end
	}
	if len(head) < len(r) {
		b.scratch = decodeBase64(b.scratch[:0], r)
		if !printableText(b.scratch) {
			return end
		}
	}
	b.replace(lo, end, b.scratch, encBase64)
	return end
}

// mixedAlphabets reports whether r holds bytes of both base64 alphabets'
// own ('+' or '/', and '-' or '_').
func mixedAlphabets(r []byte) bool {
	var std, url bool
	for _, c := range r {
		std = std || c == '+' || c == '/'
		url = url || c == '-' || c == '_'
	}
	return std && url
}

// decodeBase64 appends to dst the bytes base64 s (without padding, either
// alphabet, or both) encodes; s must not have a length of 4n+1.
func decodeBase64(dst, s []byte) []byte {
	var q [4]byte
	for len(s) > 0 {
		k := copy(q[:], s)
		for j := 0; j < k; j++ {
			q[j] = base64Value(q[j])
		}
		v := uint32(q[0])<<18 | uint32(q[1])<<12
		if k > 2 {
			v |= uint32(q[2]) << 6
		}
		if k > 3 {
			v |= uint32(q[3])
		}
		dst = append(dst, byte(v>>16))
		if k > 2 {
			dst = append(dst, byte(v>>8))
		}
		if k > 3 {
			dst = append(dst, byte(v))
		}
		s = s[k:]
	}
	return dst
}

func base64Value(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c - 'A'
	case c >= 'a' && c <= 'z':
		return c - 'a' + 26
	case c >= '0' && c <= '9':
		return c - '0' + 52
	case c == '+' || c == '-':
		return 62
	}
	return 63 // '/' or '_'
}

// printableText reports whether b is UTF-8 text: valid, with no control
// character but tab, line feed and carriage return.
func printableText(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7F {
				return false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 || !unicode.IsGraphic(r) && !unicode.IsSpace(r) && !unicode.Is(unicode.Cf, r) {
			return false
		}
		i += size
	}
	return true
}

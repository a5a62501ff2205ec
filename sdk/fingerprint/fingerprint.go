// Package fingerprint computes winnowed k-gram fingerprints of text and keeps
// them in a [Store] so that text shared between exchanges can be found.
//
// # Model
//
// Winnowing (Schleimer, Wilkerson, Aiken, "Winnowing: local algorithms for
// document fingerprinting", SIGMOD 2003) hashes every k-gram (run of K
// consecutive bytes) of a normalised text and, in every window of W
// consecutive k-gram hashes, selects the minimum (the rightmost one on
// ties, "robust winnowing"); the selected hashes are the text's
// fingerprints. Because the selection only depends on the window, two texts
// that share a run of at least t = K + W - 1 normalised bytes always share at
// least one fingerprint (the guarantee threshold, [Options.Guarantee]), and
// a shared run of K + n·W - 1 bytes always yields at least n shared
// fingerprints, consecutive in both texts. The shared fingerprints of a
// shared run of L ≥ t bytes cover (from the first one's start to the last
// one's end) at least L − 2W + 2 bytes ([Options.Covered]): the first
// window of the run selects a k-gram starting within its first W positions,
// the last window one ending within its last W. Runs shorter than K are
// never detected (the noise threshold).
//
// Normalisation folds case (Unicode simple lower case), collapses every run
// of white space into one space and drops leading white space; with
// [Options.StripPunctuation] ASCII punctuation counts as white space too.
// The guarantees above are in bytes of the normalised text: a fragment of
// ordinary prose loses at most one byte at each end to whitespace
// collapsing, so with the defaults (K = 16, W = 8, t = 23) a 64-byte
// fragment shared verbatim (62 normalised bytes or more) always yields at
// least five consecutive shared fingerprints covering at least 48 bytes.
//
// Hashes are a polynomial rolling hash over the k-gram (one multiply-add per
// byte), passed through a 64-bit finaliser mixed with [Options.Seed]. The
// seed makes stored fingerprints useless to anyone who does not know it for
// guessing text by dictionary; it is not a MAC. Every process sharing a
// store must use the same options.
package fingerprint

import (
	"unicode"
	"unicode/utf8"
)

// Default winnowing parameters.
const (
	DefaultK      = 16
	DefaultWindow = 8
)

// Options configure fingerprinting. The zero value uses the defaults.
type Options struct {
	// K is the k-gram length in normalised bytes; 0 means DefaultK.
	K int
	// Window is the winnowing window in k-grams; 0 means DefaultWindow.
	Window int
	// Seed is mixed into every hash.
	Seed uint64
	// StripPunctuation treats ASCII punctuation as white space.
	StripPunctuation bool
}

func (o Options) withDefaults() Options {
	if o.K <= 0 {
		o.K = DefaultK
	}
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	return o
}

// Guarantee returns t = K + W - 1: texts sharing a run of at least t
// normalised bytes share at least one fingerprint.
func (o Options) Guarantee() int {
	o = o.withDefaults()
	return o.K + o.Window - 1
}

// Span returns the number of normalised bytes a shared run needs to yield n
// consecutive shared fingerprints: K + n·W - 1.
func (o Options) Span(n int) int {
	o = o.withDefaults()
	if n < 1 {
		n = 1
	}
	return o.K + n*o.Window - 1
}

// Covered returns the number of bytes that the shared fingerprints of a
// shared run of l normalised bytes cover at least: l − 2W + 2 when l ≥ t,
// else 0.
func (o Options) Covered(l int) int {
	o = o.withDefaults()
	if l < o.K+o.Window-1 {
		return 0
	}
	return max(o.K, l-2*o.Window+2)
}

// Fingerprint is one selected k-gram hash.
type Fingerprint struct {
	// Hash is the k-gram's hash.
	Hash uint64
	// Offset is the byte offset, in the input as written (not normalised),
	// of the k-gram's first byte.
	Offset int
	// End is the byte offset in the input just after the k-gram's last
	// byte.
	End int
}

const base = 0x100000001b3 // odd multiplier of the rolling hash

// Normalisation classes of ASCII bytes: a normalised byte, or one of the
// markers below.
const (
	clsSpace = 0    // white space (and punctuation when stripped)
	clsRune  = 0x80 // first byte of a multi-byte rune: the slow path
)

// normTable maps each byte to its normalised ASCII byte (lower case), or to
// clsSpace or clsRune.
type normTable [256]byte

func newNormTable(strip bool) *normTable {
	var t normTable
	for c := 0; c < 256; c++ {
		b := byte(c)
		switch {
		case b >= 0x80:
			t[c] = clsRune
		case b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f':
			t[c] = clsSpace
		case 'A' <= b && b <= 'Z':
			t[c] = b + 'a' - 'A'
		case strip && isPunct(b):
			t[c] = clsSpace
		case b == 0:
			// NUL is a byte like any other; it must not look like the
			// space class.
			t[c] = clsRune
		default:
			t[c] = b
		}
	}
	return &t
}

// Winnower fingerprints a text written to it in pieces, as a stream
// arrives: the fingerprints of the pieces written so far are exactly those
// of their concatenation. A Winnower is not safe for concurrent use.
//
// The work per input byte is a table lookup, one multiply-add of the
// rolling hash, a 64-bit mix and one comparison with the current window
// minimum; the window is rescanned only when its minimum leaves it (the
// algorithm of the winnowing paper), so selection costs O(1) amortised and
// nothing is allocated per byte.
type Winnower struct {
	k, w    int
	seed    uint64
	tab     *normTable
	pow     uint64 // base^k
	h       uint64
	mask    int    // len(ring)-1; the ring holds at least k+w normalised bytes
	ring    []byte // last normalised bytes, by normalised index & mask
	offs    []int  // input offset of each of them
	n       int    // normalised bytes so far
	space   bool   // last normalised byte was a space (or nothing yet)
	in      int    // input bytes consumed so far
	pend    [utf8.UTFMax]byte
	npend   int
	hr      []uint64 // last k-gram hashes, by k-gram index & mask (as long as ring)
	minIdx  int      // k-gram index of the current window's rightmost minimum
	minH    uint64   // its hash
	last    int      // k-gram index of the last selected fingerprint, -1 none
	out     []Fingerprint
	each    func(hash uint64) // KGrams: called for each selection instead of out
	grams   []uint64          // HashesAndGrams: every k-gram's hash appended here, when keep
	keep    bool
	hashes  []uint64 // HashesOf: selections appended here instead of out, when collect
	collect bool
}

// NewWinnower returns a Winnower with opts.
func NewWinnower(opts Options) *Winnower {
	opts = opts.withDefaults()
	w := &Winnower{k: opts.K, w: opts.Window, seed: opts.Seed, tab: newNormTable(opts.StripPunctuation)}
	w.pow = 1
	for i := 0; i < w.k; i++ {
		w.pow *= base
	}
	size := 1
	for size < w.k+w.w+1 {
		size <<= 1
	}
	w.mask = size - 1
	w.ring = make([]byte, size)
	w.offs = make([]int, size)
	w.hr = make([]uint64, size) // one mask for both rings
	w.Reset()
	return w
}

// Reset forgets everything written so far.
func (w *Winnower) Reset() {
	w.h, w.n, w.in, w.npend = 0, 0, 0, 0
	w.space = true
	w.minIdx, w.minH = -1, ^uint64(0)
	w.last = -1
	w.out = w.out[:0]
}

// Written returns the number of input bytes written so far.
func (w *Winnower) Written() int { return w.in }

// Write feeds p. It never fails; it implements io.Writer.
func (w *Winnower) Write(p []byte) (int, error) {
	n := len(p)
	if w.npend > 0 {
		// Complete a rune split across writes.
		for len(p) > 0 && w.npend < utf8.UTFMax && !utf8.FullRune(w.pend[:w.npend]) {
			w.pend[w.npend] = p[0]
			w.npend++
			p = p[1:]
		}
		if !utf8.FullRune(w.pend[:w.npend]) {
			return n, nil
		}
		r, size := utf8.DecodeRune(w.pend[:w.npend])
		if r == utf8.RuneError && size == 1 {
			w.push(w.pend[0], w.in)
			w.space = false
		} else {
			w.rune(r, w.in)
		}
		w.in += size
		// Pending bytes beyond the rune (only when they were invalid)
		// start the next runes: feed them again.
		var rest [utf8.UTFMax]byte
		m := copy(rest[:], w.pend[size:w.npend])
		w.npend = 0
		w.feed(rest[:m])
		if w.npend > 0 {
			// The re-fed bytes end in another incomplete rune.
			_, _ = w.Write(p)
			return n, nil
		}
	}
	w.feed(p)
	return n, nil
}

// WriteString is Write for a string.
func (w *Winnower) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Frontier returns the input offset from which the fingerprints that later
// writes select start: every fingerprint with a smaller Offset has been
// selected already. The next window to fill ends with the next k-gram, so
// its selection starts at most K + W - 2 normalised bytes before what was
// written (the text not yet covered by a complete window), and never at
// or before the last selection.
func (w *Winnower) Frontier() int {
	i := max(w.last+1, w.n-w.k-w.w+2, 0) // normalised index of the earliest start
	if i >= w.n {
		return w.in // only text not written yet (or a rune split across writes)
	}
	return w.offs[i&w.mask]
}

// feed normalises and hashes p. The ASCII path is inlined here with the
// state in locals; multi-byte runes and invalid bytes go through rune and
// push, which do the same steps.
func (w *Winnower) feed(p []byte) {
	tab := w.tab
	ring, offs, hr := w.ring, w.offs, w.hr
	mask := w.mask
	k, win := w.k, w.w
	pow, seed := w.pow, w.seed
	keep := w.keep
	h, n, space := w.h, w.n, w.space
	minIdx, minH := w.minIdx, w.minH
	// p[i] is at input offset off0+i: every byte of p is consumed in
	// order (the slow path moves i past a rune's bytes).
	off0 := w.in
	// The mask indexes within the rings (NewWinnower sizes them so): said
	// once here, the loop's indexing needs no bounds checks.
	_, _, _ = ring[mask], offs[mask], hr[mask]
	for i := 0; i < len(p); i++ {
		c := p[i]
		nc := tab[c]
		if nc == clsSpace {
			if space {
				continue
			}
			space = true
			nc = ' '
		} else if nc == clsRune {
			// Slow path: sync the state, decode, resync.
			in := off0 + i
			w.h, w.n, w.in, w.space, w.minIdx, w.minH = h, n, in, space, minIdx, minH
			if c == 0 {
				w.push(0, in)
				w.space = false
			} else {
				if !utf8.FullRune(p[i:]) {
					w.npend = copy(w.pend[:], p[i:])
					return
				}
				r, size := utf8.DecodeRune(p[i:])
				if r == utf8.RuneError && size == 1 {
					// Invalid byte: keep it as is, so invalid input
					// still fingerprints deterministically.
					w.push(c, in)
					w.space = false
				} else {
					w.rune(r, in)
				}
				i += size - 1
			}
			h, n, space, minIdx, minH = w.h, w.n, w.space, w.minIdx, w.minH
			continue
		} else {
			space = false
		}
		// push nc at input offset off0+i.
		ring[n&mask] = nc
		offs[n&mask] = off0 + i
		h = h*base + uint64(nc) + 1
		if n >= k {
			h -= (uint64(ring[(n-k)&mask]) + 1) * pow
		}
		n++
		if n < k {
			continue
		}
		idx := n - k
		x := (h ^ seed) * 0x9e3779b97f4a7c15
		x ^= x >> 32
		hr[idx&mask] = x
		if keep {
			w.grams = append(w.grams, x)
		}
		if x <= minH || minIdx <= idx-win || idx == win-1 {
			minIdx, minH = w.slide(x, idx, minIdx, minH)
		}
	}
	w.h, w.n, w.in, w.space, w.minIdx, w.minH = h, n, off0+len(p), space, minIdx, minH
}

func (w *Winnower) rune(r rune, off int) {
	if r == utf8.RuneError {
		w.push(0xEF, off)
		w.push(0xBF, off)
		w.push(0xBD, off)
		w.space = false
		return
	}
	if unicode.IsSpace(r) {
		w.spaceAt(off)
		return
	}
	r = unicode.ToLower(r)
	var buf [utf8.UTFMax]byte
	m := utf8.EncodeRune(buf[:], r)
	for j := 0; j < m; j++ {
		w.push(buf[j], off)
	}
	w.space = false
}

func (w *Winnower) spaceAt(off int) {
	if w.space {
		return
	}
	w.push(' ', off)
	w.space = true
}

func isPunct(c byte) bool {
	return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')
}

// push adds one normalised byte at input offset off (the slow path; feed
// inlines the same steps).
func (w *Winnower) push(c byte, off int) {
	n := w.n
	w.ring[n&w.mask] = c
	w.offs[n&w.mask] = off
	h := w.h*base + uint64(c) + 1
	if n >= w.k {
		h -= (uint64(w.ring[(n-w.k)&w.mask]) + 1) * w.pow // the byte leaving
	}
	w.h = h
	w.n = n + 1
	if w.n < w.k {
		return
	}
	idx := w.n - w.k
	x := (h ^ w.seed) * 0x9e3779b97f4a7c15
	x ^= x >> 32
	w.hr[idx&w.mask] = x
	if w.keep {
		w.grams = append(w.grams, x)
	}
	if x <= w.minH || w.minIdx <= idx-w.w || idx == w.w-1 {
		w.minIdx, w.minH = w.slide(x, idx, w.minIdx, w.minH)
	}
}

// slide runs one step of robust winnowing for k-gram idx of hash x (already
// in hr), given the previous window's rightmost minimum: it rescans the
// window when that minimum left it, selects the new minimum as a fingerprint
// when it changed and the window is full, and returns it.
func (w *Winnower) slide(x uint64, idx, minIdx int, minH uint64) (int, uint64) {
	switch {
	case x <= minH:
		minIdx, minH = idx, x // not smaller: the rightmost minimum wins ties
	case minIdx <= idx-w.w:
		// The minimum left the window: find the rightmost minimum of the
		// window, scanning leftwards and keeping only strictly smaller.
		minIdx, minH = idx, x
		hr, mask := w.hr, w.mask
		_ = hr[mask]
		for j := idx - 1; j > idx-w.w; j-- {
			if v := hr[j&mask]; v < minH {
				minIdx, minH = j, v
			}
		}
	}
	if idx < w.w-1 || minIdx == w.last {
		return minIdx, minH // no full window yet, or the same selection
	}
	w.last = minIdx
	if w.collect {
		w.hashes = append(w.hashes, minH)
		return minIdx, minH
	}
	if w.each != nil {
		w.each(minH)
		return minIdx, minH
	}
	w.out = append(w.out, Fingerprint{
		Hash:   minH,
		Offset: w.offs[minIdx&w.mask],
		End:    w.offs[(minIdx+w.k-1)&w.mask] + 1,
	})
	return minIdx, minH
}

// Take returns the fingerprints selected since the last Take (or Reset) and
// forgets them. The slice is the caller's.
func (w *Winnower) Take() []Fingerprint {
	if len(w.out) == 0 {
		return nil
	}
	out := make([]Fingerprint, len(w.out))
	copy(out, w.out)
	w.out = w.out[:0]
	return out
}

// TakeAppend is Take appending to dst, so that a caller reusing dst
// allocates nothing.
func (w *Winnower) TakeAppend(dst []Fingerprint) []Fingerprint {
	dst = append(dst, w.out...)
	w.out = w.out[:0]
	return dst
}

// HashesOf appends to dst the hashes of the fingerprints of text, in order
// of position (duplicates kept), as Reset, Write and Take would give them,
// without keeping the fingerprints' offsets: a caller that needs only the
// hashes of a large text holds 8 bytes per fingerprint instead of 24, and
// nothing twice. It resets w before and after.
func (w *Winnower) HashesOf(dst []uint64, text []byte) []uint64 {
	dst, _ = w.HashesAndGrams(dst, nil, text, nil)
	return dst
}

// HashesAndGrams is HashesOf and KGrams in one pass over text: it appends
// to dst the hashes of the fingerprints of text, in order of position
// (duplicates kept), and, when grams is not nil, passes it the hash of
// every k-gram of text, in order, in batches (the k-grams of about
// gramBatch bytes) collected in scratch, which it returns for reuse. Each k-gram is hashed once for both: a
// request whose k-gram set and fingerprints are both needed is read once,
// with one call per batch rather than per k-gram, and a large text does
// not hold all its k-grams at once. It resets w before and after.
func (w *Winnower) HashesAndGrams(dst, scratch []uint64, text []byte, grams func([]uint64)) ([]uint64, []uint64) {
	w.Reset()
	w.hashes, w.collect, w.grams, w.keep = dst, true, scratch[:0], grams != nil
	for len(text) > 0 {
		n := min(len(text), gramBatch)
		_, _ = w.Write(text[:n])
		text = text[n:]
		if grams != nil && len(w.grams) > 0 {
			grams(w.grams)
			w.grams = w.grams[:0]
		}
	}
	dst, scratch = w.hashes, w.grams[:0]
	w.hashes, w.collect, w.grams, w.keep = nil, false, nil, false
	w.Reset()
	return dst, scratch
}

// gramBatch is how many bytes of text HashesAndGrams writes before it passes
// on their k-grams (at most one a byte, and a rune cut by the batch's end).
const gramBatch = 16 << 10

// Density returns how many fingerprints a text of n bytes is expected to
// have with opts: winnowing selects about 2/(Window+1) of the k-grams.
func Density(n int, opts Options) int {
	opts = opts.withDefaults()
	return 2*n/(opts.Window+1) + n/64 + 16
}

// Of returns the fingerprints of text in order of position.
func Of(text []byte, opts Options) []Fingerprint {
	w := NewWinnower(opts)
	// Capacity: the expected density of winnowing is 2/(W+1); leave a
	// little room (append grows it on unusual text).
	w.out = make([]Fingerprint, 0, 2*len(text)/(w.w+1)+len(text)/64+16)
	w.feed(text)
	out := w.out
	w.out = nil
	return out
}

// KGrams calls fn with the hash of every k-gram of text, in order (the
// hashes winnowing selects its fingerprints from; a text's fingerprints are
// always among them). It allocates nothing per k-gram.
func KGrams(text []byte, opts Options, fn func(hash uint64)) {
	opts = opts.withDefaults()
	opts.Window = 1
	w := NewWinnower(opts)
	w.each = fn
	_, _ = w.Write(text)
}

// OfString is Of for a string.
func OfString(text string, opts Options) []Fingerprint { return Of([]byte(text), opts) }

// Hashes returns the hashes of fps, in order, without duplicates.
func Hashes(fps []Fingerprint) []uint64 {
	seen := make(map[uint64]struct{}, len(fps))
	out := make([]uint64, 0, len(fps))
	for _, f := range fps {
		if _, ok := seen[f.Hash]; ok {
			continue
		}
		seen[f.Hash] = struct{}{}
		out = append(out, f.Hash)
	}
	return out
}

package classifiers

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestNormaliseWordTricks checks the eight-byte tests of normaliseChunk
// against plain byte loops: every byte in 0x2B..0x7A, and latin1Word.
func TestNormaliseWordTricks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	pick := []byte{0x00, 0x20, 0x2A, 0x2B, 0x2C, 0x30, 0x41, 0x7A, 0x7B, 0x7F, 0x80, 0x9F, 0xA9, 0xBF, 0xC0, 0xC2, 0xC3, 0xC4, 0xCC, 0xE2, 0xEF, 0xFF}
	for range 200000 {
		var w [8]byte
		for k := range w {
			if r.IntN(3) == 0 {
				w[k] = byte(r.IntN(256))
			} else {
				w[k] = pick[r.IntN(len(pick))]
			}
		}
		if r.IntN(2) == 0 { // Latin-1 letters among ASCII
			for k := r.IntN(3); k+1 < 8; k += 2 + r.IntN(3) {
				w[k], w[k+1] = 0xC3, 0x80+byte(r.IntN(0x40))
			}
		}
		x := binary.LittleEndian.Uint64(w[:])
		inRange := true
		for _, c := range w {
			inRange = inRange && c >= 0x2B && c <= 0x7A
		}
		if got := (x+0x5555555555555555)&^(x+0x0505050505050505)&^x&hiBits == hiBits; got != inRange {
			t.Fatalf("% x: in range %v, want %v", w, got, inRange)
		}
		latin1 := true
		for k := 0; k < 8; k++ {
			switch c := w[k]; {
			case c < 0x80:
			case c == 0xC3 && k+1 < 8 && w[k+1] >= 0x80 && w[k+1] < 0xC0:
				k++
			default:
				latin1 = false
			}
		}
		if got := latin1Word(x); got != latin1 {
			t.Fatalf("% x: latin1Word %v, want %v", w, got, latin1)
		}
	}
}

// TestStableRunes checks every character stableRunes takes without the
// full check: NFKC leaves it alone, alone and after a letter, and it is
// not invisible. (A mark after it is not taken, so it need not be
// checked here.)
func TestStableRunes(t *testing.T) {
	n := 0
	for r := rune(0x80); r <= 0x10FFFF; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		if !stableRunes([]byte(s)) {
			continue
		}
		n++
		if norm.NFKC.String(s) != s || norm.NFKC.String("a"+s) != "a"+s || isIgnorable(r) {
			t.Errorf("U+%04X is taken as stable", r)
		}
	}
	if n < 30000 {
		t.Fatalf("only %d stable characters", n)
	}
}

// TestIgnorableAt checks that ignorableAt's lead bytes find every
// invisible character.
func TestIgnorableAt(t *testing.T) {
	for r := rune(0x80); r <= 0x10FFFF; r++ {
		if isIgnorable(r) && utf8.ValidRune(r) {
			if got := ignorableAt([]byte("ab" + string(r) + "c")); got != 2 {
				t.Errorf("U+%04X: ignorableAt %d, want 2", r, got)
			}
		}
	}
	if got := ignorableAt([]byte("réunion ｊ 服务")); got != -1 {
		t.Errorf("ignorableAt %d in text without one", got)
	}
}

// walkView is the normalised view walk builds of src, through nonASCII's
// fast paths or, with plain, through norm's properties at every character.
func walkView(src []byte, plain bool) *view {
	b := viewBuilder{src: src, limit: growBudget*len(src) + growSlack, plain: plain}
	b.walk(true, false, 0, len(src))
	return b.view(nil)
}

// checkNormaliseFast checks that the fast paths give the view (text and
// changed places) the plain walk gives, and that normaliseChunk's text is
// its text.
func checkNormaliseFast(t *testing.T, src []byte) {
	t.Helper()
	fast, plain := walkView(src, false), walkView(src, true)
	if (fast == nil) != (plain == nil) {
		t.Fatalf("%q: fast view %v, plain view %v", src, fast != nil, plain != nil)
	}
	if fast != nil && (!bytes.Equal(fast.text, plain.text) || !slices.Equal(fast.segs, plain.segs)) {
		t.Fatalf("%q: fast view %q %+v, plain view %q %+v", src, fast.text, fast.segs, plain.text, plain.segs)
	}
	if nv, _ := normaliseChunk(src, nil, nil, nil); (nv == nil) != (plain == nil) || nv != nil && !bytes.Equal(nv.text, plain.text) {
		t.Fatalf("%q: normaliseChunk differs from the plain walk", src)
	}
}

func TestNormaliseFastDifferential(t *testing.T) {
	// Characters around the fullwidth forms' edges and what may follow
	// them: marks that compose with an ASCII letter or sign (U+0301,
	// U+0338 with '=' gives U+2260), invisible characters, other
	// compatibility forms, bytes that are not UTF-8.
	alphabet := []string{
		"a", "=", " ", "\uff01", "\uff1d", "\uff3f", "\uff40", "\uff41", "\uff5e", "\uff5f", "\uff00",
		"\uff10", "\uff20", "\u0301", "\u0338", "\u3099", "\u200b", "\u00ad", "é", "ﬁ", "ｱ", "ﾞ", "①",
		"\xef\xbc", "\xef", "\xff",
	}
	for _, s := range []string{
		"", "\uff41", "\uff41\u0301", "\uff1d\u0338", "\uff41\uff42\u0301\uff43", "\u0301\uff41",
		"\uff41\u200b\uff42", "\uff5e\uff5f", "x\uff41\xef\xbc",
	} {
		checkNormaliseFast(t, []byte(s))
	}
	rng := rand.New(rand.NewPCG(20, 15))
	for range 20000 {
		var b []byte
		for range rng.IntN(24) {
			b = append(b, alphabet[rng.IntN(len(alphabet))]...)
		}
		checkNormaliseFast(t, b)
	}
	// Every fullwidth form and its neighbours, alone, before a mark and
	// between two forms.
	for r := rune(0xFF00); r <= 0xFF60; r++ {
		for _, s := range []string{string(r), string(r) + "\u0301", string(r) + "\u0338", "\uff41" + string(r) + "\uff41", string(r) + "a"} {
			checkNormaliseFast(t, []byte(s))
		}
	}
}

func FuzzNormaliseFast(f *testing.F) {
	f.Add("\uff4a\uff20\uff41\u0301\uff1d\u0338 \u200b")
	f.Fuzz(func(t *testing.T, s string) {
		checkNormaliseFast(t, []byte(s))
	})
}

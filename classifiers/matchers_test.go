package classifiers

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The hand-written matchers replace regular expressions in hot windows;
// they must find exactly what the expressions find.
func TestMatchersEqualRegexps(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		re    *regexp.Regexp
		find  func(text []byte, pos, hi int, m []int) []int
		parts []string
	}{
		{"github", regexp.MustCompile(`gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}`), findGitHubToken,
			[]string{"gh", "ghp_", "gho_", "ghx_", "github_pat_", "_", "aB3", "Z9", "0", "-", " ", "g", "h"}},
		{"tlp", regexp.MustCompile(`(?i)TLP ?: ?(AMBER\+STRICT|RED|AMBER|GREEN|CLEAR|WHITE)`), findTLP,
			[]string{"TLP", "tlp", "TlP", ":", " ", "AMBER", "amber", "+STRICT", "+ſtrict", "+ST", "RED", "Red", "GREEN", "CLEAR", "WHITE", "white", "x", "ſ", "K"}},
	}
	r := rand.New(rand.NewPCG(5, 6))
	for _, c := range cases {
		found := 0
		for k := 0; k < 200000; k++ {
			var b strings.Builder
			for n := r.IntN(40); n > 0; n-- {
				if c.name == "github" && r.IntN(4) == 0 {
					for j := r.IntN(70); j > 0; j-- {
						b.WriteByte("aZ09bY"[r.IntN(6)])
					}
					continue
				}
				b.WriteString(c.parts[r.IntN(len(c.parts))])
			}
			text := []byte(b.String())
			pos := r.IntN(len(text) + 1)
			hi := pos + r.IntN(len(text)-pos+1)
			want := c.re.FindSubmatchIndex(text[pos:hi])
			for i := range want {
				if want[i] >= 0 {
					want[i] += pos
				}
			}
			got := c.find(text, pos, hi, nil)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: %q[%d:%d]: got %v, want %v", c.name, text, pos, hi, got, want)
			}
			if got != nil {
				found++
			}
		}
		if found < 1000 {
			t.Errorf("%s: only %d matches: the generator does not exercise the matcher", c.name, found)
		}
	}
}

// TestEntropyTable checks the table-driven entropy equals shannon bit for
// bit (thresholds compare the exact value).
func TestEntropyTable(t *testing.T) {
	t.Parallel()
	tab := newEntropyTable()
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 20000; i++ {
		v := make([]byte, r.IntN(entropyMaxLen+20))
		alpha := 1 + r.IntN(256)
		for k := range v {
			v[k] = byte(r.IntN(alpha))
		}
		if got, want := tab.of(v), shannon(v); got != want {
			t.Fatalf("%q: %v != shannon %v", v, got, want)
		}
	}
}

// TestCandidateGate checks that every numeric detector the anchor pass
// skips for a candidate's shape would indeed have found nothing in it.
func TestCandidateGate(t *testing.T) {
	t.Parallel()
	for _, reserved := range []bool{false, true} {
		s, err := New(Options{HashKey: []byte("k"), IncludeReserved: reserved})
		if err != nil {
			t.Fatal(err)
		}
		skipped := 0
		for _, in := range corpusInputs() {
			text := in.text
			st := s.getState(context.Background(), text, 0, len(text))
			var c numCand
			for i := 0; i < len(text); {
				if !isDigit(text[i]) {
					i++
					continue
				}
				j := c.parse(text, i)
				sh := c.shape(text)
				for _, d := range s.numeric {
					if !sh.skips(d) {
						continue
					}
					skipped++
					before := len(st.out)
					d.numeric(st, d, &c)
					if len(st.out) != before {
						t.Fatalf("%s: %s skipped for %+v but finds %q", in.name, d.id, sh, text[st.out[before].start:st.out[before].end])
					}
				}
				i = j
			}
			s.putState(st)
		}
		if skipped == 0 {
			t.Fatal("no candidate skipped")
		}
	}
}

// TestSortRawByStart compares the run merge with a stable sort, for few
// runs (one k-way pass) and many (pairwise passes), with and without
// findings a few places behind their spot (moved within their run, or
// starting a new one).
func TestSortRawByStart(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 9))
	var buf []rawFinding
	for i := 0; i < 3000; i++ {
		var fs []rawFinding
		disorder := i%2 == 1
		for run := r.IntN(14); run >= 0; run-- {
			at := int32(r.IntN(50))
			for n := r.IntN(30); n >= 0; n-- {
				at += int32(r.IntN(3))
				start := at
				if disorder && r.IntN(4) == 0 {
					start -= int32(r.IntN(20))
				}
				fs = append(fs, rawFinding{start: start, who: int32(len(fs))})
			}
		}
		want := slices.Clone(fs)
		slices.SortStableFunc(want, func(a, b rawFinding) int { return int(a.start - b.start) })
		var got []rawFinding
		got, buf = sortRawByStart(fs, buf)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: merge differs from a stable sort", i)
		}
	}
}

// TestAnchorMask checks the eight-byte anchor mask (anchorCapsMask's
// first) against a byte loop:
// every byte value at every position among fillers, and random words.
func TestAnchorMask(t *testing.T) {
	t.Parallel()
	naive := func(w [8]byte) uint64 {
		var m uint64
		for k, b := range w {
			if b >= '0' && b <= '@' {
				m |= 0x80 << (8 * k)
			}
		}
		return m
	}
	check := func(w [8]byte) {
		if got, _ := anchorCapsMask(binary.LittleEndian.Uint64(w[:])); got != naive(w) {
			t.Fatalf("anchorCapsMask(%q) anchors = %#x, want %#x", w[:], got, naive(w))
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	forMaskWords([]byte{0, ' ', '/', '0', '@', 'A', 'z', 0x7f, 0x80, 0xaf, 0xb0, 0xc0, 0xff}, r.Uint64, check)
}

// forMaskWords calls check with every byte value at every position of a
// word of filler bytes, for each filler, then with 200,000 words drawn
// from random.
func forMaskWords(fillers []byte, random func() uint64, check func(w [8]byte)) {
	for _, filler := range fillers {
		for v := 0; v < 256; v++ {
			for k := 0; k < 8; k++ {
				var w [8]byte
				for i := range w {
					w[i] = filler
				}
				w[k] = byte(v)
				check(w)
			}
		}
	}
	for range 200000 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], random())
		check(w)
	}
}

// TestNameMasks checks anchorCapsMask and nameStartMask against byte
// loops, on every byte value at every position among fillers and on
// random words (a name-start bit must be exact: a missed one loses a name).
func TestNameMasks(t *testing.T) {
	t.Parallel()
	isWord := func(b byte) bool { return b < 0x80 && isAlnum(b) }
	naive := func(w [8]byte, prevWord bool) (anchors, caps, starts uint64) {
		for k, b := range w {
			bit := uint64(0x80) << (8 * k)
			if b >= '0' && b <= '@' {
				anchors |= bit
			}
			if isUpper(b) || b >= 0xC3 {
				caps |= bit
			}
			before := prevWord
			if k > 0 {
				before = isWord(w[k-1])
			}
			upperNext := k < 7 && isUpper(w[k+1])
			if !before && (isUpper(b) && !upperNext || b >= 0xC3 && b <= 0xC5) {
				starts |= bit
			}
		}
		return
	}
	check := func(w [8]byte) {
		x := binary.LittleEndian.Uint64(w[:])
		for _, prev := range []bool{false, true} {
			a, c, st := naive(w, prev)
			ga, gc := anchorCapsMask(x)
			var p uint64
			if prev {
				p = 0x80
			}
			gs := nameStartMask(x, p)
			if ga != a || gc != c || gs != st {
				t.Fatalf("%q (prev word byte %v): anchors %#x caps %#x starts %#x, want %#x, %#x, %#x", w[:], prev, ga, gc, gs, a, c, st)
			}
		}
	}
	// Random words with a quarter of their bytes at 0x80 or above.
	r := rand.New(rand.NewPCG(7, 8))
	forMaskWords([]byte{0, ' ', '-', '0', '@', 'A', 'Z', 'a', 'z', 0x7f, 0x80, 0xaf, 0xc3, 0xc6, 0xff},
		func() uint64 { return r.Uint64()&0x7f7f7f7f7f7f7f7f | r.Uint64()&r.Uint64()&0x8080808080808080 }, check)
}

// TestGateMasks checks that the gate masks pick exactly the numeric
// detectors candShape.skips keeps, for random shapes (consistent or not).
func TestGateMasks(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	if s.gates == nil {
		t.Fatal("built-in numeric detectors have no gate masks")
	}
	r := rand.New(rand.NewPCG(10, 11))
	for range 200000 {
		sh := candShape{digits: r.IntN(80), groups: r.IntN(80), firstLen: r.IntN(40), glued: r.IntN(2) == 0,
			gluedOne: r.IntN(2) == 0, upper: r.IntN(2) == 0, alphaAfter: r.IntN(2) == 0, lead12: r.IntN(2) == 0}
		m := s.gates.runs(&sh)
		for i, d := range s.numeric {
			if got, want := m&(1<<i) != 0, !sh.skips(d); got != want {
				t.Fatalf("%+v: %s runs = %v, skips says %v", sh, d.id, got, want)
			}
		}
	}
}

// TestNumSepByte checks parse's separator table against isNumSep.
func TestNumSepByte(t *testing.T) {
	t.Parallel()
	for b := range 256 {
		if numSepByte[b] != isNumSep(byte(b)) {
			t.Errorf("numSepByte[%#x] = %v, isNumSep %v", b, numSepByte[b], isNumSep(byte(b)))
		}
	}
}

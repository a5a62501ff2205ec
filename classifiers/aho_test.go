package classifiers

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// naiveOccurrences lists every (end, pattern) occurrence of the lower-case
// patterns in text, folding ASCII case.
func naiveOccurrences(patterns []string, text []byte) [][2]int {
	low := asciiLowerBytes(nil, text) // the automaton folds ASCII only
	var out [][2]int
	for pi, p := range patterns {
		for i := 0; i+len(p) <= len(low); i++ {
			if string(low[i:i+len(p)]) == p {
				out = append(out, [2]int{i + len(p), pi})
			}
		}
	}
	return out
}

// checkACScan checks m's walk over text against a plain search for m's
// patterns: every occurrence, in order of end.
func checkACScan(t *testing.T, m *acMatcher, text []byte) {
	t.Helper()
	checkACScanWith(t, m, text, new(acScratch))
}

// checkACScanWith is checkACScan walking with scratch, which may hold
// the buffers and steps of an earlier walk.
func checkACScanWith(t *testing.T, m *acMatcher, text []byte, scratch *acScratch) {
	t.Helper()
	want := naiveOccurrences(m.patterns, text)
	var got [][2]int
	m.scan(text, scratch, func(p, end int) {
		if len(got) > 0 && end < got[len(got)-1][0] {
			t.Fatalf("n=%d: end %d reported after %d", len(text), end, got[len(got)-1][0])
		}
		got = append(got, [2]int{end, p})
	})
	byEnd := func(a, b [2]int) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	}
	slices.SortFunc(got, byEnd)
	slices.SortFunc(want, byEnd)
	if !slices.Equal(got, want) {
		t.Fatalf("n=%d: got %d occurrences, want %d", len(text), len(got), len(want))
	}
}

// TestACScanMatchesNaive checks the lane walk against a plain search on
// texts around the length where scan switches to lanes, with occurrences
// straddling the lanes' bounds, for both table widths.
func TestACScanMatchesNaive(t *testing.T) {
	t.Parallel()
	patterns := []string{"password", "pass", "ss", "token", "a", "confidential", "tlp:amber", "iban", "ban", "n° tva", "secret_key"}
	for _, wide := range []bool{false, true} {
		m := newACMatcherWidth(patterns, wide)
		if (m.delta32 != nil) != wide || (m.delta16 != nil) == wide {
			t.Fatalf("wide %v: delta16 %d entries, delta32 %d", wide, len(m.delta16), len(m.delta32))
		}
		r := rand.New(rand.NewPCG(1, 2))
		alphabet := "passwordTOKENtlp:amberIBANconfidential ss_key°n"
		for _, n := range []int{0, 1, 7, 40, acLanes*(4*m.maxLen+256) - 1, acLanes * (4*m.maxLen + 256), acLanes*(4*m.maxLen+256) + 1, acLanes*(4*m.maxLen+256) + 3, 301, 1000, 1001, 4096, 9999} {
			for round := 0; round < 20; round++ {
				var b strings.Builder
				for b.Len() < n {
					if r.IntN(5) == 0 {
						b.WriteString(patterns[r.IntN(len(patterns))])
					} else {
						b.WriteByte(alphabet[r.IntN(len(alphabet))])
					}
				}
				checkACScan(t, m, []byte(b.String()[:n]))
			}
		}
	}
}

// TestACScanScratchReused walks texts of many occurrences (more steps to
// states with output than acScratch first holds) and of few, in turn, with
// one scratch, as a Scanner's recycled scan states do: each walk finds
// what a plain search does, whatever the walk before left in the scratch.
func TestACScanScratchReused(t *testing.T) {
	t.Parallel()
	patterns := []string{"key", "ey", "token", "a", "passwd"}
	for _, wide := range []bool{false, true} {
		m := newACMatcherWidth(patterns, wide)
		r := rand.New(rand.NewPCG(5, 6))
		var scratch acScratch
		for _, c := range []struct {
			n     int
			dense bool
		}{{20000, true}, {3000, false}, {60000, true}, {5000, true}, {2000, false}, {100000, true}} {
			var b strings.Builder
			for b.Len() < c.n {
				switch {
				case c.dense && r.IntN(3) == 0:
					b.WriteString(patterns[r.IntN(len(patterns))])
				case c.dense:
					b.WriteByte("akeytn"[r.IntN(6)])
				default:
					b.WriteByte("bcdfghijlmoqrsuvwxz "[r.IntN(20)])
				}
			}
			checkACScanWith(t, m, []byte(b.String()[:c.n]), &scratch)
		}
		if len(scratch.ev[0]) <= acScratchMin {
			t.Fatalf("wide %v: the buffers never grew (%d): the test needs denser texts", wide, len(scratch.ev[0]))
		}
	}
}

// TestACLargeAutomaton checks an automaton too big for 16-bit entries (as
// many custom keywords make) takes 32-bit ones and finds what a plain
// search does, and that the built-in keywords fit in 16.
func TestACLargeAutomaton(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_-"
	patterns := make([]string, 3000)
	for i := range patterns {
		b := make([]byte, 6+r.IntN(10))
		for j := range b {
			b[j] = alphabet[r.IntN(len(alphabet))]
		}
		patterns[i] = string(b)
	}
	m := newACMatcher(patterns)
	if m.delta32 == nil || m.delta16 != nil {
		t.Fatalf("%d states × %d: want 32-bit entries", len(m.depth), m.half)
	}
	if len(m.depth)*int(m.half) <= 1<<16 {
		t.Fatalf("%d states × %d fit in 16 bits: the test needs more patterns", len(m.depth), m.half)
	}
	for _, n := range []int{50, 5000, 40000} {
		var b strings.Builder
		for b.Len() < n {
			if r.IntN(3) == 0 {
				b.WriteString(patterns[r.IntN(len(patterns))])
			} else {
				b.WriteByte(alphabet[r.IntN(len(alphabet))])
			}
		}
		checkACScan(t, m, []byte(b.String()[:n]))
	}
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	if s.ac.delta16 == nil {
		t.Fatalf("built-in keywords: %d states × %d do not fit in 16 bits", len(s.ac.depth), s.ac.half)
	}
}

func BenchmarkACScanDense1MB(b *testing.B) {
	s, err := New(Options{HashKey: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	data := denseCorpus(1 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var scratch acScratch
	hits := 0
	for b.Loop() {
		s.ac.scan(data, &scratch, func(p, end int) { hits++ })
	}
	_ = fmt.Sprint(hits)
}

// TestACStateDivision checks state's reciprocal division against e/half
// for every half stride and the entries near each multiple and near 2^32.
func TestACStateDivision(t *testing.T) {
	t.Parallel()
	for n := uint32(2); n <= 129; n++ {
		m := &acMatcher{half: n, recip: ^uint64(0)/uint64(n) + 1}
		check := func(e uint32) {
			if got := m.state(e); got != e/n {
				t.Fatalf("half %d: state(%d) = %d, want %d", n, e, got, e/n)
			}
		}
		for q := uint32(0); q < 5000; q++ {
			for d := uint32(0); d < n; d += max(1, n/7) {
				check(q*n + d)
			}
			check(q*n + n - 1)
		}
		for e := ^uint32(0); e > ^uint32(0)-4*n; e-- {
			check(e)
		}
	}
}

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

// TestACScanMatchesNaive checks the two-lane walk against a plain search on
// texts around the length where scan switches to two lanes, with
// occurrences straddling the middle.
func TestACScanMatchesNaive(t *testing.T) {
	t.Parallel()
	patterns := []string{"password", "pass", "ss", "token", "a", "confidential", "tlp:amber", "iban", "ban", "n° tva", "secret_key"}
	m := newACMatcher(patterns)
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
			text := []byte(b.String()[:n])
			want := naiveOccurrences(patterns, text)
			var got [][2]int
			var pending [acLanes - 1][]acHit
			m.scan(text, &pending, func(p, end int) {
				if len(got) > 0 && end < got[len(got)-1][0] {
					t.Fatalf("n=%d: end %d reported after %d", n, end, got[len(got)-1][0])
				}
				got = append(got, [2]int{end, p})
			})
			for _, p := range pending {
				if len(p) != 0 {
					t.Fatalf("n=%d: pending not emptied", n)
				}
			}
			byEnd := func(a, b [2]int) int {
				if c := cmp.Compare(a[0], b[0]); c != 0 {
					return c
				}
				return cmp.Compare(a[1], b[1])
			}
			slices.SortFunc(got, byEnd)
			slices.SortFunc(want, byEnd)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d: got %d occurrences, want %d", n, len(got), len(want))
			}
		}
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
	var pending [acLanes - 1][]acHit
	hits := 0
	for b.Loop() {
		s.ac.scan(data, &pending, func(p, end int) { hits++ })
	}
	_ = fmt.Sprint(hits)
}

// TestACStateDivision checks state's reciprocal division against s/nclass
// for every class count and the premultiplied values near each multiple
// and near 2^31.
func TestACStateDivision(t *testing.T) {
	t.Parallel()
	for n := uint32(2); n <= 257; n++ {
		m := &acMatcher{nclass: int(n), recip: ^uint64(0)/uint64(n) + 1}
		check := func(s uint32) {
			if got := m.state(s); got != s/n {
				t.Fatalf("nclass %d: state(%d) = %d, want %d", n, s, got, s/n)
			}
		}
		for q := uint32(0); q < 5000; q++ {
			for d := uint32(0); d < n; d += max(1, n/7) {
				check(q*n + d)
			}
			check(q*n + n - 1)
		}
		for s := uint32(outFlag - 1); s > outFlag-1-4*n; s-- {
			check(s)
		}
	}
}

package classifiers

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestScanStateReuse: a scan state recycled from the scans before (their
// keyword windows, context hits and custom hits cleared detector by
// detector, only those a scan met: see scanState.touched) finds what a
// state never used finds, for pieces of dense text scanned one after the
// other as a stream's partial scans are (short texts of every kind of
// value, each after a different one). A detector whose windows or hits
// were not cleared would run on the previous text's windows here.
func TestScanStateReuse(t *testing.T) {
	ctx := context.Background()
	scanners := partialScanners(t)
	if n := len(scanners["builtins"].dets); n <= 64 {
		t.Fatalf("%d built-in detectors: the test does not reach a second word of the bitset", n)
	}
	corpora := [][]byte{mixedCorpus(20000, 5), denseCorpusSeed(20000, 6), peopleCorpus(20000, 7)}
	rounds := 400 / raceScale
	for name, s := range scanners {
		r := rand.New(rand.NewPCG(11, 12))
		for i := range rounds {
			c := corpora[r.IntN(len(corpora))]
			lo := r.IntN(len(c))
			text := c[lo:min(len(c), lo+1+r.IntN(600))]
			from := r.IntN(len(text) + 1)
			got, gotAt, err := s.ScanPartialFrom(ctx, text, from, PartialOptions{MaxHold: 256})
			if skip(t, err) {
				continue
			}
			s.states = sync.Pool{} // the next scan gets a state never used
			want, wantAt, err := s.ScanPartialFrom(ctx, text, from, PartialOptions{MaxHold: 256})
			if skip(t, err) {
				continue
			}
			if gotAt != wantAt {
				t.Fatalf("%s, round %d: settled %d with a recycled state, %d with a new one", name, i, gotAt, wantAt)
			}
			if g, w := positioned(got, 0), positioned(want, 0); g != w {
				t.Fatalf("%s, round %d:\n recycled %s\n new      %s", name, i, g, w)
			}
		}
	}
}

package verify

import (
	"math/rand/v2"
	"testing"
)

// TestHashSetAddAll: adding hashes at once (addAll) makes the set that
// adding them one by one (add) makes, from an empty set without a table, a
// set reset for fewer hashes than come (it grows) and one already holding
// some: the same members (0 and duplicates included), count and answers
// for hashes not added.
func TestHashSetAddAll(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	batch := func(n int) []uint64 {
		hs := make([]uint64, n)
		for i := range hs {
			switch r.IntN(10) {
			case 0:
				hs[i] = 0
			case 1:
				if i > 0 {
					hs[i] = hs[r.IntN(i)] // a duplicate
					continue
				}
				fallthrough
			default:
				hs[i] = r.Uint64() & 0xffff_ffff_0000_ffff // structure in the middle bits
			}
		}
		return hs
	}
	for _, tc := range []struct {
		name       string
		reset      int // -1: the zero hashSet
		before, hs int
	}{
		{"zero set, none", -1, 0, 0},
		{"zero set", -1, 0, 100},
		{"reset small, grows", 4, 0, 1000},
		{"reset large", 2000, 0, 1000},
		{"holding some", 10, 50, 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var one, all hashSet
			if tc.reset >= 0 {
				one.reset(tc.reset)
				all.reset(tc.reset)
			}
			pre := batch(tc.before)
			for _, h := range pre {
				one.add(h)
				all.add(h)
			}
			hs := batch(tc.hs)
			for _, h := range hs {
				one.add(h)
			}
			all.addAll(hs)
			if one.n != all.n || one.zero != all.zero {
				t.Fatalf("addAll: %d hashes (zero %v), add: %d (zero %v)", all.n, all.zero, one.n, one.zero)
			}
			for _, h := range append(pre, hs...) {
				if !all.has(h) {
					t.Fatalf("added hash %#x not in the set", h)
				}
			}
			for range 1000 {
				h := r.Uint64() | 1
				if all.has(h) != one.has(h) {
					t.Fatalf("hash %#x: addAll's set says %v, add's %v", h, all.has(h), one.has(h))
				}
			}
		})
	}
}

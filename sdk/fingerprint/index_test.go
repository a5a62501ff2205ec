package fingerprint

import (
	"math/rand/v2"
	"testing"
)

// TestHashIndex checks the index against a map under random puts and
// deletes, with hashes crowded into few home slots so that probe sequences
// wrap around and deletions shift entries back.
func TestHashIndex(t *testing.T) {
	// inv is the inverse of the placing multiplier: h = y·inv puts h at the
	// home given by y's top bits.
	inv := uint64(0x9e3779b97f4a7c15)
	for i := 0; i < 5; i++ {
		inv *= 2 - 0x9e3779b97f4a7c15*inv
	}
	for _, tc := range []struct {
		name  string
		keys  int
		place func(k uint64) uint64 // y for key k
	}{
		{"spread", 5000, func(k uint64) uint64 { return k * 0x2545f4914f6cdd1d }},
		{"crowded", 300, func(k uint64) uint64 { return k%8<<61 | k }},
		{"one-home", 40, func(k uint64) uint64 { return k }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.keys)))
			key := func() uint64 { return tc.place(uint64(r.IntN(tc.keys))) * inv }
			x := newHashIndex(16)
			want := map[uint64]uint32{}
			for op := 0; op < 200000; op++ {
				h := key()
				switch r.IntN(3) {
				case 0, 1:
					v := r.Uint32N(1 << 31)
					x.put(h, v)
					want[h] = v
				default:
					x.del(h)
					delete(want, h)
				}
				if op%997 == 0 || op == 199999 {
					if x.n != len(want) {
						t.Fatalf("op %d: %d entries, want %d", op, x.n, len(want))
					}
					for k, v := range want {
						if got, ok := x.get(k); !ok || got != v {
							t.Fatalf("op %d: get(%x) = %d, %v; want %d", op, k, got, ok, v)
						}
					}
				}
				if _, ok := want[h]; !ok {
					if _, found := x.get(h); found {
						t.Fatalf("op %d: deleted %x still found", op, h)
					}
				}
			}
		})
	}
}

package fingerprint

import (
	"math/rand/v2"
	"testing"
)

// keysAt returns n distinct random hashes whose home slot in x is one of
// homes, found by drawing hashes until enough land there.
func keysAt(r *rand.Rand, x *hashIndex, n int, homes ...int) []uint64 {
	seen := map[uint64]bool{}
	var out []uint64
	for len(out) < n {
		h := r.Uint64()
		i, _ := x.locate(h)
		for _, want := range homes {
			if i == want && !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	return out
}

// TestHashIndex checks the index against a map under random inserts,
// updates and deletes, up to its maximum load, with hashes spread over the
// table, crowded into a few home slots (long runs, Robin Hood swaps and
// backward shifts) and homed at the table's end (runs that wrap around).
func TestHashIndex(t *testing.T) {
	const size = 1000 // not a power of two
	for _, tc := range []struct {
		name  string
		homes []int // nil: anywhere
		keys  int
	}{
		{"spread", nil, 3000},
		{"crowded", []int{3, 4, 9}, 120},
		{"wrap", []int{size - 2, size - 1, 0}, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.keys)))
			x := newHashIndex(size)
			var pool []uint64
			if tc.homes == nil {
				for range tc.keys {
					pool = append(pool, r.Uint64())
				}
			} else {
				pool = keysAt(r, &x, tc.keys, tc.homes...)
			}
			want := map[uint64]uint32{}
			for op := 0; op < 200000; op++ {
				h := pool[r.IntN(len(pool))]
				switch r.IntN(4) {
				case 0, 1:
					if _, ok := want[h]; !ok && x.full(1) {
						break
					}
					v := r.Uint32()
					p, found := x.ref(h, v)
					if p == nil {
						t.Fatalf("op %d: ref(%x) overflowed with %d entries", op, h, x.n)
					}
					old, had := want[h]
					if found != had || found && *p != old || !found && *p != v {
						t.Fatalf("op %d: ref(%x) = %d, %v; want %d, %v", op, h, *p, found, old, had)
					}
					*p = v
					want[h] = v
				case 2:
					if _, ok := want[h]; ok {
						v := r.Uint32()
						x.slots[x.find(h)].val = v
						want[h] = v
					}
				default:
					if i := x.find(h); i >= 0 {
						x.delAt(i)
					}
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

// TestHashIndexOverflow: hashes sharing one home fill a run until one
// would be 255 slots from home; ref then reports it (nil), and every hash
// put before it is still found.
func TestHashIndexOverflow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	x := newHashIndex(4096)
	keys := keysAt(r, &x, maxDist+2, 17)
	for i, h := range keys {
		p, found := x.ref(h, uint32(i))
		if i <= maxDist {
			if p == nil || found {
				t.Fatalf("key %d: ref = %v, %v; want a new entry", i, p, found)
			}
			continue
		}
		if p != nil {
			t.Fatalf("key %d put %d slots from its home", i, i)
		}
	}
	for i, h := range keys[:maxDist+1] {
		if v, ok := x.get(h); !ok || v != uint32(i) {
			t.Fatalf("key %d: get = %d, %v", i, v, ok)
		}
	}
}

// TestHashIndexFalseMatch measures how often a hash that is not in the
// index finds an entry (its reduced key equal to a stored one's): about
// load·2⁻²⁴ a lookup. Two million lookups in a table at 4/5 load expect
// 0.1 such matches; a remainder compared on fewer bits (or not at all)
// would give thousands.
func TestHashIndexFalseMatch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	x := newHashIndex(1 << 16)
	in := map[uint64]bool{}
	for !x.full(1) {
		h := r.Uint64()
		x.ref(h, 1)
		in[h] = true
	}
	falses := 0
	const lookups = 2_000_000
	for range lookups {
		h := r.Uint64()
		if _, ok := x.get(h); ok && !in[h] {
			falses++
		}
	}
	if falses > 4 {
		t.Fatalf("%d false matches in %d lookups at load %.2f, want about %.2f", falses, lookups, float64(x.n)/float64(len(x.slots)), float64(lookups)*0.8/(1<<24))
	}
}

// BenchmarkHashIndexMiss is a lookup of an absent hash at 4/5 load.
func BenchmarkHashIndexMiss(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	x := newHashIndex(1 << 20)
	for !x.full(1) {
		x.ref(r.Uint64(), 1)
	}
	probe := make([]uint64, 4096)
	for i := range probe {
		probe[i] = r.Uint64()
	}
	i := 0
	for b.Loop() {
		x.get(probe[i&4095])
		i++
	}
}

package fingerprint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// storeModel is a plain reference for [MemoryStore]: the live exchanges
// with their fingerprint sets, in order of expiry (ties in order of
// recording), bounded in number like MaxExchanges.
type storeModel struct {
	max   int
	order []string // order of expiry
	exs   map[string]*modelExchange
}

type modelExchange struct {
	hashes  map[uint64]bool
	expires time.Time
}

func (m *storeModel) record(name string, hashes []uint64, expires time.Time) {
	e := m.exs[name]
	if e == nil {
		e = &modelExchange{hashes: map[uint64]bool{}}
		m.exs[name] = e
	}
	for _, h := range hashes {
		e.hashes[h] = true
	}
	e.expires = expires
	m.order = slices.DeleteFunc(m.order, func(n string) bool { return n == name })
	at := len(m.order)
	for at > 0 && m.exs[m.order[at-1]].expires.After(expires) {
		at--
	}
	m.order = slices.Insert(m.order, at, name)
	for len(m.order) > m.max {
		m.forget(m.order[0])
	}
}

func (m *storeModel) forget(name string) {
	delete(m.exs, name)
	m.order = slices.DeleteFunc(m.order, func(n string) bool { return n == name })
}

func (m *storeModel) expire(now time.Time) {
	for len(m.order) > 0 && !m.exs[m.order[0]].expires.After(now) {
		m.forget(m.order[0])
	}
}

func (m *storeModel) holders(h uint64) []string {
	var out []string
	for _, n := range m.order {
		if m.exs[n].hashes[h] {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// TestMemoryStoreModel checks the memory store against the reference under
// random recordings (new exchanges and more fingerprints for known ones,
// with several TTLs), the clock moving on (expiry), evictions past
// MaxExchanges and lookups of held and absent hashes, from an empty store
// through many rebuilds of its index. With holder lists long enough for
// every holder, the holders and counts must be the reference's exactly;
// with short lists (exchanges never recorded twice), the counts must be
// exact and the listed holders true ones (the lists keep the most recent
// holders, so a list may lose its holders to forgetting while holders it
// dropped are still live).
func TestMemoryStoreModel(t *testing.T) {
	for _, tc := range []struct {
		name       string
		maxHolders int
		again      bool // record known exchanges again
	}{
		{"all-holders", 1000, true},
		{"short-lists", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			r := rand.New(rand.NewPCG(21, uint64(tc.maxHolders)))
			clk := &clock{t: time.Unix(1e9, 0)}
			const maxEx = 40
			s := NewMemoryStore(MemoryOptions{MaxExchanges: maxEx, MaxHolders: tc.maxHolders, Now: clk.now})
			m := &storeModel{max: maxEx, exs: map[string]*modelExchange{}}
			pool := make([]uint64, 5000) // shared fingerprints
			for i := range pool {
				pool[i] = r.Uint64()
			}
			ttls := []time.Duration{time.Minute, 5 * time.Minute, 20 * time.Minute}
			next := 0
			var refs Refs
			for op := 0; op < 3000; op++ {
				switch k := r.IntN(10); {
				case k < 5:
					name := fmt.Sprint("ex-", next)
					if tc.again && next > 0 && r.IntN(3) == 0 {
						name = fmt.Sprint("ex-", r.IntN(next))
					} else {
						next++
					}
					hashes := make([]uint64, r.IntN(200))
					for i := range hashes {
						if r.IntN(4) == 0 {
							hashes[i] = r.Uint64() // its own
						} else {
							hashes[i] = pool[r.IntN(len(pool))]
						}
					}
					ttl := ttls[r.IntN(len(ttls))]
					m.expire(clk.now())
					if err := s.Record(ctx, name, hashes, ttl); err != nil {
						t.Fatal(err)
					}
					m.record(name, hashes, clk.now().Add(ttl))
				case k < 6:
					clk.add(time.Duration(r.IntN(120)) * time.Second)
				default:
					m.expire(clk.now())
					hashes := make([]uint64, 50)
					for i := range hashes {
						if r.IntN(5) == 0 {
							hashes[i] = r.Uint64()
						} else {
							hashes[i] = pool[r.IntN(len(pool))]
						}
					}
					exclude := fmt.Sprint("ex-", r.IntN(next+1))
					if err := s.LookupRefs(ctx, exclude, hashes, &refs); err != nil {
						t.Fatal(err)
					}
					for i, h := range hashes {
						want := m.holders(h)
						others := slices.DeleteFunc(slices.Clone(want), func(n string) bool { return n == exclude })
						var got []string
						for _, ref := range refs.Of(i) {
							id, ok := s.ExchangeID(ref)
							if !ok {
								t.Fatalf("op %d: a holder of %x is not remembered", op, h)
							}
							got = append(got, id)
						}
						slices.Sort(got)
						// An excluded holder that its list dropped is
						// counted among the others (the fingerprint
						// looks more common, never foreign).
						if n := int(refs.Others[i]); n != len(others) &&
							(n != len(want) || len(want) == len(others) || tc.maxHolders >= maxEx) {
							t.Fatalf("op %d: %x has %d other holders, want %d (%v)", op, h, refs.Others[i], len(others), others)
						}
						if tc.maxHolders >= maxEx && !slices.Equal(got, others) || len(got) > tc.maxHolders {
							t.Fatalf("op %d: holders of %x = %v, want %v", op, h, got, others)
						}
						for _, n := range got {
							if !slices.Contains(others, n) {
								t.Fatalf("op %d: %s listed as a holder of %x", op, n, h)
							}
						}
					}
				}
				if live, _ := s.Len(); live != len(m.order) {
					t.Fatalf("op %d: %d exchanges remembered, want %d", op, live, len(m.order))
				}
			}
			t.Logf("index of %d slots, %d entries", len(s.index.slots), s.index.n)
		})
	}
}

// TestMemoryStoreCrowded records hashes that all share one home slot in
// the store's first table, more than a run can hold within maxDist of it:
// the store rebuilds its index larger and remembers every one.
func TestMemoryStoreCrowded(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(MemoryOptions{})
	first := len(s.index.slots)
	hashes := keysAt(rand.New(rand.NewPCG(8, 8)), &s.index, 300, 5)
	if err := s.Record(ctx, "crowded", hashes, time.Hour); err != nil {
		t.Fatal(err)
	}
	if len(s.index.slots) == first {
		t.Fatalf("the index of %d slots took %d hashes of one home", first, len(hashes))
	}
	hs, err := s.Lookup(ctx, hashes)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if h.Count != 1 || len(h.Exchanges) != 1 || h.Exchanges[0] != "crowded" {
			t.Fatalf("hash %d: %+v", i, h)
		}
	}
	if _, entries := s.Len(); entries != len(hashes) {
		t.Fatalf("%d entries, want %d", entries, len(hashes))
	}
}

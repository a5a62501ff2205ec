package fingerprint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// exchangeHashes returns the fingerprints of n exchanges of a 4 KB request
// and a 1 KB answer of random text (nothing shared: the most memory per
// exchange), plus one key of each exchange's own (as an entity key is) so
// that a lookup can tell exactly which exchanges are remembered.
func exchangeHashes(seed uint64, n int) [][]uint64 {
	r := rand.New(rand.NewPCG(seed, seed+1))
	w := NewWinnower(Options{})
	out := make([][]uint64, n)
	for i := range out {
		h := w.HashesOf(nil, []byte(randomText(r, 4<<10)+" "+randomText(r, 1<<10)))
		out[i] = append(h, ownKey(i))
	}
	return out
}

func ownKey(i int) uint64 { return uint64(i)<<32 | 0xfeed }

// TestMemoryStoreMaxBytes fills a store past its memory bound: it stays
// under the bound after every recording, the oldest exchanges are the ones
// forgotten (and counted), the newest are all still found, and the heap
// the store holds, measured after a collection, is what Bytes says within
// a few percent. Forgetting everything gives back every byte accounted.
func TestMemoryStoreMaxBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("records 600 exchanges")
	}
	ctx := context.Background()
	const bound = 4 << 20
	exs := exchangeHashes(11, 600)
	clk := &clock{t: time.Unix(1e9, 0)}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s := NewMemoryStore(MemoryOptions{MaxBytes: bound, Now: clk.now})
	for i, h := range exs {
		if err := s.Record(ctx, fmt.Sprintf("%032x", i), h, time.Hour); err != nil {
			t.Fatal(err)
		}
		if b := s.Bytes(); b > bound {
			t.Fatalf("after %d exchanges the store holds %d bytes, over its bound of %d", i+1, b, bound)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(exs)
	heap := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	live, _ := s.Len()
	t.Logf("bound %d bytes: %d exchanges remembered, %d forgotten, %d bytes accounted, %d bytes of heap", bound, live, s.Forgotten(), s.Bytes(), heap)
	if f := s.Forgotten(); live == len(exs) || int(f) != len(exs)-live {
		t.Fatalf("%d remembered and %d forgotten of %d recorded", live, f, len(exs))
	}
	if heap > s.Bytes()*105/100 || heap > bound {
		t.Errorf("the store holds %d bytes of heap, over its bound %d or 105%% of the %d it accounts", heap, bound, s.Bytes())
	}
	keys := make([]uint64, len(exs))
	for i := range exs {
		keys[i] = ownKey(i)
	}
	hs, err := s.Lookup(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		want := i >= len(exs)-live // the newest are remembered, the oldest forgotten
		if got := h.Count == 1 && len(h.Exchanges) == 1 && h.Exchanges[0] == fmt.Sprintf("%032x", i); got != want {
			t.Fatalf("exchange %d of %d (%d remembered): found %v, want %v", i, len(exs), live, got, want)
		}
	}
	// Past the TTL everything is forgotten, and every byte accounted to
	// the exchanges given back: what remains is the fixed tables.
	clk.add(2 * time.Hour)
	_ = s.Record(ctx, "last", []uint64{1}, time.Hour)
	if n, e := s.Len(); n != 1 || e != 1 {
		t.Fatalf("Len = %d, %d after expiry; want 1, 1", n, e)
	}
	fixed := s.index.bytes() + int64(cap(s.exs))*slotBytes + int64(cap(s.posts))*postingBytes + int64(cap(s.freeSlots)+cap(s.freePosts))*4
	if want := fixed + 8*int64(cap(s.exs[s.byID["last"]].hashes)) + mapBytes + int64(len("last")); s.Bytes() != want {
		t.Fatalf("Bytes = %d after expiry, want %d: accounting drifted", s.Bytes(), want)
	}
	if s.Forgotten() != uint64(len(exs)-live) {
		t.Fatalf("expiry counted as forgotten: %d", s.Forgotten())
	}
}

// TestMemoryStoreMaxBytesShared: with shared fingerprints (posting lists),
// the accounting still returns to the fixed tables once all is forgotten.
func TestMemoryStoreMaxBytesShared(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Unix(1e9, 0)}
	s := NewMemoryStore(MemoryOptions{MaxBytes: 256 << 10, MaxHolders: 3, Now: clk.now})
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 400; i++ {
		h := make([]uint64, 50)
		for j := range h {
			h[j] = uint64(r.IntN(300)) // heavily shared
		}
		_ = s.Record(ctx, fmt.Sprint("ex-", i), h, time.Duration(1+r.IntN(60))*time.Minute)
		if b := s.Bytes(); b > 256<<10 {
			t.Fatalf("%d bytes over the bound", b)
		}
	}
	clk.add(2 * time.Hour)
	_ = s.Record(ctx, "last", nil, time.Hour)
	fixed := s.index.bytes() + int64(cap(s.exs))*slotBytes + int64(cap(s.posts))*postingBytes + int64(cap(s.freeSlots)+cap(s.freePosts))*4
	if want := fixed + mapBytes + int64(len("last")); s.Bytes() != want {
		t.Fatalf("Bytes = %d after expiry, want %d", s.Bytes(), want)
	}
}

// fillStore records n exchanges of 1,150 fingerprints each (a 4 KB
// request and a 1 KB answer of text shared with no other exchange),
// drawn at random, and returns the store.
func fillStore(ctx context.Context, n int, opts MemoryOptions) *MemoryStore {
	r := rand.New(rand.NewPCG(uint64(n), 1))
	opts.MaxExchanges, opts.MaxEntries = n, 2000*n
	s := NewMemoryStore(opts)
	h := make([]uint64, 1150)
	for i := 0; i < n; i++ {
		for j := range h {
			h[j] = r.Uint64()
		}
		_ = s.Record(ctx, fmt.Sprintf("%032x", i), h, time.Hour)
	}
	return s
}

// BenchmarkMemoryStoreSize records and looks up against stores that
// remember 1,000 and 100,000 exchanges of a 4 KB request and a 1 KB answer
// (1,150 fingerprints each, shared with no other exchange): record is one
// more exchange (the oldest is forgotten), lookup the 230 fingerprints of
// a 1 KB answer, half of them held by the store. It reports the heap the
// store holds per remembered exchange (HeapInuse after a collection, less
// before). The 100,000 store holds some 4 GB: run it on a machine that has
// them.
func BenchmarkMemoryStoreSize(b *testing.B) {
	for _, n := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("%dk", n/1000), func(b *testing.B) {
			ctx := context.Background()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s := fillStore(ctx, n, MemoryOptions{})
			runtime.GC()
			runtime.ReadMemStats(&after)
			perEx := float64(int64(after.HeapInuse)-int64(before.HeapInuse)) / float64(n)
			r := rand.New(rand.NewPCG(9, 9))
			rec := make([]uint64, 1150)
			probe := make([]uint64, 230)
			var refs Refs
			i := 0
			b.Run("record", func(b *testing.B) {
				for b.Loop() {
					for j := range rec {
						rec[j] = r.Uint64()
					}
					_ = s.Record(ctx, fmt.Sprintf("new-%d", i), rec, time.Hour)
					i++
				}
				b.ReportMetric(perEx, "heapB/exchange")
			})
			b.Run("lookup", func(b *testing.B) {
				copy(probe, rec[:115]) // held by the last exchange recorded
				for j := 115; j < len(probe); j++ {
					probe[j] = r.Uint64()
				}
				for b.Loop() {
					_ = s.LookupRefs(ctx, "", probe, &refs)
				}
			})
			runtime.KeepAlive(s)
		})
	}
}

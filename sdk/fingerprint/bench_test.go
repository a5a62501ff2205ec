package fingerprint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

func BenchmarkFingerprint4MB(b *testing.B) {
	text := []byte(prose(rand.New(rand.NewPCG(1, 2)), 4<<20))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Of(text, Options{})
	}
}

func BenchmarkFingerprint4KB(b *testing.B) {
	text := []byte(prose(rand.New(rand.NewPCG(1, 2)), 4<<10))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		_ = Of(text, Options{})
	}
}

// BenchmarkMemoryStorePerExchange records exchanges of a 4 KB request and
// a 1 KB response and reports the heap held per remembered exchange: prose
// of a small vocabulary (many fingerprints shared between exchanges) and
// random text (none shared, the most memory per exchange).
func BenchmarkMemoryStorePerExchange(b *testing.B) {
	for _, tc := range []struct {
		name string
		text func(r *rand.Rand, n int) string
	}{{"prose", prose}, {"unique", randomText}} {
		b.Run(tc.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(3, 4))
			const n = 2000
			exchanges := make([][]uint64, n)
			for i := range exchanges {
				fps := OfString(tc.text(r, 4<<10)+" "+tc.text(r, 1<<10), Options{})
				exchanges[i] = Hashes(fps)
			}
			ctx := context.Background()
			b.ReportAllocs()
			var perEx, fpsPer float64
			for b.Loop() {
				runtime.GC()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				s := NewMemoryStore(MemoryOptions{})
				for i, h := range exchanges {
					_ = s.Record(ctx, fmt.Sprintf("%032x", i), h, time.Hour)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				_, entries := s.Len()
				perEx = float64(after.HeapAlloc-before.HeapAlloc) / n
				fpsPer = float64(entries) / n
				runtime.KeepAlive(s)
			}
			b.ReportMetric(perEx, "heapB/exchange")
			b.ReportMetric(fpsPer, "fps/exchange")
		})
	}
}

// lookupStore returns a store of a thousand exchanges of 4 KB of prose and
// the fingerprints of the last one, which the lookup benchmarks look up.
func lookupStore(ctx context.Context) (*MemoryStore, []uint64) {
	r := rand.New(rand.NewPCG(5, 6))
	s := NewMemoryStore(MemoryOptions{})
	var probe []uint64
	for i := 0; i < 1000; i++ {
		h := Hashes(OfString(prose(r, 4<<10), Options{}))
		_ = s.Record(ctx, fmt.Sprint(i), h, time.Hour)
		probe = h
	}
	return s, probe
}

// BenchmarkMemoryStoreLookupRefs is the verifier's lookup: one response's
// fingerprints against a store of a thousand exchanges, compact answer.
func BenchmarkMemoryStoreLookupRefs(b *testing.B) {
	ctx := context.Background()
	s, probe := lookupStore(ctx)
	var refs Refs
	b.ReportAllocs()
	for b.Loop() {
		_ = s.LookupRefs(ctx, "999", probe, &refs)
	}
}

func BenchmarkMemoryStoreLookup(b *testing.B) {
	ctx := context.Background()
	s, probe := lookupStore(ctx)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = s.Lookup(ctx, probe)
	}
}

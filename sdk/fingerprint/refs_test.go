package fingerprint

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestKGrams(t *testing.T) {
	text := []byte("The  Quick brown fox jumps over the lazy dog, twice: ÉTÉ été.")
	var all []uint64
	KGrams(text, Options{}, func(h uint64) { all = append(all, h) })
	// Normalised: case folded, one space per run of white space.
	norm := "the quick brown fox jumps over the lazy dog, twice: été été."
	if want := len(norm) - DefaultK + 1; len(all) != want {
		t.Fatalf("%d k-grams, want %d", len(all), want)
	}
	for _, f := range Of(text, Options{}) {
		if !slices.Contains(all, f.Hash) {
			t.Fatalf("fingerprint %x is not among the k-grams", f.Hash)
		}
	}
}

func TestLookupRefs(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryStore(MemoryOptions{})
	_ = s.Record(ctx, "a", []uint64{1, 2}, time.Minute)
	_ = s.Record(ctx, "b", []uint64{2, 3}, time.Minute)
	_ = s.Record(ctx, "c", []uint64{2}, time.Minute)
	var r Refs
	if err := s.LookupRefs(ctx, "b", []uint64{1, 2, 3, 4}, &r); err != nil {
		t.Fatal(err)
	}
	names := func(i int) []string {
		var out []string
		for _, ref := range r.Of(i) {
			id, ok := s.ExchangeID(ref)
			if !ok {
				t.Fatalf("ref %d unknown", ref)
			}
			out = append(out, id)
		}
		return out
	}
	if !slices.Equal(r.Others, []int32{1, 2, 0, 0}) {
		t.Fatalf("others = %v", r.Others)
	}
	if got := names(1); !slices.Equal(got, []string{"c", "a"}) {
		t.Fatalf("holders of 2 = %v, want [c a] (most recent first, b excluded)", got)
	}
	if got := names(0); !slices.Equal(got, []string{"a"}) || len(r.Of(2)) != 0 || len(r.Of(3)) != 0 {
		t.Fatalf("holders = %v %v %v", got, r.Of(2), r.Of(3))
	}
	// Reusing r allocates nothing.
	if n := testing.AllocsPerRun(100, func() { _ = s.LookupRefs(ctx, "b", []uint64{1, 2, 3, 4}, &r) }); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
	// A forgotten exchange's ref no longer resolves.
	small := NewMemoryStore(MemoryOptions{MaxExchanges: 1})
	_ = small.Record(ctx, "x", []uint64{9}, time.Minute)
	_ = small.LookupRefs(ctx, "", []uint64{9}, &r)
	ref := r.Of(0)[0]
	_ = small.Record(ctx, "y", []uint64{9}, time.Minute)
	if _, ok := small.ExchangeID(ref); ok {
		t.Fatal("forgotten exchange still resolves")
	}
	_ = small.LookupRefs(ctx, "", []uint64{9}, &r)
	if id, _ := small.ExchangeID(r.Of(0)[0]); id != "y" || r.Others[0] != 1 {
		t.Fatalf("after eviction: %v %v", id, r.Others)
	}
}

package fingerprint

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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

// TestHashesAndGrams: the one-pass form gives exactly what HashesOf and
// KGrams give separately, on prose, random bytes, multi-byte and invalid
// UTF-8, and texts shorter than a k-gram, with one Winnower reused.
func TestHashesAndGrams(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	texts := []string{
		"", "short", "The  Quick brown fox jumps over the lazy dog, twice: ÉTÉ été.",
		"\xff\xfe\xe2\x82 \xf0\x9f\x98\x80 ÀÉÎ   \x00\x00 tab\tnew\nline and more text after it",
		prose(r, 4<<10), randomText(r, 1<<10),
		// Longer than a batch of k-grams, runes cut at the batches' ends.
		strings.Repeat("é€\U0001F600 ab\xff", 9000), prose(r, 70<<10),
	}
	for _, opts := range []Options{{}, {K: 4, Window: 3, Seed: 9}, {StripPunctuation: true}} {
		w := NewWinnower(opts)
		for i, text := range texts {
			want := w.HashesOf(nil, []byte(text))
			var wantGrams []uint64
			KGrams([]byte(text), opts, func(h uint64) { wantGrams = append(wantGrams, h) })
			var whole []uint64
			for _, f := range Of([]byte(text), opts) {
				whole = append(whole, f.Hash)
			}
			if !slices.Equal(want, whole) {
				t.Errorf("opts %+v text %d: HashesOf gives %d hashes, Of %d", opts, i, len(want), len(whole))
			}
			var grams []uint64
			batches, most := 0, 0
			got, scratch := w.HashesAndGrams([]uint64{42}, []uint64{7}, []byte(text), func(b []uint64) {
				grams = append(grams, b...)
				batches++
				most = max(most, len(b))
			})
			if len(got) == 0 || got[0] != 42 || !slices.Equal(got[1:], want) {
				t.Errorf("opts %+v text %d: %d hashes, want %d after the given one", opts, i, len(got)-1, len(want))
			}
			if !slices.Equal(grams, wantGrams) {
				t.Errorf("opts %+v text %d: %d k-grams, want %d", opts, i, len(grams), len(wantGrams))
			}
			if most > gramBatch+utf8.UTFMax || len(scratch) != 0 || len(text) > gramBatch && len(wantGrams) > gramBatch && batches < 2 {
				t.Errorf("opts %+v text %d: %d batches of at most %d k-grams, scratch %d", opts, i, batches, most, len(scratch))
			}
			if _, none := w.HashesAndGrams(nil, nil, []byte(text), nil); len(none) != 0 {
				t.Errorf("opts %+v text %d: %d k-grams kept without grams", opts, i, len(none))
			}
			if again := w.HashesOf(nil, []byte(text)); !slices.Equal(again, want) {
				t.Errorf("opts %+v text %d: the winnower was not reset", opts, i)
			}
		}
	}
}

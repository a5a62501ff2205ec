package pagedcache

import (
	"slices"
	"testing"
)

func TestPoolReuseOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reuse Reuse
		want  []int32 // pages handed out after freeing 1, 2, 3 in that order
	}{
		{ReuseLIFO, []int32{3, 2, 1}},
		{ReuseLRU, []int32{4, 5, 6}}, // never-used pages were freed "earlier"
	}
	for _, tt := range tests {
		t.Run(string(tt.reuse), func(t *testing.T) {
			p := newPool(6*4, 4, tt.reuse)
			var got []int32
			for range 3 {
				got = append(got, p.take(1, 1))
			}
			if !slices.Equal(got, []int32{1, 2, 3}) {
				t.Fatalf("fresh pool handed out %v, want [1 2 3] (page 0 reserved)", got)
			}
			p.write(1, 0, []uint32{7, 7}, 1, 1)
			for _, pg := range got {
				p.release(pg)
			}
			got = got[:0]
			for range 3 {
				got = append(got, p.take(2, 2))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("reuse %s handed out %v, want %v", tt.reuse, got, tt.want)
			}
			if p.tokens[1*4] != 7 || p.writerReq[1*4] != 1 {
				t.Errorf("freed page was scrubbed")
			}
		})
	}
}

func TestPoolPrefixCacheAndEviction(t *testing.T) {
	t.Parallel()
	p := newPool(3*2, 2, ReuseLIFO)
	a, b := p.take(1, 1), p.take(1, 1)
	p.write(a, 0, []uint32{1, 2}, 1, 1)
	p.write(b, 0, []uint32{3, 4}, 1, 1)
	p.insert(100, a)
	p.insert(200, b)
	p.release(a) // a is LRU, then b
	p.release(b)
	if p.available() != 3 || p.evictable != 2 {
		t.Fatalf("available %d evictable %d", p.available(), p.evictable)
	}
	if _, ok := p.lookup(100, []uint32{1, 9}); ok {
		t.Errorf("hash hit with different tokens must miss")
	}
	if pg, ok := p.lookup(200, []uint32{3, 4}); !ok || pg != b || p.pages[b].ref != 1 || p.evictable != 1 {
		t.Fatalf("lookup b: %d %v", pg, ok)
	}
	c := p.take(2, 2) // the free page
	d := p.take(2, 2) // evicts a, the only unreferenced cached page
	if c == a || d != a || p.evictions != 1 {
		t.Errorf("took %d then %d; want the free page then evicted %d", c, d, a)
	}
	if _, ok := p.cache[100]; ok {
		t.Errorf("evicted page still in the prefix cache")
	}
}

func TestPresets(t *testing.T) {
	t.Parallel()
	for _, name := range Presets() {
		o, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(o); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	o, _ := Preset("incident-2026")
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxRequestInputTokens() != 681279 || s.Pages().TotalPages != 10645 || !slices.Equal(o.Faults, []Fault{FaultOversizeStalePages}) {
		t.Errorf("incident preset: limit %d pages %d", s.MaxRequestInputTokens(), s.Pages().TotalPages)
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset accepted")
	}
	for _, bad := range []Options{{PageSize: -1}, {CapacityTokens: 10, PageSize: 16}, {Reuse: "mru"}, {Faults: []Fault{"boom"}}} {
		if _, err := New(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

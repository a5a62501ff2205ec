package tokens

import (
	"strings"
	"testing"
)

var samples = []string{
	"",
	"Hello, world!",
	"Please email jane.doe@example.com or call +33 6 12 34 56 78 before 2026-03-01.",
	"don't won't it's (parenthesised) [[PII_EMAIL_3f9a1c2b]] ((double)) --flag=value",
	"1234567890 3.14159 ½½½ ²³",
	"Ünïcödé façade — naïve café; 日本語のテキスト; emoji 😀😀 ok",
	"camelCaseIdentifier HTTPServer XMLHttpRequest",
	"\n\n\t  spaces   and\r\nnewlines\n",
	"<|im_start|>system\nYou are helpful<|im_end|>",
	"\xff\xfe invalid \x00 bytes",
	strings.Repeat("lorem ipsum dolor sit amet, ", 50),
	`{"json": [1, 2, 3], "k": "v"}`,
}

func TestBoundsBracketExact(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{"o200k_base", "cl100k_base"} {
		c := &Counter{Encoding: enc}
		for _, s := range samples {
			lo, up := Bounds(s)
			n, err := c.Exact(s)
			if err != nil {
				t.Fatal(err)
			}
			if lo > n || n > up {
				t.Errorf("%s %q: exact %d not in [%d, %d]", enc, s, n, lo, up)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c := &Counter{}
	prose := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 200) // ~2000 tokens
	exact, _ := c.Exact(prose)
	tests := []struct {
		name      string
		limit     int
		over      bool
		wantExact bool
	}{
		{"no limit", 0, false, false},
		{"far above", 1 << 20, false, false},
		{"far below", 10, true, false},
		{"just above exact", exact + PerText + PerRequest, false, true},
		{"just below exact", exact + PerText + PerRequest - 1, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := c.Check([]string{prose}, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if res.Over != tt.over || res.Exact != tt.wantExact {
				t.Fatalf("limit %d: %+v (exact %d)", tt.limit, res, exact)
			}
			if res.Lower > exact+PerText+PerRequest || res.Upper < exact {
				t.Fatalf("bounds %+v do not bracket %d", res, exact)
			}
		})
	}
	if _, err := (&Counter{Encoding: "nope"}).Check([]string{prose}, len(prose)); err == nil {
		t.Error("unknown encoding accepted")
	}
}

func FuzzBounds(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	c := &Counter{}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		lo, up := Bounds(s)
		n, err := c.Exact(s)
		if err != nil {
			t.Skip(err)
		}
		if lo > n || n > up {
			t.Fatalf("%q: exact %d not in [%d, %d]", s, n, lo, up)
		}
	})
}

func BenchmarkBounds4MB(b *testing.B) {
	s := strings.Repeat("Customer record: Jane Doe, jane.doe@corp.example, card 4111 1111 1111 1111. ", 4<<20/80)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		Bounds(s)
	}
}

func BenchmarkExact64KB(b *testing.B) {
	s := strings.Repeat("Customer record: Jane Doe, jane.doe@corp.example, card 4111 1111 1111 1111. ", 64<<10/80)
	c := &Counter{}
	c.Exact("warm up")
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		c.Exact(s)
	}
}

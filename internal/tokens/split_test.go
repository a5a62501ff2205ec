package tokens

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/tiktoken-go/tokenizer"
)

// splitSamples are texts on the fast path, chosen for the edges of the
// split regexes: contractions in every case and place, capitals runs,
// prefixes before letters, punctuation with line breaks, runs of spaces
// before words, digits, and ends of text.
var splitSamples = []string{
	"",
	" ",
	"  ",
	"\t",
	"\n",
	"a",
	"Hello, world!",
	"don't won't it's I'M you'RE we'Ve they'LL she'd 'sun 'tis 'rex 'll 'l 'r 'v 've",
	"'s 'S 't 're 'Re 'x '",
	"camelCaseIdentifier HTTPServer XMLHttpRequest ABCdef ABC'S ABC's HTTPs'",
	"\n\n\t  spaces   and\r\nnewlines\n",
	"word  \n  word\t\tword \t word\r\n\r\n  \n",
	"   trailing   ",
	"a\n b\n\n c \n\nd",
	"\n \n", "\t\n \n\t", " \n ", "\n  \n\n x", "x\r\n \r\n\r\n\ty",
	"1234567890 3.14159 12 1 123 1234 a1b22c333d4444",
	"(parenthesised) [[PII_EMAIL_3f9a1c2b]] ((double)) --flag=value ...  !!! ?!?\n\n",
	"path/to/file http://example.com/a/b//c /\n/ //\r\n",
	`{"json": [1, 2, 3], "k": "v", "nested": {"a": 'q'}}`,
	" !x !!x ! x .Hello .hello 'hello '' ''x",
	"<|endoftext|> <|im_start|>system\nYou are helpful<|im_end|>",
	"func main() {\n\tfmt.Println(\"hi\")\n}\n",
	"ALLCAPS SENTENCE. Mixed CASE words AND MoreWords ofText.",
	strings.Repeat("lorem ipsum dolor sit amet, ", 50),
	strings.Repeat("The quick brown fox jumps over the lazy dog. ", 20),
	"Pneumonoultramicroscopicsilicovolcanoconiosis antidisestablishmentarianism zzzzqqqxxx",
	// Pieces of maxMerge bytes and more, merged by the library.
	"x " + strings.Repeat("abcdefghij", 10) + " " + strings.Repeat("=-", 40) + "\n" + strings.Repeat(" ", 70) + "y",
}

// libraryCount is the library's own count of s in enc.
func libraryCount(t testing.TB, enc tokenizer.Encoding, s string) int {
	t.Helper()
	codec, err := tokenizer.Get(enc)
	if err != nil {
		t.Fatal(err)
	}
	n, err := codec.Count(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkEncode fails t unless c.Encode gives the library's IDs for s, after
// a prefix it must keep.
func checkEncode(t testing.TB, c *Counter, s string) {
	t.Helper()
	codec, err := tokenizer.Get(tokenizer.Encoding(c.Encoding))
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := codec.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	prefix := []uint32{7, 11}
	got, err := c.Encode(slices.Clone(prefix), s)
	if err != nil {
		t.Fatalf("%s %q: Encode: %v", c.Encoding, s, err)
	}
	want := slices.Clone(prefix)
	for _, id := range ids {
		want = append(want, uint32(id))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s %q: Encode %v, library %v", c.Encoding, s, got[len(prefix):], want[len(prefix):])
	}
}

// libraryPieces are the pieces the library's encoding of s produces,
// joined per piece of the split: its tokens, grouped by splitASCII's
// pieces, must rebuild each piece exactly.
func TestSplitASCIIMatchesLibrary(t *testing.T) {
	t.Parallel()
	for _, enc := range []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase} {
		codec, err := tokenizer.Get(enc)
		if err != nil {
			t.Fatal(err)
		}
		c := &Counter{Encoding: string(enc)}
		for _, s := range splitSamples {
			if !fastText(s) {
				t.Fatalf("%q is not on the fast path", s)
			}
			want := libraryCount(t, enc, s)
			got, err := c.Exact(s)
			if err != nil || got != want {
				t.Errorf("%s %q: Exact %d (%v), library %d", enc, s, got, err, want)
			}
			checkEncode(t, c, s)
			// The library's tokens never straddle a piece.
			_, toks, _ := codec.Encode(s)
			var pieces []string
			splitASCII(s, enc == tokenizer.O200kBase, func(p string) { pieces = append(pieces, p) })
			if strings.Join(pieces, "") != s {
				t.Fatalf("%s %q: pieces %q do not rebuild the text", enc, s, pieces)
			}
			ti := 0
			for _, p := range pieces {
				acc := ""
				for acc != p && ti < len(toks) && len(acc) < len(p) {
					acc += toks[ti]
					ti++
				}
				if acc != p {
					t.Errorf("%s %q: piece %q, the library's tokens give %q", enc, s, p, acc)
					break
				}
			}
		}
	}
}

// TestExactSlowPath checks that text off the fast path (non-ASCII, control
// characters, invalid UTF-8) is counted by the library.
func TestExactSlowPath(t *testing.T) {
	t.Parallel()
	for _, enc := range []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase} {
		c := &Counter{Encoding: string(enc)}
		for _, s := range []string{"café naïve", "a\vb\fc", "\x00nul", "\xff\xfe bad", "日本語", "del\x7f"} {
			if fastText(s) {
				t.Fatalf("%q is on the fast path", s)
			}
			got, err := c.Exact(s)
			if want := libraryCount(t, enc, s); err != nil || got != want {
				t.Errorf("%s %q: Exact %d (%v), library %d", enc, s, got, err, want)
			}
			checkEncode(t, c, s)
		}
	}
}

// FuzzExactMatchesLibrary checks the fast count against the library's on
// any text, in both encodings.
func FuzzExactMatchesLibrary(f *testing.F) {
	for _, s := range splitSamples {
		f.Add(s)
	}
	for _, s := range samples {
		f.Add(s)
	}
	cl, o2 := &Counter{Encoding: "cl100k_base"}, &Counter{Encoding: "o200k_base"}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		for _, c := range []*Counter{cl, o2} {
			got, err := c.Exact(s)
			if err != nil {
				t.Fatal(err)
			}
			if want := libraryCount(t, tokenizer.Encoding(c.Encoding), s); got != want {
				t.Fatalf("%s %q: Exact %d, library %d", c.Encoding, s, got, want)
			}
		}
	})
}

// FuzzEncodeMatchesLibrary checks the fast IDs against the library's on
// any text, in both encodings.
func FuzzEncodeMatchesLibrary(f *testing.F) {
	for _, s := range splitSamples {
		f.Add(s)
	}
	for _, s := range samples {
		f.Add(s)
	}
	cl, o2 := &Counter{Encoding: "cl100k_base"}, &Counter{Encoding: "o200k_base"}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			return
		}
		checkEncode(t, cl, s)
		checkEncode(t, o2, s)
	})
}

// TestEncodeProse compares the IDs of long prose, code and JSON on the fast
// path with the library's.
func TestEncodeProse(t *testing.T) {
	t.Parallel()
	texts := []string{
		strings.Repeat("Quarterly review notes: the team shipped the billing migration, reduced p99 latency by a third. ", 60),
		strings.Repeat("func (s *Server) tokenize(text string) []uint32 {\n\tids, _, err := s.codec.Encode(text)\n}\n", 40),
		strings.Repeat(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":16} `, 40),
	}
	for _, enc := range []string{"cl100k_base", "o200k_base"} {
		c := &Counter{Encoding: enc}
		for _, s := range texts {
			if !fastText(s) {
				t.Fatalf("%q is not on the fast path", s[:20])
			}
			checkEncode(t, c, s)
		}
	}
}

// TestExactRandomASCII compares the fast count with the library's on
// random texts over an alphabet dense in the split's edges.
func TestExactRandomASCII(t *testing.T) {
	t.Parallel()
	const alphabet = "aeZQ'sStTrReEvVlLmMdD 0123456789\t\n\r!./-_\"(){}"
	cl, o2 := &Counter{Encoding: "cl100k_base"}, &Counter{Encoding: "o200k_base"}
	r := rand.New(rand.NewPCG(15, 3))
	for range 3000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		s := string(b)
		for _, c := range []*Counter{cl, o2} {
			got, err := c.Exact(s)
			if want := libraryCount(t, tokenizer.Encoding(c.Encoding), s); err != nil || got != want {
				t.Fatalf("%s %q: Exact %d (%v), library %d", c.Encoding, s, got, err, want)
			}
			checkEncode(t, c, s)
		}
	}
}

// BenchmarkExact4KBProse is the exact count of 4 KB of English prose in
// cl100k_base (the fast path).
func BenchmarkExact4KBProse(b *testing.B) {
	s := strings.Repeat("Quarterly review notes: the team shipped the billing migration, reduced p99 latency by a third, and agreed next steps with the vendor. Remaining risks are the data retention schedule and the on-call rotation for the holidays. ", 20)[:4096]
	c := &Counter{Encoding: "cl100k_base"}
	c.Exact("warm up")
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		c.Exact(s)
	}
}

// BenchmarkEncode4KBProse is the token IDs of the same 4 KB in
// cl100k_base (the fast path).
func BenchmarkEncode4KBProse(b *testing.B) {
	s := strings.Repeat("Quarterly review notes: the team shipped the billing migration, reduced p99 latency by a third, and agreed next steps with the vendor. Remaining risks are the data retention schedule and the on-call rotation for the holidays. ", 20)[:4096]
	c := &Counter{Encoding: "cl100k_base"}
	c.Exact("warm up")
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	var ids []uint32
	for b.Loop() {
		ids, _ = c.Encode(ids[:0], s)
	}
}

// BenchmarkExact4KBProseLibrary is the same count by the library alone.
func BenchmarkExact4KBProseLibrary(b *testing.B) {
	s := strings.Repeat("Quarterly review notes: the team shipped the billing migration, reduced p99 latency by a third, and agreed next steps with the vendor. Remaining risks are the data retention schedule and the on-call rotation for the holidays. ", 20)[:4096]
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		codec.Count(s)
	}
}

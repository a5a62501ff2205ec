package fingerprint

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// words is a small vocabulary for random prose.
var words = strings.Fields(`the a of to and in for on with account customer invoice payment
report quarterly meeting project schedule delivery contract review team manager budget
server database request response model token cache page memory tenant support ticket
update please thanks regards confirm issue shipment order number address phone email
Paris London Berlin Monday Friday January March blue green seven twelve forty`)

func prose(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[r.IntN(len(words))])
		if r.IntN(9) == 0 {
			b.WriteString(".")
		}
	}
	return b.String()
}

func randomText(r *rand.Rand, n int) string {
	// Random letters: no accidental shared runs between two texts.
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789 "
	b := make([]byte, n)
	for i := range b {
		b[i] = alpha[r.IntN(len(alpha))]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

func hashSet(fps []Fingerprint) map[uint64]bool {
	m := make(map[uint64]bool, len(fps))
	for _, f := range fps {
		m[f.Hash] = true
	}
	return m
}

func TestNormalisation(t *testing.T) {
	base := "The Quarterly Report for ACME is due on Monday; please confirm the delivery schedule."
	tests := []struct {
		name  string
		a, b  string
		opts  Options
		equal bool
	}{
		{"case folding", base, strings.ToUpper(base), Options{}, true},
		{"whitespace collapsing", base, strings.ReplaceAll(base, " ", " \t\n  "), Options{}, true},
		{"leading whitespace", base, "\n\n   " + base, Options{}, true},
		{"unicode case", "ÉLÉPHANT ÉNORME DANS LA PIÈCE PRINCIPALE DU CHÂTEAU", "éléphant énorme dans la pièce principale du château", Options{}, true},
		{"punctuation kept by default", base, strings.ReplaceAll(base, ";", ","), Options{}, false},
		{"punctuation stripped", base, strings.ReplaceAll(base, ";", ","), Options{StripPunctuation: true}, true},
		{"different text", base, strings.Replace(base, "Monday", "Friday", 1), Options{}, false},
		{"seed changes hashes", base, base, Options{Seed: 1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := hashesOf(OfString(tt.a, tt.opts)), hashesOf(OfString(tt.b, tt.opts))
			if len(a) == 0 {
				t.Fatal("no fingerprints")
			}
			if got := reflect.DeepEqual(a, b); got != tt.equal {
				t.Fatalf("equal = %v, want %v", got, tt.equal)
			}
		})
	}
	if reflect.DeepEqual(hashesOf(OfString(base, Options{})), hashesOf(OfString(base, Options{Seed: 42}))) {
		t.Fatal("seed does not change the hashes")
	}
}

func hashesOf(fps []Fingerprint) []uint64 {
	out := make([]uint64, len(fps))
	for i, f := range fps {
		out[i] = f.Hash
	}
	return out
}

// TestGuarantee checks the winnowing guarantee: two texts sharing a run of
// t = K + W - 1 normalised bytes share at least one fingerprint, and a run
// of K + n·W - 1 bytes yields n shared fingerprints consecutive in both.
func TestGuarantee(t *testing.T) {
	for _, opts := range []Options{{}, {K: 8, Window: 4}, {K: 24, Window: 20, Seed: 7}, {K: 5, Window: 1}} {
		r := rand.New(rand.NewPCG(1, uint64(opts.K)))
		tg := opts.Guarantee()
		for trial := 0; trial < 400; trial++ {
			n := 1 + trial%3
			span := opts.Span(n)
			if n == 1 && span != tg {
				t.Fatalf("Span(1) = %d, Guarantee = %d", span, tg)
			}
			shared := randomText(r, span+20)[:span]
			if len(shared) != span || strings.HasPrefix(shared, " ") || strings.HasSuffix(shared, " ") {
				trial--
				continue
			}
			a := randomText(r, 200) + "x" + shared + "x" + randomText(r, 200)
			b := randomText(r, 150) + "y" + shared + "y" + randomText(r, 90)
			fa, fb := OfString(a, opts), OfString(b, opts)
			inB := hashSet(fb)
			// Longest run of consecutive fingerprints of a found in b, and
			// the bytes it covers.
			best, run, cover, start := 0, 0, 0, 0
			for _, f := range fa {
				if inB[f.Hash] {
					if run == 0 {
						start = f.Offset
					}
					run++
					best = max(best, run)
					cover = max(cover, f.End-start)
				} else {
					run = 0
				}
			}
			if best < n {
				t.Fatalf("opts %+v: shared run of %d bytes gave a run of %d fingerprints, want >= %d", opts, span, best, n)
			}
			if want := opts.Covered(span); cover < want {
				t.Fatalf("opts %+v: shared run of %d bytes covered %d bytes, want >= %d", opts, span, cover, want)
			}
		}
	}
}

// TestGuaranteeDefaults64 states the default guarantee in the terms:
// a 64-byte fragment of prose copied into another text always yields at
// least one shared fingerprint, five consecutive ones, covering at least
// Covered(62) = 48 bytes.
func TestGuaranteeDefaults64(t *testing.T) {
	if g := (Options{}).Guarantee(); g > 64-2 {
		t.Fatalf("default guarantee t = %d does not cover a 64-byte fragment", g)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 2000; trial++ {
		src := prose(r, 400)
		start := r.IntN(len(src) - 64)
		frag := src[start : start+64]
		dst := prose(r, 200) + " " + frag + " " + prose(r, 200)
		inSrc := hashSet(OfString(src, Options{}))
		best, run, cover, first := 0, 0, 0, 0
		for _, f := range OfString(dst, Options{}) {
			if inSrc[f.Hash] {
				if run == 0 {
					first = f.Offset
				}
				run++
				best = max(best, run)
				cover = max(cover, f.End-first)
			} else {
				run = 0
			}
		}
		if best < 5 || cover < (Options{}).Covered(62) {
			t.Fatalf("64-byte fragment %d: best run %d covering %d bytes", trial, best, cover)
		}
	}
}

func TestStreamingEqualsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	texts := []string{
		prose(r, 3000),
		"Ünïcödé  ÀÉÎÕÜ texte en français, avec des accents — et des tirets « guillemets » " + prose(r, 500),
		"invalid \xff\xfe utf-8 \xe2\x82 split \xf0\x9f\x98\x80 emoji NUL\x00bytes " + prose(r, 300),
		strings.Repeat("ab", 500),
	}
	for i, text := range texts {
		want := Of([]byte(text), Options{})
		for trial := 0; trial < 50; trial++ {
			w := NewWinnower(Options{})
			var got []Fingerprint
			for p := []byte(text); len(p) > 0; {
				n := 1 + r.IntN(min(len(p), 40))
				_, _ = w.Write(p[:n])
				p = p[n:]
				got = append(got, w.Take()...)
				checkFrontier(t, w, want, len(got))
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("text %d trial %d: streaming fingerprints differ (%d vs %d)", i, trial, len(got), len(want))
			}
			if w.Written() != len(text) {
				t.Fatalf("Written = %d, want %d", w.Written(), len(text))
			}
		}
	}
}

// checkFrontier checks Frontier after a write: the fingerprints of the
// whole text not selected yet (want[taken:]) start at or after it, and it
// lies within what was written.
func checkFrontier(t *testing.T, w *Winnower, want []Fingerprint, taken int) {
	t.Helper()
	fr := w.Frontier()
	if fr < 0 || fr > w.Written() {
		t.Fatalf("frontier %d outside the %d bytes written", fr, w.Written())
	}
	if taken < len(want) && want[taken].Offset < fr {
		t.Fatalf("frontier %d after %d bytes, but fingerprint %d (offset %d) is still to come", fr, w.Written(), taken, want[taken].Offset)
	}
}

// normalise is a slow reference of the normalisation.
func normalise(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func TestOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	text := "  Hello   World, this IS a Test of OFFSETS\n\nacross   lines. " + prose(r, 2000)
	for _, f := range OfString(text, Options{}) {
		if f.Offset < 0 || f.End > len(text) || f.Offset >= f.End {
			t.Fatalf("bad span %d..%d", f.Offset, f.End)
		}
		gram := normalise(text[f.Offset:f.End])
		if len(gram) != DefaultK {
			t.Fatalf("span %d..%d normalises to %q (%d bytes), want %d bytes", f.Offset, f.End, gram, len(gram), DefaultK)
		}
		// With a window of 1 every k-gram is a fingerprint: the second
		// k-gram of "x"+gram is gram itself (a fresh text drops leading
		// white space, so the prefix keeps it).
		if got := OfString("x"+gram, Options{Window: 1})[1].Hash; got != f.Hash {
			t.Fatalf("span %d..%d: hash of its k-gram differs", f.Offset, f.End)
		}
	}
}

func TestShortAndEmpty(t *testing.T) {
	for _, s := range []string{"", " ", "short", strings.Repeat(" ", 100), strings.Repeat("x", DefaultK+DefaultWindow-2)} {
		if fps := OfString(s, Options{}); len(fps) != 0 {
			t.Errorf("%q: %d fingerprints, want none below the guarantee", s, len(fps))
		}
	}
	if fps := OfString(strings.Repeat("x", (Options{}).Guarantee()), Options{}); len(fps) != 1 {
		t.Errorf("text of exactly t bytes: %d fingerprints, want 1", len(fps))
	}
}

func FuzzWinnower(f *testing.F) {
	f.Add([]byte("Hello, World! The quick brown fox jumps over the lazy dog."), uint8(3))
	f.Add([]byte("\xff\xfe\xe2\x82 \xf0\x9f\x98\x80 ÀÉÎ   \x00\x00 tab\tnew\nline"), uint8(1))
	f.Add(bytes.Repeat([]byte("é"), 100), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		opts := Options{K: 4, Window: 3}
		want := Of(data, opts)
		w := NewWinnower(opts)
		var got []Fingerprint
		n := int(step)%13 + 1
		for p := data; len(p) > 0; {
			m := min(n, len(p))
			_, _ = w.Write(p[:m])
			p = p[m:]
			got = append(got, w.Take()...)
			checkFrontier(t, w, want, len(got))
		}
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("chunked (%d) fingerprints differ from whole", n)
		}
		last := -1
		for _, fp := range want {
			if fp.Offset < 0 || fp.End > len(data) || fp.Offset >= fp.End || fp.Offset < last {
				t.Fatalf("bad span %d..%d after %d", fp.Offset, fp.End, last)
			}
			last = fp.Offset
			if !utf8.Valid(data) {
				continue
			}
		}
	})
}

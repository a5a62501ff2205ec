package fingerprint

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/winnow.golden")

// goldenCases are texts of every kind (prose, accents, invalid UTF-8, NUL
// bytes, runs of white space and punctuation, repeats) under several
// options.
func goldenCases() (names []string, texts []string, opts []Options) {
	r := rand.New(rand.NewPCG(21, 22))
	ts := map[string]string{
		"prose":   prose(r, 6000),
		"random":  randomText(r, 3000),
		"unicode": "Ünïcödé  ÀÉÎÕÜ texte en français, avec des accents — et des tirets « guillemets » ΣΊΣΥΦΟΣ " + prose(r, 800),
		"invalid": "invalid \xff\xfe utf-8 \xe2\x82 split \xf0\x9f\x98\x80 emoji NUL\x00bytes\x00\x00 " + prose(r, 500) + "\xc3",
		"spaces":  strings.Repeat("a,b;  c\t\n\r d!? ", 80),
		"repeat":  strings.Repeat("ab", 700),
		"short":   "tiny",
	}
	om := map[string]Options{
		"default": {},
		"small":   {K: 4, Window: 3, Seed: 9},
		"wide":    {K: 24, Window: 20, Seed: 7},
		"all":     {K: 5, Window: 1},
		"strip":   {StripPunctuation: true, Seed: 3},
	}
	for tn, t := range ts {
		for on, o := range om {
			names = append(names, tn+"/"+on)
			texts = append(texts, t)
			opts = append(opts, o)
		}
	}
	return names, texts, opts
}

// TestGolden pins the fingerprints (hash, offset, end) of goldenCases, as
// written whole and in pieces, to testdata/winnow.golden: stores hold
// fingerprints across processes and versions, so they must not change.
func TestGolden(t *testing.T) {
	names, texts, opts := goldenCases()
	lines := make([]string, len(names))
	for i := range names {
		fps := Of([]byte(texts[i]), opts[i])
		w := NewWinnower(opts[i])
		var pieces []Fingerprint
		for p := []byte(texts[i]); len(p) > 0; {
			n := min(len(p), 1+i%17)
			_, _ = w.Write(p[:n])
			pieces = append(pieces, w.Take()...)
			p = p[n:]
		}
		if string(digest(pieces)) != string(digest(fps)) {
			t.Errorf("%s: written in pieces, the fingerprints differ", names[i])
		}
		hashes := NewWinnower(opts[i]).HashesOf(nil, []byte(texts[i]))
		if len(hashes) != len(fps) {
			t.Errorf("%s: HashesOf gives %d hashes for %d fingerprints", names[i], len(hashes), len(fps))
		}
		for j := range min(len(hashes), len(fps)) {
			if hashes[j] != fps[j].Hash {
				t.Fatalf("%s: HashesOf differs at %d", names[i], j)
			}
		}
		lines[i] = fmt.Sprintf("%s %d %x", names[i], len(fps), digest(fps))
	}
	sort.Strings(lines)
	got := strings.Join(lines, "\n") + "\n"
	path := filepath.Join("testdata", "winnow.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("fingerprints differ from %s:\n got\n%s\n want\n%s", path, got, want)
	}
}

func digest(fps []Fingerprint) []byte {
	h := sha256.New()
	var b [24]byte
	for _, f := range fps {
		binary.LittleEndian.PutUint64(b[0:], f.Hash)
		binary.LittleEndian.PutUint64(b[8:], uint64(f.Offset))
		binary.LittleEndian.PutUint64(b[16:], uint64(f.End))
		h.Write(b[:])
	}
	return h.Sum(nil)
}

package classifiers

import (
	"bytes"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestNewPrefixRun(t *testing.T) {
	for _, c := range []struct {
		pat    string
		prefix string
		fixed  int
		min    int
		exact  bool
		next   int
	}{
		{`npm_[A-Za-z0-9]{36}`, "npm_", 0, 36, true, -1},
		{`hvs\.[A-Za-z0-9_-]{24,}`, "hvs.", 0, 24, false, -1},
		{`hv[sbr]\.[A-Za-z0-9_-]{24,}`, "hv", 2, 24, false, -1},
		{`eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`, "eyJ", 0, 5, false, '.'},
		{`SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`, "SG.", 0, 22, true, '.'},
		{`AIza[0-9A-Za-z_-]{35}`, "AIza", 0, 35, true, -1},
		{`gsk_[A-Za-z0-9]+`, "gsk_", 0, 1, false, -1},
		{`ab_[a-z]{4,9}-x`, "ab_", 0, 4, false, -1},
		{`ab[a-z][a-z]-`, "ab", 0, 2, true, '-'},
		{`(?i:snyk)[\w.-]{0,30}=`, "", 0, 0, false, 0},
		{`sk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{80,110}AA`, "", 0, 0, false, 0},
		{`AccountKey=([A-Za-z0-9+/]{86}==)`, "", 0, 0, false, 0},
		{`x[a-z]*`, "", 0, 0, false, 0},
		{`[0-9a-f]{8}-`, "", 0, 0, false, 0},
	} {
		p := newPrefixRun(c.pat)
		if c.prefix == "" {
			if p != nil {
				t.Errorf("%s: prefix run %q, %d; want none", c.pat, p.prefix, p.min)
			}
			continue
		}
		if p == nil || string(p.prefix) != c.prefix || len(p.fixed) != c.fixed || p.min != c.min || p.exact != c.exact || p.next != c.next {
			t.Errorf("%s: got %+v, want %q, %d fixed, %d, exact %v, next %d", c.pat, p, c.prefix, c.fixed, c.min, c.exact, c.next)
		}
	}
}

// prefixPatterns are the secret patterns regexWindow searches with a
// prefix run: the families' and secrets.go's.
func prefixPatterns() []*regexp.Regexp {
	pats := []string{`npm_[A-Za-z0-9]{36}`, `AIza[0-9A-Za-z_-]{35}`, `SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`,
		`eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`}
	for _, f := range secretFamilies() {
		pats = append(pats, f.patterns...)
	}
	var out []*regexp.Regexp
	for _, p := range pats {
		if newPrefixRun(p) != nil {
			out = append(out, regexp.MustCompile(p))
		}
	}
	return out
}

// checkPrefixFrom checks that searching from where the prefix run says,
// unless a required literal is missing there, finds the leftmost match the
// search from pos finds.
func checkPrefixFrom(t *testing.T, re *regexp.Regexp, text []byte, pos int) {
	t.Helper()
	p := newPrefixRun(re.String())
	want := submatchFrom(re, text, pos, len(text))
	var got []int
	from := p.from(text, pos, len(text))
	for _, l := range requiredLiterals(re.String()) {
		if from >= 0 && !bytes.Contains(text[from:], l) {
			from = -1
		}
	}
	if from >= 0 {
		got = submatchFrom(re, text, from, len(text))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s on %q from %d: got %v, want %v", re, text, pos, got, want)
	}
}

// TestPrefixFrom builds, for every pattern with a prefix run, texts of its
// prefix, parts of it and bytes in and out of its class, with and without
// real matches, and checks the search from the prefix run's start.
func TestPrefixFrom(t *testing.T) {
	res := prefixPatterns()
	if len(res) < 50 {
		t.Fatalf("%d patterns with a prefix run, want most of the families'", len(res))
	}
	r := rand.New(rand.NewPCG(5, 5))
	alnum := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."
	for _, re := range res {
		p := newPrefixRun(re.String())
		for range 200 {
			var b strings.Builder
			for b.Len() < 400 {
				switch r.IntN(5) {
				case 0:
					b.WriteString(string(p.prefix))
				case 1:
					b.WriteString(string(p.prefix[:r.IntN(len(p.prefix))]))
				case 2:
					for range r.IntN(p.min + 8) {
						b.WriteByte(alnum[r.IntN(len(alnum))])
					}
				case 3:
					b.WriteString(" =:\n\"")
					for _, l := range requiredLiterals(re.String()) {
						b.Write(l)
					}
				default:
					// a sample the pattern may match: prefix, fixed
					// bytes, a run around its length, the ending byte
					b.WriteString(string(p.prefix))
					for _, set := range p.fixed {
						b.WriteByte(pick(r, set))
					}
					n := p.min + r.IntN(60)
					if r.IntN(2) == 0 {
						n = max(0, p.min-1+r.IntN(3))
					}
					for range n {
						b.WriteByte(pick(r, &p.class))
					}
					if p.next >= 0 && r.IntN(4) > 0 {
						b.WriteByte(byte(p.next))
					}
				}
			}
			text := []byte(b.String())
			for _, pos := range []int{0, 1, r.IntN(len(text)), len(text) - 1} {
				checkPrefixFrom(t, re, text, pos)
			}
		}
	}
}

// pick returns a random byte of set (which has one).
func pick(r *rand.Rand, set *[256]bool) byte {
	for {
		if c := byte(r.IntN(128)); set[c] {
			return c
		}
	}
}

func FuzzPrefixFrom(f *testing.F) {
	f.Add([]byte("npm_npm_npm_abcdefghijklmnopqrstuvwxyz0123456789AB"), 0, 0)
	f.Add([]byte("eyJhbGciOi.eyJzdWIi.sig eyJ"), 1, 2)
	res := prefixPatterns()
	f.Fuzz(func(t *testing.T, text []byte, pos, which int) {
		if pos < 0 || pos > len(text) || which < 0 {
			return
		}
		checkPrefixFrom(t, res[which%len(res)], text, pos)
	})
}

func TestRequiredLiterals(t *testing.T) {
	for _, c := range []struct {
		pat  string
		want []string
	}{
		{`-----BEGIN ((?:RSA |EC )?PRIVATE KEY)-----((?s:.){16}(?s:.)*?)-----END ([A-Z ]{3,40})-----`, []string{"-----", "-----END ", "-----"}},
		{`SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}`, nil},
		{`eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*`, []string{".eyJ"}},
		{`abc|-----END `, nil},
		{`(?i:key)=secret`, []string{"=secret"}},
		{`(?i:key=secret)`, nil},
	} {
		var got []string
		for _, l := range requiredLiterals(c.pat) {
			got = append(got, string(l))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.pat, got, c.want)
		}
	}
}

package classifiers

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestPlaceholderBytesMatchesValue checks the allocation-free placeholderBytes
// against placeholderValue on stop words in every position and case, and on
// random values built from their fragments.
func TestPlaceholderBytesMatchesValue(t *testing.T) {
	t.Parallel()
	cases := []string{"", "abc", "abcd", "Password", "PASSWORD123", "xPassword", "my.secret.", "token.", "null.x",
		"process.env.KEY", "Xk9#mP2$v123456Lq7", "ghp_aB3dE5fG7hJ9kL1mN3pQ0123456789abcdef", "${DB}", "{{x}}", "a(b)c",
		"****", "xx-xx", "changeme!", "ChAnGe_Me", "your-api-key-here", "é-password", strings.Repeat("a", 128),
		strings.Repeat("a", 129) + "password", "secret_kez", "secret_key", "os.environ[X]", "getenv", "ab.true.", "true"}
	r := rand.New(rand.NewPCG(3, 4))
	cases = append(cases, mixes(r, 20000, 24, 6, stopValues, "pPaAsSwWoOrRdD._-$xXyYeEtTkKnN1230é{(", true)...)
	for _, v := range cases {
		if got, want := placeholderBytes([]byte(v)), placeholderValue(v); got != want {
			t.Errorf("placeholderBytes(%q) = %v, placeholderValue = %v", v, got, want)
		}
	}
}

func FuzzPlaceholderBytes(f *testing.F) {
	for _, s := range []string{"password.", "Xk9#mP2$v1Lq7", "your_API_key", "${X}", "a.None.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := placeholderBytes([]byte(v)), placeholderValue(v); got != want {
			t.Errorf("placeholderBytes(%q) = %v, placeholderValue = %v", v, got, want)
		}
	})
}

// TestNotSecretKey compares notSecretKey with strings.Contains of each of
// its words, on the words in every position and random key names.
func TestNotSecretKey(t *testing.T) {
	t.Parallel()
	naive := func(k string) bool {
		for _, w := range notSecretKeyWords {
			if strings.Contains(k, w) {
				return true
			}
		}
		return false
	}
	keys := []string{"", "password", "password_hash", "api_key", "token_type", "_i", "_id", "name", "nam", "secret_file", "url", "ur"}
	r := rand.New(rand.NewPCG(12, 13))
	keys = append(keys, mixes(r, 50000, 16, 8, notSecretKeyWords, "hash_lenlengthpolicyresetexpirfilepathurltypename_idpasswordtoken", false)...)
	for _, k := range keys {
		if got, want := notSecretKey([]byte(k)), naive(k); got != want {
			t.Errorf("notSecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

// mixes returns n random strings of up to maxParts parts, each one of
// words (one part in every, its first half upper-cased half of the time
// when upper is set) or a byte of frag.
func mixes(r *rand.Rand, n, maxParts, every int, words []string, frag string, upper bool) []string {
	out := make([]string, 0, n)
	for range n {
		var b strings.Builder
		for k := r.IntN(maxParts); k > 0; k-- {
			if r.IntN(every) == 0 {
				w := words[r.IntN(len(words))]
				if upper && r.IntN(2) == 0 {
					w = strings.ToUpper(w[:len(w)/2]) + w[len(w)/2:]
				}
				b.WriteString(w)
			} else {
				b.WriteByte(frag[r.IntN(len(frag))])
			}
		}
		out = append(out, b.String())
	}
	return out
}

// charClassesSpec is charClasses' definition: one count for each of lower
// case ASCII letters, upper case ones, digits and every other byte present.
func charClassesSpec(v []byte) int {
	n := 0
	for _, in := range []func(byte) bool{
		func(c byte) bool { return c >= 'a' && c <= 'z' },
		func(c byte) bool { return c >= 'A' && c <= 'Z' },
		func(c byte) bool { return c >= '0' && c <= '9' },
		func(c byte) bool { return !isAlnum(c) },
	} {
		for _, c := range v {
			if in(c) {
				n++
				break
			}
		}
	}
	return n
}

func TestCharClasses(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
	}{
		{"", 0}, {"abc", 1}, {"aB", 2}, {"aB3", 3}, {"aB3#", 4}, {"é", 1}, {"@[`{/:", 1}, {"AZaz09", 3},
		{"Xk9#mP2$v123456Lq7", 4},
	} {
		if got, spec := charClasses([]byte(tc.v)), charClassesSpec([]byte(tc.v)); got != tc.want || spec != tc.want {
			t.Errorf("charClasses(%q) = %v (definition %v), want %v", tc.v, got, spec, tc.want)
		}
		if got := charClasses(tc.v); got != tc.want {
			t.Errorf("charClasses(string %q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func FuzzCharClasses(f *testing.F) {
	f.Add([]byte("aB3#"))
	f.Fuzz(func(t *testing.T, v []byte) {
		if got, spec := charClasses(v), charClassesSpec(v); got != spec {
			t.Fatalf("charClasses(%q) = %v, its definition says %v", v, got, spec)
		}
	})
}

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
	cases := []string{"", "abc", "abcd", "Password", "PASSWORD123", "xPassword", "my.secret.", "token.", "null.x",
		"process.env.KEY", "Xk9#mP2$v123456Lq7", "ghp_aB3dE5fG7hJ9kL1mN3pQ0123456789abcdef", "${DB}", "{{x}}", "a(b)c",
		"****", "xx-xx", "changeme!", "ChAnGe_Me", "your-api-key-here", "é-password", strings.Repeat("a", 128),
		strings.Repeat("a", 129) + "password", "secret_kez", "secret_key", "os.environ[X]", "getenv", "ab.true.", "true"}
	r := rand.New(rand.NewPCG(3, 4))
	frag := "pPaAsSwWoOrRdD._-$xXyYeEtTkKnN1230é{("
	for range 20000 {
		var b strings.Builder
		for n := r.IntN(24); n > 0; n-- {
			if r.IntN(6) == 0 {
				w := stopValues[r.IntN(len(stopValues))]
				if r.IntN(2) == 0 {
					w = strings.ToUpper(w[:len(w)/2]) + w[len(w)/2:]
				}
				b.WriteString(w)
			} else {
				b.WriteByte(frag[r.IntN(len(frag))])
			}
		}
		cases = append(cases, b.String())
	}
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
	frag := "hash_lenlengthpolicyresetexpirfilepathurltypename_idpasswordtoken"
	for range 50000 {
		var b strings.Builder
		for n := r.IntN(16); n > 0; n-- {
			if r.IntN(8) == 0 {
				b.WriteString(notSecretKeyWords[r.IntN(len(notSecretKeyWords))])
			} else {
				b.WriteByte(frag[r.IntN(len(frag))])
			}
		}
		keys = append(keys, b.String())
	}
	for _, k := range keys {
		if got, want := notSecretKey([]byte(k)), naive(k); got != want {
			t.Errorf("notSecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}

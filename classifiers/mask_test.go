package classifiers

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

// maskGenericSpec is maskGeneric's definition, appended byte by byte.
func maskGenericSpec(dst, v []byte) []byte {
	n := 0
	for i := 0; i < len(v); i++ {
		if isAlnum(v[i]) {
			n++
		}
	}
	show := min(2, n/8)
	k := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c >= utf8.RuneSelf {
			_, size := utf8.DecodeRune(v[i:])
			dst = append(dst, '*')
			i += size
			continue
		}
		i++
		if isAlnum(c) {
			if k < show || k >= n-show {
				dst = append(dst, c)
			} else {
				dst = append(dst, '*')
			}
			k++
			continue
		}
		switch c {
		case ' ', '-', '.', '+', '(', ')', '/', ':':
			dst = append(dst, c)
		default:
			dst = append(dst, '*')
		}
	}
	return dst
}

func TestMaskGeneric(t *testing.T) {
	for _, tc := range []struct{ v, want string }{
		{"4970 1234 5678 9012", "49** **** **** **12"},
		{"Xk9#mP2$v123Lq7", "X*************7"},
		{"FR76 3000 4000", "F*** **** ***0"},
		{"abc", "***"},
		{"née:é", "***:*"},
		{"\xff\xfeab", "****"},
		{"", ""},
	} {
		got := string(maskGeneric([]byte("p:"), []byte(tc.v)))
		if got != "p:"+tc.want || got != string(maskGenericSpec([]byte("p:"), []byte(tc.v))) {
			t.Errorf("maskGeneric(%q) = %q, want %q", tc.v, got, "p:"+tc.want)
		}
	}
}

func FuzzMaskGeneric(f *testing.F) {
	for _, s := range []string{"4970 1234 5678 9012", "née", "\xc3", "a-b.c+d(e)f/g:h", "ghp_aB3dE5fG7hJ9kL1m"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		got := maskGeneric([]byte("x"), v)
		if want := maskGenericSpec([]byte("x"), v); !bytes.Equal(got, want) {
			t.Fatalf("maskGeneric = %q, its definition gives %q", got, want)
		}
	})
}

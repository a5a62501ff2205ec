package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestParseCallerKeys(t *testing.T) {
	clear := "team-key-0123456789abcdef"
	sum := sha256.Sum256([]byte("hashed-key-0123456789abcdef"))
	for _, tc := range []struct {
		name, file string
		line       int // 0: valid
		match      []string
		nomatch    []string
	}{
		{"clear and hashed", "# comment\n\n" + clear + "\r\nsha256:" + hex.EncodeToString(sum[:]) + "\n",
			0, []string{clear, "hashed-key-0123456789abcdef"}, []string{"team-key-0123456789abcdeX", "", strings.ToUpper(clear)}},
		{"short key", "# keys\nshort-key\n", 2, nil, nil},
		{"space inside", "a key with spaces inside it\n", 1, nil, nil},
		{"bad hash", "sha256:abcd\n", 1, nil, nil},
		{"non-ASCII", "clé-de-l-équipe-0123456789\n", 1, nil, nil},
		{"no key", "# nothing\n\n", -1, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseCallerKeys(strings.NewReader(tc.file))
			var ke *CallerKeysError
			switch {
			case tc.line == 0 && err != nil:
				t.Fatal(err)
			case tc.line > 0 && (!errors.As(err, &ke) || ke.Line != tc.line):
				t.Fatalf("error %v; want one at line %d", err, tc.line)
			case tc.line < 0 && err == nil:
				t.Fatal("no error for a file without keys")
			}
			if err != nil {
				if strings.Contains(err.Error(), "short-key") || strings.Contains(err.Error(), "sha256:abcd") {
					t.Errorf("the error quotes the line: %v", err)
				}
				return
			}
			for _, m := range tc.match {
				if !k.match(m) {
					t.Errorf("%q does not match", m)
				}
			}
			for _, m := range tc.nomatch {
				if k.match(m) {
					t.Errorf("%q matches", m)
				}
			}
		})
	}
}

// FuzzParseCallerKeys: the parser never panics, never quotes a line in its
// errors, and every key it accepted in clear matches.
func FuzzParseCallerKeys(f *testing.F) {
	f.Add("team-key-0123456789abcdef\n")
	f.Add("# c\nsha256:" + strings.Repeat("0f", 32) + "\n\n")
	f.Add("short\n")
	f.Add("\xff\xfe-not-utf8-but-long-enough\n")
	f.Fuzz(func(t *testing.T, file string) {
		k, err := ParseCallerKeys(strings.NewReader(file))
		if err != nil {
			for _, line := range strings.Split(file, "\n") {
				if l := strings.TrimSpace(line); len(l) >= 8 && strings.Contains(err.Error(), l) {
					t.Fatalf("error %q quotes line %q", err, l)
				}
			}
			return
		}
		if k.Len() == 0 {
			t.Fatal("no error and no key")
		}
		for _, line := range strings.Split(file, "\n") {
			l := strings.TrimSpace(line)
			if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "sha256:") {
				continue
			}
			if !k.match(l) {
				t.Fatalf("accepted key %q does not match", l)
			}
		}
	})
}

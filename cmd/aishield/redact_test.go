package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzRestoreStream: restoring through one-byte reads (a placeholder split
// at every possible point) gives the same output as restoring the whole
// text, and only the vault's placeholders change.
func FuzzRestoreStream(f *testing.F) {
	m := map[string]string{"[[PII_EMAIL_012daf05]]": "jane@nowhere-mail.fr", "[[PII_PHONE_47e2dd5a]]": "+33 6 12 34 56 78"}
	f.Add("write to [[PII_EMAIL_012daf05]] or call [[PII_PHONE_47e2dd5a]].")
	f.Add("[[ [[PII_EMAIL_00000000]] [[PII_EMAIL_012daf05]][[PII_PHONE_47e2dd5a]]")
	f.Add("[[[[PII_EMAIL_012daf05]]]] [")
	f.Fuzz(func(t *testing.T, s string) {
		var whole, split bytes.Buffer
		r1, f1, err := restoreStream(strings.NewReader(s), &whole, m)
		if err != nil {
			t.Fatal(err)
		}
		r2, f2, err := restoreStream(iotest.OneByteReader(strings.NewReader(s)), &split, m)
		if err != nil {
			t.Fatal(err)
		}
		if whole.String() != split.String() || r1 != r2 || f1 != f2 {
			t.Errorf("whole %q (%d, %d) vs split %q (%d, %d)", whole.String(), r1, f1, split.String(), r2, f2)
		}
		want := s
		for p, v := range m {
			want = strings.ReplaceAll(want, p, v)
		}
		if !strings.Contains(s, "jane@") && !strings.Contains(s, "+33") && whole.String() != want {
			t.Errorf("restored %q, want %q", whole.String(), want)
		}
	})
}

func TestRestoreStreamReadError(t *testing.T) {
	_, _, err := restoreStream(iotest.ErrReader(io.ErrUnexpectedEOF), io.Discard, nil)
	if err != io.ErrUnexpectedEOF {
		t.Errorf("err %v", err)
	}
}

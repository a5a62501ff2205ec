package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/aishield/aishield/sdk"
)

// testVault is a vault as aishield redact saves it.
const testVault = `{"version":1,"policy":"default","destination":"openai","placeholders":{
  "[[PII_EMAIL_012daf05]]":"jane@nowhere-mail.fr","[[PII_PHONE_47e2dd5a]]":"+33 6 12 34 56 78"}}`

func readTestVault(t testing.TB) *sdk.Vault {
	t.Helper()
	v, err := sdk.ReadVault(strings.NewReader(testVault))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// FuzzVaultRestore: restoring through one-byte reads (a placeholder split
// at every possible point) gives the same output as restoring the whole
// text, and only the vault's placeholders change.
func FuzzVaultRestore(f *testing.F) {
	f.Add("write to [[PII_EMAIL_012daf05]] or call [[PII_PHONE_47e2dd5a]].")
	f.Add("[[ [[PII_EMAIL_00000000]] [[PII_EMAIL_012daf05]][[PII_PHONE_47e2dd5a]]")
	f.Add("[[[[PII_EMAIL_012daf05]]]] [")
	f.Add("mangled [[PIPII_EMAIL_012daf05]] and cut [[PII_EMA")
	f.Fuzz(func(t *testing.T, s string) {
		v := readTestVault(t)
		var whole, split bytes.Buffer
		st1, err := v.Restore(strings.NewReader(s), &whole)
		if err != nil {
			t.Fatal(err)
		}
		st2, err := v.Restore(iotest.OneByteReader(strings.NewReader(s)), &split)
		if err != nil {
			t.Fatal(err)
		}
		if whole.String() != split.String() || st1 != st2 {
			t.Errorf("whole %q (%+v) vs split %q (%+v)", whole.String(), st1, split.String(), st2)
		}
		if str, st := v.RestoreString(s); str != whole.String() || st != st1 {
			t.Errorf("RestoreString %q (%+v), Restore %q (%+v)", str, st, whole.String(), st1)
		}
		if !strings.Contains(s, "jane@") && !strings.Contains(s, "+33") && !strings.Contains(s, "012daf05") &&
			!strings.Contains(s, "47e2dd5a") && whole.String() != s {
			t.Errorf("restored %q from a text holding none of the vault's tags", whole.String())
		}
	})
}

func TestVaultRestoreReadError(t *testing.T) {
	_, err := readTestVault(t).Restore(iotest.ErrReader(io.ErrUnexpectedEOF), io.Discard)
	if err != io.ErrUnexpectedEOF {
		t.Errorf("err %v", err)
	}
}

func TestReadVaultRejects(t *testing.T) {
	for _, in := range []string{"", "{}", `{"version":2,"placeholders":{}}`, `[1]`,
		`{"version":1,"placeholders":{"[[PII_EMAIL_xyz]]":"a"}}`, `{"version":1,"placeholders":{"nope":"a"}}`} {
		if _, err := sdk.ReadVault(strings.NewReader(in)); err == nil {
			t.Errorf("%q: accepted", in)
		} else if strings.Contains(err.Error(), "\"a\"") {
			t.Errorf("%q: the error shows a value: %v", in, err)
		}
	}
}

// TestVaultRoundTrip: what the CLI filter redacts, saves and loads back
// restores exactly as the guard restores in-process, mangled labels
// included (the tag is the identity), and nothing of another vault.
func TestVaultRoundTrip(t *testing.T) {
	g := newGuard(t, sdk.Options{Destination: "openai-test"})
	doc := "Write to " + email + " or call " + phone + " today."
	x, err := g.CheckText(context.Background(), doc)
	if err != nil {
		t.Fatal(err)
	}
	sent := string(x.Body)
	if strings.Contains(sent, email) || strings.Contains(sent, "12 34 56") || x.Redacted != 2 || x.Vault().Len() != 2 {
		t.Fatalf("sent %q, %d redacted, vault of %d", sent, x.Redacted, x.Vault().Len())
	}
	var saved bytes.Buffer
	if _, err := x.Vault().WriteTo(&saved); err != nil {
		t.Fatal(err)
	}
	var file struct {
		Destination string `json:"destination"`
	}
	if err := json.Unmarshal(saved.Bytes(), &file); err != nil || file.Destination != "openai-test" {
		t.Fatalf("saved vault %s: %v", saved.String(), err)
	}
	loaded, err := sdk.ReadVault(&saved)
	if err != nil {
		t.Fatal(err)
	}
	phs := regexp.MustCompile(`\[\[[A-Z_]+_[0-9a-f]{8}\]\]`).FindAllString(sent, -1)
	mangled := strings.Replace(phs[0], "[[PII_", "[[PIPII_", 1)
	answer := "Sure: " + mangled + ", " + phs[1] + ", not [[PII_EMAIL_00000000]]."
	want, _ := x.Vault().RestoreString(answer)
	var out bytes.Buffer
	st, err := loaded.Restore(iotest.OneByteReader(strings.NewReader(answer)), &out)
	if err != nil {
		t.Fatal(err)
	}
	if out.String() != want || st.Restored != 2 || st.Foreign != 1 {
		t.Errorf("loaded vault restored %q (%+v), the guard's %q", out.String(), st, want)
	}
	if !strings.Contains(want, email) || !strings.Contains(want, phone) {
		t.Errorf("restored %q", want)
	}
}

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/sdk"
)

const testAuditKeyHex = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

// writeTrail writes three records through openAuditTrail (the key of
// AISHIELD_AUDIT_KEY, if set) and closes it; it returns the file's lines.
func writeTrail(t *testing.T, path string) []string {
	t.Helper()
	log, closeTrail, err := openAuditTrail(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := log.Append(&sdk.AuditRecord{Time: time.Unix(int64(i), 0).UTC(), Exchange: "x", Destination: "d", Model: "m", Tokens: i, Decision: "allow", Verdict: "clean"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := closeTrail(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// plainRechain rewrites a trail's records as a plain SHA-256 chain and
// drops its heads: what anyone who can write the file can do.
func plainRechain(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	prev := sdk.GenesisHash
	for _, l := range lines {
		if strings.HasPrefix(l, `{"type":"head"`) {
			continue
		}
		var rec sdk.AuditRecord
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatal(err)
		}
		rec.Chain, rec.Prev = "", prev
		b, _ := json.Marshal(&rec)
		s := sha256.Sum256(b)
		prev = hex.EncodeToString(s[:])
		out = append(out, string(b))
	}
	return out
}

// TestHardening17AuditVerifyExitCodes: audit verify exits 0 intact, 1
// broken, 2 on input errors (a directory, a file that is no trail, a keyed
// trail without its key, a malformed key); a trailing blank line is fine;
// with AISHIELD_AUDIT_KEY a re-chained trail, a dropped head, a cut last
// line and a wrong key are broken, and an unkeyed check says what it is
// worth.
func TestHardening17AuditVerifyExitCodes(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(auditKeyEnv, testAuditKeyHex)
	keyed := writeTrail(t, filepath.Join(dir, "keyed.jsonl"))
	if len(keyed) != 4 || !strings.HasPrefix(keyed[3], `{"type":"head"`) {
		t.Fatalf("keyed trail: want 3 records and a head, got\n%s", strings.Join(keyed, "\n"))
	}
	t.Setenv(auditKeyEnv, "")
	plain := writeTrail(t, filepath.Join(dir, "plain.jsonl"))

	file := func(name string, lines []string, tail string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+tail), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edited := append([]string{}, keyed...)
	edited[1] = strings.Replace(edited[1], `"tokens":1`, `"tokens":7`, 1)
	wrongKey := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name   string
		args   []string
		key    string
		code   int
		stdout string
		stderr string
	}{
		{"keyed intact", []string{file("k.jsonl", keyed, "\n")}, testAuditKeyHex, 0, `chain intact, keyed \(HMAC-SHA256`, ""},
		{"keyed, trailing blank line", []string{file("kb.jsonl", keyed, "\n\n")}, testAuditKeyHex, 0, "OK", ""},
		{"keyed, key in base64", []string{file("k64.jsonl", keyed, "\n")}, "ABEiM0RVZneImaq7zN3u/wARIjNEVWZ3iJmqu8zd7v8=", 0, "OK", ""},
		{"unkeyed intact says what it is worth", []string{file("p.jsonl", plain, "\n")}, "", 0, "unkeyed: integrity only against accidental damage, not against a writer", ""},
		{"unkeyed, trailing blank line", []string{file("pb.jsonl", plain, "\n\n")}, "", 0, "OK", ""},
		{"unkeyed, blank line inside", []string{file("pm.jsonl", append([]string{plain[0], ""}, plain[1:]...), "\n")}, "", 1, "BROKEN .*line 2: blank line inside", ""},
		{"edited record", []string{file("e.jsonl", edited, "\n")}, testAuditKeyHex, 1, "BROKEN .*line 3: prev does not match", ""},
		{"re-chained with plain SHA-256", []string{file("r.jsonl", plainRechain(t, edited), "\n")}, testAuditKeyHex, 1, "BROKEN .*re-chained", ""},
		{"dropped head", []string{file("d.jsonl", keyed[:3], "\n")}, testAuditKeyHex, 1, "BROKEN .*does not end with a signed head", ""},
		{"dropped head, --open", []string{"--open", file("do.jsonl", keyed[:3], "\n")}, testAuditKeyHex, 0, "3 record\\(s\\) after it not sealed", ""},
		{"truncated last line", []string{file("t.jsonl", append(keyed[:3], keyed[3][:40]), "")}, testAuditKeyHex, 1, "BROKEN .*line 4: not an audit record", ""},
		{"wrong key", []string{file("w.jsonl", keyed, "\n")}, wrongKey, 1, "BROKEN .*keyed with another key", ""},
		{"keyed trail without a key", []string{file("n.jsonl", keyed, "\n")}, "", 2, "^$", "key is needed to verify it: set AISHIELD_AUDIT_KEY"},
		{"malformed key", []string{file("m.jsonl", keyed, "\n")}, "not a key!", 2, "^$", "AISHIELD_AUDIT_KEY is neither hex nor base64"},
		{"short key", []string{file("s.jsonl", keyed, "\n")}, "abcd", 2, "^$", "at least 16"},
		{"directory", []string{dir}, "", 2, "^$", "is a directory"},
		{"not an audit trail", []string{file("x.txt", []string{"hello", "world"}, "\n")}, "", 2, "^$", "not an audit trail"},
		{"missing", []string{filepath.Join(dir, "missing.jsonl")}, "", 2, "^$", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(auditKeyEnv, tc.key)
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"audit", "verify"}, tc.args...), strings.NewReader(""), &out, &errb)
			if code != tc.code || !matches(out.String(), tc.stdout) || !matches(errb.String(), tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout ~ %q, stderr ~ %q", code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
			}
			if strings.Contains(out.String()+errb.String(), testAuditKeyHex) {
				t.Error("the key was printed")
			}
		})
	}
}

// matches reports whether s matches the regular expression re ("" matches
// anything).
func matches(s, re string) bool { return regexp.MustCompile(re).MatchString(s) }

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The policy commands and scan's policy flags exit with the documented
// codes (testscript only tells zero from non-zero).
func TestPolicyExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml", "levels: [public, internal]\ndefault: {max_level: public}\n")
	warn := write("warn.yaml", "levels: [public, internal]\ndefault: {max_level: internal}\n")
	bad := write("bad.yaml", "levels: [public]\nredaction: {style: blur}\n")
	pass := write("t/pass/a_test.yaml", "policy: secrets-only\ncases:\n  - {name: a, input: hello, expect: {action: allow}}\n")
	fail := write("t/fail/a_test.yaml", "policy: secrets-only\ncases:\n  - {name: a, input: hello, expect: {action: block}}\n")
	errf := write("t/err/a_test.yaml", "policy: nope.yaml\ncases:\n  - {name: a, input: hello, expect: {action: block}}\n")
	clean := write("clean.txt", "nothing here\n")
	mail := write("mail.txt", "write to jane.doe@acme-corp.com\n")
	tests := []struct {
		args []string
		code int
	}{
		{[]string{"policy", "lint", good}, 0},
		{[]string{"policy", "lint", warn}, 0},
		{[]string{"policy", "lint", bad}, 1},
		{[]string{"policy", "lint", good, filepath.Join(dir, "missing.yaml")}, 2},
		{[]string{"policy", "lint", "--format", "xml", good}, 2},
		{[]string{"policy", "test", pass}, 0},
		{[]string{"policy", "test", fail}, 2},
		{[]string{"policy", "test", errf}, 1},
		{[]string{"policy", "test", errf, fail}, 1},
		{[]string{"policy", "test", "--format", "junit", pass}, 1},
		{[]string{"policy", "explain", "--destination", "openai", "default"}, 0},
		{[]string{"policy", "explain", "--destination", "nope", "default"}, 2},
		{[]string{"policy", "schema"}, 0},
		{[]string{"scan", "--destination", "openai", clean}, 0},
		{[]string{"scan", "--destination", "openai", mail}, 1},
		{[]string{"scan", "--destination", "local", mail}, 0},
		{[]string{"scan", "--destination", "nope", mail}, 2},
		{[]string{"scan", "--destination", "openai", mail, filepath.Join(dir, "missing.txt")}, 2},
		{[]string{"scan", "--fail-on", "restricted", mail}, 0},
		{[]string{"scan", "--fail-on", "confidential", mail}, 1},
		{[]string{"scan", "--format", "sarif", clean}, 0},
		{[]string{"scan", "--format", "sarif", mail}, 1},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tt.args, strings.NewReader(""), &out, &errOut)
		if code != tt.code {
			t.Errorf("aishield %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tt.args, " "), code, tt.code, out.String(), errOut.String())
		}
	}
}

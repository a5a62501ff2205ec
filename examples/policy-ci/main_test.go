package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The example's policy lints clean and its cases pass; a broken copy fails.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), "aishield", &out, &errOut); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "PASS: 6/6") {
		t.Errorf("unexpected report:\n%s", out.String())
	}

	// The workflow runs the commands this example stands for.
	wf, err := os.ReadFile("workflow.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"aishield policy lint aishield/policy.yaml", "aishield policy test aishield", "--format sarif", "upload-sarif"} {
		if !bytes.Contains(wf, []byte(cmd)) {
			t.Errorf("workflow.yml lacks %q", cmd)
		}
	}

	dir := t.TempDir()
	src, _ := os.ReadFile(filepath.Join("aishield", "policy.yaml"))
	tests, _ := os.ReadFile(filepath.Join("aishield", "policy_test.yaml"))
	broken := bytes.Replace(src, []byte("contract: true"), []byte("contract: false"), 1)
	os.WriteFile(filepath.Join(dir, "policy.yaml"), broken, 0o600)
	os.WriteFile(filepath.Join(dir, "policy_test.yaml"), tests, 0o600)
	out.Reset()
	if code := run(context.Background(), dir, &out, &errOut); code != 1 || !strings.Contains(out.String(), "shared-without-contract") {
		t.Errorf("a shared destination without contract must fail lint: exit %d\n%s", code, out.String())
	}
}

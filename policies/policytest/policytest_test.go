package policytest

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aishield/aishield/internal/golden"
	"github.com/aishield/aishield/policies"
)

// Every preset has its own test cases, and they all pass.
func TestPresetCases(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), []string{filepath.Join("testdata", "presets")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	perPreset := map[string]int{}
	for _, r := range rep.Results {
		perPreset[strings.TrimSuffix(filepath.Base(r.File), "_test.yaml")]++
		if r.Status != Pass {
			t.Errorf("%s: %s: %s %v", r.File, r.Name, r.Status, r.Messages)
		}
	}
	for _, name := range policies.Presets() {
		if perPreset[name] < 4 {
			t.Errorf("preset %s has %d test cases, want at least 4", name, perPreset[name])
		}
	}
	if rep.ExitCode() != 0 {
		t.Errorf("exit code %d", rep.ExitCode())
	}
}

// The runner reports passes, failures and errors like opa test, in pretty
// and JSON form.
func TestRunTestsGolden(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), []string{filepath.Join("testdata", "runner")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass != 3 || rep.Fail != 2 || rep.Error != 3 {
		t.Errorf("pass %d fail %d error %d, want 3 2 3", rep.Pass, rep.Fail, rep.Error)
	}
	if rep.ExitCode() != 1 {
		t.Errorf("exit code %d, want 1 (errors win over failures)", rep.ExitCode())
	}
	var pretty, verbose, js bytes.Buffer
	if err := rep.WritePretty(&pretty, false); err != nil {
		t.Fatal(err)
	}
	rep.WritePretty(&verbose, true)
	rep.WriteJSON(&js)
	golden.Check(t, "runner/pretty.golden", pretty.Bytes())
	golden.Check(t, "runner/verbose.golden", verbose.Bytes())
	golden.Check(t, "runner/json.golden", js.Bytes())
	for _, out := range []string{pretty.String(), js.String()} {
		if strings.Contains(out, "jane.doe") || strings.Contains(out, "acme-corp") {
			t.Errorf("a raw value escaped into the report:\n%s", out)
		}
	}
}

func TestRunTestsExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pass := write("pass_test.yaml", "policy: secrets-only\ncases:\n  - {name: a, input: hello, expect: {action: allow}}\n")
	fail := write("fail_test.yaml", "policy: secrets-only\ncases:\n  - {name: a, input: hello, expect: {action: block}}\n")
	bad := write("bad_test.yaml", "policy: secrets-only\ncases: 3\n")
	unknown := write("unknown_test.yaml", "policy: secrets-only\ncases:\n  - {name: a, input: hi, expect: {action: allow}, extra: 1}\n")
	noCases := write("nocases_test.yaml", "policy: secrets-only\n")
	tests := []struct {
		paths []string
		code  int
	}{
		{[]string{pass}, 0},
		{[]string{fail}, 2},
		{[]string{pass, fail}, 2},
		{[]string{bad}, 1},
		{[]string{unknown}, 1},
		{[]string{noCases}, 1},
		{[]string{fail, bad}, 1},
		{[]string{filepath.Join(dir, "missing_test.yaml")}, 1},
	}
	for _, tt := range tests {
		rep, err := Run(context.Background(), tt.paths, Options{})
		if err != nil {
			t.Errorf("%v: %v", tt.paths, err)
			continue
		}
		if rep.ExitCode() != tt.code {
			t.Errorf("%v: exit %d, want %d: %+v", tt.paths, rep.ExitCode(), tt.code, rep.Results)
		}
	}
	if _, err := Run(context.Background(), []string{t.TempDir()}, Options{}); err == nil {
		t.Error("a directory without test files must be an error")
	}
}

// FuzzParseTestData: policy test files never panic the parser, and every
// error names the file.
func FuzzParseTestData(f *testing.F) {
	f.Add([]byte("policy: default\ncases:\n  - {name: a, input: hi, expect: {action: allow, level: none, detectors: []}}\n"))
	f.Add([]byte("policy: p.yaml\ncases:\n  - name: b\n    file: x.txt\n    tokens: 12\n    expect: {action: block, over_capacity: true}\n"))
	f.Add([]byte("cases: 3\n"))
	f.Add([]byte("policy: [1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := parseTestData(data, "fuzz_test.yaml")
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz_test.yaml") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if tf.Policy == "" || len(tf.Cases) == 0 {
			t.Fatalf("accepted a test file without policy or cases: %+v", tf)
		}
	})
}

// A case with quarantined: true is decided as the guard decides while the
// destination is quarantined; expect.destination checks a failover.
func TestQuarantinedCases(t *testing.T) {
	t.Parallel()
	rep, err := Run(context.Background(), []string{filepath.Join("testdata", "quarantine")}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pass != 2 || rep.ExitCode() != 0 {
		for _, r := range rep.Results {
			t.Logf("%s: %s %v", r.Name, r.Status, r.Messages)
		}
		t.Fatalf("pass %d, exit %d", rep.Pass, rep.ExitCode())
	}
	// The same expectation against the trusted destination fails: the
	// field is checked.
	dir := t.TempDir()
	src, _ := os.ReadFile(filepath.Join("testdata", "quarantine", "failover.yaml"))
	os.WriteFile(filepath.Join(dir, "failover.yaml"), src, 0o600)
	os.WriteFile(filepath.Join(dir, "x_test.yaml"), []byte("policy: failover.yaml\ncases:\n  - destination: gpu-cloud\n    input: hello\n    expect: {action: allow, destination: local}\n"), 0o600)
	rep, err = Run(context.Background(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fail != 1 || !strings.Contains(strings.Join(rep.Results[0].Messages, " "), "destination: got gpu-cloud, want local") {
		t.Errorf("%+v", rep.Results)
	}
}

// A case's file may be an archive: its members are the request's texts.
func TestRunArchiveFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range map[string]string{"a/notes.txt": "Please email jane.doe@acme-corp.com about it.", "b/plain.txt": "nothing here"} {
		w, _ := zw.Create(name)
		w.Write([]byte(body))
	}
	zw.Close()
	os.WriteFile(filepath.Join(dir, "bundle.zip"), buf.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "broken.zip"), []byte("PK\x03\x04broken"), 0o644)
	policy, _ := os.ReadFile(filepath.Join("testdata", "runner", "policy.yaml"))
	os.WriteFile(filepath.Join(dir, "policy.yaml"), policy, 0o644)
	os.WriteFile(filepath.Join(dir, "zip_test.yaml"), []byte(`policy: policy.yaml
cases:
  - name: archive
    destination: openai
    file: bundle.zip
    expect: {action: redact, level: confidential, detectors: [pii.email]}
  - name: unreadable archive
    destination: openai
    file: broken.zip
    expect: {action: allow}
`), 0o644)
	rep, err := Run(context.Background(), []string{dir}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 2 || rep.Results[0].Status != Pass || rep.Results[1].Status != Error {
		t.Fatalf("results %+v", rep.Results)
	}
	if msg := strings.Join(rep.Results[1].Messages, " "); !strings.Contains(msg, "zip archive that cannot be read") {
		t.Errorf("error %q", msg)
	}
}

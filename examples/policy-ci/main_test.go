package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
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

// workflow.yml is valid YAML; on pull requests it checks out the history
// and scans only what the pull request adds, uploading the SARIF even when
// the scan fails the job.
func TestWorkflow(t *testing.T) {
	data, err := os.ReadFile("workflow.yml")
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		Name string            `yaml:"name"`
		Uses string            `yaml:"uses"`
		If   string            `yaml:"if"`
		Run  string            `yaml:"run"`
		With map[string]any    `yaml:"with"`
		Env  map[string]string `yaml:"env"`
	}
	var wf struct {
		On   map[string]any `yaml:"on"`
		Jobs map[string]struct {
			RunsOn string `yaml:"runs-on"`
			Steps  []step `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("workflow.yml is not valid YAML: %v", err)
	}
	if _, ok := wf.On["pull_request"]; !ok {
		t.Error("the workflow does not run on pull requests")
	}
	steps := wf.Jobs["aishield"].Steps
	tests := []struct {
		name string
		ok   func(s step) bool
	}{
		{"install from a pinned checkout, never @latest", func(s step) bool {
			return strings.Contains(s.Run, "go install ./cmd/aishield") && !strings.Contains(s.Run, "@latest") && s.Env["AISHIELD_REF"] != ""
		}},
		{"the repository's scan written with -o (not scanned by itself)", func(s step) bool {
			return strings.HasPrefix(s.Run, "aishield scan ") && strings.Contains(s.Run, "--format sarif -o aishield.sarif .")
		}},
		{"checkout of the whole history", func(s step) bool {
			return strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["fetch-depth"] == 0
		}},
		{"scan git of what the pull request adds, as SARIF", func(s step) bool {
			return s.If == "github.event_name == 'pull_request'" &&
				strings.HasPrefix(s.Run, "aishield scan git --since origin/${{ github.base_ref }} ") &&
				strings.Contains(s.Run, "--format sarif -o aishield-pr.sarif") && s.Env["AISHIELD_HASH_KEY"] != ""
		}},
		{"upload of that SARIF even when the scan fails", func(s step) bool {
			return strings.HasPrefix(s.Uses, "github/codeql-action/upload-sarif@") && s.With["sarif_file"] == "aishield-pr.sarif" &&
				strings.HasPrefix(s.If, "always() && ")
		}},
	}
	for _, tt := range tests {
		if !slices.ContainsFunc(steps, tt.ok) {
			t.Errorf("no step: %s", tt.name)
		}
	}
}

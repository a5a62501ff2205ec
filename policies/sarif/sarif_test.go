package sarif

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/golden"
	"github.com/aishield/aishield/policies"
)

// sarifFixture scans real text with the default preset and a fixed key.
func sarifFixture(t *testing.T) ([]File, *policies.Policy, []string) {
	t.Helper()
	p, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.NewScanner([]byte("golden key"))
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{
		"docs/contract.md": "# Contract\n\nCONFIDENTIAL\n\nContact: jane.doe@acme-corp.com, +33 6 12 34 56 78\n",
		"deploy/env.sh":    "export DB=postgres://admin:S3cr3tP4ss@db.acme-corp.com:5432/prod\nexport AWS=AKIAZ3MSJV4WWNKQ7UXM\n",
		"README.md":        "Nothing to see here.\n",
	}
	raw := []string{"jane.doe", "S3cr3tP4ss", "AKIAZ3MSJV4WWNKQ7UXM", "12 34 56"}
	var files []File
	for _, path := range []string{"docs/contract.md", "deploy/env.sh", "README.md"} {
		fs, err := s.ScanString(context.Background(), inputs[path])
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, File{Path: path, Findings: fs})
	}
	return files, p, raw
}

func TestWriteSARIFGolden(t *testing.T) {
	t.Parallel()
	files, p, raw := sarifFixture(t)
	openai, _ := p.Destination("openai")
	for _, tt := range []struct {
		name string
		opts Options
	}{
		{"sarif_plain.golden", Options{ToolVersion: "v0.0.0-test", Fingerprints: true}},
		{"sarif_destination.golden", Options{ToolVersion: "v0.0.0-test", Policy: p, Destination: openai, Fingerprints: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, files, tt.opts); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, tt.name, buf.Bytes())
			for _, r := range raw {
				if strings.Contains(buf.String(), r) {
					t.Errorf("raw value %q in SARIF output", r)
				}
			}
			checkSARIF(t, buf.Bytes())
		})
	}
}

// checkSARIF checks what GitHub code scanning requires of an upload.
func checkSARIF(t *testing.T, data []byte) {
	t.Helper()
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string `json:"name"`
					Rules []struct {
						ID               string                `json:"id"`
						ShortDescription struct{ Text string } `json:"shortDescription"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string                `json:"ruleId"`
				RuleIndex int                   `json:"ruleIndex"`
				Level     string                `json:"level"`
				Message   struct{ Text string } `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string } `json:"artifactLocation"`
						Region           struct {
							StartLine, StartColumn, EndLine int
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 || log.Runs[0].Tool.Driver.Name != "aishield" {
		t.Fatalf("bad envelope: %+v", log)
	}
	run := log.Runs[0]
	if len(run.Results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range run.Results {
		if r.RuleIndex < 0 || r.RuleIndex >= len(run.Tool.Driver.Rules) || run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s has a bad rule index %d", r.RuleID, r.RuleIndex)
		}
		switch r.Level {
		case "error", "warning", "note":
		default:
			t.Errorf("bad level %q", r.Level)
		}
		if r.Message.Text == "" || len(r.Locations) != 1 || r.PartialFingerprints[FingerprintKey] == "" {
			t.Errorf("incomplete result %+v", r)
		}
		reg := r.Locations[0].PhysicalLocation.Region
		if reg.StartLine < 1 || reg.StartColumn < 1 || reg.EndLine < reg.StartLine || r.Locations[0].PhysicalLocation.ArtifactLocation.URI == "" {
			t.Errorf("bad location %+v", r.Locations[0])
		}
	}
	for _, rule := range run.Tool.Driver.Rules {
		if rule.ID == "" || rule.ShortDescription.Text == "" {
			t.Errorf("incomplete rule %+v", rule)
		}
	}
}

func TestWriteSARIFEmpty(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := Write(&buf, nil, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"results": []`) {
		t.Errorf("empty log must have an empty results array:\n%s", buf.String())
	}
	// Every rule of the run is listed, whether it fired or not.
	for _, b := range classifiers.Builtins() {
		if !strings.Contains(buf.String(), `"id": "`+b.ID+`"`) {
			t.Errorf("rule %s missing from an empty log", b.ID)
		}
	}
}

func TestRuleName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"secret.github_token": "SecretGithubToken", "pii.email": "PiiEmail", "custom.x-y": "CustomXY"} {
		if got := ruleName(in); got != want {
			t.Errorf("ruleName(%q) = %q, want %q", in, got, want)
		}
	}
}

package sarif

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

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
							StartLine, StartColumn, EndLine, EndColumn int
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
		if r.Message.Text == "" || len(r.Locations) != 1 || r.PartialFingerprints[FingerprintKey] == "" || r.PartialFingerprints[LocationFingerprintKey] == "" {
			t.Errorf("incomplete result %+v", r)
		}
		reg := r.Locations[0].PhysicalLocation.Region
		if reg.EndColumn < 1 || reg.EndLine == reg.StartLine && reg.EndColumn <= reg.StartColumn {
			t.Errorf("result %s: region %+v has no proper end", r.RuleID, reg)
		}
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

// A File's Commit and EndColumns reach each of its results: the commit in
// the properties and as the commitSha partial fingerprint, with or
// without value fingerprints; files without a commit write none.
func TestWriteSARIFCommit(t *testing.T) {
	files, p, _ := sarifFixture(t)
	commit := &Commit{SHA: "0123456789abcdef0123456789abcdef01234567", Author: "Ann Author", Email: "ann@example.net", Date: "2026-01-01T10:00:00+00:00"}
	for i := range files {
		if files[i].Path == "deploy/env.sh" {
			files[i].Commit = commit
			for range files[i].Findings {
				files[i].EndColumns = append(files[i].EndColumns, 42)
			}
		}
	}
	for _, fingerprints := range []bool{false, true} {
		var b bytes.Buffer
		if err := Write(&b, files, Options{Policy: p, Fingerprints: fingerprints}); err != nil {
			t.Fatal(err)
		}
		var log struct {
			Runs []struct {
				Results []struct {
					Locations []struct {
						PhysicalLocation struct {
							ArtifactLocation struct{ URI string } `json:"artifactLocation"`
							Region           map[string]int       `json:"region"`
						} `json:"physicalLocation"`
					} `json:"locations"`
					PartialFingerprints map[string]string `json:"partialFingerprints"`
					Properties          *Commit           `json:"properties"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(b.Bytes(), &log); err != nil {
			t.Fatal(err)
		}
		withCommit := 0
		for _, r := range log.Runs[0].Results {
			pl := r.Locations[0].PhysicalLocation
			if pl.ArtifactLocation.URI != "deploy/env.sh" {
				if r.Properties != nil || r.PartialFingerprints[CommitFingerprintKey] != "" {
					t.Errorf("%s carries a commit", pl.ArtifactLocation.URI)
				}
				continue
			}
			withCommit++
			if pl.Region["endColumn"] != 42 || r.PartialFingerprints[CommitFingerprintKey] != commit.SHA {
				t.Errorf("region %v, fingerprints %v", pl.Region, r.PartialFingerprints)
			}
			if fingerprints != (r.PartialFingerprints[FingerprintKey] != "") {
				t.Errorf("fingerprints %v with Options.Fingerprints %v", r.PartialFingerprints, fingerprints)
			}
		}
		if withCommit != 2 {
			t.Errorf("%d results of deploy/env.sh, want 2", withCommit)
		}
		if !strings.Contains(b.String(), `"properties": {
            "commitSha": "0123456789abcdef0123456789abcdef01234567",
            "author": "Ann Author",
            "email": "ann@example.net",
            "date": "2026-01-01T10:00:00+00:00"
          }`) {
			t.Errorf("properties not written as expected:\n%s", b.String())
		}
	}
}

// TestWriteSARIFSchema validates logs against a JSON Schema of the part of
// SARIF 2.1.0 that Write produces (testdata/sarif-subset.schema.json,
// written from the OASIS standard's sections, which it names).
func TestWriteSARIFSchema(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("testdata", "sarif-subset.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sarif-subset.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif-subset.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	files, p, _ := sarifFixture(t)
	openai, _ := p.Destination("openai")
	committed := slices.Clone(files)
	for i := range committed {
		committed[i].Commit = &Commit{SHA: "0123456789abcdef0123456789abcdef01234567", Author: "Ann Author", Email: "ann@example.net", Date: "2026-01-01T10:00:00+00:00"}
	}
	for _, tt := range []struct {
		name  string
		files []File
		opts  Options
	}{
		{"no policy", files, Options{ToolVersion: "v0.0.0-test", Fingerprints: true}},
		{"destination", files, Options{ToolVersion: "v0.0.0-test", Policy: p, Destination: openai}},
		{"not scanned", files, Options{Policy: p, NotScanned: []NotScanned{{Path: "a.pdf", Reason: "encrypted"}}, Incomplete: true}},
		{"empty", nil, Options{}},
		{"commits (scan git)", committed, Options{Policy: p, Fingerprints: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tt.files, tt.opts); err != nil {
				t.Fatal(err)
			}
			inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			if err := schema.Validate(inst); err != nil {
				t.Errorf("SARIF log does not validate: %v", err)
			}
		})
	}
	// The schema is not vacuous: a region whose endColumn is not a
	// number fails it.
	var buf bytes.Buffer
	if err := Write(&buf, files, Options{}); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(buf.String(), `"endColumn": `, `"endColumn": "x", "ignored": `, 1)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if schema.Validate(inst) == nil {
		t.Error("a log with a string endColumn validates")
	}
}

// TestWriteSARIFRules: the rules are every rule of the run, fired or not,
// each with the level the policy gives it, and results point at theirs.
func TestWriteSARIFRules(t *testing.T) {
	t.Parallel()
	files, _, _ := sarifFixture(t)
	p, err := policies.Parse([]byte(`
levels: [public, internal, secret]
classify:
  - {detectors: ["secret.*"], level: secret}
  - {detectors: ["pii.email"], level: internal}
scan:
  detectors: ["secret.*", "pii.email"]
custom:
  - {id: custom.project, keywords: [bluebird], level: secret}
default: {max_level: public}
`), "yaml", "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, files, Options{Policy: p}); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID                   string
						DefaultConfiguration struct{ Level string }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(buf.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	levels := map[string]string{}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		levels[r.ID] = r.DefaultConfiguration.Level
	}
	for _, id := range p.DetectorIDs() {
		if _, ok := levels[id]; !ok {
			t.Errorf("rule %s of the policy is not listed", id)
		}
	}
	for id, want := range map[string]string{"custom.project": "error", "secret.aws_access_key_id": "error", "pii.email": "warning"} {
		if levels[id] != want {
			t.Errorf("rule %s: level %q, want %q", id, levels[id], want)
		}
	}
	if _, ok := levels["pii.iban"]; ok {
		t.Error("a detector the policy does not enable is listed")
	}
}

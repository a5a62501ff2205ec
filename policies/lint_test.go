package policies

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLintRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		src   string
		codes []string // code@field, sorted as Lint sorts
	}{
		{"clean", `
levels: [public, internal, confidential]
classify:
  - detectors: ["pii.*"]
    level: confidential
destinations:
  - {name: openai, provider: openai, max_level: internal, action: redact, shared: true, max_input_tokens: 128000}
default: {max_level: public}
`, nil},
		{"shared above internal without contract", `
levels: [public, internal, confidential]
destinations:
  - {name: a, provider: openai, max_level: confidential, shared: true, max_input_tokens: 10}
  - {name: b, provider: anthropic, max_level: confidential, shared: true, contract: true, max_input_tokens: 10}
  - {name: c, provider: mistral, max_level: confidential, max_input_tokens: 10}
default: {max_level: confidential, shared: true}
`, []string{"open-default@default.max_level", "shared-without-contract@default.max_level", "shared-without-contract@destinations[0].max_level"}},
		{"no internal level uses the lowest", `
levels: [low, high]
destinations:
  - {name: a, provider: openai, max_level: high, shared: true, max_input_tokens: 10}
`, []string{"shared-without-contract@destinations[0].max_level"}},
		{"unknown detectors", `
levels: [a, b]
classify:
  - detectors: ["pii.emial", "secret.*", "custom.*", "custom.zeus"]
    level: b
custom:
  - {id: custom.apollo, keywords: [Apollo], level: b}
`, []string{"unknown-detector@classify[0].detectors[0]", "unknown-detector@classify[0].detectors[3]"}},
		{"shadowed destinations", `
levels: [a, b]
destinations:
  - {name: openai-all, provider: openai, max_level: a}
  - {name: openai-gpt4, provider: openai, model: "gpt-4*", max_level: a}
  - {name: azure, base_url: "https://x.openai.azure.com", max_level: a}
  - {name: azure-v1, base_url: "https://x.openai.azure.com/v1", model: "gpt-*", max_level: a}
  - {name: gpt4o, model: "gpt-4o", max_level: a}
  - {name: gpt, model: "gpt-*", max_level: a}
  - {name: gpt4o-again, model: "gpt-4o", max_level: a}
`, []string{"shadowed-destination@destinations[1]", "shadowed-destination@destinations[3]", "shadowed-destination@destinations[6]"}},
		{"conflicting mapping", `
levels: [a, b]
classify:
  - detectors: ["pii.email"]
    level: a
  - detectors: ["pii.email"]
    level: b
  - detectors: ["pii.email"]
    level: a
`, []string{"conflicting-mapping@classify[1].detectors[0]"}},
		{"capacity unset", `
levels: [a, b]
destinations:
  - {name: x, provider: openai, max_level: a, shared: true}
  - {name: y, provider: local, max_level: a}
`, []string{"capacity-unset@destinations[0].max_input_tokens"}},
		{"tokenizer of another provider", `
levels: [a, b]
destinations:
  - {name: x, provider: anthropic, max_level: a, tokenizer: cl100k_base}
  - {name: y, provider: openai, max_level: a, tokenizer: o200k_base}
  - {name: z, base_url: "http://127.0.0.1:8000", max_level: a, tokenizer: cl100k_base}
`, []string{"tokenizer-mismatch@destinations[0].tokenizer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.src)
			var got []string
			for _, d := range Lint(context.Background(), p, LintOptions{}) {
				got = append(got, d.Code+"@"+d.Field)
				if d.File != "test.yaml" || d.Message == "" {
					t.Errorf("diagnostic without file or message: %+v", d)
				}
			}
			if !slices.Equal(got, tt.codes) {
				t.Errorf("got  %q\nwant %q", got, tt.codes)
			}
		})
	}
}

func TestLintPatternTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("runs catastrophic patterns up to the probe timeout")
	}
	p := mustParse(t, `
levels: [a, b]
custom:
  - id: custom.fine
    pattern: '\bAPOLLO-[0-9]{4}\b'
    level: b
  - id: custom.catastrophic
    pattern: '^(a+)+$'
    level: b
  - id: custom.nested_digits
    pattern: '(\d+)*x'
    level: b
  - id: custom.lookaround_fine
    pattern: '(?<=ref:)\s*[A-Z]{3}\d{6}(?!\d)'
    level: b
`)
	start := time.Now()
	ds := Lint(context.Background(), p, LintOptions{ProbeTimeout: 50 * time.Millisecond})
	var got []string
	for _, d := range ds {
		got = append(got, d.Code+"@"+d.Field)
	}
	want := []string{"pattern-timeout@custom[1].pattern", "pattern-timeout@custom[2].pattern"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q (%v)", got, want, ds)
	}
	if el := time.Since(start); el > 30*time.Second {
		t.Errorf("lint took %v: probes are not bounded", el)
	}
}

func TestLintFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("levels: [a]\nredaction:\n  style: blur\ndestinations:\n  - {name: x, provider: p, max_level: zz}\n"), 0o600)
	ds := LintFile(context.Background(), bad, LintOptions{})
	var got []string
	for _, d := range ds {
		got = append(got, fmt.Sprintf("%s@%s@%d:%d", d.Code, d.Field, d.Line, d.Column))
		if d.Severity != SeverityError || d.File != bad {
			t.Errorf("load problem not an error naming the file: %+v", d)
		}
	}
	want := []string{"unknown-redaction-style@redaction.style@3:3", "undeclared-level@destinations[0].max_level@5:28"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	ds = LintFile(context.Background(), filepath.Join(dir, "missing.yaml"), LintOptions{})
	if len(ds) != 1 || ds[0].Code != "io" {
		t.Errorf("missing file: %v", ds)
	}
	if s := ds[0].String(); !strings.Contains(s, "missing.yaml") || !strings.Contains(s, "error[io]") {
		t.Errorf("String() = %q", s)
	}
}

// Every preset passes lint without a single diagnostic.
func TestPresetsLintClean(t *testing.T) {
	t.Parallel()
	for _, name := range Presets() {
		p, err := Preset(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Name != name || p.Description == "" {
			t.Errorf("%s: name %q, description %q", name, p.Name, p.Description)
		}
		for _, d := range Lint(context.Background(), p, LintOptions{}) {
			t.Errorf("%s: %v", name, d)
		}
	}
	if _, err := Preset("nope"); err == nil {
		t.Error("unknown preset loaded")
	}
}

// The strict preset blocks unknown destinations; the default preset fails
// closed too.
func TestPresetDefaults(t *testing.T) {
	t.Parallel()
	strict, _ := Preset("strict")
	if strict.Default.Action != ActionBlock || strict.Default.MaxLevel != "public" || strict.FailOpen {
		t.Errorf("strict default = %+v, fail open %v", strict.Default, strict.FailOpen)
	}
	for _, name := range Presets() {
		p, _ := Preset(name)
		if p.FailOpen {
			t.Errorf("%s fails open", name)
		}
	}
}

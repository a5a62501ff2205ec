package policies

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const basePolicy = `
name: test
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["secret.*"]
    level: restricted
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["pii.ip_address"]
    level: internal
destinations:
  - name: openai
    base_url: https://api.openai.com/v1
    provider: openai
    model: "gpt-*"
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: 128000
    shared: true
  - name: onprem
    base_url: http://llm.corp.example:8080
    max_level: restricted
    max_input_tokens: 681280
    contract: true
    incident_contact: soc@corp.example
default:
  max_level: public
  action: block
`

func TestParseValid(t *testing.T) {
	t.Parallel()
	p, err := Parse([]byte(basePolicy), "yaml", "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Levels, []string{"public", "internal", "confidential", "restricted"}; !slices.Equal(got, want) {
		t.Errorf("levels = %v, want %v", got, want)
	}
	if p.DefaultLevel != "restricted" {
		t.Errorf("default level = %q, want the highest level", p.DefaultLevel)
	}
	d, ok := p.Destination("openai")
	if !ok {
		t.Fatal("no openai destination")
	}
	want := &Destination{Name: "openai", BaseURL: "https://api.openai.com/v1", Provider: "openai", Model: "gpt-*",
		MaxLevel: "internal", Action: ActionRedact, BlockAt: "restricted", MaxInputTokens: 128000, Shared: true, Field: "destinations[0]"}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("openai = %+v\nwant     %+v", d, want)
	}
	if p.Default.Action != ActionBlock || p.Default.MaxLevel != "public" || p.Default.Name != "default" {
		t.Errorf("default = %+v", p.Default)
	}
	if p.FailOpen {
		t.Error("failure mode must default to closed")
	}
	if p.Redaction.Style != RedactPlaceholder {
		t.Errorf("redaction style = %q, want placeholder", p.Redaction.Style)
	}
	if p.Inbound.Action("canary") != SignalBlock || p.Inbound.Action(SignalUsageMismatch) != SignalBlock {
		t.Error("unset signals must block")
	}
}

// The same policy in the three formats loads to the same checked policy.
func TestParseFormatsAgree(t *testing.T) {
	t.Parallel()
	yml := `name: f
levels: [low, high]
classify:
  - detectors: ["secret.*"]
    level: high
destinations:
  - name: a
    provider: openai
    max_level: low
    action: redact
    max_input_tokens: 1000
inbound:
  signals:
    canary: flag
  fingerprint_ttl: 1h
scan:
  match_timeout: 50ms
`
	jsn := `{"name":"f","levels":["low","high"],"classify":[{"detectors":["secret.*"],"level":"high"}],
"destinations":[{"name":"a","provider":"openai","max_level":"low","action":"redact","max_input_tokens":1000}],
"inbound":{"signals":{"canary":"flag"},"fingerprint_ttl":"1h"},"scan":{"match_timeout":"50ms"}}`
	tml := `name = "f"
levels = ["low", "high"]
[[classify]]
detectors = ["secret.*"]
level = "high"
[[destinations]]
name = "a"
provider = "openai"
max_level = "low"
action = "redact"
max_input_tokens = 1000
[inbound]
fingerprint_ttl = "1h"
[inbound.signals]
canary = "flag"
[scan]
match_timeout = "50ms"
`
	var got []*Policy
	for _, c := range []struct{ format, src string }{{"yaml", yml}, {"json", jsn}, {"toml", tml}} {
		p, err := Parse([]byte(c.src), c.format, "f."+c.format)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		p.Source = ""
		got = append(got, p)
	}
	for i := 1; i < len(got); i++ {
		if !reflect.DeepEqual(got[0], got[i]) {
			t.Errorf("format %d differs:\n%+v\n%+v", i, got[0], got[i])
		}
	}
	p := got[0]
	if p.Inbound.Action("canary") != SignalFlag || p.Inbound.FingerprintTTL != time.Hour || p.MatchTimeout != 50*time.Millisecond {
		t.Errorf("inbound/scan not translated: %+v %v", p.Inbound, p.MatchTimeout)
	}
}

// Every error names the file and the field, with a code.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src    string
		field, code  string
		msgSubstring string
	}{
		{"syntax", "levels: [a, b\n", "", "syntax", ""},
		{"no levels", "name: x\n", "levels", "required", "at least one level"},
		{"duplicate level", "levels: [a, a]\n", "levels[1]", "duplicate", `"a"`},
		{"undeclared level in classify", "levels: [a, b]\nclassify:\n  - detectors: [pii.email]\n    level: c\n", "classify[0].level", "undeclared-level", `"c"`},
		{"undeclared max_level", "levels: [a]\ndestinations:\n  - name: x\n    provider: p\n    max_level: zz\n", "destinations[0].max_level", "undeclared-level", ""},
		{"missing max_level", "levels: [a]\ndestinations:\n  - name: x\n    provider: p\n", "destinations[0].max_level", "required", ""},
		{"unknown field", "levels: [a]\nlevles: [b]\n", "levles", "unknown-field", ""},
		{"unknown nested field", "levels: [a]\ndestinations:\n  - name: x\n    max_level: a\n    maxlevel: a\n", "destinations[0].maxlevel", "unknown-field", ""},
		{"wrong type", "levels: [a]\ndestinations:\n  - name: x\n    max_level: a\n    max_input_tokens: lots\n", "destinations[0].max_input_tokens", "invalid-type", ""},
		{"fractional number", "levels: [a]\ndestinations:\n  - {name: x, provider: p, max_level: a, max_input_tokens: 128000.5}\n", "destinations[0].max_input_tokens", "invalid-type", "whole number"},
		{"huge number", "levels: [a]\ndestinations:\n  - {name: x, provider: p, max_level: a, max_input_tokens: 99999999999999999999}\n", "destinations[0].max_input_tokens", "invalid-type", "out of range"},
		{"bad action", "levels: [a, b]\ndestinations:\n  - name: x\n    max_level: a\n    action: allow\n", "destinations[0].action", "unknown-action", ""},
		{"bad redaction style", "levels: [a]\nredaction:\n  style: blur\n", "redaction.style", "unknown-redaction-style", "blur"},
		{"bad failure mode", "levels: [a]\nfailure_mode: maybe\n", "failure_mode", "invalid-value", ""},
		{"unknown signal", "levels: [a]\ninbound:\n  signals:\n    telepathy: block\n", "inbound.signals.telepathy", "unknown-signal", ""},
		{"bad signal action", "levels: [a]\ninbound:\n  signals:\n    canary: explode\n", "inbound.signals.canary", "unknown-action", ""},
		{"duplicate destination", "levels: [a]\ndestinations:\n  - {name: x, provider: p, max_level: a}\n  - {name: x, provider: q, max_level: a}\n", "destinations[1].name", "duplicate", ""},
		{"reserved destination name", "levels: [a]\ndestinations:\n  - {name: default, provider: p, max_level: a}\n", "destinations[0].name", "invalid-value", ""},
		{"bad base url", "levels: [a]\ndestinations:\n  - {name: x, base_url: 'ftp://h', max_level: a}\n", "destinations[0].base_url", "invalid-value", ""},
		{"negative capacity", "levels: [a]\ndestinations:\n  - {name: x, provider: p, max_level: a, max_input_tokens: -1}\n", "destinations[0].max_input_tokens", "invalid-value", ""},
		{"unknown tokenizer", "levels: [a]\ndestinations:\n  - {name: x, provider: p, max_level: a, tokenizer: gpt2}\n", "destinations[0].tokenizer", "invalid-value", ""},
		{"block_at below max", "levels: [a, b]\ndestinations:\n  - {name: x, provider: p, max_level: b, action: redact, block_at: a}\n", "destinations[0].block_at", "invalid-value", ""},
		{"custom id", "levels: [a]\ncustom:\n  - {id: apollo, keywords: [Apollo], level: a}\n", "custom[0].id", "invalid-value", ""},
		{"custom without match", "levels: [a]\ncustom:\n  - {id: custom.x, level: a}\n", "custom[0]", "required", ""},
		{"custom validator", "levels: [a]\ncustom:\n  - {id: custom.x, pattern: 'x', validator: nope, level: a}\n", "custom[0].validator", "unknown-validator", ""},
		{"custom confidence", "levels: [a]\ncustom:\n  - {id: custom.x, keywords: [k], confidence: 2, level: a}\n", "custom[0].confidence", "invalid-value", ""},
		{"bad detector glob", "levels: [a]\nclassify:\n  - detectors: ['PII Email']\n    level: a\n", "classify[0].detectors[0]", "invalid-value", ""},
		{"audit without path", "levels: [a]\naudit:\n  enabled: true\n", "audit.path", "required", ""},
		{"bad duration", "levels: [a]\nscan:\n  match_timeout: soon\n", "scan.match_timeout", "invalid-value", ""},
		{"default with criteria", "levels: [a]\ndefault:\n  provider: openai\n  max_level: a\n", "default", "invalid-value", ""},
		{"unknown sourced detector", "levels: [a]\ninbound:\n  sourced: [pii.person_name, pii.nickname]\n", "inbound.sourced[1]", "unknown-detector", "pii.nickname"},
		{"empty allow entry", "levels: [a]\nscan:\n  allow: ['  ']\n", "scan.allow[0]", "invalid-value", ""},
		{"allow entry without a value", "levels: [a]\nscan:\n  allow: [jane.doe@acme-corp.com, nothing here]\n", "scan.allow[1]", "allow-finds-nothing", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src), "yaml", "dir/p.yaml")
			if err == nil {
				t.Fatal("no error")
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %T %v is not a *LoadError", err, err)
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("errors.As found no *FieldError in %v", err)
			}
			found := false
			for _, p := range le.Problems {
				if p.File != "dir/p.yaml" {
					t.Errorf("problem %v does not name the file", p)
				}
				if p.Field == tt.field && p.Code == tt.code && strings.Contains(p.Message, tt.msgSubstring) {
					found = true
				}
			}
			if !found {
				t.Errorf("want field %q code %q containing %q; got %v", tt.field, tt.code, tt.msgSubstring, err)
			}
			if !strings.Contains(err.Error(), "dir/p.yaml") {
				t.Errorf("error text %q does not name the file", err)
			}
		})
	}
}

// Bad input is refused with a clear error, never a panic.
func TestParseBadBytes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"invalid utf-8", []byte("levels: [\xff\xfe]\n"), "UTF-8"},
		{"nul", []byte("levels: [a]\x00\n"), "NUL"},
		{"huge", []byte("levels: [a]\n# " + strings.Repeat("x", MaxPolicySize)), "larger"},
		{"not a map", []byte("- a\n- b\n"), ""},
		{"empty", []byte(""), "levels"},
		{"unknown format", []byte("levels: [a]"), "format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			format := "yaml"
			if tt.name == "unknown format" {
				format = "ini"
			}
			_, err := Parse(tt.data, format, "p.yaml")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

func TestLoadAndLoadRef(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, src := range map[string]string{
		"p.yaml": basePolicy,
		"p.json": `{"levels":["a","b"]}`,
		"p.toml": "levels = [\"a\", \"b\"]\n",
		"p.ini":  "levels=a",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"p.yaml", "p.json", "p.toml"} {
		p, err := Load(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Source != filepath.Join(dir, name) || p.Name == "" {
			t.Errorf("%s: source %q name %q", name, p.Source, p.Name)
		}
	}
	if _, err := Load(filepath.Join(dir, "p.ini")); err == nil || !strings.Contains(err.Error(), ".yaml") {
		t.Errorf("ini: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("missing file loaded")
	}
	p, err := LoadRef("strict")
	if err != nil || p.Name != "strict" || p.Source != "preset:strict" {
		t.Errorf("LoadRef(strict) = %v, %v", p, err)
	}
	if _, err := LoadRef(filepath.Join(dir, "p.yaml")); err != nil {
		t.Errorf("LoadRef(file): %v", err)
	}
	var upe *UnknownPresetError
	if _, err := LoadRef("nonesuch"); !errors.As(err, &upe) {
		t.Errorf("LoadRef(nonesuch) = %v, want *UnknownPresetError", err)
	}
	if _, err := LoadRef("./nonesuch.yaml"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("LoadRef(./nonesuch.yaml) = %v", err)
	}
}

func TestCompareFieldPaths(t *testing.T) {
	t.Parallel()
	in := []string{"destinations[10].name", "levels", "destinations[2].name", "", "destinations[2]", "classify[0].level"}
	slices.SortFunc(in, compareFieldPaths)
	want := []string{"", "classify[0].level", "destinations[2]", "destinations[2].name", "destinations[10].name", "levels"}
	if !slices.Equal(in, want) {
		t.Errorf("got %q\nwant %q", in, want)
	}
}

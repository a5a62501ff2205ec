package policies

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
)

func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	p, err := Parse([]byte(src), "yaml", "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func finding(det string, start int) classifiers.Finding {
	cat, _, _ := strings.Cut(det, ".")
	return classifiers.Finding{Detector: det, Category: classifiers.Category(cat), Start: start, End: start + 5,
		Line: 1, EndLine: 1, Column: start + 1, Confidence: 0.9, Preview: "x***" + fmt.Sprint(start), Hash: fmt.Sprintf("h%04d", start)}
}

func TestLevelOfMostSpecificWins(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `
levels: [l0, l1, l2, l3, l4]
default_level: l1
classify:
  - detectors: ["*"]
    level: l0
  - detectors: ["secret.*"]
    level: l3
  - detectors: ["secret.g*"]
    level: l2
  - detectors: ["secret.github_token"]
    level: l4
  - detectors: ["secret.g?"]
    level: l1
  - detectors: ["pii.*"]
    level: l2
  - detectors: ["pii.*"]
    level: l3
custom:
  - id: custom.apollo
    keywords: [Apollo]
    level: l4
`)
	tests := []struct {
		id    string
		level string
		ok    bool
	}{
		{"secret.github_token", "l4", true}, // exact beats globs
		{"secret.gitlab_token", "l2", true}, // more literal characters
		{"secret.jwt", "l3", true},
		{"secret.gx", "l2", true}, // "secret.g*" and "secret.g?" tie on literals: earlier wins
		{"pii.email", "l2", true}, // equal globs: earlier wins
		{"marker.tlp", "l0", true},
		{"custom.apollo", "l4", true}, // a custom rule's own level
	}
	for _, tt := range tests {
		level, rank, ok := p.LevelOf(tt.id)
		if level != tt.level || ok != tt.ok || rank != p.Rank(tt.level) {
			t.Errorf("LevelOf(%s) = %s, %d, %v; want %s, %d, %v", tt.id, level, rank, ok, tt.level, p.Rank(tt.level), tt.ok)
		}
	}
	q := mustParse(t, "levels: [a, b, c]\ndefault_level: b\nclassify:\n  - detectors: [pii.email]\n    level: a\n")
	if level, rank, ok := q.LevelOf("secret.jwt"); level != "b" || rank != 1 || ok {
		t.Errorf("unmapped: %s %d %v, want the default level and ok=false", level, rank, ok)
	}
}

func TestMatch(t *testing.T) {
	t.Parallel()
	p := mustParse(t, `
levels: [a, b]
destinations:
  - {name: by-name-only, max_level: b}
  - {name: azure-gpt4, base_url: "https://corp.openai.azure.com/openai", model: "gpt-4*", max_level: a}
  - {name: azure, base_url: "https://corp.openai.azure.com", max_level: a}
  - {name: openai, provider: openai, max_level: a}
  - {name: llama, model: "meta-llama/*", max_level: a}
`)
	tests := []struct{ url, provider, model, want string }{
		{"https://corp.openai.azure.com/openai/deployments/x", "", "gpt-4o", "azure-gpt4"},
		{"https://CORP.openai.azure.com:443/openai", "", "gpt-4", "azure-gpt4"},
		{"https://corp.openai.azure.com/openai", "", "gpt-3.5", "azure"},
		{"https://corp.openai.azure.com/openaiX", "", "gpt-4", "azure"}, // not a path segment
		{"http://corp.openai.azure.com/openai", "", "gpt-4", "default"}, // scheme differs
		{"https://api.openai.com/v1", "OpenAI", "o3", "openai"},
		{"http://localhost:8000/v1", "vllm", "meta-llama/Llama-3.1-8B", "llama"},
		{"http://localhost:8000/v1", "vllm", "mistral", "default"},
		{"", "", "", "default"},
	}
	for _, tt := range tests {
		if got := p.Match(tt.url, tt.provider, tt.model).Name; got != tt.want {
			t.Errorf("Match(%q, %q, %q) = %s, want %s", tt.url, tt.provider, tt.model, got, tt.want)
		}
	}
	if d, ok := p.Destination("by-name-only"); !ok || d.Name != "by-name-only" {
		t.Error("a destination without criteria must be reachable by name")
	}
	if _, err := p.Lookup("nope"); err == nil || !strings.Contains(err.Error(), "by-name-only") {
		t.Errorf("Lookup(nope) = %v, want an error listing the destinations", err)
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	p := mustParse(t, basePolicy)
	openai, _ := p.Destination("openai")
	onprem, _ := p.Destination("onprem")
	tests := []struct {
		name      string
		dest      *Destination
		findings  []classifiers.Finding
		tokens    int
		action    Action
		level     string
		over      bool
		redact    []int
		reasonsOf []string // detector of each reason, in order ("" for capacity)
	}{
		{"nothing found", openai, nil, 10, ActionAllow, "", false, nil, nil},
		{"internal only", openai, []classifiers.Finding{finding("pii.ip_address", 0)}, 10, ActionAllow, "internal", false, nil, []string{"pii.ip_address"}},
		{"pii redacted", openai, []classifiers.Finding{finding("pii.ip_address", 0), finding("pii.email", 10), finding("pii.email", 20), finding("pii.phone", 30)}, 10,
			ActionRedact, "confidential", false, []int{1, 2, 3}, []string{"pii.email", "pii.phone", "pii.ip_address"}},
		{"secret blocks from block_at", openai, []classifiers.Finding{finding("pii.email", 0), finding("secret.jwt", 10)}, 10,
			ActionBlock, "restricted", false, nil, []string{"secret.jwt", "pii.email"}},
		{"over capacity", openai, []classifiers.Finding{finding("pii.ip_address", 0)}, 128001, ActionBlock, "internal", true, nil, []string{"", "pii.ip_address"}},
		{"at capacity", openai, nil, 128000, ActionAllow, "", false, nil, nil},
		{"onprem takes everything", onprem, []classifiers.Finding{finding("secret.jwt", 0)}, 600000, ActionAllow, "restricted", false, nil, []string{"secret.jwt"}},
		{"onprem KV capacity", onprem, nil, 1048577, ActionBlock, "", true, nil, []string{""}},
		{"nil is default", nil, []classifiers.Finding{finding("pii.ip_address", 0)}, 1, ActionBlock, "internal", false, nil, []string{"pii.ip_address"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.dest, tt.findings, tt.tokens)
			if d.Action != tt.action || d.Level != tt.level || d.OverCapacity != tt.over || !slices.Equal(d.Redact, tt.redact) {
				t.Errorf("got action %s level %q over %v redact %v; want %s %q %v %v", d.Action, d.Level, d.OverCapacity, d.Redact, tt.action, tt.level, tt.over, tt.redact)
			}
			var dets []string
			for _, r := range d.Reasons {
				dets = append(dets, r.Detector)
				if r.Message == "" || r.Count < 1 {
					t.Errorf("reason without message or count: %+v", r)
				}
			}
			if !slices.Equal(dets, tt.reasonsOf) {
				t.Errorf("reasons for %q, want %q", dets, tt.reasonsOf)
			}
			// Deterministic: the same input, shuffled, decides the same.
			rev := slices.Clone(tt.findings)
			slices.Reverse(rev)
			d2 := p.Decide(tt.dest, rev, tt.tokens)
			d.Redact, d2.Redact = nil, nil
			for i := range d.Reasons {
				d.Reasons[i].Preview, d2.Reasons[i].Preview = "", ""
			}
			if !reflect.DeepEqual(d, d2) {
				t.Errorf("order-dependent decision:\n%+v\n%+v", d, d2)
			}
		})
	}
}

func TestDecideReasons(t *testing.T) {
	t.Parallel()
	p := mustParse(t, basePolicy)
	openai, _ := p.Destination("openai")
	d := p.Decide(openai, []classifiers.Finding{finding("pii.email", 3), finding("pii.email", 40)}, 200000)
	want := []Reason{
		{Rule: "destinations[0].max_input_tokens", Action: ActionBlock, Count: 1,
			Message: "request of 200000 tokens exceeds the real capacity of destination openai (max_input_tokens 128000): blocked before sending"},
		{Rule: "classify[1]", Detector: "pii.email", Level: "confidential", Preview: "x***3", Action: ActionRedact, Count: 2,
			Message: "2 findings of pii.email (confidential, by classify[1]) above max_level internal of openai: redacted"},
	}
	if !reflect.DeepEqual(d.Reasons, want) {
		t.Errorf("reasons:\n%+v\nwant\n%+v", d.Reasons, want)
	}
	if d.Redact != nil {
		t.Errorf("a blocked request lists redactions %v", d.Redact)
	}
}

func TestActionFor(t *testing.T) {
	t.Parallel()
	p := mustParse(t, basePolicy)
	openai, _ := p.Destination("openai")
	for id, want := range map[string]Action{"pii.ip_address": ActionAllow, "pii.email": ActionRedact, "secret.jwt": ActionBlock, "marker.tlp": ActionBlock} {
		if got := p.ActionFor(openai, id); got != want {
			t.Errorf("ActionFor(openai, %s) = %s, want %s", id, got, want)
		}
	}
	if got := p.ActionFor(nil, "pii.ip_address"); got != ActionBlock {
		t.Errorf("default destination: %s", got)
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"*", "", true}, {"*", "a.b", true}, {"secret.*", "secret.jwt", true}, {"secret.*", "secretjwt", false},
		{"gpt-4*", "gpt-4o-mini", true}, {"gpt-4*", "gpt-3.5", false}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*a*b*c", "xxaxxbxxc", true}, {"*a*b*c", "xxaxxcxxb", false}, {"meta-llama/*", "meta-llama/Llama-3", true},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 200), false},
	}
	for _, tt := range tests {
		if got := globMatch(tt.pat, tt.name); got != tt.want {
			t.Errorf("globMatch(%q, %q) = %v", tt.pat, tt.name, got)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	p := mustParse(b, basePolicy)
	openai, _ := p.Destination("openai")
	ids := []string{"pii.email", "pii.phone", "pii.ip_address", "secret.jwt", "marker.tlp"}
	fs := make([]classifiers.Finding, 100)
	for i := range fs {
		fs[i] = finding(ids[i%len(ids)], i*10)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(openai, fs, 1000)
	}
}

func BenchmarkParsePreset(b *testing.B) {
	src, _ := PresetSource("default")
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Parse(src, "yaml", "default.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	p, _ := Preset("default")
	b.ReportAllocs()
	for b.Loop() {
		p.Match("https://api.anthropic.com/v1/messages", "anthropic", "claude-x")
	}
}

// TestEvaluateCapacityFirst: a request over its destination's capacity is
// refused on capacity alone, without being classified, whoever evaluates
// it; within capacity the findings decide.
func TestEvaluateCapacityFirst(t *testing.T) {
	t.Parallel()
	p, err := Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	d := &Destination{Name: "small", Field: "destinations[0]", MaxLevel: "public", Action: ActionRedact, MaxInputTokens: 40}
	ev, err := NewEvaluator(p, EvaluatorOptions{Key: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	text := "Write to jean.dupont@acme-corp.fr about the invoice."
	tests := []struct {
		name     string
		in       Input
		action   Action
		over     bool
		findings int
	}{
		{"within capacity", Input{Texts: []string{text}}, ActionRedact, false, 1},
		{"over capacity, counted", Input{Texts: []string{strings.Repeat(text+" ", 10)}}, ActionBlock, true, 0},
		{"over capacity, stated", Input{Texts: []string{text}, Tokens: 900000}, ActionBlock, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := ev.Evaluate(context.Background(), d, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			flat, _ := out.Flat()
			if out.Decision.Action != tt.action || out.Decision.OverCapacity != tt.over || len(flat) != tt.findings {
				t.Fatalf("got %s over=%v with %d findings, want %s over=%v with %d", out.Decision.Action, out.Decision.OverCapacity, len(flat), tt.action, tt.over, tt.findings)
			}
			if tt.over && (out.Decision.Level != "" || len(out.Decision.Reasons) != 1) {
				t.Errorf("over capacity: level %q, reasons %+v; want the capacity reason alone", out.Decision.Level, out.Decision.Reasons)
			}
		})
	}
}

func TestPassesThrough(t *testing.T) {
	p, err := Parse([]byte("levels: [public]\ndestinations:\n  - name: a\n    max_level: public\n    passthrough: [\"/v1/audio/*\", \"/v1/images/generations\"]\ndefault: {max_level: public}\n"), "yaml", "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := p.Destination("a")
	for path, want := range map[string]bool{"/v1/audio/speech": true, "/v1/images/generations": true, "/v1/chat/completions": false, "/v1/images/edits": false} {
		if got := d.PassesThrough(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
	if _, err := Parse([]byte("levels: [public]\ndestinations:\n  - {name: a, max_level: public, passthrough: [\"audio\"]}\ndefault: {max_level: public}\n"), "yaml", "p.yaml"); err == nil || !strings.Contains(err.Error(), "passthrough[0]") {
		t.Errorf("a passthrough glob without / accepted: %v", err)
	}
}

package policies

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docSection returns the body of the "## title" section of a Markdown
// document, up to the next second-level heading.
func docSection(t *testing.T, doc, title string) string {
	t.Helper()
	_, section, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("docs/policy.md has no %q section", title)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	return section
}

// firstYAML returns the first yaml code block of section.
func firstYAML(t *testing.T, section, what string) string {
	t.Helper()
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(section)
	if m == nil {
		t.Fatalf("docs/policy.md shows no %s as a yaml block", what)
	}
	return m[1]
}

// The policy reference (docs/policy.md) shows a policy and test cases: the
// policy must load and lint clean, and every case must pass against it.
func TestPolicyDoc(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	policy := firstYAML(t, docSection(t, doc, "The policy file"), "policy")
	cases := firstYAML(t, docSection(t, doc, "Policy tests"), "test cases")
	p, err := Parse([]byte(policy), "yaml", "docs/policy.md policy")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Lint(context.Background(), p, LintOptions{}) {
		t.Errorf("docs/policy.md policy: %v", d)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "policy_test.yaml"), []byte(cases), 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := RunTests(context.Background(), []string{dir}, TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != TestPass {
			t.Errorf("docs/policy.md case %q: %s %v", r.Name, r.Status, r.Messages)
		}
	}
	if n := strings.Count(cases, "\n  - name: "); rep.Pass != n || n < 3 {
		t.Errorf("%d of the %d docs/policy.md cases passed", rep.Pass, n)
	}
	// Every rule Lint checks is documented in the lint table.
	lint := docSection(t, doc, "Lint")
	for _, r := range LintRules() {
		if !strings.Contains(lint, "| `"+r.Code+"` | "+string(r.Severity)+" |") {
			t.Errorf("docs/policy.md's Lint table lacks rule %s (%s)", r.Code, r.Severity)
		}
	}
}

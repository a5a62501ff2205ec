package policies

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's Policies section shows a policy and test cases: the policy
// must load and lint clean, and the cases must pass against it.
func TestReadmePolicy(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Policies\n")
	if !ok {
		t.Skip("README has no Policies section yet")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 2 {
		t.Fatalf("want the policy and the test cases as yaml blocks, found %d", len(blocks))
	}
	policy, cases := blocks[0][1], blocks[1][1]
	p, err := Parse([]byte(policy), "yaml", "README policy")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Lint(context.Background(), p, LintOptions{}) {
		t.Errorf("README policy: %v", d)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(policy), 0o600)
	os.WriteFile(filepath.Join(dir, "policy_test.yaml"), []byte(cases), 0o600)
	rep, err := RunTests(context.Background(), []string{dir}, TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Status != TestPass {
			t.Errorf("README case %q: %s %v", r.Name, r.Status, r.Messages)
		}
	}
	if rep.Pass < 2 {
		t.Errorf("only %d README cases ran", rep.Pass)
	}
}

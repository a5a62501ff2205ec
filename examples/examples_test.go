// Package examples holds runnable programs; this test builds every one of
// them and runs those that need no network.
package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestExamplesBuildAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example with the go command")
	}
	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := t.TempDir()
	build := exec.Command(goCmd, "build", "-o", bin+string(os.PathSeparator), "./...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/...: %v\n%s", err, out)
	}
	for _, tc := range []struct{ name, want string }{
		{"go-openai", "blocked before sending: secret.github_token"},
		{"openai-go", "answered through sdk.Transport"},
		{"anthropic", "set ANTHROPIC_API_KEY"},
	} {
		cmd := exec.Command(filepath.Join(bin, tc.name))
		cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
		}
	}
}

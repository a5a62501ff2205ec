// Package examples holds runnable programs; this test builds every one of
// them and runs each (none needs the network: those that would talk to a
// provider say so and stop).
package examples

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"
)

// program is an example program and how to run it: in its own directory,
// it must exit 0 and print want; serve, when set, runs it instead.
type program struct {
	name  string
	want  string
	serve func(t *testing.T, ctx context.Context, bin string)
}

var programs = []program{
	{name: "go-openai", want: "blocked before sending: secret.github_token"},
	{name: "openai-go", want: "answered through sdk.Transport"},
	{name: "anthropic", want: "set ANTHROPIC_API_KEY"},
	{name: "policy-ci", want: "PASS: 6/6"},
	{name: "proxy-curl", serve: serveProxyCurl},
	{name: "readme-sdk", want: "answer refused"},
}

func TestExamplesBuildAndRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every example with the go command")
	}
	// Every directory with a main.go is a program this test runs.
	mains, err := filepath.Glob(filepath.Join("*", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range programs {
		names = append(names, p.name)
	}
	for _, m := range mains {
		if dir := filepath.Dir(m); !slices.Contains(names, dir) {
			t.Errorf("example %s is not in programs: it would be neither built nor run", dir)
		}
	}

	// One go build for all of them, with the build flags this test binary
	// was built with (go test -race builds them with -race), so that the
	// packages they share with the tests come from the build cache. go
	// test puts its own GOROOT/bin first in PATH: "go" is the toolchain
	// running the tests. Linking is most of the work left when the cache
	// is warm; without a symbol table and DWARF (-s -w) it is about a fifth
	// cheaper, and stack traces and race reports need neither.
	bin := t.TempDir()
	args := append([]string{"build", "-o", bin + string(os.PathSeparator), "-ldflags=-s -w"}, buildFlags()...)
	for _, p := range programs {
		args = append(args, "./"+p.name)
	}
	start := time.Now()
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))

	for _, p := range programs {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			exe := filepath.Join(bin, p.name)
			if p.serve != nil {
				p.serve(t, ctx, exe)
				return
			}
			cmd := exec.CommandContext(ctx, exe)
			cmd.Dir = p.name
			cmd.Env = append(os.Environ(), "ANTHROPIC_API_KEY=")
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), p.want) {
				t.Errorf("%s: %v, want %q in:\n%s", p.name, err, p.want, out)
			}
		})
	}
}

// buildFlags returns the flags of this test binary's build that change how
// packages are compiled.
func buildFlags() []string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var flags []string
	for _, s := range bi.Settings {
		switch s.Key {
		case "-race", "-msan", "-asan", "-trimpath":
			if s.Value == "true" {
				flags = append(flags, s.Key)
			}
		case "-tags", "-gcflags", "-asmflags":
			flags = append(flags, s.Key+"="+s.Value)
		}
	}
	return flags
}

// serveProxyCurl starts the proxy-curl server on a free port, checks it
// answers, and stops it as Ctrl-C would.
func serveProxyCurl(t *testing.T, ctx context.Context, bin string) {
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url := regexp.MustCompile(`http://\S+`).FindString(line)
	if err != nil || url == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("first line %q (%v), stderr:\n%s", line, err, stderr.String())
	}
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Error(err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health: %s", resp.Status)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after an interrupt: %v, stderr:\n%s", err, stderr.String())
	}
}

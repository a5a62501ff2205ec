package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCommands keeps the README's quick start honest: the test command
// it gives newcomers must be the one CI runs, and the main-job command must
// name a real subcommand of this CLI.
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)## Quick start.*?```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README has no Quick start sh block")
	}
	var cmds []string
	for _, line := range strings.Split(string(block[1]), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			cmds = append(cmds, line)
		}
	}
	if len(cmds) != 2 {
		t.Fatalf("Quick start should hold exactly two commands, found %d: %q", len(cmds), cmds)
	}
	mainJob, testCmd := cmds[0], cmds[1]
	if !strings.Contains(string(ci), "\n"+testCmd+"\n") {
		t.Errorf(".ci/run does not run the README's test command %q", testCmd)
	}
	const prefix = "go run ./cmd/aishield "
	if !strings.HasPrefix(mainJob, prefix) {
		t.Fatalf("main job %q should start with %q", mainJob, prefix)
	}
	sub := strings.Fields(strings.TrimPrefix(mainJob, prefix))[0]
	root := newRootCmd(strings.NewReader(""), new(strings.Builder), new(strings.Builder))
	if c, _, err := root.Find([]string{sub}); err != nil || c == root {
		t.Errorf("main job runs %q, which is not an aishield subcommand", sub)
	}
}

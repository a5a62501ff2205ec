package main

import (
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// startupHeavy are packages whose initialisation costs milliseconds of
// every run of the command and that it does not need: phonenumbers parses
// all of libphonenumber's metadata at init (classifiers validates phones
// over metadata generated from it instead), and display came with it.
var startupHeavy = []string{
	"github.com/nyaruka/phonenumbers",
	"golang.org/x/text/language/display",
	"google.golang.org/protobuf/proto",
}

// TestCommandDoesNotLinkStartupHeavyPackages fails when a package of
// startupHeavy creeps back into the command's imports.
func TestCommandDoesNotLinkStartupHeavyPackages(t *testing.T) {
	t.Parallel()
	// The test binary links what the command links (and the tests'
	// imports, none of which is heavy).
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information in the test binary")
	}
	for _, d := range bi.Deps {
		if d.Path == "github.com/nyaruka/phonenumbers" {
			t.Errorf("the command's test binary links module %s", d.Path)
		}
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the command's imports")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 100 {
		t.Fatalf("go list -deps listed %d packages: not the command's imports", len(deps))
	}
	for _, p := range deps {
		for _, h := range startupHeavy {
			if p == h {
				t.Errorf("the command imports %s", p)
			}
		}
	}
}

// TestRootCmdForBuildsOneBranch checks that the tree built for a command
// line holds the command it names and only it, with the flags of the
// whole tree's command, and that the whole tree is built otherwise, its
// commands those of subcommands.
func TestRootCmdForBuildsOneBranch(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	full := newRootCmd(strings.NewReader(""), &out, &out)
	var names []string
	for _, c := range full.Commands() {
		if c.Name() != "help" && c.Name() != "completion" {
			names = append(names, c.Name())
		}
	}
	if len(names) != len(subcommands) {
		t.Fatalf("the tree has commands %v, subcommands %d", names, len(subcommands))
	}
	for _, c := range subcommands {
		root := newRootCmdFor([]string{c.name, "--help"}, strings.NewReader(""), &out, &out)
		if got := root.Commands(); len(got) != 1 || got[0].Name() != c.name {
			t.Fatalf("tree for %q: %d commands", c.name, len(got))
		}
		one, _, err := root.Find([]string{c.name})
		if err != nil {
			t.Fatal(err)
		}
		whole, _, err := full.Find([]string{c.name})
		if err != nil {
			t.Fatal(err)
		}
		if one.UsageString() != whole.UsageString() {
			t.Errorf("%s: usage differs from the whole tree's:\n%s\n%s", c.name, one.UsageString(), whole.UsageString())
		}
	}
	for _, args := range [][]string{{"--version"}, {"-v"}} {
		var vout strings.Builder
		if code := run(t.Context(), args, strings.NewReader(""), &vout, &vout); code != 0 || vout.String() != "aishield "+buildVersion()+"\n" {
			t.Errorf("%q: exit %d, output %q", args, code, vout.String())
		}
	}
	for _, args := range [][]string{nil, {"help", "scan"}, {"--version", "--help"}, {"scna"}, {"completion", "bash"}} {
		if n := len(newRootCmdFor(args, strings.NewReader(""), &out, &out).Commands()); n != len(subcommands) {
			t.Errorf("%q: %d commands, want the whole tree", args, n)
		}
	}
}

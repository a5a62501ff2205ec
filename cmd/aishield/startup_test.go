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

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// startupHeavy are packages whose initialisation costs milliseconds of
// every run of the command and that it does not need: phonenumbers parses
// all of libphonenumber's metadata at init (classifiers validates phones
// over metadata generated from it instead), and display came with it;
// regexp2 v1 builds its Unicode class tables at init, as v2 (which the
// tokenizer needs) does, so the custom rules use v2 and the command
// initialises one of them.
var startupHeavy = []string{
	"github.com/nyaruka/phonenumbers",
	"golang.org/x/text/language/display",
	"google.golang.org/protobuf/proto",
	"github.com/dlclark/regexp2",
	"github.com/dlclark/regexp2/syntax",
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
		if d.Path == "github.com/nyaruka/phonenumbers" || d.Path == "github.com/dlclark/regexp2" {
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

// Bounds of the heap the command's package initialisation may allocate,
// well above what it allocates (about 515 KB in 2,200 allocations for
// `aishield --version`, 19 KB in 103 allocations for this module's
// largest, classifiers): a table built at init instead of laid out at
// build time, or a heavy package linked again (phonenumbers allocated
// megabytes at init), goes over them. Allocations, not time: they are
// the same on a busy machine.
const (
	maxInitBytes        = 768 << 10
	maxInitAllocs       = 3200
	maxInitPackageBytes = 256 << 10 // pdfcpu's font metrics: 178 KB
	maxOwnInitBytes     = 64 << 10
	maxOwnInitAllocs    = 256
)

// initRecord is one line of GODEBUG=inittrace=1: a package's init and
// what it allocated.
type initRecord struct {
	pkg           string
	bytes, allocs int
}

// parseInitTrace reads the "init PKG @T ms, C ms clock, B bytes, A allocs"
// lines of out; it fails on any other line starting with "init ".
func parseInitTrace(t *testing.T, out string) []initRecord {
	t.Helper()
	var recs []initRecord
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "init" {
			continue
		}
		if len(f) != 11 || f[3] != "ms," || f[5] != "ms" || f[6] != "clock," || f[8] != "bytes," || f[10] != "allocs" {
			t.Fatalf("inittrace line not understood: %q", line)
		}
		b, err1 := strconv.Atoi(f[7])
		a, err2 := strconv.Atoi(f[9])
		if err1 != nil || err2 != nil {
			t.Fatalf("inittrace line not understood: %q", line)
		}
		recs = append(recs, initRecord{pkg: f[1], bytes: b, allocs: a})
	}
	return recs
}

// TestStartupInitAllocations builds the command, runs `aishield
// --version` with GODEBUG=inittrace=1 and holds the heap its package
// initialisation allocates under the bounds above: in all, for any one
// package, and for each package of this module. It also fails when a
// package of startupHeavy is initialised.
func TestStartupInitAllocations(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the command with the go command")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the command")
	}
	bin := filepath.Join(t.TempDir(), "aishield")
	// The flags of this test binary's build (-race under go test -race)
	// keep the packages in the build cache.
	args := append([]string{"build", "-o", bin}, testBuildFlags()...)
	if out, err := exec.Command(goTool, append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), "aishield ") {
		t.Fatalf("aishield --version: %v, output %q\n%s", err, out, stderr.String())
	}
	recs := parseInitTrace(t, stderr.String())
	if len(recs) < 50 {
		t.Fatalf("%d inittrace lines: GODEBUG=inittrace=1 did not trace the command's initialisation", len(recs))
	}
	var bytes, allocs int
	for _, r := range recs {
		bytes += r.bytes
		allocs += r.allocs
		for _, h := range startupHeavy {
			if r.pkg == h {
				t.Errorf("the command initialises %s", r.pkg)
			}
		}
		if r.bytes > maxInitPackageBytes {
			t.Errorf("init of %s allocates %d bytes, over %d", r.pkg, r.bytes, maxInitPackageBytes)
		}
		if strings.HasPrefix(r.pkg, "github.com/aishield/aishield/") && (r.bytes > maxOwnInitBytes || r.allocs > maxOwnInitAllocs) {
			t.Errorf("init of %s allocates %d bytes in %d allocations, over %d bytes or %d allocations",
				r.pkg, r.bytes, r.allocs, maxOwnInitBytes, maxOwnInitAllocs)
		}
	}
	t.Logf("%d packages initialised: %d bytes in %d allocations", len(recs), bytes, allocs)
	if bytes > maxInitBytes || allocs > maxInitAllocs {
		t.Errorf("package initialisation allocates %d bytes in %d allocations, over %d bytes or %d allocations",
			bytes, allocs, maxInitBytes, maxInitAllocs)
	}
}

// testBuildFlags returns the flags of this test binary's build that change
// how packages are compiled.
func testBuildFlags() []string {
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

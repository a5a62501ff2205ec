package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// A Dockerfile line parser, enough to lint this repository's Dockerfile:
// comments and parser directives, line continuations, instruction keywords,
// --flags, and the exec (JSON array) or shell form of arguments.

// dockerInstr is one instruction of a Dockerfile.
type dockerInstr struct {
	line  int      // line of the keyword, from 1
	cmd   string   // the keyword, upper case: FROM, RUN, ...
	flags []string // leading --flags (COPY --from=build)
	args  string   // the rest, continuation lines joined
	exec  []string // the exec form's array, when args is a JSON array of strings
}

// parseDockerfile splits src into instructions. It refuses what Docker
// refuses (an unknown keyword, an instruction without arguments, a
// continuation at the end of the file) with the line number.
func parseDockerfile(src string) ([]dockerInstr, error) {
	if strings.IndexByte(src, 0) >= 0 {
		return nil, errors.New("dockerfile: NUL byte")
	}
	known := []string{"ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM", "HEALTHCHECK",
		"LABEL", "MAINTAINER", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR"}
	var out []dockerInstr
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' {
			continue
		}
		start := i + 1
		// Join continuation lines; comment lines inside are dropped, as
		// Docker drops them.
		for strings.HasSuffix(line, `\`) {
			line = strings.TrimSuffix(line, `\`)
			i++
			for i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
				i++
			}
			if i >= len(lines) {
				return nil, fmt.Errorf("dockerfile:%d: line continuation at the end of the file", start)
			}
			line += " " + strings.TrimSpace(lines[i])
		}
		kw, rest, _ := strings.Cut(line, " ")
		if j := strings.IndexAny(kw, "\t"); j >= 0 {
			kw, rest = kw[:j], kw[j+1:]+" "+rest
		}
		in := dockerInstr{line: start, cmd: strings.ToUpper(kw)}
		if !slices.Contains(known, in.cmd) {
			return nil, fmt.Errorf("dockerfile:%d: unknown instruction %.40q", start, kw)
		}
		rest = strings.TrimSpace(rest)
		for strings.HasPrefix(rest, "--") {
			f, r, _ := strings.Cut(rest, " ")
			in.flags = append(in.flags, f)
			rest = strings.TrimSpace(r)
		}
		if rest == "" {
			return nil, fmt.Errorf("dockerfile:%d: %s has no arguments", start, in.cmd)
		}
		in.args = rest
		if strings.HasPrefix(rest, "[") {
			var arr []string
			if json.Unmarshal([]byte(rest), &arr) == nil {
				in.exec = arr
			}
		}
		out = append(out, in)
	}
	return out, nil
}

var dockerVar = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandVars replaces $NAME and ${NAME} with vars[NAME] ("" when unset).
func expandVars(s string, vars map[string]string) string {
	return dockerVar.ReplaceAllStringFunc(s, func(m string) string {
		name := strings.Trim(m, "${}")
		return vars[name]
	})
}

// dockerBuild is the go build command of a Dockerfile's build stage.
type dockerBuild struct {
	env  []string // NAME=value set by ENV in the stage or inline before go
	args []string // go's arguments: build, flags, packages
}

// lintDockerfile checks the rules this repository's image must follow and
// returns the go build command found, and every problem, with its line.
func lintDockerfile(instrs []dockerInstr, proxyPort string) (dockerBuild, []string) {
	var problems []string
	bad := func(in dockerInstr, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s", in.line, fmt.Sprintf(format, a...)))
	}
	var stages []string // stage names
	var build dockerBuild
	var stageEnv []string
	finalFrom, finalUser := -1, ""
	exposed, entry := false, false
	for i, in := range instrs {
		switch in.cmd {
		case "FROM":
			words := strings.Fields(in.args)
			image := words[0]
			if len(words) == 3 && strings.EqualFold(words[1], "AS") {
				stages = append(stages, words[2])
			}
			finalFrom, finalUser, stageEnv = i, "", nil
			exposed, entry = false, false
			if slices.Contains(stages[:max(0, len(stages)-1)], image) || image == "scratch" {
				break
			}
			name := image
			if at := strings.Index(image, "@sha256:"); at >= 0 {
				break // pinned by digest
			}
			if slash := strings.LastIndexByte(name, '/'); slash >= 0 {
				name = name[slash+1:]
			}
			_, tag, ok := strings.Cut(name, ":")
			if !ok || tag == "" || tag == "latest" || strings.Contains(image, "$") {
				bad(in, "base image %q is not pinned to a tag or digest", image)
			}
		case "ADD":
			for _, w := range strings.Fields(in.args) {
				if strings.Contains(w, "://") || strings.HasPrefix(w, "git@") {
					bad(in, "ADD of a URL (%s): download in a RUN with a checksum, or COPY", w)
				}
			}
		case "ENV":
			for _, w := range strings.Fields(in.args) {
				if strings.Contains(w, "=") {
					stageEnv = append(stageEnv, w)
				}
			}
		case "USER":
			finalUser = strings.Fields(in.args)[0]
		case "EXPOSE":
			for _, p := range strings.Fields(in.args) {
				if strings.TrimSuffix(p, "/tcp") == proxyPort {
					exposed = true
				}
			}
		case "ENTRYPOINT":
			entry = len(in.exec) > 0 && filepath.Base(in.exec[0]) == "aishield"
			if !entry {
				bad(in, "ENTRYPOINT must run aishield in exec form")
			}
		case "RUN":
			cmd := in.args
			if in.exec != nil {
				cmd = strings.Join(in.exec, " ")
			}
			for part := range strings.SplitSeq(cmd, "&&") {
				words, err := splitShellWords(part)
				if err != nil {
					bad(in, "RUN: %v", err)
					continue
				}
				var inline []string
				for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
					inline, words = append(inline, words[0]), words[1:]
				}
				if len(words) >= 2 && words[0] == "go" && words[1] == "build" {
					build = dockerBuild{env: append(slices.Clone(stageEnv), inline...), args: words[1:]}
				}
			}
		}
	}
	if len(build.args) == 0 {
		problems = append(problems, "no RUN go build in the Dockerfile")
	} else {
		cgo := ""
		for _, e := range build.env {
			if v, ok := strings.CutPrefix(e, "CGO_ENABLED="); ok {
				cgo = v
			}
		}
		if cgo != "0" {
			problems = append(problems, "go build runs without CGO_ENABLED=0 (the final image has no C library)")
		}
		if !slices.Contains(build.args, "-trimpath") {
			problems = append(problems, "go build runs without -trimpath")
		}
		if !slices.ContainsFunc(build.args, func(a string) bool { return strings.Contains(a, "-X main.version=") }) {
			problems = append(problems, "go build does not stamp main.version")
		}
	}
	if finalFrom < 0 {
		problems = append(problems, "no FROM")
		return build, problems
	}
	final := strings.Fields(instrs[finalFrom].args)[0]
	switch {
	case finalUser == "" && !strings.HasSuffix(final, ":nonroot"):
		problems = append(problems, fmt.Sprintf("the final stage (%s) runs as root: add USER with a non-root user", final))
	case finalUser != "" && (strings.HasPrefix(finalUser, "root") || strings.HasPrefix(finalUser, "0")):
		problems = append(problems, fmt.Sprintf("the final stage runs as %q", finalUser))
	}
	if !exposed {
		problems = append(problems, "the final stage does not EXPOSE the proxy's port "+proxyPort)
	}
	if !entry {
		problems = append(problems, "the final stage has no ENTRYPOINT running aishield")
	}
	return build, problems
}

// buildPackage is the package argument of a go build or go install
// command's arguments (the last one not starting with "-").
func buildPackage(args []string) string {
	for i := len(args) - 1; i >= 0; i-- {
		if !strings.HasPrefix(args[i], "-") && args[i] != "build" && args[i] != "install" {
			return args[i]
		}
	}
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

const goodDockerfile = `# syntax=docker/dockerfile:1
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY . .
ARG VERSION
ENV CGO_ENABLED=0
RUN go build -trimpath \
    -ldflags="-s -w -X main.version=${VERSION}" \
    -o /out/aishield ./cmd/aishield
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/aishield /usr/local/bin/aishield
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/aishield"]
`

// TestLintDockerfile: each rule accepts the good file and catches its own
// mistake.
func TestLintDockerfile(t *testing.T) {
	tests := []struct {
		name, from, to string // goodDockerfile with from replaced by to
		want           string // a problem holding this; "" for none
	}{
		{"good", "", "", ""},
		{"base pinned by digest", "golang:1.26-bookworm", "golang@sha256:0123456789abcdef", ""},
		{"scratch with a user", "gcr.io/distroless/static-debian12:nonroot", "scratch\nUSER 65532:65532", ""},
		{"untagged base", "golang:1.26-bookworm", "golang", "not pinned"},
		{"latest base", "static-debian12:nonroot", "static-debian12:latest\nUSER nonroot", "not pinned"},
		{"final stage as root", "static-debian12:nonroot", "static-debian12:debug", "runs as root"},
		{"explicit root user", "EXPOSE 8787", "USER root\nEXPOSE 8787", `runs as "root"`},
		{"ADD of a URL", "COPY . .", "ADD https://example.com/tool.tgz /tmp/", "ADD of a URL"},
		{"cgo on", "ENV CGO_ENABLED=0", "ENV CGO_ENABLED=1", "CGO_ENABLED=0"},
		{"cgo inline", "ENV CGO_ENABLED=0\nRUN go build", "RUN CGO_ENABLED=0 go build", ""},
		{"no trimpath", "go build -trimpath", "go build", "-trimpath"},
		{"no version stamp", "-X main.version=${VERSION}", "", "main.version"},
		{"port not exposed", "EXPOSE 8787", "EXPOSE 8089", "EXPOSE the proxy's port"},
		{"shell-form entrypoint", `["/usr/local/bin/aishield"]`, "/usr/local/bin/aishield", "exec form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := goodDockerfile
			if tt.from != "" {
				if !strings.Contains(src, tt.from) {
					t.Fatalf("%q not in the good Dockerfile", tt.from)
				}
				src = strings.Replace(src, tt.from, tt.to, 1)
			}
			instrs, err := parseDockerfile(src)
			if err != nil {
				t.Fatal(err)
			}
			_, problems := lintDockerfile(instrs, "8787")
			got := strings.Join(problems, "\n")
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("problems:\n%s\nwant one holding %q", got, tt.want)
			}
		})
	}
}

func TestParseDockerfileErrors(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"unknown instruction", "FROM a:1\nFORM b:2\n", "dockerfile:2: unknown instruction"},
		{"no arguments", "FROM a:1\nRUN\n", "dockerfile:2: RUN has no arguments"},
		{"continuation at the end", "FROM a:1\nRUN echo \\", "line continuation at the end"},
		{"NUL byte", "FROM a:1\x00", "NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseDockerfile(tt.src)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`go build -ldflags="-s -w -X main.version=${VERSION}" ./cmd/aishield`, []string{"go", "build", "-ldflags=-s -w -X main.version=${VERSION}", "./cmd/aishield"}},
		{`a 'b c' "d \"e\"" f\ g`, []string{"a", "b c", `d "e"`, "f g"}},
		{"  ", nil},
	}
	for _, tt := range tests {
		got, err := splitShellWords(tt.in)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("splitShellWords(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{`a "b`, `a 'b`} {
		if _, err := splitShellWords(in); err == nil {
			t.Errorf("splitShellWords(%q) accepted an unterminated quote", in)
		}
	}
}

// FuzzParseDockerfile: the parser and the linter never panic; every
// instruction has a known keyword and arguments, and lines only go up.
func FuzzParseDockerfile(f *testing.F) {
	f.Add(goodDockerfile)
	if b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile")); err == nil {
		f.Add(string(b))
	}
	f.Add("FROM a\nRUN x \\\n# c\n y\nENTRYPOINT [\"a\"")
	f.Add("from a:1 as b\nRUN \"unterminated\nUSER\t0")
	f.Fuzz(func(t *testing.T, src string) {
		instrs, err := parseDockerfile(src)
		if err != nil {
			return
		}
		last := 0
		for _, in := range instrs {
			if in.cmd == "" || in.args == "" || in.line <= last {
				t.Fatalf("instruction %+v after line %d", in, last)
			}
			last = in.line
		}
		lintDockerfile(instrs, "8787")
		for _, in := range instrs {
			_, _ = splitShellWords(in.args)
		}
	})
}

// proxyPort is the port of the proxy's default --listen address.
func proxyPort(t *testing.T) string {
	t.Helper()
	f := newProxyCmd().Flags().Lookup("listen")
	_, port, ok := strings.Cut(f.DefValue, ":")
	if !ok {
		t.Fatalf("proxy --listen default %q has no port", f.DefValue)
	}
	return port
}

// TestDockerfile lints the repository's Dockerfile and checks that its go
// build line builds the package the install docs name.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	instrs, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	build, problems := lintDockerfile(instrs, proxyPort(t))
	for _, p := range problems {
		t.Errorf("Dockerfile: %s", p)
	}
	pkg := buildPackage(build.args)
	if pkg != "./cmd/aishield" {
		t.Errorf("the Dockerfile builds %q, want ./cmd/aishield", pkg)
	}
	// The install commands of the README and docs/install.md build the
	// same command: from a clone (./cmd/aishield) or the published module.
	install := regexp.MustCompile("(?m)^\\s*(?:\\$ )?go install ([^#\\n`]*)")
	found := 0
	for _, doc := range []string{"README.md", "docs/install.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range install.FindAllStringSubmatch(string(b), -1) {
			words, err := splitShellWords(m[1])
			if err != nil {
				t.Errorf("%s: go install %s: %v", doc, m[1], err)
				continue
			}
			found++
			p, _, _ := strings.Cut(buildPackage(words), "@")
			if p != pkg && p != "github.com/aishield/aishield/cmd/aishield" {
				t.Errorf("%s installs %q, the Dockerfile builds %q", doc, p, pkg)
			}
		}
	}
	if found == 0 {
		t.Errorf("no go install command in README.md nor docs/install.md")
	}
}

// snapshotRepo copies the working tree's files (tracked and untracked, not
// ignored) into a new git repository with one commit, so that a build
// there records real VCS information for the code under test. It returns
// the directory and the commit.
func snapshotRepo(t *testing.T, root string) (string, string) {
	t.Helper()
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.Output()
		if err != nil {
			t.Skipf("git %s: %v", args[0], err)
		}
		return string(out)
	}
	dir := t.TempDir()
	for name := range strings.SplitSeq(git(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00") {
		if name == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(dir, "init", "-q")
	git(dir, "add", "-A")
	git(dir, "commit", "-q", "-m", "snapshot")
	return dir, strings.TrimSpace(git(dir, "rev-parse", "HEAD"))
}

// TestDockerfileBuild builds the image when a container engine answers
// (docker info) and checks its version. Everywhere, it runs the
// Dockerfile's own go build line (its environment and flags, VERSION
// given) on a snapshot of the code in a git repository, and checks both
// forms of the version: stamped (-ldflags), and unstamped, where the
// version comes from the build information (the module's pseudo-version
// holding the commit, never "(devel)").
func TestDockerfileBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command twice")
	}
	root := repoRoot(t)
	src, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	instrs, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	build, _ := lintDockerfile(instrs, proxyPort(t))
	const stamp = "v9.8.7-test"

	if exec.Command("docker", "info").Run() == nil {
		t.Run("docker", func(t *testing.T) {
			tag := "aishield-test:" + strings.TrimPrefix(stamp, "v")
			cmd := exec.Command("docker", "build", "-q", "--build-arg", "VERSION="+stamp, "-t", tag, root)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("docker build: %v\n%s", err, out)
			}
			defer exec.Command("docker", "rmi", "-f", tag).Run()
			out, err := exec.Command("docker", "run", "--rm", tag, "--version").Output()
			if err != nil || string(out) != "aishield "+stamp+"\n" {
				t.Errorf("docker run %s --version: %q, %v", tag, out, err)
			}
			out, err = exec.Command("docker", "run", "--rm", "--entrypoint", "", tag, "id", "-u").CombinedOutput()
			if err == nil && strings.TrimSpace(string(out)) == "0" {
				t.Errorf("the image runs as root")
			}
		})
	} else {
		t.Log("no container engine (docker info failed): the Dockerfile is linted (TestDockerfile) and its go build line run here")
	}

	dir, commit := snapshotRepo(t, root)
	bin := t.TempDir()
	goBuild := func(version, out string) string {
		t.Helper()
		vars := map[string]string{"VERSION": version}
		args := make([]string, 0, len(build.args)+2)
		for i := 0; i < len(build.args); i++ {
			a := expandVars(build.args[i], vars)
			if a == "-o" && i+1 < len(build.args) {
				i++
				a, args = filepath.Join(bin, out), append(args, "-o")
			}
			args = append(args, a)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// The golang image's environment: no GOFLAGS (so -buildvcs=auto).
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
		for _, e := range build.env {
			cmd.Env = append(cmd.Env, expandVars(e, vars))
		}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
		}
		return filepath.Join(bin, out)
	}
	run := func(bin string, args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("aishield %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	rev := commit[:12]
	tests := []struct {
		name, version string
		wantVersion   string // "" for the module's pseudo-version
		wantSource    string
	}{
		{"stamped", stamp, stamp, "ldflags"},
		{"unstamped", "", "", "module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exe := goBuild(tt.version, "aishield-"+tt.name)
			var v versionInfo
			if err := json.Unmarshal([]byte(run(exe, "version", "--format", "json")), &v); err != nil {
				t.Fatal(err)
			}
			want := tt.wantVersion
			if want == "" {
				// Go derives v0.0.0-<commit time>-<12 hex digits of the commit>.
				if !regexp.MustCompile(`^v0\.0\.0-\d{14}-` + rev + `$`).MatchString(v.Version) {
					t.Errorf("unstamped version %q, want the module pseudo-version of commit %s", v.Version, rev)
				}
				want = v.Version
			}
			if v.Version != want || v.Source != tt.wantSource || v.Revision != rev || v.Modified || v.Time == "" {
				t.Errorf("version --format json: %+v; want version %q from %s, revision %s", v, want, tt.wantSource, rev)
			}
			if got := run(exe, "--version"); got != "aishield "+want+"\n" {
				t.Errorf("--version: %q, want %q", got, "aishield "+want+"\n")
			}
			line := run(exe, "version")
			if !strings.HasPrefix(line, "aishield "+want+" (commit "+rev+", "+v.Time+") go1.") || strings.Contains(line, "(devel)") {
				t.Errorf("version: %q", line)
			}
		})
	}
}

// TestVersionOf covers every source of the version with build
// information as the Go toolchain records it.
func TestVersionOf(t *testing.T) {
	vcs := func(modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-02T03:35:00Z"}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name, stamped string
		bi            *debug.BuildInfo
		want, source  string
		line          string // prefix of the one-line form
	}{
		{"ldflags win", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}, Settings: vcs("false")}, "v1.2.3", "ldflags",
			"aishield v1.2.3 (commit 0123456789ab, 2026-12-02T03:35:00Z) "},
		{"go install @version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v1.0.0", "module", "aishield v1.0.0 go"},
		{"clone with changes", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261202033500-0123456789ab+dirty"}, Settings: vcs("true")},
			"v0.0.0-20261202033500-0123456789ab+dirty", "module", "aishield v0.0.0-20261202033500-0123456789ab+dirty (commit 0123456789ab+dirty, "},
		{"devel module, VCS info", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("true")},
			"devel-0123456789ab+dirty", "vcs", "aishield devel-0123456789ab+dirty (commit 0123456789ab+dirty, 2026-12-02T03:35:00Z) "},
		{"devel module, clean VCS", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("false")},
			"devel-0123456789ab", "vcs", "aishield devel-0123456789ab (commit 0123456789ab, "},
		{"nothing known", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)", "none", "aishield (devel) go"},
		{"no build info", "", nil, "(devel)", "none", "aishield (devel) go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := versionOf(tt.stamped, tt.bi)
			if v.Version != tt.want || v.Source != tt.source || !strings.HasPrefix(v.String(), tt.line) {
				t.Errorf("versionOf = %+v (%q); want %q from %s, line %q...", v, v.String(), tt.want, tt.source, tt.line)
			}
		})
	}
}

// TestVersionCommand runs both forms in process: --version and version
// print the same version; --format json parses; a bad format is a usage
// error.
func TestVersionCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"--version"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("--version: exit %d, %s", code, errOut.String())
	}
	want := "aishield " + buildVersion() + "\n"
	if out.String() != want {
		t.Errorf("--version: %q, want %q", out.String(), want)
	}
	out.Reset()
	if code := run(t.Context(), []string{"version"}, nil, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), strings.TrimSuffix(want, "\n")+" ") {
		t.Errorf("version: exit %d, %q", code, out.String())
	}
	out.Reset()
	var v versionInfo
	if code := run(t.Context(), []string{"version", "--format", "json"}, nil, &out, &errOut); code != 0 || json.Unmarshal(out.Bytes(), &v) != nil || v.Version != buildVersion() {
		t.Errorf("version --format json: exit %d, %q", code, out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := run(t.Context(), []string{"version", "--format", "yaml"}, nil, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "--format") {
		t.Errorf("version --format yaml: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

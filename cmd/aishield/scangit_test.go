package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/aishield/aishield/classifiers"
)

// Samples the detectors find (see testdata/script/scan_text.txtar).
const (
	gitToken = "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"
	gitEmail = "jeanne.roux@acme-mail.fr"
)

// gitRepo is a repository built by a test with real git commands.
type gitRepo struct {
	t   *testing.T
	dir string
	// commits maps a name given by the test to the commit's hash.
	commits map[string]string
}

// isolateGit keeps the user's and the system's git configuration out of
// the tests (and out of the git the command runs).
func isolateGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	r := &gitRepo{t: t, dir: t.TempDir(), commits: map[string]string{}}
	r.git(nil, "init", "-q", "-b", "main")
	r.git(nil, "config", "user.name", "Test Committer")
	r.git(nil, "config", "user.email", "committer@example.net")
	r.git(nil, "config", "commit.gpgsign", "false")
	return r
}

// git runs git in the repository with env added, and returns its output.
func (r *gitRepo) git(env []string, args ...string) string {
	r.t.Helper()
	c := exec.Command("git", append([]string{"-C", r.dir}, args...)...)
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (r *gitRepo) write(path, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// commit commits everything staged as author at date and names the
// commit.
func (r *gitRepo) commit(name, author, email, date string, extra ...string) {
	r.t.Helper()
	env := []string{"GIT_AUTHOR_NAME=" + author, "GIT_AUTHOR_EMAIL=" + email, "GIT_AUTHOR_DATE=" + date, "GIT_COMMITTER_DATE=" + date}
	r.git(env, append([]string{"commit", "-q", "-m", name}, extra...)...)
	r.commits[name] = strings.TrimSpace(r.git(nil, "rev-parse", "HEAD"))
}

const (
	annAuthor, annEmail = "Ann Author", "ann@example.net"
	bobAuthor, bobEmail = "Bob Builder", "bob@example.net"
)

// buildHistory makes the history the tests scan: a secret (and one
// allowed), a person's e-mail, a rename adding a line (git shows only that
// line, not the file again), a binary file, a
// side branch merged, a path git quotes, then a staged change and an
// unstaged one.
func buildHistory(t *testing.T) *gitRepo {
	r := newGitRepo(t)
	r.write("app.env", "# settings\ntoken: "+gitToken+"\nother: "+gitToken+" # aishield:allow\n")
	r.git(nil, "add", "-A")
	r.commit("c1", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")

	r.write("people.txt", "Customer file (fictional)\nE-mail: "+gitEmail+"\n")
	r.git(nil, "add", "-A")
	r.commit("c2", bobAuthor, bobEmail, "2026-01-02T10:00:00+00:00")

	r.git(nil, "mv", "app.env", "prod.env")
	r.write("prod.env", "# settings\ntoken: "+gitToken+"\nother: "+gitToken+" # aishield:allow\nbackup: "+gitToken+"\n")
	r.write("people.txt", "Customer file (fictional)\n")
	r.git(nil, "add", "-A")
	r.commit("c3", annAuthor, annEmail, "2026-01-03T10:00:00+00:00")

	r.write("blob.bin", "\x00\x01\x02binary\x00token: "+gitToken+"\x00")
	r.git(nil, "add", "-A")
	r.commit("c4", annAuthor, annEmail, "2026-01-04T10:00:00+00:00")

	r.git(nil, "checkout", "-q", "-b", "side")
	r.write("side.txt", "token: "+gitToken+"\n")
	r.git(nil, "add", "-A")
	r.commit("c5", bobAuthor, bobEmail, "2026-01-05T10:00:00+00:00")

	r.git(nil, "checkout", "-q", "main")
	r.write("café/notes.txt", "key: "+gitToken+"\n")
	r.git(nil, "add", "-A")
	r.commit("c6", annAuthor, annEmail, "2026-01-06T10:00:00+00:00")

	env := []string{"GIT_AUTHOR_DATE=2026-01-07T10:00:00+00:00", "GIT_COMMITTER_DATE=2026-01-07T10:00:00+00:00"}
	r.git(env, "merge", "-q", "--no-ff", "-m", "merge side", "side")
	r.commits["merge"] = strings.TrimSpace(r.git(nil, "rev-parse", "HEAD"))

	r.write("staged.txt", "E-mail: "+gitEmail+"\n")
	r.git(nil, "add", "staged.txt")
	r.write("people.txt", "Customer file (fictional)\ntoken: "+gitToken+"\n") // not staged
	return r
}

// gitFinding is what the tests compare of a finding.
type gitFinding struct {
	Detector, Commit, Author, Email, Date, Path string
	Line, Column                                int
}

// runJSON runs the CLI and decodes its JSON report into findings.
func runJSON(t *testing.T, args ...string) ([]gitFinding, map[string]any, int, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	var rep struct {
		Files []struct {
			Path     string `json:"path"`
			Findings []struct {
				Detector string `json:"detector"`
				Line     int    `json:"line"`
				Column   int    `json:"column"`
				Commit   string `json:"commit"`
				Author   string `json:"author"`
				Email    string `json:"email"`
				Date     string `json:"date"`
			} `json:"findings"`
		} `json:"files"`
	}
	var raw map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("exit %d, not JSON: %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	json.Unmarshal(out.Bytes(), &raw)
	var fs []gitFinding
	for _, f := range rep.Files {
		for _, x := range f.Findings {
			fs = append(fs, gitFinding{Detector: x.Detector, Commit: x.Commit, Author: x.Author, Email: x.Email, Date: x.Date, Path: f.Path, Line: x.Line, Column: x.Column})
		}
	}
	slices.SortFunc(fs, func(a, b gitFinding) int { return strings.Compare(a.Path+a.Commit, b.Path+b.Commit) })
	return fs, raw, code, errOut.String()
}

func TestScanGit(t *testing.T) {
	isolateGit(t)
	t.Setenv(hashKeyEnv, "scan-git-test-key-0123456789")
	r := buildHistory(t)
	c := r.commits
	tok := func(name, author, email, date, path string, line, col int) gitFinding {
		return gitFinding{Detector: "secret.github_token", Commit: c[name], Author: author, Email: email, Date: date, Path: path, Line: line, Column: col}
	}
	c1 := tok("c1", annAuthor, annEmail, "2026-01-01T10:00:00+00:00", "app.env", 2, 8)
	c2 := gitFinding{Detector: "pii.email", Commit: c["c2"], Author: bobAuthor, Email: bobEmail, Date: "2026-01-02T10:00:00+00:00", Path: "people.txt", Line: 2, Column: 9}
	c3 := tok("c3", annAuthor, annEmail, "2026-01-03T10:00:00+00:00", "prod.env", 4, 9)
	c5 := tok("c5", bobAuthor, bobEmail, "2026-01-05T10:00:00+00:00", "side.txt", 1, 8)
	c6 := tok("c6", annAuthor, annEmail, "2026-01-06T10:00:00+00:00", "café/notes.txt", 1, 6)
	staged := gitFinding{Detector: "pii.email", Path: "staged.txt", Line: 1, Column: 9}
	sorted := func(fs ...gitFinding) []gitFinding {
		slices.SortFunc(fs, func(a, b gitFinding) int { return strings.Compare(a.Path+a.Commit, b.Path+b.Commit) })
		return fs
	}

	tests := []struct {
		name string
		args []string
		want []gitFinding
		code int
	}{
		{"whole history: merge not re-scanned, deleted lines and the binary not scanned", []string{r.dir}, sorted(c1, c2, c3, c5, c6), 1},
		{"--since: only what the later commits add", []string{"--since", c["c4"], r.dir}, sorted(c5, c6), 1},
		{"--staged: only the staged change", []string{"--staged", r.dir}, sorted(staged), 1},
		{"--log-opts filters the history", []string{"--log-opts", "--author='Bob Builder' --no-merges", r.dir}, sorted(c2, c5), 1},
		{"--log-opts with a range", []string{"--log-opts", c["c1"] + ".." + c["c3"], r.dir}, sorted(c2, c3), 1},
		{"--fail-on restricted: personal data only passes", []string{"--fail-on", "restricted", "--log-opts", "-n 1 " + c["c2"], r.dir}, sorted(c2), 0},
		{"--fail-on restricted: a secret fails", []string{"--fail-on", "restricted", "--since", c["c4"], r.dir}, sorted(c5, c6), 1},
		{"--destination: personal data to redact for openai", []string{"--destination", "openai", "--log-opts", "-n 1 " + c["c2"], r.dir}, sorted(c2), 1},
		{"--destination: nothing found may be sent", []string{"--destination", "openai", "--log-opts", "-n 1 " + c["c4"], r.dir}, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, raw, code, stderr := runJSON(t, append([]string{"scan", "git", "--format", "json"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("findings:\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.name[:5] == "whole" {
				ns, _ := json.Marshal(raw["not_scanned"])
				if want := `[{"path":"blob.bin","reason":"binary file in commit ` + shortHash(c["c4"]) + `"}]`; string(ns) != want {
					t.Errorf("not_scanned %s, want %s", ns, want)
				}
				if sup, _ := json.Marshal(raw["suppressed"]); string(sup) != `{"baseline":0,"inline":1}` {
					t.Errorf("suppressed %s", sup)
				}
			}
		})
	}
}

// A bare clone (a CI mirror) and a subdirectory of the work tree scan as
// the repository does.
func TestScanGitBareAndSubdirectory(t *testing.T) {
	isolateGit(t)
	r := buildHistory(t)
	bare := filepath.Join(t.TempDir(), "mirror.git")
	r.git(nil, "clone", "-q", "--bare", r.dir, bare)
	want, _, _, _ := runJSON(t, "scan", "git", "--format", "json", r.dir)
	for _, dir := range []string{bare, filepath.Join(r.dir, "café")} {
		got, _, code, stderr := runJSON(t, "scan", "git", "--format", "json", dir)
		if code != 1 || len(got) != 5 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: exit %d %s\n got %+v\nwant %+v", dir, code, stderr, got, want)
		}
	}
}

// The user's git configuration does not change what scan git reads.
func TestScanGitUserConfig(t *testing.T) {
	isolateGit(t)
	r := buildHistory(t)
	want, _, _, _ := runJSON(t, "scan", "git", "--format", "json", r.dir)
	for _, kv := range [][2]string{
		{"diff.noprefix", "true"}, {"diff.mnemonicPrefix", "true"}, {"core.quotePath", "false"},
		{"color.ui", "always"}, {"diff.renames", "false"}, {"diff.context", "7"}, {"diff.relative", "true"},
		{"log.decorate", "full"}, {"format.pretty", "oneline"}, {"diff.suppressBlankEmpty", "true"},
	} {
		r.git(nil, "config", kv[0], kv[1])
	}
	got, _, code, stderr := runJSON(t, "scan", "git", "--format", "json", r.dir)
	if code != 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("exit %d %s\n got %+v\nwant %+v", code, stderr, got, want)
	}
}

// The text report's decisions for --destination name each file diff's
// commit.
func TestScanGitDecisions(t *testing.T) {
	isolateGit(t)
	r := buildHistory(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"scan", "git", "--destination", "openai", "--log-opts", r.commits["c1"] + ".." + r.commits["c2"], r.dir}, nil, &out, &errOut)
	want := "people.txt in commit " + shortHash(r.commits["c2"]) + ": redact for openai (confidential)\n" +
		"  1 finding of pii.email (confidential, by classify[0]) above max_level internal of openai: redacted\n" +
		"destination openai under policy default: 0 allowed, 1 to redact, 0 blocked\n"
	if code != 1 || !strings.HasSuffix(out.String(), want) {
		t.Errorf("exit %d\n%s%s", code, out.String(), errOut.String())
	}
}

func TestScanGitText(t *testing.T) {
	isolateGit(t)
	r := buildHistory(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"scan", "git", "--log-opts", r.commits["c2"] + ".." + r.commits["c3"], r.dir}, nil, &out, &errOut)
	want := "prod.env:4:9: secret.github_token ghp_**** (confidence 0.99) commit " + shortHash(r.commits["c3"]) +
		" by Ann Author <ann@example.net> on 2026-01-03T10:00:00+00:00\n" +
		"1 findings in 1 of 1 file diffs (1 added lines of 1 commits)\n"
	if code != 1 || out.String() != want {
		t.Errorf("exit %d\n got %q\nwant %q\nstderr %s", code, out.String(), want, errOut.String())
	}
	if strings.Contains(out.String()+errOut.String(), gitToken) {
		t.Error("the report holds the raw secret")
	}
}

func TestScanGitErrors(t *testing.T) {
	isolateGit(t)
	r := buildHistory(t)
	notRepo := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"not a repository", []string{notRepo}, "not a git repository"},
		{"unknown revision", []string{"--since", "no-such-ref", r.dir}, "git log: fatal: ambiguous argument 'no-such-ref..HEAD'"},
		{"--since that is an option", []string{"--since", "--all", r.dir}, `--since "--all" is not a revision`},
		{"--log-opts --format", []string{"--log-opts", "-n 2 --format=%H", r.dir}, "--log-opts: --format changes the output"},
		{"--log-opts --pretty", []string{"--log-opts", "--pretty oneline", r.dir}, "--log-opts: --pretty changes"},
		{"--log-opts -z", []string{"--log-opts", "-z", r.dir}, "--log-opts: -z changes"},
		{"--log-opts --stat", []string{"--log-opts", "--stat", r.dir}, "--log-opts: --stat changes"},
		{"--log-opts --name-only", []string{"--log-opts", "--name-only", r.dir}, "--log-opts: --name-only changes"},
		{"--log-opts --output", []string{"--log-opts", "--output=/tmp/x", r.dir}, "--log-opts: --output changes"},
		{"--log-opts unterminated quote", []string{"--log-opts", "--author='Bob", r.dir}, "unterminated single quote"},
		{"--staged with --since", []string{"--staged", "--since", "main", r.dir}, "--staged scans the index"},
		{"two directories", []string{r.dir, r.dir}, "accepts at most 1 arg"},
		{"unknown format", []string{"--format", "xml", r.dir}, "unknown --format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(context.Background(), append([]string{"scan", "git"}, tt.args...), nil, &out, &errOut)
			if code != 2 || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, errOut.String(), tt.stderr)
			}
		})
	}
	// An empty repository has no history: git's error, exit 2.
	empty := newGitRepo(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"scan", "git", empty.dir}, nil, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "does not have any commits") {
		t.Errorf("empty repository: exit %d, %s", code, errOut.String())
	}
	// ... and nothing staged in it is no finding.
	out.Reset()
	if code := run(context.Background(), []string{"scan", "git", "--staged", empty.dir}, nil, &out, &errOut); code != 0 || out.String() != "no findings in 0 file diffs (0 added lines)\n" {
		t.Errorf("empty repository --staged: exit %d, %q", code, out.String())
	}
}

func TestScanGitSARIF(t *testing.T) {
	isolateGit(t)
	t.Setenv(hashKeyEnv, "scan-git-test-key-0123456789")
	r := buildHistory(t)
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"scan", "git", "--format", "sarif", "--since", r.commits["c2"], r.dir}, nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var log struct {
		Runs []struct {
			Results []struct {
				RuleID    string `json:"ruleId"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine, StartColumn, EndLine, EndColumn int
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
				Properties          map[string]string `json:"properties"`
			} `json:"results"`
			Invocations []struct {
				ToolExecutionNotifications []struct {
					Message struct{ Text string } `json:"message"`
				} `json:"toolExecutionNotifications"`
			} `json:"invocations"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	type loc struct {
		uri, commit, author, email string
		line, col, endLine, endCol int
	}
	var got []loc
	for _, res := range log.Runs[0].Results {
		pl := res.Locations[0].PhysicalLocation
		if res.PartialFingerprints["commitSha"] != res.Properties["commitSha"] || res.PartialFingerprints["aishieldFinding/v1"] == "" {
			t.Errorf("fingerprints %v, properties %v", res.PartialFingerprints, res.Properties)
		}
		got = append(got, loc{pl.ArtifactLocation.URI, res.Properties["commitSha"], res.Properties["author"], res.Properties["email"],
			pl.Region.StartLine, pl.Region.StartColumn, pl.Region.EndLine, pl.Region.EndColumn})
	}
	c := r.commits
	end := len(gitToken)
	want := []loc{
		{"café/notes.txt", c["c6"], annAuthor, annEmail, 1, 6, 1, 6 + end},
		{"prod.env", c["c3"], annAuthor, annEmail, 4, 9, 4, 9 + end},
		{"side.txt", c["c5"], bobAuthor, bobEmail, 1, 8, 1, 8 + end},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results:\n got %+v\nwant %+v", got, want)
	}
	if n := log.Runs[0].Invocations; len(n) != 1 || n[0].ToolExecutionNotifications[0].Message.Text != "not scanned: binary file in commit "+shortHash(c["c4"]) {
		t.Errorf("notifications %+v", n)
	}
}

// A baseline written by "scan git --format json" suppresses the same
// findings on the next run, and the fingerprints are those of "scan" run
// at the repository's root.
func TestScanGitBaseline(t *testing.T) {
	isolateGit(t)
	t.Setenv(hashKeyEnv, "scan-git-test-key-0123456789")
	r := buildHistory(t)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"scan", "git", "--format", "json", r.dir}, nil, &out, &errOut); code != 1 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	baseline := filepath.Join(t.TempDir(), "baseline.json")
	if err := os.WriteFile(baseline, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run(context.Background(), []string{"scan", "git", "--baseline-path", baseline, r.dir}, nil, &out, &errOut); code != 0 ||
		!strings.HasSuffix(out.String(), "(6 suppressed: 1 by aishield:allow, 5 by the baseline)\n") {
		t.Errorf("exit %d: %s", code, out.String())
	}
	t.Chdir(r.dir)
	out.Reset()
	if code := run(context.Background(), []string{"scan", "--baseline-path", baseline, "side.txt", "people.txt"}, nil, &out, &errOut); code != 1 ||
		out.String() != "people.txt:2:8: secret.github_token ghp_**** (confidence 0.99)\n1 findings in 1 of 2 files (1 suppressed: 0 by aishield:allow, 1 by the baseline)\n" {
		t.Errorf("scan with the scan git baseline: exit %d\n%s", code, out.String())
	}
}

// The aishield-staged hook of .pre-commit-hooks.yaml, run as pre-commit
// runs it: its entry and args, no file names, in the repository's root.
func TestPreCommitStagedHook(t *testing.T) {
	isolateGit(t)
	data, err := os.ReadFile(filepath.Join("..", "..", ".pre-commit-hooks.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var hooks []struct {
		ID            string   `yaml:"id"`
		Entry         string   `yaml:"entry"`
		Args          []string `yaml:"args"`
		Language      string   `yaml:"language"`
		PassFilenames *bool    `yaml:"pass_filenames"`
	}
	if err := yaml.Unmarshal(data, &hooks); err != nil {
		t.Fatal(err)
	}
	var entry []string
	ids := map[string]bool{}
	for _, h := range hooks {
		ids[h.ID] = true
		if h.ID == "aishield-staged" {
			if h.PassFilenames == nil || *h.PassFilenames || h.Language != "golang" {
				t.Errorf("aishield-staged: pass_filenames must be false, language golang: %+v", h)
			}
			words, err := splitShellWords(h.Entry)
			if err != nil {
				t.Fatal(err)
			}
			entry = append(words, h.Args...)
		}
	}
	for _, id := range []string{"aishield-scan", "aishield-policy-lint", "aishield-policy-test", "aishield-staged"} {
		if !ids[id] {
			t.Errorf("hook %s missing", id)
		}
	}
	if !slices.Equal(entry, []string{"aishield", "scan", "git", "--staged", "--fail-on", "restricted"}) {
		t.Fatalf("entry %q", entry)
	}
	if _, err := exec.LookPath(entry[0]); err != nil {
		t.Fatal(err) // TestMain puts the test binary on PATH as aishield
	}
	tests := []struct {
		name, file, content string
		code                int
	}{
		{"a staged secret fails", "deploy.env", "token: " + gitToken + "\n", 1},
		{"personal data passes under restricted", "contacts.txt", "E-mail: " + gitEmail + "\n", 0},
		{"a clean change passes", "readme.md", "hello\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newGitRepo(t)
			r.write("first.txt", "first\n")
			r.git(nil, "add", "-A")
			r.commit("c1", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")
			r.write(tt.file, tt.content)
			r.git(nil, "add", tt.file)
			c := exec.Command(entry[0], entry[1:]...)
			c.Dir = r.dir
			out, err := c.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out)
			}
			if bytes.Contains(out, []byte(gitToken)) {
				t.Error("the hook's output holds the raw secret")
			}
		})
	}
}

func TestSplitShellWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"", nil, ""},
		{"  --all  -n 20 ", []string{"--all", "-n", "20"}, ""},
		{`--author='Bob Builder' main..feature`, []string{"--author=Bob Builder", "main..feature"}, ""},
		{`--grep "a \"b\" \\c \x" ''`, []string{`--grep`, `a "b" \c \x`, ""}, ""},
		{`a\ b c\\d`, []string{"a b", `c\d`}, ""},
		{"a\\\nb", []string{"ab"}, ""},
		{`'x`, nil, "unterminated single quote"},
		{`"x`, nil, "unterminated double quote"},
		{`x\`, nil, "trailing backslash"},
	}
	for _, tt := range tests {
		got, err := splitShellWords(tt.in)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: got %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// FuzzSplitShellWords: no panic, and words quoted back split to
// themselves.
func FuzzSplitShellWords(f *testing.F) {
	for _, s := range []string{"--all -n 20", `--author='A B'`, `"a\"b" c\ d`, "'", `\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := splitShellWords(s)
		if err != nil {
			return
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
		}
		again, err := splitShellWords(strings.Join(quoted, " "))
		if err != nil || !slices.Equal(again, words) && len(words) > 0 {
			t.Fatalf("%q: %q then %q, %v", s, words, again, err)
		}
	})
}

// What one commit adds whole, scan git finds as scan finds it in the
// working tree: same detectors, lines, columns and fingerprints, invalid
// UTF-8, NUL bytes past git's binary sniffing and CRLF included.
func TestScanGitMatchesScan(t *testing.T) {
	isolateGit(t)
	t.Setenv(hashKeyEnv, "scan-git-test-key-0123456789")
	r := newGitRepo(t)
	files := map[string]string{
		"invalid-utf8.txt": "ok\n\xff\xfe token: " + gitToken + "\nE-mail: " + gitEmail + " \xc3\n",
		"nul.txt":          strings.Repeat("padding line\n", 700) + "token: " + gitToken + "\x00\x00 E-mail: " + gitEmail + "\n",
		"crlf.txt":         "a\r\nE-mail: " + gitEmail + "\r\ntoken: " + gitToken + "\r\n",
		"no-newline.txt":   "x\ntoken: " + gitToken,
	}
	var names []string
	for name, content := range files {
		r.write(name, content)
		names = append(names, name)
	}
	slices.Sort(names)
	r.git(nil, "add", "-A")
	r.commit("c1", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")
	t.Chdir(r.dir)
	type key struct {
		path, detector, fingerprint string
		line, endLine, column       int
	}
	decode := func(args ...string) []key {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, nil, &out, &errOut); code != 1 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut.String())
		}
		var rep struct {
			Files []struct {
				Path     string `json:"path"`
				Findings []struct {
					Detector    string `json:"detector"`
					Fingerprint string `json:"fingerprint"`
					Line        int    `json:"line"`
					EndLine     int    `json:"end_line"`
					Column      int    `json:"column"`
				} `json:"findings"`
			} `json:"files"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		var ks []key
		for _, f := range rep.Files {
			for _, x := range f.Findings {
				ks = append(ks, key{f.Path, x.Detector, x.Fingerprint, x.Line, x.EndLine, x.Column})
			}
		}
		slices.SortFunc(ks, func(a, b key) int { return strings.Compare(a.path+a.fingerprint, b.path+b.fingerprint) })
		return ks
	}
	fromScan := decode(append([]string{"scan", "--format", "json"}, names...)...)
	fromGit := decode("scan", "git", "--format", "json")
	if len(fromScan) < 2*len(files)-1 {
		t.Fatalf("scan found too little to compare: %+v", fromScan)
	}
	if !reflect.DeepEqual(fromGit, fromScan) {
		t.Errorf("scan git:\n%+v\nscan:\n%+v", fromGit, fromScan)
	}
}

// An added line over the 1 MiB bound is scanned up to it and listed as
// not scanned; under --fail-on it fails the run unless --allow-unscanned.
func TestScanGitLongLine(t *testing.T) {
	isolateGit(t)
	r := newGitRepo(t)
	long := "E-mail: " + gitEmail + " " + strings.Repeat("x", 1<<20) + " token: " + gitToken + "\n"
	r.write("min.js", long+"second line\n")
	r.git(nil, "add", "-A")
	r.commit("c1", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{nil, 1, "min.js:1:9: pii.email"},
		{[]string{"--fail-on", "restricted"}, 1, "min.js: not scanned: 1 added line(s) longer than 1024 KiB scanned only up to there in commit " + shortHash(r.commits["c1"])},
		{[]string{"--fail-on", "restricted", "--allow-unscanned"}, 0, "1 findings in 1 of 1 file diffs (2 added lines of 1 commits) (1 not scanned, listed above)"},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append(append([]string{"scan", "git"}, tt.args...), r.dir), nil, &out, &errOut)
		if code != tt.code || !strings.Contains(out.String(), tt.out) || strings.Contains(out.String(), "secret.github_token") {
			t.Errorf("%v: exit %d, want %d and %q:\n%s%s", tt.args, code, tt.code, tt.out, out.String(), errOut.String())
		}
	}
}

// cancelSink cancels the scan at the first file reported.
type cancelSink struct {
	gitTextSink
	cancel context.CancelFunc
	files  int
}

func (c *cancelSink) beginFile(*fileResult) error {
	c.files++
	c.cancel()
	return nil
}

// When the context is done (SIGINT), git is killed and the run reports an
// interrupted scan.
func TestScanGitInterrupt(t *testing.T) {
	isolateGit(t)
	r := newGitRepo(t)
	for i := range 40 {
		r.write("f.txt", strings.Repeat("E-mail: "+gitEmail+"\n", i+1))
		r.git(nil, "add", "-A")
		r.commit("c", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")
	}
	sp := &scanPolicy{}
	sc, err := sp.scanner("json")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sink := &cancelSink{gitTextSink: gitTextSink{w: bufio.NewWriter(io.Discard)}, cancel: cancel}
	g := &gitScan{sc: sc, sp: sp, sink: sink, rep: &scanReport{}}
	args, _ := gitCommandArgs(gitScanOptions{})
	if err := g.run(ctx, r.dir, args); err != nil {
		t.Fatal(err)
	}
	if !g.rep.Interrupted || sink.files != 1 {
		t.Errorf("interrupted %v after %d files", g.rep.Interrupted, sink.files)
	}
}

// A report that cannot be written stops git at once (it is not left
// blocked on a full pipe) and exits 2.
func TestScanGitWriteError(t *testing.T) {
	isolateGit(t)
	r := newGitRepo(t)
	for i := range 30 {
		r.write("f.txt", strings.Repeat("E-mail: "+gitEmail+" "+strings.Repeat("x", 2000)+"\n", 10*(i+1)))
		r.git(nil, "add", "-A")
		r.commit("c", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")
	}
	var errOut bytes.Buffer
	code := run(context.Background(), []string{"scan", "git", "--format", "json", r.dir}, nil, failWriter{}, &errOut)
	if code != 2 || !strings.Contains(errOut.String(), "disk full") {
		t.Errorf("exit %d: %s", code, errOut.String())
	}
}

// A custom pattern that times out on a file diff: that file diff is an
// input error (exit 2, named on stderr), the others are scanned.
func TestScanGitPatternTimeout(t *testing.T) {
	isolateGit(t)
	r := newGitRepo(t)
	r.write("a-redos.txt", "x "+strings.Repeat("a", 5000)+"b\n")
	r.write("b-people.txt", "E-mail: "+gitEmail+"\n")
	r.git(nil, "add", "-A")
	r.commit("c1", annAuthor, annEmail, "2026-01-01T10:00:00+00:00")
	sc, err := classifiers.New(classifiers.Options{MatchTimeout: 50 * time.Millisecond, Custom: []classifiers.CustomRule{
		{ID: "custom.redos", Pattern: `(a+)+$`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	w := bufio.NewWriter(&out)
	sink := &gitTextSink{w: w}
	g := &gitScan{sc: sc, sp: &scanPolicy{}, sink: sink, rep: &scanReport{}, errOut: &errOut}
	args, _ := gitCommandArgs(gitScanOptions{})
	if err := g.run(context.Background(), r.dir, args); err != nil {
		t.Fatal(err)
	}
	sink.finish(g.rep)
	w.Flush()
	if g.rep.Errors != 1 || !strings.HasPrefix(errOut.String(), "aishield: a-redos.txt in commit "+shortHash(r.commits["c1"])+": ") {
		t.Errorf("errors %d, stderr %q", g.rep.Errors, errOut.String())
	}
	if want := "incomplete, 1 file diff(s) could not be scanned: 1 findings in 1 of 1 file diffs"; !strings.Contains(out.String(), "b-people.txt:1:9: pii.email") || !strings.Contains(out.String(), want) {
		t.Errorf("report:\n%s", out.String())
	}
}

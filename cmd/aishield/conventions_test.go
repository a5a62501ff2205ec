package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// runCLI runs the CLI in process and returns its exit code, standard
// output and standard error.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// scriptFiles writes the files of the txtar script testdata/script/name
// into dir and returns their paths by name.
func scriptFiles(t *testing.T, name, dir string) map[string]string {
	t.Helper()
	ar, err := txtar.ParseFile(filepath.Join("testdata", "script", name))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range ar.Files {
		p := filepath.Join(dir, f.Name)
		if err := os.WriteFile(p, f.Data, 0o600); err != nil {
			t.Fatal(err)
		}
		out[f.Name] = p
	}
	return out
}

// conventionFixtures writes the files the convention tests share.
func conventionFixtures(t *testing.T) (dir string, files map[string]string) {
	t.Helper()
	dir = t.TempDir()
	files = scriptFiles(t, "verify.txtar", dir)
	for name, src := range map[string]string{
		"mail.txt":  "write to jane.doe@acme-corp.com\n",
		"clean.txt": "nothing here\n",
		"card.txt":  "card 4539 1488 0343 6467 for jane.doe@acme-corp.com\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	files["trail"] = filepath.Join(dir, "audit.jsonl")
	writeTrail(t, files["trail"])
	return dir, files
}

// TestErrorsLeaveStdoutEmpty: every command that prints data, run in a
// failing way, writes its error to standard error and nothing to standard
// output, and exits with its error status.
func TestErrorsLeaveStdoutEmpty(t *testing.T) {
	t.Setenv(envRedisURL, "") // quarantine list must find no store
	dir, fx := conventionFixtures(t)
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"scan", missing}, 2},
		{[]string{"scan", "--format", "jsonl", missing}, 2},
		{[]string{"scan", "--format", "sarif", missing}, 2},
		{[]string{"scan", "--format", "xml", fx["mail.txt"]}, 2},
		{[]string{"scan", "--policy", missing + ".yaml", fx["mail.txt"]}, 2},
		{[]string{"scan", "--exit-code", "300", fx["mail.txt"]}, 2},
		{[]string{"scan", "-o", dir, fx["mail.txt"]}, 2},
		{[]string{"verify", "--request", missing, "--response", fx["clean.json"]}, 2},
		{[]string{"verify", "--format", "yaml", "--request", fx["req.json"], "--response", fx["clean.json"]}, 2},
		{[]string{"audit", "verify", missing}, 2},
		{[]string{"audit", "verify", "--format", "xml", fx["trail"]}, 2},
		{[]string{"audit", "query", missing}, 2},
		{[]string{"audit", "query", "--json", "--since", "yesterday", fx["trail"]}, 2},
		{[]string{"audit", "exposure", "--destination", "openai", missing}, 2},
		{[]string{"policy", "lint", missing + ".yaml"}, 2},
		{[]string{"policy", "lint", "--format", "sarif", "default"}, 2},
		{[]string{"policy", "explain", "--destination", "nope", "default"}, 2},
		{[]string{"policy", "which", "--policy", missing + ".yaml"}, 2},
		{[]string{"policy", "test", "--format", "junit", missing}, 1},
		{[]string{"quarantine", "list"}, 2},
		{[]string{"quarantine", "list", "--format", "xml"}, 2},
		{[]string{"version", "--format", "xml"}, 2},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errOut := runCLI(t, tc.args...)
			if code != tc.code || out != "" || errOut == "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, nothing on stdout, the error on stderr", code, out, errOut, tc.code)
			}
		})
	}
}

// TestUnknownFormatListsFormats: an unknown --format names the formats the
// command supports.
func TestUnknownFormatListsFormats(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]string{
		"scan x":                              "aishield scan supports text, json, jsonl, sarif, html",
		"scan git":                            "aishield scan git supports text, json, jsonl, sarif, html",
		"demo":                                "aishield demo supports text, json",
		"audit report file":                   "aishield audit report supports text, json, html",
		"verify":                              "aishield verify supports text, json",
		"policy lint":                         "aishield policy lint supports text, json",
		"policy test":                         "aishield policy test supports pretty, json",
		"policy which":                        "aishield policy which supports text, json",
		"audit exposure --destination d file": "aishield audit exposure supports text, json",
		"audit query file":                    "aishield audit query supports text, json",
		"quarantine list":                     "aishield quarantine list supports text, json",
		"version":                             "aishield version supports text, json",
	} {
		args := append(strings.Fields(cmd), "--format", "xml")
		if _, _, errOut := runCLI(t, args...); !strings.Contains(errOut, `unknown --format "xml": `+want) {
			t.Errorf("%s: stderr %q, want %q", cmd, errOut, want)
		}
	}
}

// TestOutputFile: -o writes the report to a file, whole: a run that
// reports (exit 0 or 1) replaces it, a run that fails leaves the previous
// report as it was and no temporary file behind; "-" is standard output.
func TestOutputFile(t *testing.T) {
	t.Parallel()
	dir, fx := conventionFixtures(t)
	report := filepath.Join(dir, "out", "report.json")
	if err := os.Mkdir(filepath.Dir(report), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "scan", "--format", "json", "-o", report, fx["mail.txt"])
	data, err := os.ReadFile(report)
	if code != 1 || out != "" || err != nil || !json.Valid(data) || !strings.Contains(string(data), "pii.email") {
		t.Fatalf("exit %d, stdout %q, report %q (%v); want exit 1 and the JSON report in the file only", code, out, data, err)
	}
	if st, _ := os.Stat(report); st.Mode().Perm() != 0o600 {
		t.Errorf("new report mode %v, want 0600", st.Mode().Perm())
	}
	if err := os.Chmod(report, 0o644); err != nil {
		t.Fatal(err)
	}
	// A failed run (an input missing) keeps the previous report.
	if code, _, _ := runCLI(t, "scan", "--format", "json", "--output", report, fx["clean.txt"], filepath.Join(dir, "missing")); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if again, _ := os.ReadFile(report); !bytes.Equal(again, data) {
		t.Errorf("a failed run changed the report:\n%s", again)
	}
	// A clean run replaces it, keeping its mode.
	if code, _, _ := runCLI(t, "scan", "--format", "json", "-o", report, fx["clean.txt"]); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if again, _ := os.ReadFile(report); bytes.Contains(again, []byte("pii.email")) {
		t.Errorf("the report was not replaced:\n%s", again)
	}
	if st, _ := os.Stat(report); st.Mode().Perm() != 0o644 {
		t.Errorf("replaced report mode %v, want the previous 0644", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(report))
	if len(entries) != 1 {
		t.Errorf("files left beside the report: %v", entries)
	}
	// A report written into the directory scanned is not scanned while it
	// is written: the previous report is, as any file.
	if code, _, _ := runCLI(t, "scan", "--format", "json", "-o", report, filepath.Dir(report)); code != 0 {
		t.Fatalf("scan of the report's directory: exit %d", code)
	}
	var self struct{ Files []struct{ Path string } }
	if data, _ := os.ReadFile(report); json.Unmarshal(data, &self) != nil || len(self.Files) != 1 || self.Files[0].Path != report {
		t.Errorf("scan of the report's own directory lists %+v, want the previous report only", self.Files)
	}
	// "-" is standard output; every command writing data takes -o.
	if code, out, _ := runCLI(t, "version", "-o", "-", "--format", "json"); code != 0 || !json.Valid([]byte(out)) {
		t.Errorf("version -o -: exit %d, %q", code, out)
	}
	fx["pass_test.yaml"] = filepath.Join(dir, "pass_test.yaml")
	if err := os.WriteFile(fx["pass_test.yaml"], []byte("policy: secrets-only\ncases:\n  - {name: a, input: hello, expect: {action: allow}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{
		{"verify", "--request", fx["req.json"], "--response", fx["leak.json"]},
		{"audit", "verify", fx["trail"]},
		{"audit", "query", fx["trail"]},
		{"audit", "exposure", "--destination", "openai", fx["trail"]},
		{"policy", "lint", "default"},
		{"policy", "explain", "default"},
		{"policy", "test", fx["pass_test.yaml"]},
		{"policy", "which"},
		{"version"},
	} {
		path := filepath.Join(dir, "out", fmt.Sprintf("r%d", i))
		code, out, errOut := runCLI(t, append(args, "-o", path)...)
		data, err := os.ReadFile(path)
		if code == 2 || out != "" || err != nil || len(data) == 0 {
			t.Errorf("%v -o: exit %d, stdout %q, stderr %q, file %d bytes (%v)", args, code, out, errOut, len(data), err)
		}
	}
}

// TestExitCode: --exit-code is the status of a run that fails on its
// findings; errors stay 2.
func TestExitCode(t *testing.T) {
	t.Parallel()
	dir, fx := conventionFixtures(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"scan", fx["mail.txt"]}, 1},
		{[]string{"scan", "--exit-code", "7", fx["mail.txt"]}, 7},
		{[]string{"scan", "--exit-code", "0", fx["mail.txt"]}, 0},
		{[]string{"scan", "--exit-code", "7", fx["clean.txt"]}, 0},
		{[]string{"scan", "--exit-code", "7", fx["mail.txt"], filepath.Join(dir, "missing")}, 2},
		{[]string{"scan", "--exit-code", "7", "--fail-on", "confidential", fx["mail.txt"]}, 7},
		{[]string{"scan", "--exit-code", "7", "--fail-on", "restricted", fx["mail.txt"]}, 0},
		{[]string{"scan", "--exit-code", "7", "--destination", "openai", fx["mail.txt"]}, 7},
		{[]string{"scan", "--exit-code", "7", "--format", "sarif", fx["mail.txt"]}, 7},
		{[]string{"verify", "--request", fx["req.json"], "--response", fx["clean.json"], "--exit-code", "9"}, 0},
		{[]string{"verify", "--request", fx["req.json"], "--response", fx["leak.json"], "--exit-code", "9"}, 9},
		{[]string{"verify", "--request", fx["req.json"], "--response", fx["leak.json"]}, 1},
		{[]string{"verify", "--request", fx["req.json"], "--response", fx["broken.json"], "--exit-code", "9"}, 2},
	} {
		if code, out, errOut := runCLI(t, tc.args...); code != tc.code {
			t.Errorf("%v: exit %d, want %d\nstdout %s\nstderr %s", tc.args, code, tc.code, out, errOut)
		}
	}
}

// TestDestinationWithFailOn: --destination and --fail-on both apply: the
// run fails when either does.
func TestDestinationWithFailOn(t *testing.T) {
	t.Parallel()
	_, fx := conventionFixtures(t)
	// In the default preset pii.email is confidential and a card number
	// restricted; "local" may receive anything, "openai" redacts above
	// internal.
	for _, tc := range []struct {
		dest, failOn, file string
		code               int
	}{
		{"local", "restricted", "mail.txt", 0},   // neither fails
		{"local", "confidential", "mail.txt", 1}, // --fail-on fails, the destination allows
		{"local", "confidential", "card.txt", 1}, // --fail-on fails on the card
		{"openai", "confidential", "clean.txt", 0},
		{"openai", "restricted", "mail.txt", 1}, // the destination redacts, --fail-on passes
		{"openai", "restricted", "clean.txt", 0},
	} {
		code, out, errOut := runCLI(t, "scan", "--destination", tc.dest, "--fail-on", tc.failOn, fx[tc.file])
		if code != tc.code {
			t.Errorf("--destination %s --fail-on %s %s: exit %d, want %d\n%s%s", tc.dest, tc.failOn, tc.file, code, tc.code, out, errOut)
		}
	}
}

// TestJSONAlias: --json is --format json, hidden from the help.
func TestJSONAlias(t *testing.T) {
	t.Parallel()
	_, fx := conventionFixtures(t)
	for _, args := range [][]string{
		{"verify", "--request", fx["req.json"], "--response", fx["leak.json"]},
		{"audit", "verify", fx["trail"]},
		{"audit", "query", fx["trail"]},
	} {
		c1, alias, _ := runCLI(t, append(args, "--json")...)
		c2, format, _ := runCLI(t, append(args, "--format", "json")...)
		valid := json.Valid([]byte(alias))
		// An exchange replayed by verify gets a new ID each run.
		alias, format = exchangeID.ReplaceAllString(alias, ""), exchangeID.ReplaceAllString(format, "")
		if c1 != c2 || alias != format || !valid {
			t.Errorf("%v: --json (exit %d) and --format json (exit %d) differ:\n%s\n%s", args, c1, c2, alias, format)
		}
		_, help, _ := runCLI(t, append(args[:len(args)-1:len(args)-1], "--help")...)
		if strings.Contains(help, "--json") {
			t.Errorf("%v --help shows --json", args[:2])
		}
	}
}

var exchangeID = regexp.MustCompile(`"exchange": "[0-9a-f]+"`)

// TestScanJSONL: --format jsonl writes one JSON object a line, a finding
// per line then one summary, with the counts of the JSON report.
func TestScanJSONL(t *testing.T) {
	t.Parallel()
	dir, _ := conventionFixtures(t)
	_, jsonOut, _ := runCLI(t, "scan", "--format", "json", dir)
	code, out, _ := runCLI(t, "scan", "--format", "jsonl", "--destination", "openai", dir)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	var rep struct {
		Files []struct{ Findings []json.RawMessage }
	}
	if err := json.Unmarshal([]byte(jsonOut), &rep); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, f := range rep.Files {
		want += len(f.Findings)
	}
	counts := map[string]int{}
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if last != nil && last["type"] == "summary" {
			t.Error("a line after the summary")
		}
		counts[line["type"].(string)]++
		if line["type"] == "finding" && (line["path"] == "" || line["detector"] == "" || line["preview"] == "") {
			t.Errorf("incomplete finding line %s", sc.Text())
		}
		last = line
	}
	if want == 0 || counts["finding"] != want || counts["summary"] != 1 || counts["decision"] != len(rep.Files) {
		t.Errorf("lines %v, want %d findings, %d decisions and a summary", counts, want, len(rep.Files))
	}
	if last["type"] != "summary" || last["findings"] != float64(want) || last["files"] != float64(len(rep.Files)) {
		t.Errorf("summary %v", last)
	}
	for _, raw := range []string{"jane.doe", "4539 1488"} {
		if strings.Contains(out, raw) {
			t.Errorf("raw value %q in the JSON lines", raw)
		}
	}
}

// TestPolicyResolution: the policy is --policy, else AISHIELD_POLICY,
// else a policy file found from the working directory up to the
// repository root, else the default preset; policy which says which and
// why, and every command uses the same.
func TestPolicyResolution(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	sub := filepath.Join(repo, "a", "b")
	for _, d := range []string{filepath.Join(repo, ".git"), sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, src string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Above the repository root: never found from inside it.
	write(filepath.Join(root, ".aishield.yaml"), "name: outside\nlevels: [public]\ndefault: {max_level: public}\n")
	flagFile := filepath.Join(root, "flag.yaml")
	write(flagFile, "name: from-flag\nlevels: [public]\ndefault: {max_level: public}\n")
	t.Setenv(policyEnv, "")
	t.Chdir(sub)

	which := func(args ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCLI(t, append([]string{"policy", "which", "--format", "json"}, args...)...)
		var c struct{ Policy, Source, Name string }
		if code != 0 || json.Unmarshal([]byte(out), &c) != nil {
			t.Fatalf("policy which: exit %d, %q, %q", code, out, errOut)
		}
		return c.Source, c.Name
	}
	if src, name := which(); src != "default" || name != "default" {
		t.Errorf("no policy anywhere: %s %s, want the default preset", src, name)
	}
	repoFile := filepath.Join(repo, "aishield.yaml")
	write(repoFile, "name: from-repo\nlevels: [public, secret]\ndefault: {max_level: public}\ncustom:\n  - {id: custom.bluebird, keywords: [bluebird], level: secret}\n")
	if src, name := which(); src != "file" || name != "from-repo" {
		t.Errorf("aishield.yaml at the repository root: %s %s", src, name)
	}
	// A nearer file wins, and the dotted name before the plain one.
	write(filepath.Join(repo, "a", ".aishield.yml"), "name: from-a\nlevels: [public]\ndefault: {max_level: public}\n")
	if src, name := which(); src != "file" || name != "from-a" {
		t.Errorf("nearer .aishield.yml: %s %s", src, name)
	}
	os.Remove(filepath.Join(repo, "a", ".aishield.yml"))
	t.Setenv(policyEnv, "strict")
	if src, name := which(); src != "env" || name != "strict" {
		t.Errorf("AISHIELD_POLICY over the file: %s %s", src, name)
	}
	if src, name := which("--policy", flagFile); src != "flag" || name != "from-flag" {
		t.Errorf("--policy over AISHIELD_POLICY: %s %s", src, name)
	}
	t.Setenv(policyEnv, "nope")
	if code, out, errOut := runCLI(t, "policy", "which"); code != 2 || out != "" || !strings.Contains(errOut, policyEnv) {
		t.Errorf("a bad AISHIELD_POLICY: exit %d, %q, %q; want 2 and an error naming the variable", code, out, errOut)
	}
	t.Setenv(policyEnv, "")

	// scan uses the file found: its custom rule fires.
	write(filepath.Join(sub, "notes.txt"), "project bluebird ships in May\n")
	if code, out, _ := runCLI(t, "scan", "notes.txt"); code != 1 || !strings.Contains(out, "custom.bluebird") {
		t.Errorf("scan with the repository's policy: exit %d, %q", code, out)
	}
	// Outside the repository nothing is found: scan runs every built-in.
	t.Chdir(t.TempDir())
	write("notes.txt", "project bluebird ships in May\n")
	if code, out, _ := runCLI(t, "scan", "notes.txt"); code != 0 || strings.Contains(out, "custom.bluebird") {
		t.Errorf("scan without a policy: exit %d, %q", code, out)
	}
}

// TestEnvFlags: flags read AISHIELD_<FLAG> when not given; the flag wins
// over the variable, the variable over the default; an invalid value is
// an error naming the variable, never the value; --help names the
// variable.
func TestEnvFlags(t *testing.T) {
	_, fx := conventionFixtures(t)
	t.Setenv("AISHIELD_FORMAT", "")
	if _, out, _ := runCLI(t, "scan", fx["clean.txt"]); !strings.HasPrefix(out, "no findings") {
		t.Errorf("default: %q", out)
	}
	t.Setenv("AISHIELD_FORMAT", "json")
	if _, out, _ := runCLI(t, "scan", fx["clean.txt"]); !json.Valid([]byte(out)) {
		t.Errorf("AISHIELD_FORMAT=json: %q", out)
	}
	if _, out, _ := runCLI(t, "scan", "--format", "text", fx["clean.txt"]); !strings.HasPrefix(out, "no findings") {
		t.Errorf("--format text over AISHIELD_FORMAT: %q", out)
	}
	t.Setenv("AISHIELD_FORMAT", "")
	t.Setenv("AISHIELD_EXIT_CODE", "5")
	if code, _, _ := runCLI(t, "scan", fx["mail.txt"]); code != 5 {
		t.Errorf("AISHIELD_EXIT_CODE=5: exit %d", code)
	}
	if code, _, _ := runCLI(t, "scan", "--exit-code", "4", fx["mail.txt"]); code != 4 {
		t.Errorf("--exit-code 4 over AISHIELD_EXIT_CODE: exit %d", code)
	}
	t.Setenv("AISHIELD_EXIT_CODE", "")
	for _, tc := range []struct {
		env, value string
		args       []string
	}{
		{"AISHIELD_EXIT_CODE", "seven", []string{"scan", fx["mail.txt"]}},
		{"AISHIELD_MAX_BODY", "s3cr3t-value", []string{"proxy"}},
		{"AISHIELD_CAPACITY_TOKENS", "s3cr3t-value", []string{"cache-server"}},
		{"AISHIELD_FOLLOW", "s3cr3t-value", []string{"scan", fx["mail.txt"]}},
		// values the flag's parser accepts and the command refuses
		{"AISHIELD_FORMAT", "s3cr3t-value", []string{"scan", fx["mail.txt"]}},
		{"AISHIELD_EXIT_CODE", "4242", []string{"scan", fx["mail.txt"]}},
	} {
		t.Setenv(tc.env, tc.value)
		code, out, errOut := runCLI(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, tc.env) || strings.Contains(errOut, tc.value) {
			t.Errorf("%s=%s %v: exit %d, stdout %q, stderr %q; want 2 and an error naming the variable, not its value", tc.env, tc.value, tc.args, code, out, errOut)
		}
		t.Setenv(tc.env, "")
	}
	for cmd, flags := range map[string][]string{
		"proxy":        {"AISHIELD_LISTEN", "AISHIELD_UPSTREAM", "AISHIELD_REDIS", "AISHIELD_MAX_MEMORY", "AISHIELD_POLICY"},
		"cache-server": {"AISHIELD_LISTEN", "AISHIELD_PRESET", "AISHIELD_FAULT"},
		"scan":         {"AISHIELD_FORMAT", "AISHIELD_OUTPUT", "AISHIELD_EXIT_CODE", "AISHIELD_DESTINATION", "AISHIELD_FAIL_ON", "AISHIELD_POLICY"},
		"verify":       {"AISHIELD_FORMAT", "AISHIELD_REQUEST", "AISHIELD_RESPONSE", "AISHIELD_POLICY"},
	} {
		_, help, _ := runCLI(t, cmd, "--help")
		for _, env := range flags {
			if !strings.Contains(help, env) {
				t.Errorf("%s --help does not name %s", cmd, env)
			}
		}
	}
}

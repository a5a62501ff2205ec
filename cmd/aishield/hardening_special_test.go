//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	secretNote  = "E-mail: jeanne.roux@acme-mail.fr\n"
	cleanPolicy = `name: fifo
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
default:
  max_level: internal
  action: redact
`
)

// waitingForWriter reports whether a thread of process pid ("self" for
// this one) is blocked opening a FIFO that has no writer yet.
func waitingForWriter(t *testing.T, pid string) bool {
	t.Helper()
	tasks, err := filepath.Glob("/proc/" + pid + "/task/*/wchan")
	if err != nil || len(tasks) == 0 {
		t.Skip("no /proc/PID/task/*/wchan on this system")
	}
	for _, p := range tasks {
		if b, err := os.ReadFile(p); err == nil && string(b) == "wait_for_partner" {
			return true
		}
	}
	return false
}

// awaitBlockedOpen waits until pid is blocked opening a FIFO, polling
// /proc; the test's deadline bounds the wait.
func awaitBlockedOpen(t *testing.T, pid string, exited <-chan struct{}) {
	t.Helper()
	for !waitingForWriter(t, pid) {
		select {
		case <-exited:
			t.Fatal("the command ended before waiting for the pipe's writer")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestHardening11PolicyLintFIFOSignal: "aishield policy lint" on a named
// pipe nobody writes to waits for a writer, and SIGTERM or SIGINT ends it
// at once with exit 2 and a clear message (a blocked open must not outlive SIGTERM).
// The command runs as a process of its own, signalled for real.
func TestHardening11PolicyLintFIFOSignal(t *testing.T) {
	bin, err := exec.LookPath("aishield") // testscript.Main put it on PATH
	if err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "policy.yaml")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin, "policy", "lint", fifo)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			awaitBlockedOpen(t, fmt.Sprint(cmd.Process.Pid), exited)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-exited:
			case <-time.After(time.Minute): // a hang, not a slow exit
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("policy lint survived %v", sig)
			}
			var ee *exec.ExitError
			if !errors.As(waitErr, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("exit %v, stderr %q; want exit 2 and an interruption message", waitErr, stderr.String())
			}
		})
	}
}

// TestHardening11PolicyFromPipe: a policy given as a named pipe is read
// (bounded by the policy size limit) by policy lint, scan --policy and
// redact --policy; without a writer, a cancelled command returns at once.
func TestHardening11PolicyFromPipe(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(dir, "note.txt")
	if err := os.WriteFile(note, []byte(secretNote), 0o600); err != nil {
		t.Fatal(err)
	}
	// feed writes data to the pipe once a reader opens it; wait returns
	// when the writer has closed it, so that the next command finds no
	// writer left.
	feed := func(data string) (wait func()) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			defer f.Close()
			_, _ = f.WriteString(data)
		}()
		return func() { <-done }
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"policy", "lint", fifo}, 0, "1 file(s): 0 error(s)"},
		{[]string{"scan", "--policy", fifo, "--destination", "default", note}, 1, "redact for default"},
	} {
		wait := feed(cleanPolicy)
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb); code != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.args, code, out.String(), errb.String(), tc.code, tc.want)
		}
		wait()
	}
	// A policy larger than the limit is refused, not read to its end.
	wait := feed(cleanPolicy + "#" + strings.Repeat("x", 2<<20) + "\n")
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"policy", "lint", fifo}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(out.String(), "larger than") {
		t.Errorf("oversized policy: exit %d, %q %q", code, out.String(), errb.String())
	}
	wait()

	// No writer: every command that loads the policy returns once its
	// context is done, with exit 2 and no result.
	for _, args := range [][]string{
		{"policy", "lint", fifo},
		{"policy", "explain", fifo},
		{"scan", "--policy", fifo, note},
		{"redact", "--policy", fifo, "--vault", filepath.Join(dir, "v.json")},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		exited := make(chan struct{})
		var code int
		var out, errb bytes.Buffer
		go func() { code = run(ctx, args, strings.NewReader(secretNote), &out, &errb); close(exited) }()
		awaitBlockedOpen(t, "self", exited)
		cancel()
		if <-exited; code != 2 {
			t.Errorf("%v cancelled: exit %d, stdout %q, stderr %q; want 2", args, code, out.String(), errb.String())
		}
	}
}

// TestHardening13ScanSpecialFiles: scan follows a symlinked file or
// directory named on the command line, reads a named pipe or a /dev/fd/N
// pipe given explicitly, lists FIFOs, sockets and unfollowed links met
// while walking as not scanned (exit unchanged), follows links with
// --follow and stops at loops, and never prints "no findings in 0 files"
// for an input it could not read: that is an input error, exit 2.
func TestHardening13ScanSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel, data string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	link := func(target, rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	note := mk("notes/a.txt", secretNote)
	fileLink := link(note, "a-link.txt")
	dirLink := link(filepath.Join(dir, "notes"), "notes-link")
	// A tree holding a FIFO, a socket, a link to a file outside and a link
	// to its own parent (a loop when followed).
	mk("tree/clean.txt", "nothing here\n")
	treeFIFO := filepath.Join(dir, "tree", "pipe")
	if err := syscall.Mkfifo(treeFIFO, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "tree", "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	link(note, "tree/secret-link.txt")
	link(".", "tree/loop")
	named := filepath.Join(dir, "named-pipe")
	if err := syscall.Mkfifo(named, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		if f, err := os.OpenFile(named, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString(secretNote)
			f.Close()
		}
	}()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	go func() { _, _ = pw.WriteString(secretNote); pw.Close() }()
	devfd := fmt.Sprintf("/dev/fd/%d", pr.Fd())

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"symlink to a file", []string{fileLink}, 1, []string{"a-link.txt:1:9: pii.email", "1 findings in 1 of 1 files"}, ""},
		{"symlinked directory", []string{dirLink}, 1, []string{"notes-link/a.txt:1:9: pii.email", "1 findings in 1 of 1 files"}, ""},
		{"named pipe", []string{named}, 1, []string{"named-pipe:1:9: pii.email"}, ""},
		{"/dev/fd pipe", []string{devfd}, 1, []string{devfd + ":1:9: pii.email"}, ""},
		{"walk lists what it does not open", []string{filepath.Join(dir, "tree")}, 0, []string{
			"tree/loop: not scanned: symbolic link, not followed",
			"tree/pipe: not scanned: a named pipe (FIFO)",
			"tree/secret-link.txt: not scanned: symbolic link, not followed",
			"tree/sock: not scanned: a socket",
			"no findings in 1 files (4 not scanned: not regular files, listed above)"}, ""},
		{"--follow follows links and stops at loops", []string{"--follow", filepath.Join(dir, "tree")}, 1, []string{
			"tree/loop: not scanned: symbolic link loop",
			"tree/secret-link.txt:1:9: pii.email",
			"tree/pipe: not scanned: a named pipe (FIFO)"}, ""},
		// Nothing read, no report: the summary is an error, on stderr.
		{"a device named is an input error", []string{os.DevNull}, 2, nil, "incomplete, 1 input(s) could not be read: no findings in 0 files"},
		{"a missing input is an input error", []string{filepath.Join(dir, "missing")}, 2, nil, "incomplete, 1 input(s) could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"scan"}, tc.args...), strings.NewReader(""), &out, &errb)
			ok := code == tc.code && strings.Contains(errb.String(), tc.stderr)
			for _, w := range tc.stdout {
				ok = ok && strings.Contains(out.String(), w)
			}
			if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); strings.HasPrefix(lines[len(lines)-1], "no findings in 0 files") {
				ok = false
			}
			if !ok {
				t.Errorf("exit %d, stdout:\n%s\nstderr: %q\nwant exit %d, stdout holding %q, stderr %q", code, out.String(), errb.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}

	// JSON lists what was not scanned and marks an incomplete report.
	var out, errb bytes.Buffer
	run(context.Background(), []string{"scan", "--format", "json", filepath.Join(dir, "tree"), os.DevNull}, strings.NewReader(""), &out, &errb)
	for _, w := range []string{`"not_scanned": [`, `"reason": "a socket"`, `"errors": 1`, `"incomplete": true`} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("JSON report lacks %s:\n%s", w, out.String())
		}
	}

	// --destination counts only what was read; an unread input is not "0 blocked".
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"scan", "--destination", "default", os.DevNull}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("--destination with an unreadable input: exit %d, %q", code, out.String())
	}
}

// TestHardening13ScanProcessSubstitution: "aishield scan <(cmd)" from a
// real shell reads the pipe bash hands over as /dev/fd/N.
func TestHardening13ScanProcessSubstitution(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("aishield"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "-c", `aishield scan <(printf 'E-mail: jeanne.roux@acme-mail.fr\n')`)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !bytes.Contains(out, []byte("/dev/fd/")) || !bytes.Contains(out, []byte("pii.email")) {
		t.Errorf("exit %v, stdout %q; want exit 1 and the finding in /dev/fd/N", err, out)
	}
}

// TestHardening13ScanFIFOInterrupted: a named pipe given explicitly with no
// writer does not hold scan forever: cancelling (SIGINT, SIGTERM) ends it
// with exit 2 and an incomplete report.
func TestHardening13ScanFIFOInterrupted(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	var code int
	var out, errb bytes.Buffer
	go func() { code = run(ctx, []string{"scan", fifo}, strings.NewReader(""), &out, &errb); close(exited) }()
	awaitBlockedOpen(t, "self", exited)
	cancel()
	if <-exited; code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "incomplete, interrupted") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, nothing read so no report, and incomplete, interrupted on stderr", code, out.String(), errb.String())
	}
}

// TestHardening11PolicyTestFIFO: "policy test" never blocks on a pipe: a
// test file given as a FIFO, or met as one in a directory, is an error
// result (exit 1), and a test file whose policy is a FIFO without a writer
// returns once cancelled.
func TestHardening11PolicyTestFIFO(t *testing.T) {
	dir := t.TempDir()
	fifoTest := filepath.Join(dir, "pipe_test.yaml")
	if err := syscall.Mkfifo(fifoTest, 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"policy", "test", fifoTest}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(out.String(), "not a regular file") {
		t.Errorf("FIFO test file: exit %d, stdout %q, stderr %q; want exit 1 and an error result", code, out.String(), errb.String())
	}
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tree, "policy.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(tree, "walked_test.yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A walk does not take a FIFO for a test file: this tree has none yet.
	if code := run(context.Background(), []string{"policy", "test", tree}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), "no policy test files") {
		t.Errorf("tree holding only a FIFO test file: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if err := os.WriteFile(filepath.Join(tree, "p_test.yaml"), []byte("policy: policy.yaml\ncases:\n  - name: c\n    destination: default\n    input: hello\n    expect: {action: allow}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan struct{})
	var code int
	out.Reset()
	errb.Reset()
	go func() {
		code = run(ctx, []string{"policy", "test", tree}, strings.NewReader(""), &out, &errb)
		close(exited)
	}()
	awaitBlockedOpen(t, "self", exited)
	cancel()
	if <-exited; code != 1 {
		t.Errorf("cancelled policy test: exit %d, stdout %q, stderr %q; want 1", code, out.String(), errb.String())
	}
}

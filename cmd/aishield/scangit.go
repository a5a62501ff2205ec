package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/gitdiff"
	"github.com/aishield/aishield/policies/sarif"
)

// gitOrigin is the commit a file diff of "scan git" comes from (empty
// fields with --staged).
type gitOrigin struct {
	Commit, Author, Email, Date string
}

// gitScanOptions are the options of "scan git".
type gitScanOptions struct {
	dir     string
	staged  bool
	since   string
	logOpts string
}

// maxGitStderr bounds what is kept of git's standard error for the error
// message.
const maxGitStderr = 4 << 10

func newScanGitCmd() *cobra.Command {
	var of *outputFlags
	var gopts gitScanOptions
	var sopts scanOptions
	var allowUnscanned bool
	var sp *scanPolicy
	cmd := &cobra.Command{
		Use:   "git [REPO_DIR]",
		Short: "Scan what the commits of a git repository, or its staged changes, add",
		Long: `Scan git reads the history of the repository at REPO_DIR (default ".") as
"git log -p" writes it and scans only the lines each commit adds, with the same detectors,
policy flags and report formats as "aishield scan". Every finding names the commit, its
author (name, e-mail), the date, the path in the new tree and the line in the new file.

--staged scans what "git diff --cached" shows (what a pre-commit hook sees). --since REF
scans the commits in REF..HEAD (what a pull request adds). --log-opts passes more arguments
to git log, split as a shell would ("--all", "-n 20", "main..feature"); options that change
git's output format (--format, --pretty, -z, --stat, --name-only, --output, ...) are refused.

Merge commits are not scanned: what they add came from their parents, which are. Deleted
files and submodule changes are not scanned; binary files are listed as not scanned. An
added line longer than 1 MiB is scanned up to there, and a file diff adding more than 32 MiB
up to there: the rest is listed as not scanned (under --fail-on or --destination the run
fails unless --allow-unscanned).

.aishieldignore at the root of the repository, and --ignore-file, apply to the paths of the
new tree. A finding on an added line holding "aishield:allow" is suppressed. Fingerprints
(path, detector, keyed hash) are those of "aishield scan" run at the repository's root, so
a --baseline-path written by either suppresses findings in both.

Exit status as "aishield scan": 0 nothing found, 1 found (or --fail-on reached, or a file
diff that may not go to --destination), 2 on errors, git's included (not a repository, an
unknown revision).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			gopts.dir = "."
			if len(args) == 1 {
				gopts.dir = args[0]
			}
			return of.run(cmd, func(w io.Writer) error { return runScanGit(cmd, gopts, of, sp, sopts, allowUnscanned, w) })
		},
	}
	f := cmd.Flags()
	f.BoolVar(&gopts.staged, "staged", false, "scan the staged changes (git diff --cached) instead of the history")
	f.StringVar(&gopts.since, "since", "", "scan only the commits in REF..HEAD, what a branch adds to REF")
	f.StringVar(&gopts.logOpts, "log-opts", "", `more git log arguments, split as a shell would (e.g. "--all", "-n 20", "main..feature")`)
	f.BoolVar(&allowUnscanned, "allow-unscanned", false, "do not fail --fail-on or --destination runs because a file diff was not wholly scanned (it is still listed)")
	f.StringVar(&sopts.ignoreFile, "ignore-file", "", "file of paths not to scan, gitignore syntax, applied with the repository's "+ignoreFileName)
	f.StringVar(&sopts.baselinePath, "baseline-path", "", "suppress the findings whose fingerprint is in this file (a previous scan --format json report, or fingerprints one a line); needs "+hashKeyEnv)
	sp = addScanPolicyFlags(cmd)
	of = addOutputFlags(cmd, "text", "text", "json", "jsonl", "sarif", "html")
	of.addExitCode(cmd, "the scan fails on its findings: anything found, or with --fail-on a finding at or above its level, or with --destination a file diff to redact or block")
	bindEnv(cmd)
	return cmd
}

// runScanGit runs "aishield scan git" with its report written to w.
func runScanGit(cmd *cobra.Command, gopts gitScanOptions, of *outputFlags, sp *scanPolicy, sopts scanOptions, allowUnscanned bool, w io.Writer) error {
	format := of.format
	gitArgs, err := gitCommandArgs(gopts)
	if err != nil {
		return withCode(2, err)
	}
	sc, err := sp.prepare(cmd, format, &sopts)
	if err != nil {
		return err
	}
	root, err := gitTopLevel(cmd.Context(), gopts.dir)
	if err != nil {
		return withCode(2, err)
	}
	ignore, err := gitIgnoreRules(root, sopts.ignoreFile)
	if err != nil {
		return withCode(2, err)
	}
	out := bufio.NewWriterSize(w, 64<<10)
	var sink scanSink
	var sarifSink *gitSARIFSink
	switch format {
	case "json":
		sink = &jsonSink{w: out, keyed: sp.keyed}
	case "jsonl":
		sink = &jsonlSink{w: out, keyed: sp.keyed}
	case "text":
		sink = &gitTextSink{w: out}
	case "html":
		hs := newHTMLSink(out, sp)
		hs.git = true
		sink = hs
	default:
		sarifSink = &gitSARIFSink{keyed: sp.keyed}
		sink = sarifSink
	}
	g := &gitScan{sc: sc, sp: sp, opts: sopts, ignore: ignore, sink: sink, rep: &scanReport{Keyed: sp.keyed}, errOut: cmd.ErrOrStderr()}
	runErr := g.run(cmd.Context(), root, gitArgs)
	rep := g.rep
	if ts, ok := sink.(*gitTextSink); ok {
		ts.commits, ts.lines = g.commits, g.lines
	}
	err = rep.WriteErr
	if err == nil {
		if sarifSink != nil {
			err = sarifSink.write(out, sp, rep, allowUnscanned)
		} else if err = sink.finish(rep); err == nil && format == "text" {
			err = sp.writeDecisions(out, withCommitPaths(rep))
		}
	}
	if err == nil {
		err = out.Flush()
	}
	if err != nil {
		return withCode(2, err)
	}
	if rep.Interrupted {
		return withCode(2, errors.New("scan interrupted: the report is incomplete"))
	}
	if runErr != nil {
		return withCode(2, fmt.Errorf("scan git: %w (the report is incomplete)", runErr))
	}
	return sp.exit(rep, of, allowUnscanned, "file diff(s) were not wholly scanned")
}

// gitRefusedOptions are git log options that change the output the
// diff reader parses (or write it elsewhere): refused in --log-opts, as
// names and as prefixes of "NAME=VALUE" (the short ones exactly).
var gitRefusedOptions = []string{
	"--format", "--pretty", "--oneline", "-z", "--null", "--stat", "--numstat", "--shortstat", "--dirstat",
	"--cumulative", "--summary", "--compact-summary", "--name-only", "--name-status", "--raw", "--output",
	"--output-indicator-new", "--output-indicator-old", "--output-indicator-context", "--graph",
	"--word-diff", "--word-diff-regex", "--color-words", "--color", "--ext-diff", "--textconv", "--binary",
	"--patch-with-raw", "--patch-with-stat", "--no-patch", "-s", "--check", "--src-prefix", "--dst-prefix",
	"--no-prefix", "--default-prefix", "--line-prefix", "--relative", "--left-right", "-L", "--encoding",
}

// checkLogOpts refuses the options of gitRefusedOptions.
func checkLogOpts(args []string) error {
	for _, a := range args {
		if a == "--" {
			return nil // pathspecs follow
		}
		for _, o := range gitRefusedOptions {
			short := len(o) == 2
			if a == o || (!short && strings.HasPrefix(a, o+"=")) || (o == "-L" && strings.HasPrefix(a, "-L")) {
				return fmt.Errorf("--log-opts: %s changes the output of git log that scan git reads: not allowed", o)
			}
		}
	}
	return nil
}

// gitCommandArgs is the git command line of a scan, after "git -C DIR".
func gitCommandArgs(o gitScanOptions) ([]string, error) {
	diffOpts := []string{"-p", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "-M",
		"--src-prefix=a/", "--dst-prefix=b/", "--no-relative"}
	if o.staged {
		if o.since != "" || o.logOpts != "" {
			return nil, errors.New("--staged scans the index: --since and --log-opts apply to the history")
		}
		return append([]string{"diff", "--cached"}, diffOpts...), nil
	}
	args := append([]string{"log", "--format=" + gitdiff.Format, "--full-history"}, diffOpts...)
	if o.since != "" {
		if strings.HasPrefix(o.since, "-") || strings.ContainsAny(o.since, " \t\n") {
			return nil, fmt.Errorf("--since %q is not a revision", o.since)
		}
		args = append(args, o.since+"..HEAD")
	}
	if o.logOpts != "" {
		extra, err := splitShellWords(o.logOpts)
		if err != nil {
			return nil, fmt.Errorf("--log-opts: %w", err)
		}
		if err := checkLogOpts(extra); err != nil {
			return nil, err
		}
		args = append(args, extra...)
	}
	return args, nil
}

// splitShellWords splits s into words as a POSIX shell does, without
// expansions: blanks separate words, single quotes keep everything,
// double quotes keep everything but \" \\ \$ \` and a backslash escapes
// the next character.
func splitShellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated single quote")
			}
			w.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				w.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("unterminated double quote")
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, errors.New("trailing backslash")
			}
			i++
			if s[i] != '\n' {
				w.WriteByte(s[i])
				inWord = true
			}
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words, nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// gitError turns a failed git run into an error quoting git's first
// lines of standard error.
func gitError(what string, err error, stderr *limitedBuffer) error {
	msg := strings.TrimSpace(stderr.buf.String())
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	msg = strings.ToValidUTF8(msg, "?")
	if msg == "" {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: %s (%w)", what, msg, err)
}

// gitCommand is git run in dir, killed when ctx is done.
func gitCommand(ctx context.Context, dir string, args ...string) (*exec.Cmd, *limitedBuffer) {
	c := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	stderr := &limitedBuffer{max: maxGitStderr}
	c.Stderr = stderr
	c.WaitDelay = 5 * time.Second
	return c, stderr
}

// gitTopLevel is the root of the work tree holding dir, or dir itself
// for a bare repository (a CI mirror), which has no work tree.
func gitTopLevel(ctx context.Context, dir string) (string, error) {
	c, stderr := gitCommand(ctx, dir, "rev-parse", "--is-bare-repository")
	out, err := c.Output()
	if err != nil {
		return "", gitError("git rev-parse in "+dir, err, stderr)
	}
	if strings.TrimSpace(string(out)) == "true" {
		return dir, nil
	}
	c, stderr = gitCommand(ctx, dir, "rev-parse", "--show-toplevel")
	if out, err = c.Output(); err != nil {
		return "", gitError("git rev-parse in "+dir, err, stderr)
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// gitIgnoreRules compiles the repository's .aishieldignore and the
// --ignore-file patterns.
func gitIgnoreRules(root, ignoreFile string) (*ignoreMatcher, error) {
	extra, err := ignoreFileRules(ignoreFile)
	if err != nil {
		return nil, err
	}
	return rootIgnore(root, extra)
}

// gitScan is one run of "scan git".
type gitScan struct {
	sc     *classifiers.Scanner
	sp     *scanPolicy
	opts   scanOptions
	ignore *ignoreMatcher
	sink   scanSink
	rep    *scanReport
	// errOut receives the file diffs that could not be scanned.
	errOut io.Writer
	// Commits counts the commits read (merges included), Lines the
	// added lines scanned.
	commits, lines int
}

// run runs git in root and scans what its output adds, file diff by file
// diff as git writes them. The error is git's or the reader's: the report
// is then incomplete.
func (g *gitScan) run(ctx context.Context, root string, args []string) error {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	c, stderr := gitCommand(inner, root, args...)
	stdout, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("git: %w", err)
	}
	scanErr := g.read(ctx, stdout)
	stopped := scanErr != nil || g.rep.WriteErr != nil
	if stopped {
		cancel() // stop git: nothing more is read
	}
	waitErr := c.Wait()
	if ctx.Err() != nil {
		g.rep.Interrupted = true
		return nil
	}
	if stopped {
		return scanErr // the report's write error is the caller's to say
	}
	if waitErr != nil {
		return gitError("git "+args[0], waitErr, stderr)
	}
	return nil
}

// read scans the file diffs of r.
func (g *gitScan) read(ctx context.Context, r io.Reader) error {
	rd := gitdiff.NewReader(r, gitdiff.Options{})
	var last *gitdiff.Commit
	for {
		f, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if f.Commit != last {
			last = f.Commit
			g.commits++
		}
		if err := g.file(ctx, f); err != nil || g.rep.WriteErr != nil {
			return err
		}
	}
}

// file scans one file diff and reports it.
func (g *gitScan) file(ctx context.Context, f *gitdiff.File) error {
	rep := g.rep
	origin := &gitOrigin{}
	where := ""
	if c := f.Commit; c != nil {
		if c.Merge() {
			return nil // its parents added what it holds
		}
		origin = &gitOrigin{Commit: c.Hash, Author: c.Author, Email: c.Email, Date: c.Date}
		where = " in commit " + shortHash(c.Hash)
	}
	if f.Status == gitdiff.Deleted || f.Combined || f.Submodule || f.Path == "" {
		return nil
	}
	if g.ignore.ignored(f.Path, false) {
		rep.Ignored++
		return nil
	}
	if f.Binary {
		rep.NotScanned = append(rep.NotScanned, notScanned{Path: f.Path, Reason: "binary file" + where})
		return nil
	}
	if len(f.Text) == 0 && f.DroppedLines == 0 {
		return nil // nothing added: a mode change, a pure rename
	}
	if f.LongLines > 0 {
		rep.NotScanned = append(rep.NotScanned, notScanned{Path: f.Path, Unreadable: true,
			Reason: fmt.Sprintf("%d added line(s) longer than %d KiB scanned only up to there%s", f.LongLines, gitdiff.DefaultMaxLine>>10, where)})
	}
	if f.DroppedLines > 0 {
		rep.NotScanned = append(rep.NotScanned, notScanned{Path: f.Path, Unreadable: true,
			Reason: fmt.Sprintf("added text over %d MiB: %d line(s) (%d bytes) after it not scanned%s", gitdiff.DefaultMaxFile>>20, f.DroppedLines, f.DroppedBytes, where)})
	}
	for _, n := range f.Lines {
		if n > 0 {
			g.lines++
		}
	}
	fs, err := g.sc.Scan(ctx, f.Text)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// A custom pattern's timeout: the file diff is reported as an
		// input error, as scan reports a file, and the scan goes on.
		fmt.Fprintf(g.errOut, "aishield: %s%s: %v\n", f.Path, where, err)
		rep.Errors++
		return nil
	}
	res := &fileResult{Path: f.Path, Kind: "text", Git: origin}
	// The text is copied to a string only for what needs one: an
	// aishield:allow line, a decision for --destination.
	if g.sp.destination != nil || (len(fs) > 0 && bytes.Contains(f.Text, []byte(allowMarker))) {
		res.text = string(f.Text)
	}
	var n int
	fs, n = suppressInline(res.text, fs)
	rep.Inline += n
	fs, n = g.opts.baseline.filter(res.Path, fs)
	rep.Baselined += n
	if sink, ok := g.sink.(*gitSARIFSink); ok {
		sink.endColumns(f.Text, fs)
	}
	newLine := func(l int) int { // the text's line l in the new file
		if l < 1 || l > len(f.Lines) {
			return 0
		}
		return f.Lines[l-1]
	}
	for i := range fs {
		x := &fs[i]
		line, end := newLine(x.Line), newLine(x.EndLine)
		if end == 0 {
			end = line
		}
		x.Line, x.EndLine = line, end
	}
	res.Findings = fs
	if err := g.sp.onFile(ctx, res); err != nil {
		return err
	}
	res.text = ""
	if rep.WriteErr = rep.add(res, g.sp, g.sink, fs); rep.WriteErr == nil {
		rep.WriteErr = rep.end(res, g.sink)
	}
	return nil
}

// withCommitPaths is rep with each file diff's path followed by its
// commit, for the text report's decisions.
func withCommitPaths(rep *scanReport) *scanReport {
	cp := *rep
	cp.Files = slices.Clone(rep.Files)
	for i := range cp.Files {
		if g := cp.Files[i].Git; g != nil && g.Commit != "" {
			cp.Files[i].Path += " in commit " + shortHash(g.Commit)
		}
	}
	return &cp
}

// shortHash is the first 12 digits of a commit hash.
func shortHash(h string) string { return h[:min(len(h), 12)] }

// gitTextSink writes the text report of "scan git": a line per finding
// with its commit, then what was not scanned and the summary.
type gitTextSink struct {
	w *bufio.Writer
	// commits and lines are the commits read and the added lines
	// scanned, for the summary.
	commits, lines int
}

func (t *gitTextSink) beginFile(*fileResult) error { return nil }
func (t *gitTextSink) endFile(*fileResult) error   { return nil }

func (t *gitTextSink) findings(res *fileResult, fs []classifiers.Finding) error {
	g := res.Git
	for _, x := range fs {
		fmt.Fprintf(t.w, "%s:%d:%d: %s %s (confidence %.2f)", res.Path, x.Line, x.Column, x.Detector, x.Preview, x.Confidence)
		if g.Commit != "" {
			fmt.Fprintf(t.w, " commit %s by %s <%s> on %s", shortHash(g.Commit), g.Author, g.Email, g.Date)
		} else {
			t.w.WriteString(" staged")
		}
		if err := t.w.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

func (t *gitTextSink) finish(rep *scanReport) error {
	for _, x := range rep.NotScanned {
		if _, err := fmt.Fprintf(t.w, "%s: not scanned: %s\n", x.Path, x.Reason); err != nil {
			return err
		}
	}
	summary := fmt.Sprintf("%d findings in %d of %d file diffs", rep.Found, rep.WithFindings, len(rep.Files))
	if rep.Found == 0 {
		summary = fmt.Sprintf("no findings in %d file diffs", len(rep.Files))
	}
	summary += fmt.Sprintf(" (%d added lines", t.lines)
	if t.commits > 0 {
		summary += fmt.Sprintf(" of %d commits", t.commits)
	}
	summary += ")"
	if n := len(rep.NotScanned); n > 0 {
		summary += fmt.Sprintf(" (%d not scanned, listed above)", n)
	}
	_, err := fmt.Fprintln(t.w, summaryEnd(rep, summary, "file diff(s) could not be scanned"))
	return err
}

// gitSARIFSink keeps the findings of "scan git" for the SARIF log, with
// their commit and end columns.
type gitSARIFSink struct {
	keyed bool
	files []sarif.File
	// cols are the end columns of the findings handed to the next
	// findings call.
	cols []int
}

// endColumns computes the end column of each finding of fs in text.
func (s *gitSARIFSink) endColumns(text []byte, fs []classifiers.Finding) {
	s.cols = s.cols[:0]
	for _, x := range fs {
		end := min(max(x.End, x.Start), len(text))
		from := bytes.LastIndexByte(text[:max(end-1, 0)], '\n') + 1
		s.cols = append(s.cols, utf8.RuneCount(text[from:end])+1)
	}
}

func (s *gitSARIFSink) beginFile(*fileResult) error { return nil }
func (s *gitSARIFSink) endFile(*fileResult) error   { return nil }
func (s *gitSARIFSink) finish(*scanReport) error    { return nil }

func (s *gitSARIFSink) findings(res *fileResult, fs []classifiers.Finding) error {
	if len(fs) == 0 {
		return nil
	}
	f := sarif.File{Path: res.Path, Findings: fs, EndColumns: append([]int(nil), s.cols...)}
	if g := res.Git; g.Commit != "" {
		f.Commit = &sarif.Commit{SHA: g.Commit, Author: g.Author, Email: g.Email, Date: g.Date}
	}
	if s.keyed {
		for _, x := range fs {
			f.Fingerprints = append(f.Fingerprints, findingFingerprint(res.Path, x))
		}
	}
	s.files = append(s.files, f)
	return nil
}

// write writes the SARIF log: paths relative to the repository root.
func (s *gitSARIFSink) write(w io.Writer, sp *scanPolicy, rep *scanReport, allowUnscanned bool) error {
	var unscanned []sarif.NotScanned
	for _, x := range rep.NotScanned {
		unscanned = append(unscanned, sarif.NotScanned{Path: x.Path, Reason: x.Reason})
	}
	incomplete := rep.Interrupted || rep.Errors > 0 || (rep.unreadable() > 0 && sp.gates() && !allowUnscanned)
	return sarif.Write(w, s.files, sarif.Options{ToolVersion: buildVersion(), Policy: sp.policy, Destination: sp.destination,
		Fingerprints: sp.keyed, NotScanned: unscanned, Incomplete: incomplete})
}

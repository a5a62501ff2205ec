package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
	"github.com/spf13/cobra"
)

// maxWholeFile is the size above which a file is streamed through
// ScanReader (as text) instead of being read whole.
const maxWholeFile = 32 << 20

// progressThreshold is the number of files above which a progress line is
// shown on a terminal.
const progressThreshold = 500

// scanFinding is one finding as the scan report prints it. The keyed hash
// is left out: without a shared key it only compares within one run.
type scanFinding struct {
	Detector   string               `json:"detector"`
	Category   classifiers.Category `json:"category"`
	Start      int                  `json:"start"`
	End        int                  `json:"end"`
	Line       int                  `json:"line"`
	EndLine    int                  `json:"end_line"`
	Column     int                  `json:"column"`
	Confidence float64              `json:"confidence"`
	Preview    string               `json:"preview"`
	// Encoding names the encoding the value was found under (base64,
	// hex, percent); absent when it was written as it is.
	Encoding string `json:"encoding,omitempty"`
	// Fingerprint identifies the finding across runs (path, detector,
	// keyed hash of the value); written only when AISHIELD_HASH_KEY is
	// set, since it is stable only then. --baseline-path reads it.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Commit, Author, Email and Date name the commit that added the
	// value ("scan git"; Line is then its line in the new file).
	Commit string `json:"commit,omitempty"`
	Author string `json:"author,omitempty"`
	Email  string `json:"email,omitempty"`
	Date   string `json:"date,omitempty"`
}

// fileResult is the scan of one file, as the report keeps it: its
// findings are handed to the report's writer as they come and kept only
// when the writer needs them all at the end (SARIF).
type fileResult struct {
	Path     string
	Kind     string
	Skipped  bool
	Note     string
	Findings []classifiers.Finding
	// count is the number of findings reported (after suppression).
	count int

	// Decision is the policy decision for --destination (scanpolicy.go).
	Decision *policies.Decision
	// Git is the commit of a file diff ("scan git", scangit.go).
	Git *gitOrigin
	// endCols holds the end column of each finding, for SARIF regions;
	// nil for a streamed file.
	endCols []int
	// text is the scanned text, held only until onFile returns;
	// streamed says the file was too large to hold.
	text     string
	streamed bool
}

// scanReport is the whole run. Findings are not kept (see fileResult):
// the report counts them.
type scanReport struct {
	Files []fileResult
	// NotScanned lists what a walk found and did not read (FIFOs,
	// sockets, devices, links not followed; not errors), and the files
	// read that could not be scanned (Unreadable).
	NotScanned []notScanned
	// Ignored counts the paths the ignore rules kept from being read.
	Ignored int
	// Inline and Baselined count the findings suppressed by an
	// aishield:allow line and by the baseline.
	Inline, Baselined int
	// Keyed says finding hashes are keyed by AISHIELD_HASH_KEY, so
	// fingerprints are stable and written.
	Keyed bool
	// Errors counts inputs named on the command line, or directories, that
	// could not be read: the report is incomplete, exit 2.
	Errors int
	// Interrupted is set when the scan stopped on SIGINT or SIGTERM.
	Interrupted bool
	// Found counts the findings reported, WithFindings the files holding
	// them; FailOn says one of them is at or above --fail-on's level.
	Found, WithFindings int
	FailOn              bool
	// WriteErr is the error writing the report, which ends the scan.
	WriteErr error
}

// unreadable counts the files that could not be scanned.
func (r *scanReport) unreadable() int {
	n := 0
	for _, x := range r.NotScanned {
		if x.Unreadable {
			n++
		}
	}
	return n
}

func newScanCmd() *cobra.Command {
	var of *outputFlags
	var sopts scanOptions
	var allowUnscanned bool
	var sp *scanPolicy
	cmd := &cobra.Command{
		Use:   "scan [PATH|-]...",
		Short: "Scan files, directories or standard input for PII, secrets and confidentiality markers",
		Long: `Scan walks files and directories (skipping .git and binary files) and reports what the
built-in detectors find: PII, secrets and confidentiality markers. "-" reads standard input.
Office documents (DOCX, XLSX, PPTX) are scanned with their sensitivity label.

Paths named on the command line are followed if they are symbolic links: a file is read, a
directory walked, a named pipe or a process substitution (<(cmd), /dev/fd/N) read as a stream.
Links found while walking are not followed unless --follow (loops are detected); FIFOs,
sockets and devices found while walking are never opened: they are listed as "not scanned"
with the reason and counted in the summary, without changing the exit status.

Documents are read as text: Office (DOCX, XLSX, PPTX), OpenDocument (ODT, ODS, ODP) and PDF.
Archives (zip, tar, tar.gz, gz) are opened and their members scanned as files named
ARCHIVE!MEMBER, nested up to 3 levels, within size and compression-ratio limits (zip bombs
are refused). Binary files have their printable strings (8 characters or more) scanned for
secrets only. A file that cannot be read (encrypted, corrupt, over a limit) is listed as
"not scanned" with the reason; under --fail-on or --destination it fails the run (exit 1)
unless --allow-unscanned.

A finding on a line holding "aishield:allow" (in any comment syntax) is suppressed and
counted. Paths matched by .aishieldignore (gitignore syntax) at the root of a directory
scanned, or by --ignore-file, are not read and are counted. --baseline-path FILE suppresses
the findings whose fingerprint (path, detector, keyed hash of the value) is in FILE, a
previous "scan --format json" report or a list of fingerprints; it needs AISHIELD_HASH_KEY,
the key the baseline was written with.

Exit status: 0 when nothing is found, 1 when something is, 2 on usage or input errors: an
input named on the command line that could not be read (missing, a device, a socket), an
unreadable directory, or an interruption (SIGINT, SIGTERM); the report is then marked
incomplete.
With --fail-on LEVEL, 1 only for findings at or above that policy level. With
--destination NAME, 0 when every file may be sent there as is, 1 when one must be
redacted or is blocked (its content or its size), 2 on errors. Given together,
--destination and --fail-on both apply: the run fails if either does. --exit-code N
replaces the 1 of a failing run; errors stay 2. Without --policy the policy is
$AISHIELD_POLICY, else a .aishield.yaml found from the working directory up to the
repository root ("aishield policy which").

--format jsonl streams JSON Lines: a line per finding, a line per decision with
--destination, then a summary line. -o FILE writes the report to FILE, whole or not
at all.

--format sarif writes SARIF 2.1.0 for GitHub code scanning: no values, not even
masked previews; with AISHIELD_HASH_KEY set to a secret, each result carries the
finding's keyed hash as a stable partial fingerprint (without it, none).

--format html writes one self-contained page (no script, no external asset)
for a reviewer: counts by detector, category and level, the decision for
--destination, findings by file with masked previews (the first 1,000 of each
file), what was not scanned and what was suppressed.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return of.run(cmd, func(w io.Writer) error { return runScanCmd(cmd, args, of, sp, sopts, allowUnscanned, w) })
		},
	}
	of = addOutputFlags(cmd, "text", "text", "json", "jsonl", "sarif", "html")
	of.addExitCode(cmd, "the scan fails on its findings: anything found, or with --fail-on a finding at or above its level, or with --destination a file to redact or block")
	cmd.Flags().BoolVar(&sopts.follow, "follow", false, "follow symbolic links found while walking directories (links named on the command line are always followed)")
	cmd.Flags().BoolVar(&allowUnscanned, "allow-unscanned", false, "do not fail --fail-on or --destination runs because a file could not be scanned (it is still listed)")
	cmd.Flags().StringVar(&sopts.ignoreFile, "ignore-file", "", "file of paths not to read, gitignore syntax, applied with the "+ignoreFileName+" of each directory scanned")
	cmd.Flags().StringVar(&sopts.baselinePath, "baseline-path", "", "suppress the findings whose fingerprint is in this file (a previous scan --format json report, or fingerprints one a line); needs "+hashKeyEnv)
	sp = addScanPolicyFlags(cmd)
	bindEnv(cmd)
	cmd.AddCommand(newScanGitCmd())
	return cmd
}

// runScanCmd runs "aishield scan" with its report written to w.
func runScanCmd(cmd *cobra.Command, args []string, of *outputFlags, sp *scanPolicy, sopts scanOptions, allowUnscanned bool, w io.Writer) error {
	format := of.format
	if len(args) == 0 {
		return withCode(2, errors.New("scan: give at least one PATH, or - for standard input"))
	}
	sc, err := sp.prepare(cmd, format, &sopts)
	if err != nil {
		return err
	}
	sopts.endColumns = format == "sarif"
	if rf, ok := w.(*reportFile); ok {
		if st, err := rf.Stat(); err == nil {
			sopts.exclude = append(sopts.exclude, st) // the report is not scanned
		}
	}
	out := bufio.NewWriterSize(w, 64<<10)
	var sink scanSink // findings are written as they come, except in SARIF
	switch format {
	case "json":
		sink = &jsonSink{w: out, keyed: sp.keyed}
	case "jsonl":
		sink = &jsonlSink{w: out, keyed: sp.keyed}
	case "text":
		sink = &textSink{w: out}
	case "html":
		sink = newHTMLSink(out, sp)
	}
	rep := runScan(cmd.Context(), sc, args, sopts, cmd.InOrStdin(), cmd.ErrOrStderr(), sp, sink)
	err = rep.WriteErr
	switch {
	case err != nil:
	case len(rep.Files) == 0 && len(rep.NotScanned) == 0 && (rep.Errors > 0 || rep.Interrupted):
		// Nothing was read: no report, the summary is an error.
		fmt.Fprintln(cmd.ErrOrStderr(), "aishield:", scanSummary(rep, 0, 0))
	case format == "sarif":
		err = sp.writeSARIF(out, rep, allowUnscanned)
	case format == "text":
		if err = sink.finish(rep); err == nil {
			err = sp.writeDecisions(out, rep)
		}
	default:
		err = sink.finish(rep)
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
	return sp.exit(rep, of, allowUnscanned, "file(s) could not be scanned")
}

// prepare resolves and loads the scan's policy, builds its scanner for
// format and loads --baseline-path into sopts; its errors carry exit 2.
func (sp *scanPolicy) prepare(cmd *cobra.Command, format string, sopts *scanOptions) (*classifiers.Scanner, error) {
	if err := sp.resolve(cmd); err != nil {
		return nil, withCode(2, err)
	}
	if err := sp.setup(cmd.Context()); err != nil {
		return nil, withCode(2, err)
	}
	sc, err := sp.scanner(format)
	if err != nil {
		return nil, withCode(2, err)
	}
	if sopts.baselinePath != "" {
		if !sp.keyed {
			return nil, withCode(2, fmt.Errorf("--baseline-path needs %s set to the secret key the baseline was written with: without it fingerprints change every run", hashKeyEnv))
		}
		if sopts.baseline, err = loadBaseline(sopts.baselinePath); err != nil {
			return nil, withCode(2, err)
		}
	}
	sopts.keyed = sp.keyed
	return sc, nil
}

// exit is the status of a scan whose report was written: 2 when an input
// could not be read, --exit-code when it fails on its findings, or when
// inputs could not be scanned (unscanned says what) in a gated run without
// --allow-unscanned.
func (sp *scanPolicy) exit(rep *scanReport, of *outputFlags, allowUnscanned bool, unscanned string) error {
	if rep.Errors > 0 {
		return withCode(2, nil)
	}
	if sp.fails(rep) {
		return of.fail(nil)
	}
	if n := rep.unreadable(); n > 0 && sp.gates() && !allowUnscanned {
		return of.fail(fmt.Errorf("%d %s (listed as not scanned): the run fails under --fail-on and --destination; --allow-unscanned lets them pass", n, unscanned))
	}
	return nil
}

// scanOptions are the options of runScan.
type scanOptions struct {
	inputOptions
	// baselinePath is --baseline-path; baseline its fingerprints.
	baselinePath string
	baseline     baseline
	// keyed says finding hashes are keyed by AISHIELD_HASH_KEY.
	keyed bool
	// endColumns asks for the end column of each finding (SARIF regions).
	endColumns bool
}

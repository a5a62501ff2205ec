package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/inputfile"
	"github.com/aishield/aishield/policies"
	"github.com/mattn/go-isatty"
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
}

// fileResult is the scan of one file; later commands (policy decisions,
// SARIF output) reuse it. Findings keeps the full classifiers.Finding.
type fileResult struct {
	Path     string
	Kind     string
	Skipped  bool
	Note     string
	Findings []classifiers.Finding

	// Decision is the policy decision for --destination (scanpolicy.go).
	Decision *policies.Decision
	// text is the scanned text, held only until runScan's onFile returns;
	// streamed says the file was too large to hold.
	text     string
	streamed bool
}

// scanReport is the whole run.
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

func (r *scanReport) findings() int {
	n := 0
	for _, f := range r.Files {
		n += len(f.Findings)
	}
	return n
}

func newScanCmd() *cobra.Command {
	var format string
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
redacted or is blocked (its content or its size), 2 on errors.

--format sarif writes SARIF 2.1.0 for GitHub code scanning: no values, not even
masked previews; with AISHIELD_HASH_KEY set to a secret, each result carries the
finding's keyed hash as a stable partial fingerprint (without it, none).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" && format != "sarif" {
				return withCode(2, fmt.Errorf("unknown --format %q (text, json or sarif)", format))
			}
			if len(args) == 0 {
				return withCode(2, errors.New("scan: give at least one PATH, or - for standard input"))
			}
			if err := sp.setup(cmd.Context()); err != nil {
				return withCode(2, err)
			}
			sc, err := sp.scanner(format)
			if err != nil {
				return withCode(2, err)
			}
			if sopts.baselinePath != "" {
				if !sp.keyed {
					return withCode(2, fmt.Errorf("--baseline-path needs %s set to the secret key the baseline was written with: without it fingerprints change every run", hashKeyEnv))
				}
				if sopts.baseline, err = loadBaseline(sopts.baselinePath); err != nil {
					return withCode(2, err)
				}
			}
			sopts.keyed = sp.keyed
			rep := runScan(cmd.Context(), sc, args, sopts, cmd.InOrStdin(), cmd.ErrOrStderr(), sp.onFile)
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				err = writeScanJSON(out, rep)
			case "sarif":
				err = sp.writeSARIF(out, rep, allowUnscanned)
			default:
				if err = writeScanText(out, rep); err == nil {
					err = sp.writeDecisions(out, rep)
				}
			}
			if err != nil {
				return withCode(2, err)
			}
			if rep.Interrupted {
				return withCode(2, errors.New("scan interrupted: the report above is incomplete"))
			}
			if rep.Errors > 0 {
				return withCode(2, nil)
			}
			if code := sp.exitCode(rep); code != 0 {
				return withCode(code, nil)
			}
			if n := rep.unreadable(); n > 0 && sp.gates() && !allowUnscanned {
				return withCode(1, fmt.Errorf("%d file(s) could not be scanned (listed as not scanned): the run fails under --fail-on and --destination; --allow-unscanned lets them pass", n))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json or sarif")
	cmd.Flags().BoolVar(&sopts.follow, "follow", false, "follow symbolic links found while walking directories (links named on the command line are always followed)")
	cmd.Flags().BoolVar(&allowUnscanned, "allow-unscanned", false, "do not fail --fail-on or --destination runs because a file could not be scanned (it is still listed)")
	cmd.Flags().StringVar(&sopts.ignoreFile, "ignore-file", "", "file of paths not to read, gitignore syntax, applied with the "+ignoreFileName+" of each directory scanned")
	cmd.Flags().StringVar(&sopts.baselinePath, "baseline-path", "", "suppress the findings whose fingerprint is in this file (a previous scan --format json report, or fingerprints one a line); needs "+hashKeyEnv)
	sp = addScanPolicyFlags(cmd)
	return cmd
}

// scanOptions are the options of runScan.
type scanOptions struct {
	inputOptions
	// baselinePath is --baseline-path; baseline its fingerprints.
	baselinePath string
	baseline     baseline
	// keyed says finding hashes are keyed by AISHIELD_HASH_KEY.
	keyed bool
}

// runScan collects the inputs of args (scanInputs), scans them in order
// and reports unreadable inputs on errOut. An archive gives a result per
// member. Findings on an aishield:allow line, and those whose
// fingerprint is in the baseline, are dropped and counted. onFile, when
// not nil, sees each result while its text is still held. When ctx is
// done the scan stops and rep.Interrupted is set.
func runScan(ctx context.Context, sc *classifiers.Scanner, args []string, opts scanOptions, stdin io.Reader, errOut io.Writer, onFile func(context.Context, *fileResult) error) *scanReport {
	inputs, skipped, ignored, errs := scanInputs(args, opts.inputOptions, errOut)
	rep := &scanReport{NotScanned: skipped, Ignored: ignored, Errors: errs, Keyed: opts.keyed}
	progress := len(inputs) > progressThreshold && isTerminal(errOut)
	for i, in := range inputs {
		if ctx.Err() != nil {
			break
		}
		if progress && i%50 == 0 {
			fmt.Fprintf(errOut, "\rscanning %d/%d files", i, len(inputs))
		}
		results, err := scanOne(ctx, sc, in, stdin)
		var nr *errNotRegular
		if errors.As(err, &nr) && in.walked {
			rep.NotScanned = append(rep.NotScanned, notScanned{Path: in.path, Reason: nr.kind})
			continue
		}
		for _, res := range results {
			if err != nil || ctx.Err() != nil {
				break
			}
			if res.Skipped {
				rep.NotScanned = append(rep.NotScanned, notScanned{Path: res.Path, Reason: res.Note, Unreadable: true})
				continue
			}
			var n int
			if !res.streamed {
				res.Findings, n = suppressInline(res.text, res.Findings)
				rep.Inline += n
			}
			if opts.baseline != nil {
				kept := res.Findings[:0]
				for _, x := range res.Findings {
					if opts.baseline[findingFingerprint(res.Path, x)] {
						rep.Baselined++
						continue
					}
					kept = append(kept, x)
				}
				res.Findings = kept
			}
			if onFile != nil {
				err = onFile(ctx, res)
			}
			res.text = ""
			if err == nil {
				rep.Files = append(rep.Files, *res)
			}
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			fmt.Fprintf(errOut, "aishield: %s: %v\n", in.path, err)
			rep.Errors++
			continue
		}
	}
	if progress {
		fmt.Fprintf(errOut, "\rscanned %d files%20s\n", len(inputs), "")
	}
	rep.Interrupted = ctx.Err() != nil
	return rep
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// scanOne scans one input: a file, or a stream ("-" is standard input)
// read as it comes, whole up to maxWholeFile and streamed beyond. Reads
// waiting on a pipe or a terminal end when ctx is done.
func scanOne(ctx context.Context, sc *classifiers.Scanner, in scanInput, stdin io.Reader) ([]*fileResult, error) {
	name := in.path
	var r io.Reader
	switch {
	case in.path == "-":
		cr, stop := contextReader(ctx, stdin)
		defer stop()
		r = cr
	case in.stream:
		f, err := inputfile.Open(ctx, in.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	default:
		f, st, err := openScanFile(in.path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if st.Size() > maxWholeFile {
			return one(scanLarge(ctx, sc, name, f))
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxWholeFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWholeFile { // a stream can be of any size
		return one(scanLarge(ctx, sc, name, io.MultiReader(bytes.NewReader(data), r)))
	}
	base := filepath.Base(name)
	doc, err := sc.ScanDocument(ctx, base, data)
	if err != nil {
		return nil, err
	}
	if doc.Members == nil {
		return []*fileResult{{Path: name, Kind: doc.Kind, Skipped: doc.Skipped, Note: doc.Note, Findings: doc.Findings, text: doc.Text}}, nil
	}
	// An archive: a result per member, named PATH!MEMBER.
	out := make([]*fileResult, 0, len(doc.Members))
	for _, m := range doc.Members {
		out = append(out, &fileResult{Path: name + strings.TrimPrefix(m.Name, base), Kind: m.Kind, Skipped: m.Skipped, Note: m.Note, Findings: m.Findings, text: m.Text})
	}
	return out, nil
}

func one(res *fileResult, err error) ([]*fileResult, error) {
	if err != nil {
		return nil, err
	}
	return []*fileResult{res}, nil
}

// scanLarge streams a big input as text unless its start looks binary.
func scanLarge(ctx context.Context, sc *classifiers.Scanner, name string, r io.Reader) (*fileResult, error) {
	head := make([]byte, 8<<10)
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, err
	}
	head = head[:n]
	doc, err := sc.ScanDocument(ctx, name, head)
	if err != nil {
		return nil, err
	}
	if doc.Skipped || doc.Kind != "text" {
		return &fileResult{Path: name, Kind: doc.Kind, Skipped: true, Note: fmt.Sprintf("%s file larger than %d MiB: only text is read at this size", doc.Kind, maxWholeFile>>20)}, nil
	}
	fs, err := sc.ScanReader(ctx, io.MultiReader(bytes.NewReader(head), r))
	if err != nil {
		return nil, err
	}
	return &fileResult{Path: name, Kind: "text", Findings: fs, streamed: true}, nil
}

func writeScanText(w io.Writer, rep *scanReport) error {
	for _, f := range rep.Files {
		for _, x := range f.Findings {
			if _, err := fmt.Fprintf(w, "%s:%d:%d: %s %s (confidence %.2f)\n", f.Path, x.Line, x.Column, x.Detector, x.Preview, x.Confidence); err != nil {
				return err
			}
		}
	}
	n := rep.findings()
	withFindings := 0
	for _, f := range rep.Files {
		if len(f.Findings) > 0 {
			withFindings++
		}
	}
	for _, x := range rep.NotScanned {
		if _, err := fmt.Fprintf(w, "%s: not scanned: %s\n", x.Path, x.Reason); err != nil {
			return err
		}
	}
	summary := fmt.Sprintf("%d findings in %d of %d files", n, withFindings, len(rep.Files))
	if n == 0 {
		summary = fmt.Sprintf("no findings in %d files", len(rep.Files))
	}
	if u := rep.unreadable(); u > 0 {
		summary += fmt.Sprintf(" (%d not scanned: unreadable, listed above)", u)
	}
	if o := len(rep.NotScanned) - rep.unreadable(); o > 0 {
		summary += fmt.Sprintf(" (%d not scanned: not regular files, listed above)", o)
	}
	if rep.Inline+rep.Baselined > 0 {
		summary += fmt.Sprintf(" (%d suppressed: %d by %s, %d by the baseline)", rep.Inline+rep.Baselined, rep.Inline, allowMarker, rep.Baselined)
	}
	if rep.Ignored > 0 {
		summary += fmt.Sprintf(" (%d ignored: %s, --ignore-file)", rep.Ignored, ignoreFileName)
	}
	switch {
	case rep.Interrupted:
		summary = "incomplete, interrupted: " + summary
	case rep.Errors > 0:
		summary = fmt.Sprintf("incomplete, %d input(s) could not be read: %s", rep.Errors, summary)
	}
	_, err := fmt.Fprintln(w, summary)
	return err
}

// jsonFile is the JSON shape of one file.
type jsonFile struct {
	Path     string        `json:"path"`
	Kind     string        `json:"kind"`
	Skipped  bool          `json:"skipped,omitempty"`
	Note     string        `json:"note,omitempty"`
	Findings []scanFinding `json:"findings"`
	// Decision is set with --destination.
	Decision *policies.Decision `json:"decision,omitempty"`
}

// jsonSuppressed counts what the JSON report leaves out on purpose.
type jsonSuppressed struct {
	Inline   int `json:"inline"`
	Baseline int `json:"baseline"`
}

func writeScanJSON(w io.Writer, rep *scanReport) error {
	out := struct {
		Files      []jsonFile      `json:"files"`
		NotScanned []notScanned    `json:"not_scanned,omitempty"`
		Suppressed *jsonSuppressed `json:"suppressed,omitempty"`
		Ignored    int             `json:"ignored,omitempty"`
		Errors     int             `json:"errors,omitempty"`
		Incomplete bool            `json:"incomplete,omitempty"`
	}{Files: []jsonFile{}, NotScanned: rep.NotScanned, Ignored: rep.Ignored, Errors: rep.Errors, Incomplete: rep.Errors > 0 || rep.Interrupted}
	if rep.Inline+rep.Baselined > 0 {
		out.Suppressed = &jsonSuppressed{Inline: rep.Inline, Baseline: rep.Baselined}
	}
	for _, f := range rep.Files {
		jf := jsonFile{Path: f.Path, Kind: f.Kind, Skipped: f.Skipped, Note: f.Note, Findings: []scanFinding{}, Decision: f.Decision}
		for _, x := range f.Findings {
			sf := scanFinding{Detector: x.Detector, Category: x.Category, Start: x.Start, End: x.End,
				Line: x.Line, EndLine: x.EndLine, Column: x.Column, Confidence: x.Confidence, Preview: x.Preview, Encoding: x.Encoding}
			if rep.Keyed {
				sf.Fingerprint = findingFingerprint(f.Path, x)
			}
			jf.Findings = append(jf.Findings, sf)
		}
		out.Files = append(out.Files, jf)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

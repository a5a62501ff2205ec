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
	// sockets, devices, links not followed); not errors.
	NotScanned []notScanned
	// Errors counts inputs named on the command line, or directories, that
	// could not be read: the report is incomplete, exit 2.
	Errors int
	// Interrupted is set when the scan stopped on SIGINT or SIGTERM.
	Interrupted bool
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
	var follow bool
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
			rep := runScan(cmd.Context(), sc, args, follow, cmd.InOrStdin(), cmd.ErrOrStderr(), sp.onFile)
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				err = writeScanJSON(out, rep)
			case "sarif":
				err = sp.writeSARIF(out, rep)
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
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json or sarif")
	cmd.Flags().BoolVar(&follow, "follow", false, "follow symbolic links found while walking directories (links named on the command line are always followed)")
	sp = addScanPolicyFlags(cmd)
	return cmd
}

// runScan collects the inputs of args (scanInputs), scans them in order
// and reports unreadable inputs on errOut. onFile, when not nil, sees each
// result while its text is still held. When ctx is done the scan stops
// and rep.Interrupted is set.
func runScan(ctx context.Context, sc *classifiers.Scanner, args []string, follow bool, stdin io.Reader, errOut io.Writer, onFile func(context.Context, *fileResult) error) *scanReport {
	inputs, skipped, errs := scanInputs(args, follow, errOut)
	rep := &scanReport{NotScanned: skipped, Errors: errs}
	progress := len(inputs) > progressThreshold && isTerminal(errOut)
	for i, in := range inputs {
		if ctx.Err() != nil {
			break
		}
		if progress && i%50 == 0 {
			fmt.Fprintf(errOut, "\rscanning %d/%d files", i, len(inputs))
		}
		res, err := scanOne(ctx, sc, in, stdin)
		var nr *errNotRegular
		if errors.As(err, &nr) && in.walked {
			rep.NotScanned = append(rep.NotScanned, notScanned{Path: in.path, Reason: nr.kind})
			continue
		}
		if err == nil && onFile != nil {
			err = onFile(ctx, res)
		}
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			fmt.Fprintf(errOut, "aishield: %s: %v\n", in.path, err)
			rep.Errors++
			continue
		}
		res.text = ""
		rep.Files = append(rep.Files, *res)
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
func scanOne(ctx context.Context, sc *classifiers.Scanner, in scanInput, stdin io.Reader) (*fileResult, error) {
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
			return scanLarge(ctx, sc, name, f)
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxWholeFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWholeFile { // a stream can be of any size
		return scanLarge(ctx, sc, name, io.MultiReader(bytes.NewReader(data), r))
	}
	doc, err := sc.ScanDocument(ctx, filepath.Base(name), data)
	if err != nil {
		return nil, err
	}
	return &fileResult{Path: name, Kind: doc.Kind, Skipped: doc.Skipped, Note: doc.Note, Findings: doc.Findings, text: doc.Text}, nil
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
		return &fileResult{Path: name, Kind: "binary", Skipped: true, Note: "large binary or archive file"}, nil
	}
	fs, err := sc.ScanReader(ctx, io.MultiReader(bytes.NewReader(head), r))
	if err != nil {
		return nil, err
	}
	return &fileResult{Path: name, Kind: "text", Findings: fs, streamed: true}, nil
}

func writeScanText(w io.Writer, rep *scanReport) error {
	skipped := 0
	for _, f := range rep.Files {
		if f.Skipped {
			skipped++
			continue
		}
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
	if skipped > 0 {
		summary += fmt.Sprintf(" (%d skipped: binary)", skipped)
	}
	if len(rep.NotScanned) > 0 {
		summary += fmt.Sprintf(" (%d not scanned: not regular files, listed above)", len(rep.NotScanned))
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

func writeScanJSON(w io.Writer, rep *scanReport) error {
	out := struct {
		Files      []jsonFile   `json:"files"`
		NotScanned []notScanned `json:"not_scanned,omitempty"`
		Errors     int          `json:"errors,omitempty"`
		Incomplete bool         `json:"incomplete,omitempty"`
	}{Files: []jsonFile{}, NotScanned: rep.NotScanned, Errors: rep.Errors, Incomplete: rep.Errors > 0 || rep.Interrupted}
	for _, f := range rep.Files {
		jf := jsonFile{Path: f.Path, Kind: f.Kind, Skipped: f.Skipped, Note: f.Note, Findings: []scanFinding{}, Decision: f.Decision}
		for _, x := range f.Findings {
			jf.Findings = append(jf.Findings, scanFinding{Detector: x.Detector, Category: x.Category, Start: x.Start, End: x.End,
				Line: x.Line, EndLine: x.EndLine, Column: x.Column, Confidence: x.Confidence, Preview: x.Preview, Encoding: x.Encoding})
		}
		out.Files = append(out.Files, jf)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

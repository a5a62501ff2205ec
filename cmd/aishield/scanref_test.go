package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/inputfile"
	"github.com/aishield/aishield/policies"
)

// The one-file-after-the-other scan the pool must match, output for
// output: the serial loop, its readers and its whole-report writers.

// refRunScan collects the inputs of args (scanInputs), scans them in order
// and reports unreadable inputs on errOut. An archive gives a result per
// member. Findings on an aishield:allow line, and those whose
// fingerprint is in the baseline, are dropped and counted. onFile, when
// not nil, sees each result while its text is still held. When ctx is
// done the scan stops and rep.Interrupted is set.
func refRunScan(ctx context.Context, sc *classifiers.Scanner, args []string, opts scanOptions, stdin io.Reader, errOut io.Writer, onFile func(context.Context, *fileResult) error) *scanReport {
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
		results, err := refScanOne(ctx, sc, in, stdin)
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
			if opts.endColumns {
				res.endCols = refEndColumns(res.text, res.Findings)
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

// refEndColumns is endColumns one finding at a time: the code points
// from the start of the line holding a finding's end to its end, plus one.
func refEndColumns(text string, fs []classifiers.Finding) []int {
	var out []int
	for _, f := range fs {
		end := min(max(f.End, 0), len(text))
		start := strings.LastIndexByte(text[:end], '\n') + 1
		out = append(out, utf8.RuneCountInString(text[start:end])+1)
	}
	return out
}

// refScanOne scans one input: a file, or a stream ("-" is standard input)
// read as it comes, whole up to maxWholeFile and streamed beyond. Reads
// waiting on a pipe or a terminal end when ctx is done.
func refScanOne(ctx context.Context, sc *classifiers.Scanner, in scanInput, stdin io.Reader) ([]*fileResult, error) {
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
			return refOne(refScanLarge(ctx, sc, name, f))
		}
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxWholeFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWholeFile { // a stream can be of any size
		return refOne(refScanLarge(ctx, sc, name, io.MultiReader(bytes.NewReader(data), r)))
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

func refOne(res *fileResult, err error) ([]*fileResult, error) {
	if err != nil {
		return nil, err
	}
	return []*fileResult{res}, nil
}

// refScanLarge streams a big input as text unless its start looks binary.
func refScanLarge(ctx context.Context, sc *classifiers.Scanner, name string, r io.Reader) (*fileResult, error) {
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

// onFile decides a scanned file for the destination while its text is at
// hand, as the guard decides a request holding it. A file too large to
// hold (streamed) is blocked as over capacity without being counted.
func (sp *scanPolicy) refOnFile(ctx context.Context, res *fileResult) error {
	if sp.destination == nil || res.Skipped {
		return nil
	}
	limit := sp.destination.MaxInputTokens
	if limit > 0 && res.streamed {
		d := sp.policy.Decide(sp.destination, nil, limit+1)
		d.Reasons[0].Message = fmt.Sprintf("file larger than %d MiB, too large to count: treated as over the capacity of destination %s (max_input_tokens %d)",
			maxWholeFile>>20, sp.destination.Name, limit)
		res.Decision = &d
		return nil
	}
	in := policies.Input{Texts: []string{res.text}, Findings: [][]classifiers.Finding{res.Findings}}
	if res.streamed {
		in.Tokens = 1 // no limit to count against
	}
	ev, err := sp.eval.Evaluate(ctx, sp.destination, in)
	if err != nil {
		return err
	}
	res.Decision = &ev.Decision
	return nil
}

func refWriteText(w io.Writer, rep *scanReport) error {
	for _, f := range rep.Files {
		for _, x := range f.Findings {
			if _, err := fmt.Fprintf(w, "%s:%d:%d: %s %s (confidence %.2f)\n", f.Path, x.Line, x.Column, x.Detector, x.Preview, x.Confidence); err != nil {
				return err
			}
		}
	}
	n := refFindings(rep)
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
	_, err := fmt.Fprintln(w, scanSummary(rep, n, withFindings))
	return err
}

func refWriteJSON(w io.Writer, rep *scanReport) error {
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

func refFindings(rep *scanReport) int {
	n := 0
	for _, f := range rep.Files {
		n += len(f.Findings)
	}
	return n
}

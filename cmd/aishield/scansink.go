package main

import (
	"bufio"
	"encoding/json"
	"fmt"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// textSink writes the text report: a line per finding as files are
// scanned, then what was not scanned, the summary line (finish), and the
// decisions (scanPolicy.writeDecisions).
type textSink struct {
	w   *bufio.Writer
	buf []byte
}

func (t *textSink) beginFile(*fileResult) error { return nil }
func (t *textSink) endFile(*fileResult) error   { return nil }

func (t *textSink) findings(res *fileResult, fs []classifiers.Finding) error {
	for i := range fs {
		t.buf = appendTextFinding(t.buf[:0], res.Path, &fs[i])
		if _, err := t.w.Write(t.buf); err != nil {
			return err
		}
	}
	return nil
}

func (t *textSink) finish(rep *scanReport) error {
	for _, x := range rep.NotScanned {
		if _, err := fmt.Fprintf(t.w, "%s: not scanned: %s\n", x.Path, x.Reason); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(t.w, scanSummary(rep, rep.Found, rep.WithFindings))
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

// jsonSink writes the JSON report as the scan goes, byte for byte the
// document encoding/json writes (two-space indent) for
//
//	{files: [jsonFile...], not_scanned, suppressed, ignored, errors, incomplete}
//
// (the last five omitted when empty), one finding at a time: the fields of
// a file come in that order, its decision after its findings.
type jsonSink struct {
	w     *bufio.Writer
	keyed bool // fingerprints are written
	files int  // files begun
	found int  // findings of the current file
	err   error
	buf   []byte
}

// Indents of the document's levels: a file, its fields, its findings.
const (
	jsonFileIndent    = "    "
	jsonFieldIndent   = "      "
	jsonFindingIndent = "        "
)

func (j *jsonSink) str(s string) { j.w.WriteString(s) }

// value writes v as encoding/json indents it at prefix.
func (j *jsonSink) value(v any, prefix string) {
	b, err := json.MarshalIndent(v, prefix, "  ")
	if err != nil && j.err == nil {
		j.err = err
	}
	j.w.Write(b)
}

// field writes a field of a file.
func (j *jsonSink) field(name string, v any) {
	j.str(",\n" + jsonFieldIndent + `"` + name + `": `)
	j.value(v, jsonFieldIndent)
}

// flushErr is the first error of encoding or writing (a bufio.Writer
// returns its first write error from every later write).
func (j *jsonSink) flushErr() error {
	if j.err != nil {
		return j.err
	}
	_, err := j.w.Write(nil)
	return err
}

func (j *jsonSink) beginFile(res *fileResult) error {
	if j.files == 0 {
		j.str("{\n  \"files\": [\n" + jsonFileIndent + "{\n" + jsonFieldIndent + `"path": `)
	} else {
		j.str(",\n" + jsonFileIndent + "{\n" + jsonFieldIndent + `"path": `)
	}
	j.files++
	j.found = 0
	// The fields are strings and a boolean, which appendJSONString writes
	// as encoding/json does, without its reflection: a tree of small files
	// begins thousands of them.
	b := appendJSONString(j.buf[:0], res.Path)
	b = append(b, ",\n"+jsonFieldIndent+`"kind": `...)
	b = appendJSONString(b, res.Kind)
	if res.Skipped {
		b = append(b, ",\n"+jsonFieldIndent+`"skipped": true`...)
	}
	if res.Note != "" {
		b = append(b, ",\n"+jsonFieldIndent+`"note": `...)
		b = appendJSONString(b, res.Note)
	}
	b = append(b, ",\n"+jsonFieldIndent+`"findings": [`...)
	j.w.Write(b)
	j.buf = b
	return j.flushErr()
}

// newScanFinding is finding x of res as the JSON reports print it; keyed
// adds its fingerprint.
func newScanFinding(res *fileResult, x classifiers.Finding, keyed bool) scanFinding {
	sf := scanFinding{Detector: x.Detector, Category: x.Category, Start: x.Start, End: x.End,
		Line: x.Line, EndLine: x.EndLine, Column: x.Column, Confidence: x.Confidence, Preview: x.Preview, Encoding: x.Encoding}
	if keyed {
		sf.Fingerprint = findingFingerprint(res.Path, x)
	}
	if g := res.Git; g != nil {
		sf.Commit, sf.Author, sf.Email, sf.Date = g.Commit, g.Author, g.Email, g.Date
	}
	return sf
}

func (j *jsonSink) findings(res *fileResult, fs []classifiers.Finding) error {
	for _, x := range fs {
		sf := newScanFinding(res, x, j.keyed)
		b := j.buf[:0]
		if j.found > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n"+jsonFindingIndent...)
		b, ok := appendFindingIndent(b, &sf, jsonFindingIndent)
		j.w.Write(b)
		j.buf = b
		if !ok {
			j.value(sf, jsonFindingIndent) // the error encoding/json gives
		}
		j.found++
	}
	return j.flushErr()
}

func (j *jsonSink) endFile(res *fileResult) error {
	if j.found > 0 {
		j.str("\n" + jsonFieldIndent)
	}
	j.str("]")
	if res.Decision != nil {
		j.field("decision", res.Decision)
	}
	j.str("\n" + jsonFileIndent + "}")
	return j.flushErr()
}

func (j *jsonSink) finish(rep *scanReport) error {
	if j.files == 0 {
		j.str("{\n  \"files\": []")
	} else {
		j.str("\n  ]")
	}
	top := func(name string, v any) {
		j.str(",\n  \"" + name + `": `)
		j.value(v, "  ")
	}
	if len(rep.NotScanned) > 0 {
		top("not_scanned", rep.NotScanned)
	}
	if rep.Inline+rep.Baselined > 0 {
		top("suppressed", &jsonSuppressed{Inline: rep.Inline, Baseline: rep.Baselined})
	}
	if rep.Ignored != 0 {
		top("ignored", rep.Ignored)
	}
	if rep.Errors != 0 {
		top("errors", rep.Errors)
	}
	if rep.Errors > 0 || rep.Interrupted {
		top("incomplete", true)
	}
	j.str("\n}\n")
	return j.flushErr()
}

// scanSummary is the last line of a text report: n findings in
// withFindings files, what was not scanned, suppressed or ignored, and
// whether the scan is incomplete.
func scanSummary(rep *scanReport, n, withFindings int) string {
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
	return summaryEnd(rep, summary, "input(s) could not be read")
}

// summaryEnd completes a summary line: what was suppressed and ignored,
// and, first, whether the scan is incomplete (errors says what the
// report's Errors counted).
func summaryEnd(rep *scanReport, summary, errors string) string {
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
		summary = fmt.Sprintf("incomplete, %d %s: %s", rep.Errors, errors, summary)
	}
	return summary
}

package main

import (
	"bufio"
	"encoding/json"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// jsonlSink writes the JSON Lines report (--format jsonl) as the scan
// goes: one object a line, each with its "type": a "finding" per finding
// (its file's path and the fields of a JSON report's finding), a
// "decision" per file with --destination, then one "summary".
type jsonlSink struct {
	w     *bufio.Writer
	keyed bool // fingerprints are written
	enc   *json.Encoder
	buf   []byte
}

// jsonlFinding is a finding line.
type jsonlFinding struct {
	Type string `json:"type"`
	Path string `json:"path"`
	scanFinding
}

// jsonlDecision is a decision line.
type jsonlDecision struct {
	Type     string             `json:"type"`
	Path     string             `json:"path"`
	Decision *policies.Decision `json:"decision"`
}

// jsonlSummary is the last line.
type jsonlSummary struct {
	Type         string          `json:"type"`
	Files        int             `json:"files"`
	Findings     int             `json:"findings"`
	WithFindings int             `json:"files_with_findings"`
	NotScanned   []notScanned    `json:"not_scanned,omitempty"`
	Suppressed   *jsonSuppressed `json:"suppressed,omitempty"`
	Ignored      int             `json:"ignored,omitempty"`
	Errors       int             `json:"errors,omitempty"`
	Incomplete   bool            `json:"incomplete,omitempty"`
}

func (j *jsonlSink) line(v any) error {
	if j.enc == nil {
		j.enc = json.NewEncoder(j.w)
	}
	return j.enc.Encode(v)
}

func (j *jsonlSink) beginFile(*fileResult) error { return nil }

func (j *jsonlSink) findings(res *fileResult, fs []classifiers.Finding) error {
	for _, x := range fs {
		sf := newScanFinding(res, x, j.keyed)
		b, ok := appendJSONLFinding(j.buf[:0], res.Path, &sf)
		j.buf = b
		if !ok { // the error encoding/json gives
			return j.line(&jsonlFinding{Type: "finding", Path: res.Path, scanFinding: sf})
		}
		if _, err := j.w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (j *jsonlSink) endFile(res *fileResult) error {
	if res.Decision == nil {
		return nil
	}
	return j.line(&jsonlDecision{Type: "decision", Path: res.Path, Decision: res.Decision})
}

func (j *jsonlSink) finish(rep *scanReport) error {
	s := jsonlSummary{Type: "summary", Files: len(rep.Files), Findings: rep.Found, WithFindings: rep.WithFindings,
		NotScanned: rep.NotScanned, Ignored: rep.Ignored, Errors: rep.Errors, Incomplete: rep.Errors > 0 || rep.Interrupted}
	if rep.Inline+rep.Baselined > 0 {
		s.Suppressed = &jsonSuppressed{Inline: rep.Inline, Baseline: rep.Baselined}
	}
	if err := j.line(&s); err != nil {
		return err
	}
	_, err := j.w.Write(nil)
	return err
}

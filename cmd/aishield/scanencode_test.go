package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/aishield/aishield/classifiers"
)

// checkFindingEncoding compares the report's encoders of sf (in the file
// at path) with encoding/json and fmt.
func checkFindingEncoding(t *testing.T, path string, sf scanFinding) {
	t.Helper()
	want, err := json.MarshalIndent(sf, jsonFindingIndent, "  ")
	got, ok := appendFindingIndent([]byte("x"), &sf, jsonFindingIndent)
	switch {
	case err != nil && ok:
		t.Fatalf("encoding/json fails (%v) and appendFindingIndent wrote %q", err, got)
	case err == nil && !ok:
		t.Fatalf("appendFindingIndent refused what encoding/json writes as %s", want)
	case ok && string(got) != "x"+string(want):
		t.Fatalf("appendFindingIndent\n got %s\nwant x%s", got, want)
	}

	var line bytes.Buffer
	err = json.NewEncoder(&line).Encode(&jsonlFinding{Type: "finding", Path: path, scanFinding: sf})
	got, ok = appendJSONLFinding(nil, path, &sf)
	switch {
	case err != nil && ok:
		t.Fatalf("encoding/json fails (%v) and appendJSONLFinding wrote %q", err, got)
	case err == nil && !ok:
		t.Fatalf("appendJSONLFinding refused what encoding/json writes as %s", line.Bytes())
	case ok && string(got) != line.String():
		t.Fatalf("appendJSONLFinding\n got %s\nwant %s", got, line.Bytes())
	}

	x := classifiers.Finding{Detector: sf.Detector, Line: sf.Line, Column: sf.Column, Preview: sf.Preview, Confidence: sf.Confidence}
	text := fmt.Sprintf("%s:%d:%d: %s %s (confidence %.2f)\n", path, x.Line, x.Column, x.Detector, x.Preview, x.Confidence)
	if got := appendTextFinding(nil, path, &x); string(got) != text {
		t.Fatalf("appendTextFinding\n got %q\nwant %q", got, text)
	}
}

func TestFindingEncoding(t *testing.T) {
	t.Parallel()
	base := scanFinding{Detector: "pii.email", Category: classifiers.CategoryPII, Start: 10, End: 27, Line: 2, EndLine: 2, Column: 4, Confidence: 0.9, Preview: "j***@example.com"}
	for _, tc := range []struct {
		name string
		path string
		edit func(*scanFinding)
	}{
		{"plain", "a.txt", func(*scanFinding) {}},
		{"html and quotes", `dir/<1>&"é".txt`, func(f *scanFinding) { f.Preview = `<a href="x">&amp;</a>\` }},
		{"controls", "tab\there", func(f *scanFinding) { f.Preview = "\x00\x01\b\f\n\r\t\x1f\x7f" }},
		{"invalid UTF-8", "bad\xffname", func(f *scanFinding) { f.Preview = "a\xc3(b\xed\xa0\x80c\xf0\x9f" }},
		{"line separators", "p", func(f *scanFinding) { f.Preview = "x\u2028y\u2029z\u2027" }},
		{"every optional field", "p", func(f *scanFinding) {
			f.Encoding, f.Fingerprint, f.Commit, f.Author, f.Email, f.Date = "base64", "fp:1", "abc123", "A <B>", "a@b.c", "2026-01-02"
		}},
		{"some optional fields", "p", func(f *scanFinding) { f.Commit, f.Date = "abc", "d" }},
		{"negative and zero numbers", "p", func(f *scanFinding) { f.Start, f.End, f.Line, f.Confidence = -1, 0, math.MinInt64, 0 }},
		{"negative zero", "p", func(f *scanFinding) { f.Confidence = math.Copysign(0, -1) }},
		{"one", "p", func(f *scanFinding) { f.Confidence = 1 }},
		{"small exponent", "p", func(f *scanFinding) { f.Confidence = 1e-7 }},
		{"large exponent", "p", func(f *scanFinding) { f.Confidence = 1e21 }},
		{"large exponent three digits", "p", func(f *scanFinding) { f.Confidence = -1.5e300 }},
		{"long fraction", "p", func(f *scanFinding) { f.Confidence = 0.1 + 0.2 }},
		{"rounds to two digits", "p", func(f *scanFinding) { f.Confidence = 0.125 }},
		{"not a number", "p", func(f *scanFinding) { f.Confidence = math.NaN() }},
		{"infinite", "p", func(f *scanFinding) { f.Confidence = math.Inf(-1) }},
		{"empty strings", "", func(f *scanFinding) { f.Detector, f.Category, f.Preview = "", "", "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sf := base
			tc.edit(&sf)
			checkFindingEncoding(t, tc.path, sf)
		})
	}
}

func FuzzFindingEncoding(f *testing.F) {
	f.Add("a.txt", "pii.email", "pii", "j***@x.com", "", "", "", 1, 2, 3, 0.9)
	f.Add("<&>", "d\u2028", "c\xff", "\x00\"\\", "base64", "fp", "abc", -5, 0, 1<<40, 1e-9)
	f.Add("p", "d", "c", "v", "", "", "", 0, 0, 0, math.Inf(1))
	f.Fuzz(func(t *testing.T, path, detector, category, preview, encoding, fingerprint, commit string, start, line, col int, conf float64) {
		sf := scanFinding{Detector: detector, Category: classifiers.Category(category), Start: start, End: start + len(preview),
			Line: line, EndLine: line + 1, Column: col, Confidence: conf, Preview: preview,
			Encoding: encoding, Fingerprint: fingerprint, Commit: commit, Author: preview, Email: detector, Date: category}
		checkFindingEncoding(t, path, sf)
	})
}

// checkJSONFile compares the JSON report of one file without findings,
// as jsonSink writes it, with encoding/json's (refWriteJSON).
func checkJSONFile(t *testing.T, res fileResult) {
	t.Helper()
	var got bytes.Buffer
	w := bufio.NewWriter(&got)
	j := &jsonSink{w: w}
	r := res
	if err := j.beginFile(&r); err != nil {
		t.Fatal(err)
	}
	if err := j.endFile(&r); err != nil {
		t.Fatal(err)
	}
	rep := &scanReport{Files: []fileResult{res}}
	if err := j.finish(rep); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	var want bytes.Buffer
	if err := refWriteJSON(&want, rep); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("jsonSink wrote\n%s\nwant\n%s", got.Bytes(), want.Bytes())
	}
}

func TestJSONFileEncoding(t *testing.T) {
	t.Parallel()
	for _, res := range []fileResult{
		{Path: "a.txt", Kind: "text"},
		{Path: "", Kind: ""},
		{Path: `dir/<1>&"é"\.txt`, Kind: "docx", Note: "encrypted <x> & \"y\""},
		{Path: "tab\there\x00\x1f\x7f", Kind: "pdf", Skipped: true, Note: "corrupt"},
		{Path: "bad\xffname\xc3(\xed\xa0\x80", Kind: "zip", Skipped: true},
		{Path: "x\u2028y\u2029z\u2027", Kind: "text", Note: "\xf0\x9f"},
	} {
		checkJSONFile(t, res)
	}
}

func FuzzJSONFileEncoding(f *testing.F) {
	f.Add("a.txt", "text", "", false)
	f.Add("<&>\u2028\xff", "pdf", "\x00\"\\", true)
	f.Fuzz(func(t *testing.T, path, kind, note string, skipped bool) {
		checkJSONFile(t, fileResult{Path: path, Kind: kind, Note: note, Skipped: skipped})
	})
}

// Package policytest runs policy test files, as opa test runs Rego tests:
// YAML files named *_test.yaml hold cases (an input or a document, the
// destination, and the expected action, level, detectors and capacity
// verdict), each evaluated exactly as the guard evaluates a request
// (policies.Evaluator: capacity first, then classification and the
// decision). Reports are plain values with JSON and pretty renderings and
// opa's exit codes (0 every case passed, 1 a file or case could not run, 2
// a case failed).
package policytest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// A policy test file is YAML:
//
//	policy: default            # a preset name, or a policy file relative to this file
//	cases:
//	  - name: e-mail to openai is redacted
//	    destination: openai    # a destination name; "default" when omitted
//	    input: "Write to jane.doe@acme-corp.com"   # or file: samples/x.docx
//	    tokens: 900000         # optional token count; counted when omitted
//	    quarantined: true      # optional: decide as while the destination is quarantined
//	    expect:
//	      action: redact       # allow, redact or block (required)
//	      level: confidential  # optional; "none" when nothing may be found
//	      detectors: [pii.email]   # optional; the exact set of detectors found
//	      over_capacity: false     # optional
//	      destination: local       # optional; the destination decided for (a quarantine's failover)

type rawTestFile struct {
	Policy string        `mapstructure:"policy"`
	Cases  []rawTestCase `mapstructure:"cases"`
}

type rawTestCase struct {
	Name        string    `mapstructure:"name"`
	Destination string    `mapstructure:"destination"`
	Input       *string   `mapstructure:"input"`
	File        string    `mapstructure:"file"`
	Tokens      *int      `mapstructure:"tokens"`
	Quarantined bool      `mapstructure:"quarantined"`
	Expect      rawExpect `mapstructure:"expect"`
}

type rawExpect struct {
	Action       string   `mapstructure:"action"`
	Level        *string  `mapstructure:"level"`
	Detectors    []string `mapstructure:"detectors"`
	OverCapacity *bool    `mapstructure:"over_capacity"`
	Destination  string   `mapstructure:"destination"`
}

// Options configures RunTests.
type Options struct {
	// HashKey keys the findings' hashes; nil uses a fixed key (test
	// reports carry no hashes).
	HashKey []byte
}

// Test statuses.
const (
	Pass  = "pass"
	Fail  = "fail"
	Error = "error"
)

// Result is the outcome of one test case (or of a test file that could
// not run, with an empty Name).
type Result struct {
	File        string   `json:"file"`
	Name        string   `json:"name"`
	Destination string   `json:"destination,omitempty"`
	Status      string   `json:"status"`
	Got         *Outcome `json:"got,omitempty"`
	Want        *Outcome `json:"want,omitempty"`
	// Messages say what differed, or what went wrong.
	Messages []string `json:"messages,omitempty"`
}

// Outcome is what a case decided, or expects.
type Outcome struct {
	Action       policies.Action `json:"action,omitempty"`
	Level        *string         `json:"level,omitempty"`
	Detectors    []string        `json:"detectors,omitempty"`
	OverCapacity *bool           `json:"over_capacity,omitempty"`
}

// Report holds the results of RunTests in a deterministic order: files
// sorted by path, cases in file order. It is a plain value: its methods
// only read it and may run concurrently.
type Report struct {
	Results []Result `json:"results"`
	Pass    int      `json:"pass"`
	Fail    int      `json:"fail"`
	Error   int      `json:"error"`
}

// ExitCode follows `opa test`: 0 when every case passes, 1 when any case or
// file had an error, else 2 when any case failed.
func (r *Report) ExitCode() int {
	switch {
	case r.Error > 0:
		return 1
	case r.Fail > 0:
		return 2
	}
	return 0
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WritePretty writes a human report: every case when verbose, else only
// failures and errors, then the totals.
func (r *Report) WritePretty(w io.Writer, verbose bool) error {
	var b bytes.Buffer
	file := ""
	for _, res := range r.Results {
		if !verbose && res.Status == Pass {
			continue
		}
		if res.File != file {
			file = res.File
			fmt.Fprintf(&b, "%s:\n", file)
		}
		name := res.Name
		if name == "" {
			name = "(file)"
		}
		fmt.Fprintf(&b, "  %-5s %s\n", strings.ToUpper(res.Status), name)
		for _, m := range res.Messages {
			fmt.Fprintf(&b, "        %s\n", m)
		}
	}
	total := r.Pass + r.Fail + r.Error
	if b.Len() > 0 {
		b.WriteString(strings.Repeat("-", 72) + "\n")
	}
	fmt.Fprintf(&b, "PASS: %d/%d\n", r.Pass, total)
	if r.Fail > 0 {
		fmt.Fprintf(&b, "FAIL: %d/%d\n", r.Fail, total)
	}
	if r.Error > 0 {
		fmt.Fprintf(&b, "ERROR: %d/%d\n", r.Error, total)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// IsTestFile reports whether name is a policy test file: it ends in
// _test.yaml or _test.yml.
func IsTestFile(name string) bool {
	return strings.HasSuffix(name, "_test.yaml") || strings.HasSuffix(name, "_test.yml")
}

// RunTests runs the policy test files in paths: files are run whatever
// their name, directories are walked for files IsTestFile accepts. Problems
// with a file or a case are reported in the report as errors; RunTests
// itself fails only when ctx is done or there is no test file at all.
func Run(ctx context.Context, paths []string, opts Options) (*Report, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	if opts.HashKey == nil {
		opts.HashKey = []byte("aishield policy test")
	}
	var files []string
	rep := &Report{Results: []Result{}}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			rep.add(Result{File: p, Status: Error, Messages: []string{err.Error()}})
			continue
		}
		if !st.IsDir() {
			if !st.Mode().IsRegular() {
				// A pipe or a device would be read without a bound, or
				// never end.
				rep.add(Result{File: p, Status: Error, Messages: []string{fmt.Sprintf("not a regular file (mode %v)", st.Mode().Type())}})
				continue
			}
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && path != p && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if d.Type().IsRegular() && IsTestFile(d.Name()) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			rep.add(Result{File: p, Status: Error, Messages: []string{err.Error()}})
		}
	}
	slices.Sort(files)
	files = slices.Compact(files)
	if len(files) == 0 && rep.Error == 0 {
		return nil, fmt.Errorf("no policy test files (*_test.yaml) in %s", strings.Join(paths, ", "))
	}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		runTestFile(ctx, f, opts, rep)
	}
	return rep, nil
}

func (r *Report) add(res Result) {
	switch res.Status {
	case Pass:
		r.Pass++
	case Fail:
		r.Fail++
	default:
		r.Error++
	}
	r.Results = append(r.Results, res)
}

// parseTestFile reads a test file with a fresh viper instance.
func parseTestFile(path string) (rawTestFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return rawTestFile{}, err
	}
	return parseTestData(data, path)
}

// parseTestData parses the bytes of a test file called path.
func parseTestData(data []byte, path string) (tf rawTestFile, err error) {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return tf, fmt.Errorf("%s: not valid UTF-8 text", path)
	}
	if len(data) > 16*policies.MaxPolicySize {
		return tf, fmt.Errorf("%s: test file larger than %d bytes", path, 16*policies.MaxPolicySize)
	}
	if err := policies.DecodeYAML(data, path, &tf); err != nil {
		return tf, err
	}
	if tf.Policy == "" {
		return tf, fmt.Errorf("%s: policy: required (a preset name or a policy file relative to the test file)", path)
	}
	if len(tf.Cases) == 0 {
		return tf, fmt.Errorf("%s: cases: at least one case is required", path)
	}
	return tf, nil
}

func runTestFile(ctx context.Context, path string, opts Options, rep *Report) {
	fail := func(err error) {
		rep.add(Result{File: path, Status: Error, Messages: []string{err.Error()}})
	}
	tf, err := parseTestFile(path)
	if err != nil {
		fail(err)
		return
	}
	dir := filepath.Dir(path)
	ref := tf.Policy
	if !slices.Contains(policies.Presets(), ref) && !filepath.IsAbs(ref) {
		ref = filepath.Join(dir, ref)
	}
	p, err := policies.LoadRefContext(ctx, ref)
	if err != nil {
		fail(err)
		return
	}
	sc, err := p.NewScanner(opts.HashKey)
	if err != nil {
		fail(fmt.Errorf("policy %s: %w", p.Source, err))
		return
	}
	ev, err := policies.NewEvaluator(p, policies.EvaluatorOptions{Classifier: sc})
	if err != nil {
		fail(fmt.Errorf("policy %s: %w", p.Source, err))
		return
	}
	for i, c := range tf.Cases {
		if ctx.Err() != nil {
			return
		}
		rep.add(runCase(ctx, ev, sc, dir, path, i, c))
	}
}

func runCase(ctx context.Context, ev *policies.Evaluator, sc *classifiers.Scanner, dir, file string, i int, c rawTestCase) Result {
	p := ev.Policy()
	res := Result{File: file, Name: c.Name, Destination: c.Destination}
	if res.Name == "" {
		res.Name = fmt.Sprintf("cases[%d]", i)
	}
	if res.Destination == "" {
		res.Destination = "default"
	}
	errorf := func(format string, args ...any) Result {
		res.Status = Error
		res.Messages = append(res.Messages, fmt.Sprintf(format, args...))
		return res
	}
	want := &Outcome{Action: policies.Action(c.Expect.Action), Level: c.Expect.Level, Detectors: c.Expect.Detectors, OverCapacity: c.Expect.OverCapacity}
	switch want.Action {
	case policies.ActionAllow, policies.ActionRedact, policies.ActionBlock:
	case "":
		return errorf("cases[%d].expect.action: required (allow, redact or block)", i)
	default:
		return errorf("cases[%d].expect.action: %q is not allow, redact or block", i, want.Action)
	}
	if want.Level != nil && *want.Level != "none" && p.Rank(*want.Level) < 0 {
		return errorf("cases[%d].expect.level: %q is not a level of policy %s (%s, or none)", i, *want.Level, p.Name, strings.Join(p.Levels, ", "))
	}
	d, err := p.Lookup(res.Destination)
	if err != nil {
		return errorf("cases[%d].destination: %v", i, err)
	}
	// The same evaluation as the guard's: capacity first, then the
	// classification and the decision.
	in := policies.Input{}
	if c.Tokens != nil {
		if *c.Tokens <= 0 {
			return errorf("cases[%d].tokens: must be positive", i)
		}
		in.Tokens = *c.Tokens
	}
	switch {
	case c.Input != nil && c.File != "":
		return errorf("cases[%d]: give input or file, not both", i)
	case c.Input != nil:
		in.Texts = []string{*c.Input}
	case c.File != "":
		name := c.File
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		data, rerr := os.ReadFile(name)
		if rerr != nil {
			return errorf("cases[%d].file: %v", i, rerr)
		}
		doc, derr := sc.ScanDocument(ctx, filepath.Base(name), data)
		if derr != nil {
			return errorf("cases[%d].file: %v", i, derr)
		}
		if doc.Skipped {
			return errorf("cases[%d].file: %s", i, doc.Note)
		}
		in.Texts, in.Findings = []string{doc.Text}, [][]classifiers.Finding{doc.Findings}
		if doc.Members != nil { // an archive: its members are the request's texts
			in.Texts, in.Findings = nil, nil
			for _, m := range doc.Members {
				if m.Skipped {
					return errorf("cases[%d].file: %s: %s", i, m.Name, m.Note)
				}
				in.Texts, in.Findings = append(in.Texts, m.Text), append(in.Findings, m.Findings)
			}
		}
	default:
		return errorf("cases[%d]: input or file is required", i)
	}
	refuse := false
	if c.Quarantined {
		// As the guard decides while the destination is quarantined.
		d, refuse = p.WhileQuarantined(d)
	}
	out, err := ev.Evaluate(ctx, d, in)
	if err != nil {
		return errorf("cases[%d]: %v", i, err)
	}
	dec := out.Decision
	if refuse {
		dec.Action = policies.ActionBlock
		dec.Reasons = append(dec.Reasons, policies.Reason{Rule: p.Quarantine(d).Field, Action: policies.ActionBlock,
			Message: "the destination is quarantined: no request is sent to it"})
	}
	if c.Expect.Destination != "" && c.Expect.Destination != d.Name {
		res.Messages = append(res.Messages, fmt.Sprintf("destination: got %s, want %s", d.Name, c.Expect.Destination))
	}
	flat, _ := out.Flat()
	level := dec.Level
	if level == "" {
		level = "none"
	}
	over := dec.OverCapacity
	got := &Outcome{Action: dec.Action, Level: &level, Detectors: detectorSet(flat), OverCapacity: &over}
	res.Got, res.Want = got, want

	if got.Action != want.Action {
		res.Messages = append(res.Messages, fmt.Sprintf("action: got %s, want %s", got.Action, want.Action))
	}
	if want.Level != nil && *want.Level != level {
		res.Messages = append(res.Messages, fmt.Sprintf("level: got %s, want %s", level, *want.Level))
	}
	if want.Detectors != nil {
		w := slices.Clone(want.Detectors)
		slices.Sort(w)
		w = slices.Compact(w)
		if !slices.Equal(w, got.Detectors) {
			res.Messages = append(res.Messages, fmt.Sprintf("detectors: got [%s], want [%s]", strings.Join(got.Detectors, " "), strings.Join(w, " ")))
		}
	}
	if want.OverCapacity != nil && *want.OverCapacity != over {
		res.Messages = append(res.Messages, fmt.Sprintf("over_capacity: got %t, want %t", over, *want.OverCapacity))
	}
	res.Status = Pass
	if len(res.Messages) > 0 {
		res.Status = Fail
		// Explain the decision, masked, so a failure can be understood.
		for _, r := range dec.Reasons {
			res.Messages = append(res.Messages, "reason: "+r.Message)
		}
	}
	return res
}

// detectorSet returns the sorted, distinct detector IDs of findings.
func detectorSet(fs []classifiers.Finding) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Detector)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

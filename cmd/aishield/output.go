package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// outputFlags are the output conventions of every command that prints
// data: --format (the command lists what it supports), -o/--output (the
// data to a file instead of standard output) and, for commands that fail
// on what they find, --exit-code. Data goes to standard output or the
// --output file; errors and diagnostics always go to standard error.
type outputFlags struct {
	cmd     *cobra.Command
	formats []string
	format  string
	path    string
	// exitCode is --exit-code: the status of a run that fails on its
	// findings (errors stay 2).
	exitCode int
	// asJSON is the deprecated --json alias of --format json.
	asJSON bool
	// errCode is the exit status of errors: 2, or 1 for policy test,
	// which follows opa test.
	errCode int
}

// addOutputFlags registers --format (default def, one of formats) and
// -o/--output on cmd.
func addOutputFlags(cmd *cobra.Command, def string, formats ...string) *outputFlags {
	o := &outputFlags{cmd: cmd, formats: formats, errCode: 2}
	f := cmd.Flags()
	f.StringVar(&o.format, "format", def, "output format: "+strings.Join(formats, ", "))
	f.StringVarP(&o.path, "output", "o", "", `write the report to FILE instead of standard output ("-": standard output); written whole or not at all`)
	return o
}

// addExitCode registers --exit-code; what names the failure it reports.
func (o *outputFlags) addExitCode(cmd *cobra.Command, what string) {
	cmd.Flags().IntVar(&o.exitCode, "exit-code", 1, "exit status when "+what+" (errors exit 2)")
}

// addJSONAlias registers --json, hidden and deprecated: --format json.
func (o *outputFlags) addJSONAlias(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&o.asJSON, "json", false, "print JSON (use --format json)")
	_ = f.MarkHidden("json")
}

// check validates the flags: a format the command supports, an exit code
// a shell can tell from an error. Its error carries the exit status of
// errors (2).
func (o *outputFlags) check() error {
	if o.asJSON {
		o.format = "json"
	}
	if !slices.Contains(o.formats, o.format) {
		return withCode(o.errCode, fmt.Errorf("unknown %s: %s supports %s", flagValue(o.cmd.Flags(), "format", strconv.Quote(o.format)), o.cmd.CommandPath(), strings.Join(o.formats, ", ")))
	}
	if o.exitCode < 0 || o.exitCode > 125 {
		return withCode(o.errCode, fmt.Errorf("%s: want 0 to 125", flagValue(o.cmd.Flags(), "exit-code", strconv.Itoa(o.exitCode))))
	}
	return nil
}

// fail is the error of a run that fails on its findings: exit status
// --exit-code (1 unless set), with err (nil when the report said it all).
func (o *outputFlags) fail(err error) error {
	return withCode(o.exitCode, err)
}

// run checks the flags and calls fn with the writer of the data:
// standard output, or a temporary file beside --output that replaces
// --output when fn is done. fn's result is run's; the file is kept when
// the report is whole: fn returned nil or a failure on the findings (any
// exit status but that of errors), and it was written without error. Otherwise the
// temporary file is removed and any previous --output stays as it was.
func (o *outputFlags) run(cmd *cobra.Command, fn func(w io.Writer) error) error {
	if err := o.check(); err != nil {
		return err
	}
	if o.path == "" || o.path == "-" {
		return fn(cmd.OutOrStdout())
	}
	rf, err := createReport(o.path)
	if err != nil {
		return withCode(o.errCode, err)
	}
	err = fn(rf)
	var ee *exitError
	if err != nil && (!errors.As(err, &ee) || ee.code == o.errCode) {
		rf.discard()
		return err
	}
	if cerr := rf.commit(); cerr != nil {
		return withCode(o.errCode, cerr)
	}
	return err
}

// reportFile is a report being written: a temporary file in the
// directory of its final path, renamed onto it by commit.
type reportFile struct {
	*os.File
	final string
	done  bool
	err   error // the first write error
}

// Write writes to the file and keeps the first error, which commit
// returns: a report cut short is never renamed into place.
func (r *reportFile) Write(p []byte) (int, error) {
	n, err := r.File.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// createReport starts the report of path. A directory, or a path whose
// directory does not exist, is an error now rather than after the run.
func createReport(path string) (*reportFile, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("--output %s is a directory", path)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("--output %s: %w", path, err)
	}
	return &reportFile{File: f, final: path}, nil
}

// commit closes the file and renames it onto the final path, with the
// permissions of the file it replaces (0600 for a new one: a report
// names files and detectors).
func (r *reportFile) commit() error {
	r.done = true
	mode := os.FileMode(0o600)
	if st, err := os.Stat(r.final); err == nil && st.Mode().IsRegular() {
		mode = st.Mode().Perm()
	}
	err := r.err
	if err == nil {
		err = r.Chmod(mode)
	}
	if err == nil {
		err = r.Sync()
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.Name(), r.final)
	}
	if err != nil {
		os.Remove(r.Name())
		return fmt.Errorf("--output %s: %w", r.final, err)
	}
	return nil
}

// discard closes and removes the temporary file.
func (r *reportFile) discard() {
	if r.done {
		return
	}
	r.done = true
	r.Close()
	os.Remove(r.Name())
}

// writeJSON writes v as indented JSON, the form every --format json
// report has.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// scanInput is one input of a scan.
type scanInput struct {
	path string
	// stream is set for "-" and for a pipe named on the command line (a
	// FIFO, a process substitution's /dev/fd/N): read as a stream.
	stream bool
	// walked is set for a file found while walking a directory: it must
	// still be a regular file when opened.
	walked bool
}

// notScanned is a file a walk found and did not read, or a file that
// was read and could not be scanned (Unreadable: encrypted, corrupt,
// over a limit), with the reason.
type notScanned struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	// Unreadable marks a file whose content could not be scanned: under
	// --fail-on or --destination it fails the run unless
	// --allow-unscanned.
	Unreadable bool `json:"unreadable,omitempty"`
}

// inputOptions configures scanInputs.
type inputOptions struct {
	// follow follows symbolic links found while walking.
	follow bool
	// ignoreFile names a file of ignore patterns (--ignore-file), applied
	// with the .aishieldignore of each root; empty for none.
	ignoreFile string
	// exclude lists files a walk does not read: the report being
	// written (-o), which may lie in a directory scanned.
	exclude []fs.FileInfo
}

// maxIgnoreFile bounds an ignore file.
const maxIgnoreFile = 1 << 20

// readIgnore reads an ignore file; a missing optional one is no error.
func readIgnore(path string, optional bool) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("ignore file %s: not a regular file", path)
	}
	if st.Size() > maxIgnoreFile {
		return "", fmt.Errorf("ignore file %s: over %d KiB", path, maxIgnoreFile>>10)
	}
	b, err := os.ReadFile(path)
	return string(b), err
}

// matcherFor compiles the ignore rules of root: its .aishieldignore,
// then the --ignore-file patterns.
func (w *walker) matcherFor(root string) (*ignoreMatcher, error) {
	return rootIgnore(root, w.extra)
}

// rootIgnore compiles root's .aishieldignore followed by the rules of
// extra (nil: none).
func rootIgnore(root string, extra *ignoreMatcher) (*ignoreMatcher, error) {
	own := filepath.Join(root, ignoreFileName)
	text, err := readIgnore(own, true)
	if err != nil {
		return nil, err
	}
	m, err := parseIgnore(own, text)
	if err != nil {
		return nil, err
	}
	if extra != nil {
		m.rules = append(m.rules, extra.rules...)
	}
	return m, nil
}

// ignoreFileRules compiles the --ignore-file at path; nil when path is "".
func ignoreFileRules(path string) (*ignoreMatcher, error) {
	if path == "" {
		return nil, nil
	}
	text, err := readIgnore(path, false)
	if err != nil {
		return nil, err
	}
	return parseIgnore(path, text)
}

// scanInputs turns the command line into the inputs of a scan, in order.
// Inputs named on the command line are followed if they are symlinks (the
// user named them): a file is read, a directory walked, a pipe read as a
// stream; anything else named there, or missing, is an input error,
// reported on errOut and counted in errs. During a walk, .git is skipped,
// symlinks are followed only with follow (a link to a directory that is
// one of its own ancestors is a loop, not followed), and FIFOs, sockets and
// devices are never opened: they are listed in skipped with the reason.
//
// Paths matched by the ignore rules (ignorefile.go) are not read and are
// counted in ignored: under a directory named, its .aishieldignore and
// --ignore-file apply to paths relative to it; to a file named, the
// working directory's .aishieldignore and --ignore-file apply to its path
// as given (when relative and inside the working directory). An ignore
// file that cannot be read or parsed is an input error.
func scanInputs(args []string, opts inputOptions, errOut io.Writer) (inputs []scanInput, skipped []notScanned, ignored, errs int) {
	skipped, ignored, errs = walkInputs(args, opts, errOut, func(in scanInput) { inputs = append(inputs, in) })
	return inputs, skipped, ignored, errs
}

// walkInputs is scanInputs handing each input to emit as it is found,
// so that the inputs are scanned while the walk goes on.
func walkInputs(args []string, opts inputOptions, errOut io.Writer, emit func(scanInput)) (skipped []notScanned, ignored, errs int) {
	w := &walker{follow: opts.follow, errOut: errOut, exclude: opts.exclude, emit: emit}
	var err error
	if w.extra, err = ignoreFileRules(opts.ignoreFile); err != nil {
		w.fail(err)
		return nil, 0, w.errs
	}
	var cwdRules *ignoreMatcher
	cwdLoaded := false
	for _, a := range args {
		if a == "-" {
			w.emit(scanInput{path: "-", stream: true})
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			w.fail(err)
			continue
		}
		if m := st.Mode(); m.IsRegular() || m&fs.ModeNamedPipe != 0 {
			if rel := filepath.ToSlash(filepath.Clean(a)); !filepath.IsAbs(a) && rel != ".." && !strings.HasPrefix(rel, "../") {
				if !cwdLoaded {
					cwdLoaded = true
					if cwdRules, err = w.matcherFor("."); err != nil {
						w.fail(err)
						return nil, 0, w.errs
					}
				}
				if cwdRules.ignored(rel, false) {
					w.ignored++
					continue
				}
			}
		}
		switch m := st.Mode(); {
		case m.IsRegular():
			w.emit(scanInput{path: a})
		case m.IsDir():
			if w.ign, err = w.matcherFor(a); err != nil {
				w.fail(err)
				continue
			}
			w.root = a
			w.dir(a, []fs.FileInfo{st})
		case m&fs.ModeNamedPipe != 0:
			w.emit(scanInput{path: a, stream: true})
		default:
			w.fail(&inputError{Path: a, Err: fmt.Errorf("not a file, a directory or a pipe (it is %s)", fileKind(m))})
		}
	}
	return w.skipped, w.ignored, w.errs
}

type walker struct {
	follow  bool
	errOut  io.Writer
	emit    func(scanInput) // takes each input found, in order
	skipped []notScanned
	errs    int
	// extra holds the --ignore-file rules; root and ign the directory
	// being walked and its rules.
	extra   *ignoreMatcher
	root    string
	ign     *ignoreMatcher
	ignored int
	exclude []fs.FileInfo
}

func (w *walker) fail(err error) {
	fmt.Fprintf(w.errOut, "aishield: %v\n", err)
	w.errs++
}

func (w *walker) skip(path, reason string) {
	w.skipped = append(w.skipped, notScanned{Path: path, Reason: reason})
}

// dir walks the directory path, whose own directory and ancestors in this
// walk are ancestors (for loop detection), in lexical order.
func (w *walker) dir(path string, ancestors []fs.FileInfo) {
	entries, err := os.ReadDir(path)
	if err != nil {
		w.fail(err)
		return
	}
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		m := e.Type()
		if rel, err := filepath.Rel(w.root, p); err == nil && w.ign.ignored(filepath.ToSlash(rel), m.IsDir()) {
			w.ignored++
			continue
		}
		var info fs.FileInfo
		if m&fs.ModeSymlink != 0 {
			if !w.follow {
				w.skip(p, "symbolic link, not followed (--follow follows links)")
				continue
			}
			if info, err = os.Stat(p); err != nil {
				w.skip(p, "broken symbolic link")
				continue
			}
			m = info.Mode().Type()
		}
		switch {
		case m.IsDir():
			if e.Name() == ".git" {
				continue
			}
			if info == nil {
				if info, err = e.Info(); err != nil {
					w.fail(err)
					continue
				}
			}
			if loop(info, ancestors) {
				w.skip(p, "symbolic link loop (a link to one of its own parent directories)")
				continue
			}
			w.dir(p, append(ancestors[:len(ancestors):len(ancestors)], info))
		case m.IsRegular():
			if len(w.exclude) > 0 {
				if info == nil {
					info, _ = e.Info()
				}
				if info != nil && loop(info, w.exclude) {
					continue
				}
			}
			w.emit(scanInput{path: p, walked: true})
		default:
			w.skip(p, fileKind(m))
		}
	}
}

func loop(info fs.FileInfo, ancestors []fs.FileInfo) bool {
	for _, a := range ancestors {
		if os.SameFile(a, info) {
			return true
		}
	}
	return false
}

// errNotRegular is a walked file that was no longer a regular file when
// opened.
type errNotRegular struct{ kind string }

func (e *errNotRegular) Error() string { return "no longer a regular file (it is " + e.kind + ")" }

// openScanFile opens a regular file to scan without ever blocking: the
// open does not wait for a writer if a FIFO took the file's place since
// the walk (O_NONBLOCK), and the file opened must be regular.
func openScanFile(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &errNotRegular{kind: fileKind(st.Mode())}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// contextReader returns a reader of r whose reads end with errInterrupted
// once ctx is done, even while r waits (a terminal, a pipe with no data):
// r is read by a goroutine that ends with r's next read. stop releases the
// context's callback.
func contextReader(ctx context.Context, r io.Reader) (io.Reader, func()) {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err)
	}()
	stop := context.AfterFunc(ctx, func() { pr.CloseWithError(errInterrupted) })
	return pr, func() { stop(); pr.Close() }
}

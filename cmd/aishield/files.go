package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/aishield/aishield/internal/inputfile"
)

// fileKind names the type of a file mode for messages (inputfile.Kind).
var fileKind = inputfile.Kind

// outputPathError is the refusal to write an output file over something
// that is not a regular file.
type outputPathError struct {
	Path string
	Kind string
}

func (e *outputPathError) Error() string {
	return fmt.Sprintf("refusing to write %s: it is %s; give a regular file or a new path", e.Path, e.Kind)
}

// checkOutputPath accepts a path that does not exist or names a regular
// file. Anything else (a symlink, a directory, a FIFO, a socket, a device
// such as /dev/null) is refused untouched: replacing it would destroy it,
// and following a link would write where the user did not name.
func checkOutputPath(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if k := fileKind(st.Mode()); k != "" {
		return &outputPathError{Path: path, Kind: k}
	}
	return nil
}

// writeOutputFile writes data to path with mode perm, replacing a previous
// regular file at once: data goes to a temporary file beside it (created
// with perm, never wider), is synced, and is renamed over path, so that a
// reader never sees a half-written file and a crash leaves the old one.
// path must not exist or be a regular file (checkOutputPath).
func writeOutputFile(path string, data []byte, perm fs.FileMode) error {
	if err := checkOutputPath(path); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Chmod(perm)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Checked again just before the rename, which replaces whatever
		// directory entry path is: the window between the two is what an
		// unprivileged writer of the directory could race, not a mistake.
		err = checkOutputPath(path)
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // the rename itself survives a crash
		_ = d.Close()
	}
	return nil
}

// openAppendOutput opens path for appending, creating it 0600 if needed,
// with the same rules as checkOutputPath. The open does not block on a
// FIFO put in its place after the check (O_NONBLOCK), and the file opened
// must be the regular file path names (not reached through a symlink
// swapped in meanwhile): anything else is closed and refused.
func openAppendOutput(path string) (*os.File, error) {
	if err := checkOutputPath(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &outputPathError{Path: path, Kind: fileKind(st.Mode())}
	}
	if err == nil {
		var lst fs.FileInfo
		if lst, err = os.Lstat(path); err == nil && !os.SameFile(st, lst) {
			err = &outputPathError{Path: path, Kind: fileKind(lst.Mode())}
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// inputError is an input named on the command line that could not be
// read; it always exits 2.
type inputError struct {
	Path string
	Err  error
}

func (e *inputError) Error() string {
	var pe *fs.PathError
	if errors.As(e.Err, &pe) { // it names the path already
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}
func (e *inputError) Unwrap() error { return e.Err }

// errInterrupted is the reason of an input abandoned because the command
// was signalled.
var errInterrupted = inputfile.ErrInterrupted

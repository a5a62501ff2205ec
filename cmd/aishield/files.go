package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// fileKind names the type of a file mode for messages: "a symlink",
// "a named pipe (FIFO)", and so on; "" for a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

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
// was interrupted (SIGINT, SIGTERM).
var errInterrupted = errors.New("interrupted (SIGINT or SIGTERM) before the input was read")

// openInput opens a file named on the command line for reading, following
// symlinks (the user named it). A named pipe has no writer until someone
// opens it, and open(2) waits for one: the open runs in a goroutine, and
// when ctx is done first the pipe is opened for writing without blocking
// and closed again, which releases the waiting open, and errInterrupted
// is returned. Reads of the returned file stop when ctx is done (see
// readInput). Directories, sockets and devices are refused: they are not
// inputs.
func openInput(ctx context.Context, path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	m := st.Mode()
	switch {
	case m.IsRegular():
		return os.Open(path)
	case m&fs.ModeNamedPipe != 0:
	default:
		return nil, fmt.Errorf("not a regular file or a pipe (it is %s)", fileKind(m))
	}
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := os.Open(path)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-ctx.Done():
	}
	if w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
	if r := <-done; r.f != nil {
		r.f.Close()
	}
	return nil, errInterrupted
}

// inputFile is a file opened by openInputReader: its reads end when the
// context is done.
type inputFile struct {
	*os.File
	ctx  context.Context
	stop func() bool
}

// Read reads from the file; once the context is done it fails with
// errInterrupted.
func (f *inputFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if err != nil && f.ctx.Err() != nil {
		err = errInterrupted
	}
	return n, err
}

// Close stops watching the context and closes the file.
func (f *inputFile) Close() error {
	f.stop()
	return f.File.Close()
}

// openInputReader opens path as openInput does and returns it as a reader
// whose blocked reads (a pipe waiting for data) end when ctx is done: a
// pipe's reads go through the runtime poller, so a past deadline wakes
// them; a regular file never waits.
func openInputReader(ctx context.Context, path string) (*inputFile, error) {
	f, err := openInput(ctx, path)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	return &inputFile{File: f, ctx: ctx, stop: stop}, nil
}

// readInput reads the file named path (openInput's rules) up to limit
// bytes; more is an error. A read blocked on a pipe ends when ctx is done.
func readInput(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := openInputReader(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// Package inputfile opens the inputs a user names on a command line or in
// a configuration: regular files (through symlinks, since the user named
// them) and named pipes (a FIFO, the /dev/fd/N of a process substitution).
// Directories, sockets and devices are refused without being opened. A
// pipe may wait for its writer, in open(2) and in every read: both end
// when the context is done, so that a signal always stops a command.
// ReadUpTo reads any input, a file or a request body, into one buffer.
package inputfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// ErrInterrupted is the error of an input given up because its context
// was done before it was read (the process was signalled).
var ErrInterrupted = errors.New("interrupted (SIGINT or SIGTERM) before the input was read")

// Kind names the type of a file mode for messages: "a symbolic link",
// "a named pipe (FIFO)", and so on; "" for a regular file.
func Kind(m fs.FileMode) string {
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

// File is an opened input whose reads end with ErrInterrupted once its
// context is done.
type File struct {
	*os.File
	ctx  context.Context
	stop func() bool
}

// Open opens path for reading. A named pipe has no writer until someone
// opens it, and open(2) waits for one: the open runs in a goroutine, and
// when ctx is done first the pipe is opened for writing without blocking
// and closed again, which releases the waiting open, and ErrInterrupted is
// returned. A pipe's reads go through the runtime poller, so a past
// deadline set when ctx is done wakes them; a regular file never waits.
func Open(ctx context.Context, path string) (*File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var f *os.File
	switch m := st.Mode(); {
	case m.IsRegular():
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
	case m&fs.ModeNamedPipe != 0:
		if f, err = openPipe(ctx, path); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("not a regular file or a pipe (it is %s)", Kind(m))
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	return &File{File: f, ctx: ctx, stop: stop}, nil
}

func openPipe(ctx context.Context, path string) (*os.File, error) {
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
	return nil, ErrInterrupted
}

// Read reads from the file; once the context is done it fails with
// ErrInterrupted.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	if err != nil && f.ctx.Err() != nil {
		err = ErrInterrupted
	}
	return n, err
}

// Close stops watching the context and closes the file.
func (f *File) Close() error {
	f.stop()
	return f.File.Close()
}

// ReadAll reads the input named path (Open's rules) up to limit bytes;
// more is an error.
func ReadAll(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	data, err := ReadUpTo(f, size, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// ReadUpTo reads r to its end or to max bytes, whichever comes first. When
// r announced its size (a file's, a Content-Length; 0 or less when
// unknown) and it is at most max, one buffer of that size is taken at once
// instead of growing one through copies; an input that outgrew its size
// is read all the same.
func ReadUpTo(r io.Reader, size, max int64) ([]byte, error) {
	var buf bytes.Buffer
	if size > 0 && size <= max {
		buf.Grow(int(size) + bytes.MinRead) // room for the read that sees the end
	}
	_, err := buf.ReadFrom(io.LimitReader(r, max))
	return buf.Bytes(), err
}

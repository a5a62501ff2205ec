//go:build unix

package main

import (
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readScanFile reads the regular file at path whole into rd's buffer, as
// openScanFile opens it (without ever blocking, and only a regular file),
// with the system's calls themselves rather than an *os.File: a tree of
// thousands of small files is read with an open, a stat, the reads and a
// close each, and nothing else (an os.File would also try to register
// each with the network poller and set a cleanup on it). A file over
// maxWholeFile, or one that is not regular, goes through openScanFile:
// the first is returned open as f, to be streamed.
func (rd *fileReader) readScanFile(path string) (data []byte, f *os.File, err error) {
	fd, err := retryEINTR(func() (int, error) {
		return syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if _, err := retryEINTR(func() (int, error) { return 0, syscall.Fstat(fd, &st) }); err != nil {
		syscall.Close(fd)
		return nil, nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size > maxWholeFile {
		syscall.Close(fd)
		return rd.readOpened(path)
	}
	defer syscall.Close(fd)
	data, err = rd.read(&fdReader{fd: fd, path: path}, st.Size)
	return data, nil, err
}

// fdReader reads a file descriptor, its errors those of os.File.Read.
type fdReader struct {
	fd   int
	path string
}

func (r *fdReader) Read(b []byte) (int, error) {
	n, err := retryEINTR(func() (int, error) { return syscall.Read(r.fd, b) })
	switch {
	case err != nil:
		return 0, &fs.PathError{Op: "read", Path: r.path, Err: err}
	case n == 0 && len(b) > 0:
		return 0, io.EOF
	}
	return n, nil
}

// retryEINTR calls fn again while a signal interrupts it, as the os
// package does.
func retryEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if err != syscall.EINTR {
			return n, err
		}
	}
}

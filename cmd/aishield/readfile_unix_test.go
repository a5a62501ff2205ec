//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadScanFile checks readScanFile against openScanFile followed by a
// read of the whole file, the way a scan read a file before: the same
// bytes, the same errors (message included), a file over maxWholeFile
// returned open, a FIFO or a directory refused as not regular without
// blocking.
func TestReadScanFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := write("huge.txt", nil)
	if err := os.Truncate(huge, maxWholeFile+1); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := write("unreadable.txt", []byte("secret"))
	os.Chmod(unreadable, 0)
	cases := []struct {
		name, path string
		large      bool
		notRegular bool
		fails      bool
	}{
		{name: "small", path: write("a.txt", []byte("mail nora.petit@acme-data.fr\n"))},
		{name: "empty", path: write("empty.txt", nil)},
		{name: "4 KiB and more", path: write("b.txt", make([]byte, 9000))},
		{name: "large", path: huge, large: true},
		{name: "missing", path: filepath.Join(dir, "missing.txt"), fails: true},
		{name: "directory", path: dir, notRegular: true, fails: true},
		{name: "fifo", path: fifo, notRegular: true, fails: true},
		{name: "unreadable", path: unreadable, fails: os.Geteuid() != 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rd, ref fileReader
			data, f, err := rd.readScanFile(c.path)
			if f != nil {
				defer f.Close()
			}
			want, wf, werr := ref.readOpened(c.path)
			if wf != nil {
				wf.Close()
			}
			if (err != nil) != c.fails || (werr != nil) != c.fails {
				t.Fatalf("errors %v and %v", err, werr)
			}
			if err != nil {
				var nr *errNotRegular
				if err.Error() != werr.Error() || errors.As(err, &nr) != c.notRegular {
					t.Fatalf("error %q, want %q", err, werr)
				}
				return
			}
			if (f != nil) != c.large || (wf != nil) != c.large {
				t.Fatalf("open file returned: %v, want %v", f != nil, c.large)
			}
			if string(data) != string(want) {
				t.Fatalf("read %d bytes, want %d", len(data), len(want))
			}
		})
	}
}

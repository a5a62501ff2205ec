package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goroot is the GOROOT of the go command on the PATH.
func goroot(tb testing.TB) string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("no go command: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// benchTree is the tree BenchmarkScanTree scans: real files of the
// machine's Go installation (about 25 MB of Go source, tests, test data).
func benchTree(b *testing.B) []string {
	var dirs []string
	for _, d := range []string{"crypto", "net", "go"} {
		p := filepath.Join(goroot(b), "src", d)
		if _, err := os.Stat(p); err != nil {
			b.Skipf("no Go sources at %s", p)
		}
		dirs = append(dirs, p)
	}
	return dirs
}

// BenchmarkScanTree is "aishield scan" of a tree of real files, the whole
// command (start-up, walk, pool, text report to io.Discard). Compare
// -cpu 1,2: the pool uses GOMAXPROCS workers.
func BenchmarkScanTree(b *testing.B) {
	dirs := benchTree(b)
	var size int64
	for _, d := range dirs {
		filepath.WalkDir(d, func(_ string, e fs.DirEntry, err error) error {
			if err == nil && e.Type().IsRegular() {
				if info, err := e.Info(); err == nil {
					size += info.Size()
				}
			}
			return nil
		})
	}
	b.SetBytes(size)
	for b.Loop() {
		if code := run(context.Background(), append([]string{"scan"}, dirs...), nil, io.Discard, io.Discard); code == 2 {
			b.Fatal("scan failed")
		}
	}
}

// largeRealText writes a file of at least n bytes of real text: the
// machine's licence texts, the copyright files of its packages (names,
// addresses) and Go sources, concatenated and repeated.
func largeRealText(tb testing.TB, dir string, n int) string {
	tb.Helper()
	var corpus bytes.Buffer
	src := filepath.Join(goroot(tb), "src")
	for _, root := range []string{"/usr/share/common-licenses", "/usr/share/doc", filepath.Join(src, "net", "http"), filepath.Join(src, "fmt")} {
		filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if root == "/usr/share/doc" && err == nil && !e.IsDir() && e.Name() != "copyright" {
				return nil
			}
			if err == nil && e.Type().IsRegular() && corpus.Len() < 32<<20 {
				if data, err := os.ReadFile(p); err == nil && bytes.IndexByte(data, 0) < 0 {
					corpus.Write(data)
				}
			}
			return nil
		})
	}
	if corpus.Len() == 0 {
		tb.Skip("no Go sources nor licences on this machine")
	}
	path := filepath.Join(dir, "large.txt")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	for written := 0; written < n; written += corpus.Len() {
		if _, err := f.Write(corpus.Bytes()); err != nil {
			tb.Fatal(err)
		}
	}
	return path
}

// BenchmarkScanLargeFile is "aishield scan" of a 64 MiB file of real text
// (over maxWholeFile: streamed, its chunks scanned on GOMAXPROCS workers,
// its findings written as they come). Compare -cpu 1,2.
func BenchmarkScanLargeFile(b *testing.B) {
	path := largeRealText(b, b.TempDir(), 64<<20)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if code := run(context.Background(), []string{"scan", path}, nil, io.Discard, io.Discard); code == 2 {
			b.Fatal("scan failed")
		}
	}
}

// BenchmarkVersionCommand is the CLI's own start-up once the packages are
// initialised: the cobra command tree built, the command line parsed, a
// command run ("version"). Package initialisation is measured with
// GODEBUG=inittrace=1 (docs/performance.md).
func BenchmarkVersionCommand(b *testing.B) {
	for b.Loop() {
		if code := run(context.Background(), []string{"version"}, nil, io.Discard, io.Discard); code != 0 {
			b.Fatal("version failed")
		}
	}
}

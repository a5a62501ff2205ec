package gitdiff

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// readAll reads every file diff of in.
func readAll(t testing.TB, in string, opts Options) ([]*File, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in), opts)
	var out []*File
	for {
		f, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// want is what a test expects of a File.
type want struct {
	commit    string
	oldPath   string
	path      string
	status    Status
	binary    bool
	submodule bool
	combined  bool
	text      string
	lines     []int
	long      int
	dropped   int
}

func got(f *File) want {
	w := want{oldPath: f.OldPath, path: f.Path, status: f.Status, binary: f.Binary, submodule: f.Submodule,
		combined: f.Combined, text: string(f.Text), lines: f.Lines, long: f.LongLines, dropped: f.DroppedLines}
	if f.Commit != nil {
		w.commit = f.Commit.Hash
	}
	return w
}

const hdr1 = "\x00c1\x00p0\x00Ann Author\x00ann@example.org\x002026-01-02T03:04:05+00:00\n\n"

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		opts Options
		want []want
	}{
		{
			name: "added lines with numbers, removed and context lines skipped",
			in: hdr1 + "diff --git a/f.txt b/f.txt\nindex 1..2 100644\n--- a/f.txt\n+++ b/f.txt\n" +
				"@@ -2 +2 @@ ctx\n-old\n+new\n@@ -10,0 +11,2 @@\n+x\n+y\n",
			want: []want{{commit: "c1", oldPath: "f.txt", path: "f.txt", text: "new\n\nx\ny\n", lines: []int{2, 0, 11, 12}}},
		},
		{
			name: "content lines that look like headers are content",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1,4 @@\n++++ b/evil\n+diff --git a/x b/x\n+@@ -1 +1 @@\n+\x00not a commit\n",
			want: []want{{oldPath: "f", path: "f", text: "+++ b/evil\ndiff --git a/x b/x\n@@ -1 +1 @@\n\x00not a commit\n", lines: []int{1, 2, 3, 4}}},
		},
		{
			name: "context lines advance the new line number (-U3)",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n+C\n c\n",
			want: []want{{oldPath: "f", path: "f", text: "B\nC\n", lines: []int{2, 3}}},
		},
		{
			name: "empty context lines (diff.suppressBlankEmpty)",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n a\n\n+B\n c\n",
			want: []want{{oldPath: "f", path: "f", text: "B\n", lines: []int{3}}},
		},
		{
			name: "no newline at end of file",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
			want: []want{{oldPath: "f", path: "f", text: "b\n", lines: []int{1}}},
		},
		{
			name: "new file, then a deleted file",
			in: "diff --git a/n b/n\nnew file mode 100644\nindex 0..1\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+hi\n" +
				"diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
			want: []want{
				{path: "n", status: Added, text: "hi\n", lines: []int{1}},
				{oldPath: "d", path: "d", status: Deleted},
			},
		},
		{
			name: "rename with C-quoted paths and git's tab after a name with a space",
			in: "diff --git a/a.txt \"b/b \\303\\251.txt\"\nsimilarity index 60%\nrename from a.txt\nrename to \"b \\303\\251.txt\"\n" +
				"--- a/a.txt\n+++ \"b/b \\303\\251.txt\"\t\n@@ -1,0 +2 @@\n+x\n",
			want: []want{{oldPath: "a.txt", path: "b é.txt", status: Renamed, text: "x\n", lines: []int{2}}},
		},
		{
			name: "unquoted names with spaces and a rename without hunks",
			in:   "diff --git a/x y b/z w\nsimilarity index 100%\nrename from x y\nrename to z w\n",
			want: []want{{oldPath: "x y", path: "z w", status: Renamed}},
		},
		{
			name: "copy",
			in:   "diff --git a/s b/t\nsimilarity index 90%\ncopy from s\ncopy to t\n--- a/s\n+++ b/t\n@@ -3,0 +4 @@\n+k\n",
			want: []want{{oldPath: "s", path: "t", status: Copied, text: "k\n", lines: []int{4}}},
		},
		{
			name: "quoted control characters and octal escapes",
			in:   "diff --git \"a/t\\tab\\\"q\\\\\" \"b/t\\tab\\\"q\\\\\"\n--- \"a/t\\tab\\\"q\\\\\"\n+++ \"b/t\\tab\\\"q\\\\\"\n@@ -0,0 +1 @@\n+v\n",
			want: []want{{oldPath: "t\tab\"q\\", path: "t\tab\"q\\", text: "v\n", lines: []int{1}}},
		},
		{
			name: "binary files: added, deleted",
			in: "diff --git a/b.dat b/b.dat\nnew file mode 100644\nindex 0..1\nBinary files /dev/null and b/b.dat differ\n" +
				"diff --git a/o.dat b/o.dat\ndeleted file mode 100644\nBinary files a/o.dat and /dev/null differ\n",
			want: []want{
				{path: "b.dat", status: Added, binary: true},
				{oldPath: "o.dat", path: "o.dat", status: Deleted, binary: true},
			},
		},
		{
			name: "submodule lines are not kept",
			in:   "diff --git a/sub b/sub\nnew file mode 160000\nindex 0..abc\n--- /dev/null\n+++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit abc\n",
			want: []want{{path: "sub", status: Added, submodule: true}},
		},
		{
			name: "combined diff of a merge is not kept, the next commit is",
			in: "\x00m\x00p1 p2\x00A\x00a@x\x00d\n\ndiff --cc f\nindex 1,2..3\n--- a/f\n+++ b/f\n@@@ -1,1 -1,1 +1,2 @@@\n ++merged\n+ side\n" +
				"\x00c2\x00p1\x00B\x00b@x\x00d\n\ndiff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -0,0 +1 @@\n+g\n",
			want: []want{
				{commit: "m", path: "f", combined: true},
				{commit: "c2", oldPath: "g", path: "g", text: "g\n", lines: []int{1}},
			},
		},
		{
			name: "long line cut, CR and invalid UTF-8 kept as bytes",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1,3 @@\n+0123456789abc\n+ok\r\n+\xff\xfe\x00z\n",
			opts: Options{MaxLine: 8},
			want: []want{{oldPath: "f", path: "f", text: "01234567\nok\r\n\xff\xfe\x00z\n", lines: []int{1, 2, 3}, long: 1}},
		},
		{
			name: "file diff over MaxFile: the rest counted",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1,3 @@\n+aaaa\n+bbbb\n+cccc\n",
			opts: Options{MaxFile: 10},
			want: []want{{oldPath: "f", path: "f", text: "aaaa\nbbbb\n", lines: []int{1, 2}, dropped: 1}},
		},
		{
			name: "last line without newline",
			in:   "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+end",
			want: []want{{oldPath: "f", path: "f", text: "end\n", lines: []int{1}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, err := readAll(t, tt.in, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(files) != len(tt.want) {
				t.Fatalf("got %d files, want %d", len(files), len(tt.want))
			}
			for i, f := range files {
				if g := got(f); !reflect.DeepEqual(g, tt.want[i]) {
					t.Errorf("file %d:\n got %+v\nwant %+v", i, g, tt.want[i])
				}
			}
		})
	}
}

func TestReaderCommit(t *testing.T) {
	files, err := readAll(t, hdr1+"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+x\n", Options{})
	if err != nil || len(files) != 1 {
		t.Fatalf("%v %d", err, len(files))
	}
	c := files[0].Commit
	want := &Commit{Hash: "c1", Parents: []string{"p0"}, Author: "Ann Author", Email: "ann@example.org", Date: "2026-01-02T03:04:05+00:00"}
	if !reflect.DeepEqual(c, want) || c.Merge() {
		t.Errorf("got %+v", c)
	}
}

func TestReaderErrors(t *testing.T) {
	tests := []struct {
		name, in string
		opts     Options
		what     string
	}{
		{"commit header missing fields", "\x00abc\x00p\n", Options{}, "five fields"},
		{"commit header without hash", "\x00\x00\x00a\x00b\x00c\n", Options{}, "without a hash"},
		{"bad hunk header", "diff --git a/f b/f\n@@ -x +1 @@\n", Options{}, "bad range"},
		{"unclosed hunk header", "diff --git a/f b/f\n@@ -1 +1\n", Options{}, "closing @@"},
		{"header line too long", "diff --git a/" + strings.Repeat("x", 70000) + " b/x\n", Options{MaxLine: 16}, "longer than 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readAll(t, tt.in, tt.opts)
			var se *SyntaxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.what) {
				t.Fatalf("got %v, want a SyntaxError with %q", err, tt.what)
			}
			if strings.Contains(err.Error(), "xxxx") {
				t.Errorf("the error quotes the input: %v", err)
			}
		})
	}
}

// errReader fails after its data.
type errReader struct {
	data []byte
	err  error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(&errReader{data: []byte("diff --git a/f b/f\n"), err: boom}, Options{})
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("the error is not sticky: %v", err)
	}
}

// FuzzReader: any input, no panic, bounded output, and every line of
// Text that is not a gap is the start of a '+' line of the input.
func FuzzReader(f *testing.F) {
	f.Add([]byte(hdr1 + "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,0 +2,2 @@\n+x\n+y\n"))
	f.Add([]byte("diff --git \"a/\\303\\251\" \"b/\\303\\251\"\nrename from x\nrename to \"\\303\"\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n"))
	f.Add([]byte("diff --cc f\n@@@ -1 -1 +1 @@@\n ++a\n\x00h\x00\x00a\x00b\x00c\nBinary files /dev/null and b/x differ\n"))
	f.Add([]byte("diff --git a/f b/f\n@@ -0,0 +1,99999999999 @@\n+\xff\x00\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		opts := Options{MaxLine: 64, MaxFile: 256}
		r := NewReader(bytes.NewReader(data), opts)
		for range len(data) + 2 {
			file, err := r.Next()
			if err != nil {
				return
			}
			if len(file.Text) > opts.MaxFile {
				t.Fatalf("Text of %d bytes over MaxFile", len(file.Text))
			}
			lines := bytes.SplitAfter(file.Text, []byte("\n"))
			lines = lines[:len(lines)-1] // after the last '\n'
			if len(lines) != len(file.Lines) {
				t.Fatalf("%d lines of text, %d numbers", len(lines), len(file.Lines))
			}
			for i, l := range lines {
				l = l[:len(l)-1]
				if file.Lines[i] == 0 {
					if len(l) != 0 {
						t.Fatalf("gap line %d not empty", i)
					}
					continue
				}
				if len(l) > opts.MaxLine {
					t.Fatalf("line of %d bytes over MaxLine", len(l))
				}
				if !bytes.HasPrefix(data, append([]byte("+"), l...)) && !bytes.Contains(data, append([]byte("\n+"), l...)) {
					t.Fatalf("line %q is not a '+' line of the input", l)
				}
			}
		}
		t.Fatal("Next never ended")
	})
}

// BenchmarkReader reads a history of many small file diffs.
func BenchmarkReader(b *testing.B) {
	var in strings.Builder
	for i := range 2000 {
		in.WriteString(hdr1)
		for j := range 3 {
			fmt.Fprintf(&in, "diff --git a/d/f%d.go b/d/f%d.go\nindex 1..2 100644\n--- a/d/f%d.go\n+++ b/d/f%d.go\n@@ -%d,2 +%d,3 @@\n", j, j, j, j, i+1, i+1)
			in.WriteString("-\told line\n-\tanother\n+\treturn fmt.Errorf(\"x: %w\", err)\n+\t// a comment of some length, as code has\n+}\n")
		}
	}
	data := in.String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readAll(b, data, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

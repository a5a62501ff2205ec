// Package gitdiff reads the unified diffs git writes (git log -p, git
// diff) as a stream, one file diff at a time, and keeps what a scanner of
// additions needs: the lines each file diff adds, with their line numbers
// in the new file, the new path (renames and copies followed, C-quoted
// paths decoded), and the commit when the diff comes from git log run with
// Format.
//
// Memory is bounded: a line is kept up to Options.MaxLine bytes and a file
// diff's added text up to Options.MaxFile bytes; what is left out is
// counted on the File, never dropped silently. Lines are read as bytes:
// invalid UTF-8 and NUL bytes pass through as they are.
//
// A Reader is not safe for concurrent use.
package gitdiff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Format is the git log --format argument whose commit headers a Reader
// recognises: a line starting with a NUL byte (no line of a diff does),
// then the hash, the parents, the author's name, e-mail and date (strict
// ISO 8601), separated by NUL bytes.
const Format = "%x00%H%x00%P%x00%an%x00%ae%x00%aI"

// Default limits of Options.
const (
	DefaultMaxLine = 1 << 20
	DefaultMaxFile = 32 << 20
)

// Options bounds what a Reader keeps.
type Options struct {
	// MaxLine is the longest added line kept whole, in bytes; a longer
	// one is kept up to it and counted in File.LongLines. Zero means
	// DefaultMaxLine.
	MaxLine int
	// MaxFile bounds the added text kept of one file diff (File.Text);
	// added lines past it are counted in File.DroppedLines and
	// DroppedBytes. Zero means DefaultMaxFile.
	MaxFile int
}

// Commit is the commit a file diff belongs to.
type Commit struct {
	Hash    string
	Parents []string
	Author  string
	Email   string
	// Date is the author date as git writes it (%aI).
	Date string
}

// Merge reports whether the commit has more than one parent.
func (c *Commit) Merge() bool { return len(c.Parents) > 1 }

// Status says what a file diff does to its file.
type Status int

// The statuses of a File.
const (
	Modified Status = iota
	Added
	Deleted
	Renamed
	Copied
)

func (s Status) String() string {
	switch s {
	case Added:
		return "added"
	case Deleted:
		return "deleted"
	case Renamed:
		return "renamed"
	case Copied:
		return "copied"
	}
	return "modified"
}

// File is the diff of one file.
type File struct {
	// Commit is the commit of the diff; nil without a commit header
	// (git diff).
	Commit *Commit
	// OldPath is the path before the change (empty for an added file);
	// Path the path after it, or the old path of a deleted file.
	OldPath, Path string
	Status        Status
	// Binary is set for "Binary files … differ": no lines.
	Binary bool
	// Submodule is set for a change of a submodule's commit: its lines
	// are not kept.
	Submodule bool
	// Combined is set for a combined diff of a merge (diff --cc): its
	// lines are not kept.
	Combined bool
	// Text holds the lines the diff adds, in order, each ended by '\n'
	// (whether or not the file ends with one). Between added lines that
	// are not adjacent in the new file an empty line is put, so that
	// nothing matched across them joins lines the file keeps apart.
	Text []byte
	// Lines gives, for each line of Text, its 1-based number in the new
	// file; 0 for the empty lines put between runs.
	Lines []int
	// LongLines counts the added lines longer than Options.MaxLine, of
	// which Text holds the first MaxLine bytes.
	LongLines int
	// DroppedLines and DroppedBytes count the added lines, and their
	// bytes, left out of Text because it reached Options.MaxFile.
	DroppedLines int
	DroppedBytes int64
}

// Reader reads file diffs from git's output.
type Reader struct {
	br     *bufio.Reader
	opts   Options
	buf    []byte
	commit *Commit
	cur    *File
	// The hunk being read: old and new lines still expected, the next
	// line number in the new file, the number of the last line added.
	oldLeft, newLeft int
	next, last       int
	inHunk           bool
	lineNo           int
	err              error
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader, opts Options) *Reader {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	if opts.MaxFile <= 0 {
		opts.MaxFile = DefaultMaxFile
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), opts: opts}
}

// SyntaxError is a line of the input that is not what git writes there.
// It names the line's number, never its content.
type SyntaxError struct {
	Line int
	What string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("git output line %d: %s", e.Line, e.What)
}

// Next returns the next file diff, or io.EOF after the last. A file is
// returned once the line after its diff has been read: the caller may
// keep it, the Reader does not reuse it. After an error, Next returns it
// again.
func (r *Reader) Next() (*File, error) {
	if r.err != nil {
		return nil, r.err
	}
	for {
		line, long, err := r.readLine()
		if err == io.EOF {
			r.err = io.EOF
			if f := r.take(); f != nil {
				return f, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			r.err = err
			return nil, err
		}
		r.lineNo++
		if f, err := r.line(line, long); err != nil {
			r.err = err
			return nil, err
		} else if f != nil {
			return f, nil
		}
	}
}

// take ends the current file diff and returns it (nil if none).
func (r *Reader) take() *File {
	f := r.cur
	r.cur, r.inHunk = nil, false
	if f != nil && f.Path == "" {
		f.Path = f.OldPath
	}
	return f
}

// begin starts a file diff, returning the one it ends.
func (r *Reader) begin() *File {
	f := r.take()
	r.cur = &File{Commit: r.commit}
	r.last = 0
	return f
}

// line takes one line; it returns a file diff when the line ends one.
func (r *Reader) line(line []byte, long bool) (*File, error) {
	if r.inHunk {
		c := byte(' ') // an empty line is an empty context line (diff.suppressBlankEmpty)
		if len(line) > 0 {
			c = line[0]
		}
		switch c {
		case '+':
			r.add(line[1:], long)
			r.next++
			r.newLeft--
		case '-':
			r.oldLeft--
		case ' ':
			r.next++
			r.oldLeft--
			r.newLeft--
		case '\\': // "\ No newline at end of file"
		default:
			r.inHunk = false
		}
		if r.inHunk {
			if r.oldLeft <= 0 && r.newLeft <= 0 {
				r.inHunk = false
			}
			return nil, nil
		}
	}
	r.inHunk = false
	if long || len(line) > maxHeader {
		return nil, &SyntaxError{Line: r.lineNo, What: fmt.Sprintf("header line longer than %d bytes", maxHeader)}
	}
	s := string(line)
	switch {
	case len(s) > 0 && s[0] == 0:
		f := r.take()
		c, err := parseCommit(s[1:])
		if err != nil {
			return nil, &SyntaxError{Line: r.lineNo, What: err.Error()}
		}
		r.commit = c
		return f, nil
	case strings.HasPrefix(s, "diff --git "):
		f := r.begin()
		r.cur.OldPath, r.cur.Path = gitLinePaths(s[len("diff --git "):])
		return f, nil
	case strings.HasPrefix(s, "diff --cc ") || strings.HasPrefix(s, "diff --combined "):
		f := r.begin()
		r.cur.Combined = true
		_, name, _ := strings.Cut(s[len("diff --"):], " ")
		r.cur.Path = unquotePath(name)
		return f, nil
	}
	f := r.cur
	if f == nil || f.Combined {
		return nil, nil // outside a file diff (blank lines), or not read
	}
	switch {
	case strings.HasPrefix(s, "@@ "):
		oldN, start, newN, err := parseHunk(s)
		if err != nil {
			return nil, &SyntaxError{Line: r.lineNo, What: err.Error()}
		}
		r.oldLeft, r.newLeft, r.next = oldN, newN, start
		r.inHunk = oldN > 0 || newN > 0
	case strings.HasPrefix(s, "--- "):
		if p, ok := diffPath(s[4:], "a/"); ok {
			f.OldPath = p
		} else {
			f.OldPath, f.Status = "", Added
		}
	case strings.HasPrefix(s, "+++ "):
		if p, ok := diffPath(s[4:], "b/"); ok {
			f.Path = p
		} else {
			f.Status = Deleted
		}
	case strings.HasPrefix(s, "rename from "):
		f.OldPath, f.Status = unquotePath(s[len("rename from "):]), Renamed
	case strings.HasPrefix(s, "rename to "):
		f.Path, f.Status = unquotePath(s[len("rename to "):]), Renamed
	case strings.HasPrefix(s, "copy from "):
		f.OldPath, f.Status = unquotePath(s[len("copy from "):]), Copied
	case strings.HasPrefix(s, "copy to "):
		f.Path, f.Status = unquotePath(s[len("copy to "):]), Copied
	case strings.HasPrefix(s, "new file mode "):
		f.Status, f.OldPath = Added, ""
		f.Submodule = f.Submodule || strings.HasPrefix(s[len("new file mode "):], "160000")
	case strings.HasPrefix(s, "deleted file mode "):
		f.Status = Deleted
		f.Submodule = f.Submodule || strings.HasPrefix(s[len("deleted file mode "):], "160000")
	case strings.HasPrefix(s, "index "):
		f.Submodule = f.Submodule || strings.HasSuffix(s, " 160000")
	case strings.HasPrefix(s, "Binary files ") && strings.HasSuffix(s, " differ"):
		f.Binary = true
		if strings.HasSuffix(s, " and /dev/null differ") {
			f.Status = Deleted
		} else if strings.HasPrefix(s, "Binary files /dev/null and ") {
			f.Status = Added
		}
	case s == "GIT binary patch":
		f.Binary = true
	}
	return nil, nil
}

// add appends an added line to the current file diff.
func (r *Reader) add(text []byte, long bool) {
	f := r.cur
	if f == nil || f.Combined || f.Submodule {
		return
	}
	if long || len(text) > r.opts.MaxLine {
		f.LongLines++
		text = text[:min(len(text), r.opts.MaxLine)]
	}
	gap := r.last != 0 && r.next != r.last+1
	need := len(text) + 1
	if gap {
		need++
	}
	if len(f.Text)+need > r.opts.MaxFile || f.DroppedLines > 0 {
		f.DroppedLines++
		f.DroppedBytes += int64(len(text) + 1)
		return
	}
	if gap {
		f.Text = append(f.Text, '\n')
		f.Lines = append(f.Lines, 0)
	}
	f.Text = append(f.Text, text...)
	f.Text = append(f.Text, '\n')
	f.Lines = append(f.Lines, r.next)
	r.last = r.next
}

// maxHeader bounds a line that is not an added line (a path is at most
// a few KiB, even C-quoted).
const maxHeader = 64 << 10

// readLine reads the next line without its '\n', keeping at most
// max(MaxLine, maxHeader) bytes plus the one-byte prefix of a diff line;
// long reports a line cut there. The returned slice is valid until the next call.
func (r *Reader) readLine() (line []byte, long bool, err error) {
	limit := max(r.opts.MaxLine, maxHeader) + 1
	r.buf = r.buf[:0]
	for {
		frag, err := r.br.ReadSlice('\n')
		if room := limit + 1 - len(r.buf); room > 0 {
			r.buf = append(r.buf, frag[:min(len(frag), room)]...)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(r.buf) > 0:
			err = nil
		case err != nil:
			return nil, false, err
		}
		line = r.buf
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		if len(line) > limit {
			return line[:limit], true, nil
		}
		return line, false, nil
	}
}

// parseCommit parses the fields of a commit header after its NUL.
func parseCommit(s string) (*Commit, error) {
	parts := strings.Split(s, "\x00")
	if len(parts) != 5 {
		return nil, errors.New("commit header without the five fields of gitdiff.Format")
	}
	if parts[0] == "" {
		return nil, errors.New("commit header without a hash")
	}
	return &Commit{Hash: parts[0], Parents: strings.Fields(parts[1]), Author: parts[2], Email: parts[3], Date: parts[4]}, nil
}

// parseHunk parses "@@ -a[,b] +c[,d] @@…" into b, c and d.
func parseHunk(s string) (oldN, newStart, newN int, err error) {
	rest := s[len("@@ "):]
	end := strings.Index(rest, " @@")
	if end < 0 {
		return 0, 0, 0, errors.New("hunk header without closing @@")
	}
	oldR, newR, ok := strings.Cut(rest[:end], " ")
	if !ok || !strings.HasPrefix(oldR, "-") || !strings.HasPrefix(newR, "+") {
		return 0, 0, 0, errors.New("hunk header without -a,b +c,d ranges")
	}
	_, oldN, err1 := parseRange(oldR[1:])
	newStart, newN, err2 := parseRange(newR[1:])
	if err1 != nil || err2 != nil {
		return 0, 0, 0, errors.New("hunk header with a bad range")
	}
	if newN > 0 && newStart == 0 {
		return 0, 0, 0, errors.New("hunk header adding lines at line 0")
	}
	return oldN, newStart, newN, nil
}

// maxRange bounds the numbers of a hunk range (git's are ints).
const maxRange = 1 << 31

// parseRange parses "start[,count]"; count defaults to 1.
func parseRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err = strconv.Atoi(a)
	if err != nil || start < 0 || start > maxRange {
		return 0, 0, errors.New("bad range")
	}
	count = 1
	if hasCount {
		if count, err = strconv.Atoi(b); err != nil || count < 0 || count > maxRange {
			return 0, 0, errors.New("bad range")
		}
	}
	return start, count, nil
}

// diffPath reads the path of a "---" or "+++" line: quoted or not, with
// git's trailing tab (written after a name holding a space) removed and
// prefix stripped; ok is false for /dev/null.
func diffPath(s, prefix string) (string, bool) {
	if s == "/dev/null" {
		return "", false
	}
	var p string
	if strings.HasPrefix(s, `"`) {
		var rest string
		p, rest = unquoteToken(s)
		if rest != "" && rest != "\t" {
			p = s
		}
	} else {
		p = strings.TrimSuffix(s, "\t")
	}
	return strings.TrimPrefix(p, prefix), true
}

// gitLinePaths reads "a/OLD b/NEW" of a "diff --git" line. Unquoted names
// holding spaces are ambiguous unless both are the same; then both come
// back empty, for the lines that follow ("---", "+++", "rename to") to
// name them.
func gitLinePaths(s string) (oldPath, newPath string) {
	if strings.HasPrefix(s, `"`) || strings.HasSuffix(s, `"`) {
		var a, b string
		if strings.HasPrefix(s, `"`) {
			var rest string
			a, rest = unquoteToken(s)
			rest = strings.TrimPrefix(rest, " ")
			b, _ = unquoteToken(rest)
		} else if i := strings.LastIndex(s, ` "`); i >= 0 {
			a = s[:i]
			b, _ = unquoteToken(s[i+1:])
		}
		if strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") {
			return a[2:], b[2:]
		}
		return "", ""
	}
	if n := len(s); n%2 == 1 {
		a, b := s[:n/2], s[n/2+1:]
		if s[n/2] == ' ' && strings.HasPrefix(a, "a/") && strings.HasPrefix(b, "b/") && a[2:] == b[2:] {
			return a[2:], b[2:]
		}
	}
	return "", ""
}

// unquotePath decodes a path that git may have C-quoted.
func unquotePath(s string) string {
	if !strings.HasPrefix(s, `"`) {
		return s
	}
	p, rest := unquoteToken(s)
	if rest != "" {
		return s
	}
	return p
}

// unquoteToken decodes the C-quoted string at the start of s (which
// starts with '"'), as git's quote_c_style writes it, and returns it with
// what follows the closing quote. Without a closing quote it returns s
// whole and no rest.
func unquoteToken(s string) (string, string) {
	var b bytes.Buffer
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), s[i+1:]
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch c = s[i]; c {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case '0', '1', '2', '3':
			if i+2 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) {
				b.WriteByte((c-'0')<<6 | (s[i+1]-'0')<<3 | (s[i+2] - '0'))
				i += 2
			} else {
				b.WriteByte(c)
			}
		default: // \\ and \" and anything git does not write
			b.WriteByte(c)
		}
	}
	return s, ""
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

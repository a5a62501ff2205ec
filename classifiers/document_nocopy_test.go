package classifiers

import (
	"archive/zip"
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"
)

// TestScanDocumentNoCopy checks that ScanDocumentNoCopy gives what
// ScanDocument gives, that only a plain text named (not an archive's
// member) shares the caller's bytes, and that the scan leaves the bytes
// as they were: a later change of the buffer changes nothing of the
// findings, nor of a member's or a binary's text.
func TestScanDocumentNoCopy(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: "a.txt", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("mail nora.petit@acme-data.fr"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		data   []byte
		shared bool // the Text is the data's bytes
	}{
		{"a.txt", []byte("mail nora.petit@acme-data.fr or call +33 6 12 34 56 78"), true},
		{"big.txt", bytes.Repeat([]byte("password = \"Zq8!vR2#mK9$wL4x\" nora.petit@acme-data.fr\n"), 30000), true},
		{"a.bin", append([]byte{0x7f, 'E', 'L', 'F', 0, 0, 1, 0}, []byte("db_password = \"Zq8!vR2#mK9$wL4x\"\x00")...), false},
		{"a.zip", zipped.Bytes(), false},
		{"empty.txt", nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			want, err := s.ScanDocument(ctx, c.name, bytes.Clone(c.data))
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Clone(c.data)
			got, err := s.ScanDocumentNoCopy(ctx, c.name, data)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, c.data) {
				t.Fatal("the scan changed its input")
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("ScanDocumentNoCopy differs from ScanDocument:\n%+v\n%+v", got, want)
			}
			if shared := len(got.Text) > 0 && unsafe.StringData(got.Text) == unsafe.SliceData(data); shared != c.shared {
				t.Fatalf("text shares the input: %v, want %v", shared, c.shared)
			}
			for i := range data {
				data[i] = 'x'
			}
			if !c.shared && !reflect.DeepEqual(got, want) {
				t.Fatal("a change of the input changed the document")
			}
			if !reflect.DeepEqual(got.Findings, want.Findings) {
				t.Fatal("the findings changed with the input")
			}
			found := len(got.Findings)
			for _, m := range got.Members {
				found += len(m.Findings)
				if unsafe.StringData(m.Text) == unsafe.SliceData(data) {
					t.Fatal("an archive member's text shares the input")
				}
			}
			if (found == 0) != (len(c.data) == 0) {
				t.Fatalf("%d findings", found)
			}
		})
	}
}

// isBinaryRef is isBinary written the plain way: every rune decoded.
func isBinaryRef(data []byte) bool {
	head := data[:min(len(data), binarySniffSize)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		r, size := utf8.DecodeRune(head[i:])
		if (r == utf8.RuneError && size == 1 && len(head)-i >= utf8.UTFMax) || (r < 0x20 && r != '\n' && r != '\r' && r != '\t' && r != '\f' && r != 0x1b) {
			bad++
		}
		i += size
	}
	return bad*10 > len(head)
}

func TestIsBinary(t *testing.T) {
	t.Parallel()
	cases := []struct {
		data   string
		binary bool
	}{
		{"plain text\nwith lines\r\n\tand tabs\f\x1b[0m", false},
		{"caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9e", false},
		{"\x7fELF\x02\x01\x01\x00", true},
		{"a\x01b\x02c\x03d\x04e\x05", true},
		{"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6\xf5\xf4", true},
		{strings.Repeat("text ", 30) + "\x01\x02", false},
		{"ends in a cut sequence \xe2\x82", false},
	}
	for _, c := range cases {
		if got := isBinary([]byte(c.data)); got != c.binary || got != isBinaryRef([]byte(c.data)) {
			t.Errorf("isBinary(%q) = %v, want %v", c.data, got, c.binary)
		}
	}
}

func FuzzIsBinary(f *testing.F) {
	f.Add([]byte("plain text\n"))
	f.Add([]byte("\x01\x02\x03 caf\xc3\xa9 \xff"))
	f.Add(bytes.Repeat([]byte("\xe2\x82\xac\x1f"), 3000))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := isBinary(data), isBinaryRef(data); got != want {
			t.Fatalf("isBinary(%q) = %v, want %v", data, got, want)
		}
	})
}

// TestASCII8 checks the word-at-a-time tests against each byte's, for
// every byte value in every place of a word of printable bytes.
func TestASCII8(t *testing.T) {
	t.Parallel()
	for place := range 8 {
		for v := range 256 {
			w := []byte("abcdefgh")
			w[place] = byte(v)
			x := uint64(0)
			for k := 7; k >= 0; k-- {
				x = x<<8 | uint64(w[k])
			}
			c := byte(v)
			if got, want := ascii8(x), c < 0x80 && c >= 0x20; got != want {
				t.Errorf("ascii8 with %#x at %d = %v", c, place, got)
			}
			if got, want := asciiPrintable8(x), c >= 0x20 && c < 0x7f; got != want {
				t.Errorf("asciiPrintable8 with %#x at %d = %v", c, place, got)
			}
		}
	}
}

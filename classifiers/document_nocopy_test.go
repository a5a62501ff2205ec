package classifiers

import (
	"archive/zip"
	"bytes"
	"context"
	"reflect"
	"testing"
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

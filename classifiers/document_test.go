package classifiers

import (
	"archive/zip"
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden and generated sample files")

// buildOffice writes a minimal Office Open XML package with the given parts.
func buildOffice(t testing.TB, parts map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	names = sortedCopy(names)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate, Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(parts[n]))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const labelGUID = "3f7b2c1e-8d4a-4c5e-9b6f-1a2b3c4d5e6f"

func sampleDOCX(t testing.TB) []byte {
	return buildOffice(t, map[string]string{
		"[Content_Types].xml": `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
			`<w:p><w:r><w:t>Board minutes (fictional)</w:t></w:r></w:p>` +
			`<w:p><w:r><w:t xml:space="preserve">Contact: </w:t></w:r><w:r><w:t>lea.bernard@acme-board.fr</w:t></w:r></w:p>` +
			`<w:p><w:r><w:t>Payment card on file:</w:t><w:tab/><w:t>4970 1012 3456 7899</w:t></w:r></w:p>` +
			`</w:body></w:document>`,
		"word/header1.xml": `<?xml version="1.0" encoding="UTF-8"?><w:hdr xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:p><w:r><w:t>CONFIDENTIAL</w:t></w:r></w:p></w:hdr>`,
		"docProps/custom.xml": `<?xml version="1.0" encoding="UTF-8"?><Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">` +
			`<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="2" name="MSIP_Label_` + labelGUID + `_Enabled"><vt:lpwstr>true</vt:lpwstr></property>` +
			`<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="3" name="MSIP_Label_` + labelGUID + `_Name"><vt:lpwstr>Highly Confidential</vt:lpwstr></property>` +
			`<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="4" name="MSIP_Label_` + labelGUID + `_SiteId"><vt:lpwstr>00000000-0000-0000-0000-000000000000</vt:lpwstr></property>` +
			`</Properties>`,
	})
}

// TestSampleDOCX keeps testdata/samples/board-minutes.docx in sync with
// sampleDOCX (go test -run TestSampleDOCX -update rewrites it) and checks
// what ScanDocument finds in it.
func TestSampleDOCX(t *testing.T) {
	t.Parallel()
	data := sampleDOCX(t)
	p := filepath.Join("..", "testdata", "samples", "board-minutes.docx")
	if *update {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	disk, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./classifiers -run TestSampleDOCX -update)", err)
	}
	if !bytes.Equal(disk, data) {
		t.Fatalf("%s is stale: run go test ./classifiers -run TestSampleDOCX -update", p)
	}
	s, _ := New(Options{})
	doc, err := s.ScanDocument(context.Background(), "board-minutes.docx", data)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Kind != "docx" || doc.Skipped {
		t.Fatalf("kind %q skipped %v note %q", doc.Kind, doc.Skipped, doc.Note)
	}
	got := map[string]string{}
	for _, f := range doc.Findings {
		got[f.Detector] = doc.Text[f.Start:f.End]
	}
	want := map[string]string{
		"pii.email":                "lea.bernard@acme-board.fr",
		"marker.classification":    "CONFIDENTIAL",
		"marker.sensitivity_label": "Highly Confidential",
	}
	for id, v := range want {
		if got[id] != v {
			t.Errorf("%s: got %q want %q (text %q)", id, got[id], v, doc.Text)
		}
	}
}

func TestScanDocumentKinds(t *testing.T) {
	t.Parallel()
	s, _ := New(Options{})
	xlsx := buildOffice(t, map[string]string{
		"xl/workbook.xml":          `<workbook/>`,
		"xl/sharedStrings.xml":     `<sst><si><t>email</t></si><si><t>nora.petit@acme-data.fr</t></si></sst>`,
		"xl/worksheets/sheet1.xml": `<worksheet><sheetData><row><c t="s"><v>0</v></c><c t="s"><v>1</v></c></row><row><c><v>42</v></c></row></sheetData></worksheet>`,
	})
	pptx := buildOffice(t, map[string]string{
		"ppt/presentation.xml":  `<p:presentation/>`,
		"ppt/slides/slide1.xml": `<p:sld xmlns:a="a"><a:p><a:r><a:t>TLP:RED</a:t></a:r></a:p></p:sld>`,
	})
	cases := []struct {
		name, kind string
		data       []byte
		skipped    bool
		detector   string
	}{
		{"a.txt", "text", []byte("mail me: nora.petit@acme-data.fr"), false, "pii.email"},
		{"a.xlsx", "xlsx", xlsx, false, "pii.email"},
		{"a.pptx", "pptx", pptx, false, "marker.tlp"},
		{"a.bin", "binary", []byte{0x7f, 'E', 'L', 'F', 0, 0, 1}, false, ""},
		{"a.zip", "zip", buildOffice(t, map[string]string{"x.txt": "hi"}), false, ""},
		{"bad.docx", "zip", []byte("PK\x03\x04garbage"), true, ""},
		{"latin1.txt", "text", []byte("caf\xe9 nora.petit@acme-data.fr"), false, "pii.email"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := s.ScanDocument(context.Background(), c.name, c.data)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Kind != c.kind || doc.Skipped != c.skipped {
				t.Fatalf("kind %q skipped %v note %q", doc.Kind, doc.Skipped, doc.Note)
			}
			if c.skipped && doc.Note == "" {
				t.Error("skipped without a note")
			}
			if c.detector != "" && (len(doc.Findings) == 0 || doc.Findings[0].Detector != c.detector) {
				t.Errorf("findings %+v", doc.Findings)
			}
		})
	}
}

func TestZipBombLimit(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", maxXMLPartSize+10)
	data := buildOffice(t, map[string]string{"word/document.xml": "<w:t>" + big + "</w:t>"})
	s, _ := New(Options{})
	doc, err := s.ScanDocument(context.Background(), "bomb.docx", data)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Skipped || !strings.Contains(doc.Note, "limit") {
		t.Fatalf("skipped %v note %q", doc.Skipped, doc.Note)
	}
}

func FuzzScanDocument(f *testing.F) {
	f.Add(sampleDOCX(f))
	f.Add([]byte("PK\x03\x04"))
	f.Add([]byte("plain text jean@acme.fr"))
	s, _ := New(Options{HashKey: []byte("k")})
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := s.ScanDocument(context.Background(), "f", data)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range doc.Findings {
			if x.Start < 0 || x.End > len(doc.Text) || x.Start >= x.End {
				t.Fatalf("span %d-%d out of %d", x.Start, x.End, len(doc.Text))
			}
		}
	})
}

func TestExtractText(t *testing.T) {
	data, err := os.ReadFile("../testdata/samples/board-minutes.docx")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := sc.ScanDocument(context.Background(), "board-minutes.docx", data)
	if err != nil {
		t.Fatal(err)
	}
	text, kind, ok, _ := ExtractText(data)
	if !ok || kind != "docx" || text != doc.Text {
		t.Fatalf("ExtractText = %q, %s, %v; ScanDocument read %q", text, kind, ok, doc.Text)
	}
	if _, kind, ok, note := ExtractText([]byte("\x00\x01binary")); ok || kind != "binary" || note == "" {
		t.Fatalf("binary: %s %v %q", kind, ok, note)
	}
	if text, kind, ok, _ := ExtractText([]byte("plain text")); !ok || kind != "text" || text != "plain text" {
		t.Fatalf("text: %q %s %v", text, kind, ok)
	}
}

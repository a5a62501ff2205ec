package classifiers

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/api"
)

// Test values: fictional people and keys, built so that validators pass.
var (
	testCard   = luhnComplete("497010123456789")
	testGitHub = makeGitHub("ghp", "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1")
	testAWSID  = "AKIAZ7XQ4LMN2PQRST3U"
	testAWSKey = "aws_secret_access_key = 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"
)

// labPDF is a one-page lab report naming a patient, her e-mail and card.
func labPDF(t testing.TB, compress bool) []byte {
	return buildPDF(t, []pdfPage{{compress: compress, content: "BT /F1 12 Tf 72 720 Td (Lab results \\(fictional\\)) Tj 0 -16 Td " +
		"(Patient: Mrs Jeanne Moreau) Tj 0 -16 Td [(jeanne.moreau@) -20 (acme-clinic.fr)] TJ " +
		"0 -16 Td (Card on file: " + testCard + ") Tj ET"}}, "")
}

// toUnicodeCMap maps the two-byte codes 0x0001-0x001A to a-z and 0x0020
// to a space, as a subsetting PDF producer writes it.
const toUnicodeCMap = `/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CMapName /Test def 1 begincodespacerange <0000> <FFFF> endcodespacerange
1 beginbfchar <0020> <0020> endbfchar
2 beginbfrange <0001> <001A> <0061> <0040> <0040> [<0040>] endbfrange
endcmap CMapName currentdict /CMap defineresource pop end end`

// cidHex encodes s (a-z, @, space, dot as space) in toUnicodeCMap's codes.
func cidHex(s string) string {
	var b strings.Builder
	b.WriteByte('<')
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteString("00")
			b.WriteString(strings.ToUpper(string("0123456789abcdef"[(r-'a'+1)>>4]) + string("0123456789abcdef"[(r-'a'+1)&15])))
		case r == '@':
			b.WriteString("0040")
		default:
			b.WriteString("0020")
		}
	}
	b.WriteByte('>')
	return b.String()
}

func TestExtractPDF(t *testing.T) {
	t.Parallel()
	encrypted := func(user, owner string) []byte {
		var out bytes.Buffer
		conf := pdfConf()
		conf.UserPW, conf.OwnerPW = user, owner
		if err := api.Encrypt(bytes.NewReader(labPDF(t, true)), &out, conf); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	good := labPDF(t, false)
	cases := []struct {
		name     string
		data     []byte
		want     []string // lines the text must hold
		notWant  []string
		skipNote string // when not readable: a word of the reason
	}{
		{"plain", good, []string{"Patient: Mrs Jeanne Moreau", "jeanne.moreau@acme-clinic.fr", "Card on file: " + testCard}, nil, ""},
		{"flate", labPDF(t, true), []string{"jeanne.moreau@acme-clinic.fr"}, nil, ""},
		{"two pages", buildPDF(t, []pdfPage{{content: "BT /F1 9 Tf (one) Tj ET"}, {content: "BT /F1 9 Tf (two) Tj T* (three) ' ET", compress: true}}, ""),
			[]string{"one", "two", "three"}, nil, ""},
		{"tounicode", buildPDF(t, []pdfPage{{content: "BT /F2 10 Tf " + cidHex("contact jean") + " Tj " + cidHex("@") + " Tj ET"}}, toUnicodeCMap),
			[]string{"contact jean@"}, nil, ""},
		{"escapes and octal", buildPDF(t, []pdfPage{{content: `BT /F1 9 Tf (caf\351 \(x\) a\\b) Tj ET`}}, ""), []string{`café (x) a\b`}, nil, ""},
		{"deeply nested arrays", buildPDF(t, []pdfPage{{content: "BT /F1 9 Tf " + strings.Repeat("[", 200000) + "(x)" + strings.Repeat("]", 200000) + " TJ (deep) Tj ET"}}, ""),
			[]string{"deep"}, nil, ""},
		{"inline image skipped", buildPDF(t, []pdfPage{{content: "BI /W 2 /H 1 /BPC 8 /CS /G ID \x00(Tj)\xff EI BT /F1 9 Tf (after) Tj ET"}}, ""),
			[]string{"after"}, []string{"Tj"}, ""},
		{"owner password only", encrypted("", "owner-secret"), []string{"jeanne.moreau@acme-clinic.fr"}, nil, ""},
		{"user password", encrypted("user-secret", "owner-secret"), nil, nil, "encrypted"},
		{"truncated", good[:len(good)/2], nil, nil, "unreadable"},
		{"garbage", []byte("%PDF-1.7\n\x00\x01\x02 not a pdf"), nil, nil, "unreadable"},
	}
	s, _ := New(Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := s.ScanDocument(context.Background(), "lab-results.pdf", c.data)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Kind != "pdf" {
				t.Fatalf("kind %q", doc.Kind)
			}
			if c.skipNote != "" {
				if !doc.Skipped || !strings.Contains(doc.Note, c.skipNote) {
					t.Fatalf("skipped %v note %q, want a note with %q", doc.Skipped, doc.Note, c.skipNote)
				}
				if _, _, ok, note := ExtractText(c.data); ok || note != doc.Note {
					t.Errorf("ExtractText ok %v note %q", ok, note)
				}
				return
			}
			if doc.Skipped {
				t.Fatalf("skipped: %s", doc.Note)
			}
			for _, w := range c.want {
				if !strings.Contains(doc.Text, w) {
					t.Errorf("text %q lacks %q", doc.Text, w)
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(doc.Text, w) {
					t.Errorf("text %q holds %q", doc.Text, w)
				}
			}
			if text, kind, ok, _ := ExtractText(c.data); !ok || kind != "pdf" || text != doc.Text {
				t.Errorf("ExtractText = %q, %s, %v; ScanDocument read %q", text, kind, ok, doc.Text)
			}
		})
	}
	doc, _ := s.ScanDocument(context.Background(), "lab.pdf", good)
	if got := detectors(doc.Findings); !slices.Contains(got, "pii.email") || !slices.Contains(got, "pii.credit_card") {
		t.Errorf("lab PDF findings %v, want pii.email and pii.credit_card", got)
	}
	// A text that mentions a PDF header is text.
	if doc, _ := s.ScanDocument(context.Background(), "notes.md", []byte("The file starts with %PDF-1.7, see above.")); doc.Kind != "text" {
		t.Errorf("kind %q", doc.Kind)
	}
	// One Scanner reads PDFs from several goroutines (go test -race).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			d, err := s.ScanDocument(context.Background(), "lab.pdf", good)
			if err != nil || d.Text != doc.Text {
				t.Errorf("concurrent read: %v, text %q", err, d.Text)
			}
		})
	}
	wg.Wait()
}

func detectors(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Detector)
	}
	return out
}

func buildZip(t testing.TB, members map[string][]byte, method uint16) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: method, Modified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(members[n])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func buildTar(t testing.TB, members map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(members[n])), Typeflag: tar.TypeReg, ModTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
		tw.Write(members[n])
	}
	tw.Close()
	return buf.Bytes()
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

func odf(t testing.TB, mimetype, content string) []byte {
	return buildZip(t, map[string][]byte{
		"mimetype":    []byte(mimetype),
		"content.xml": []byte(`<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"><office:font-face-decls><style:font-face xmlns:style="s" style:name="not body text"/></office:font-face-decls><office:body>` + content + `</office:body></office:document-content>`),
	}, zip.Store)
}

func TestScanDocumentFormats(t *testing.T) {
	t.Parallel()
	notes := []byte("Contact: nora.petit@acme-data.fr\n")
	secret := []byte("deploy key " + testGitHub + "\n")
	odt := odf(t, "application/vnd.oasis.opendocument.text", `<text:h>Minutes</text:h><text:p>Contact:<text:s/><text:span>nora.petit@acme-data.fr</text:span></text:p><text:p>TLP:RED</text:p>`)
	ods := odf(t, "application/vnd.oasis.opendocument.spreadsheet", `<table:table><table:table-row><table:table-cell><text:p>name</text:p></table:table-cell><table:table-cell><text:p>nora.petit@acme-data.fr</text:p></table:table-cell></table:table-row></table:table>`)
	odp := odf(t, "application/vnd.oasis.opendocument.presentation", `<draw:page xmlns:draw="d"><draw:frame><draw:text-box><text:p>Key: `+testGitHub+`</text:p></draw:text-box></draw:frame></draw:page>`)
	nested3 := buildZip(t, map[string][]byte{"l1.zip": buildZip(t, map[string][]byte{"l2.tar": buildTar(t, map[string][]byte{"deep.txt": secret})}, zip.Deflate)}, zip.Deflate)
	nested4 := buildZip(t, map[string][]byte{"l1.zip": buildZip(t, map[string][]byte{"l2.zip": buildZip(t, map[string][]byte{"l3.zip": buildZip(t, map[string][]byte{"deep.txt": secret}, zip.Deflate)}, zip.Deflate)}, zip.Deflate)}, zip.Deflate)

	type member struct{ name, kind, detector, note string }
	cases := []struct {
		name, kind string
		data       []byte
		detector   string   // a finding of the document itself
		members    []member // in order
		text       string   // a line the text holds
		skipNote   string
	}{
		{name: "minutes.odt", kind: "odt", data: odt, detector: "pii.email", text: "Contact: nora.petit@acme-data.fr\nTLP:RED\n"},
		{name: "sheet.ods", kind: "ods", data: ods, detector: "pii.email", text: "name \tnora.petit@acme-data.fr \t\n"},
		{name: "deck.odp", kind: "odp", data: odp, detector: "secret.github_token"},
		{name: "bundle.zip", kind: "zip", data: buildZip(t, map[string][]byte{"dir/notes.txt": notes, "keys/deploy.txt": secret, "empty/": nil}, zip.Deflate),
			members: []member{{"bundle.zip!dir/notes.txt", "text", "pii.email", ""}, {"bundle.zip!keys/deploy.txt", "text", "secret.github_token", ""}}},
		{name: "b.tar", kind: "tar", data: buildTar(t, map[string][]byte{"a/notes.txt": notes, "../../etc/x.txt": secret}),
			members: []member{{"b.tar!etc/x.txt", "text", "secret.github_token", ""}, {"b.tar!a/notes.txt", "text", "pii.email", ""}}},
		{name: "b.tar.gz", kind: "gzip", data: gz(t, buildTar(t, map[string][]byte{"notes.txt": notes})), members: []member{{"b.tar.gz!notes.txt", "text", "pii.email", ""}}},
		{name: "b.tgz", kind: "gzip", data: gz(t, buildTar(t, map[string][]byte{"notes.txt": notes})), members: []member{{"b.tgz!notes.txt", "text", "pii.email", ""}}},
		{name: "notes.txt.gz", kind: "gzip", data: gz(t, notes), members: []member{{"notes.txt.gz!notes.txt", "text", "pii.email", ""}}},
		{name: "docs.zip", kind: "zip", data: buildZip(t, map[string][]byte{"m.odt": odt, "lab.pdf": labPDF(t, true)}, zip.Deflate),
			members: []member{{"docs.zip!lab.pdf", "pdf", "pii.email", ""}, {"docs.zip!m.odt", "odt", "pii.email", ""}}},
		{name: "n3.zip", kind: "zip", data: nested3, members: []member{{"n3.zip!l1.zip!l2.tar!deep.txt", "text", "secret.github_token", ""}}},
		{name: "n4.zip", kind: "zip", data: nested4, members: []member{{"n4.zip!l1.zip!l2.zip!l3.zip", "zip", "", "nested more than 3 levels"}}},
		{name: "bomb.zip", kind: "zip", data: buildZip(t, map[string][]byte{"a.txt": notes, "zeros.txt": make([]byte, 4<<20)}, zip.Deflate),
			skipNote: "bomb.zip: member zeros.txt expands more than 100 times"},
		{name: "outer.zip", kind: "zip", data: buildZip(t, map[string][]byte{"a.txt": notes, "inner.zip": buildZip(t, map[string][]byte{"zeros.txt": make([]byte, 4<<20)}, zip.Deflate)}, zip.Store),
			members: []member{{"outer.zip!a.txt", "text", "pii.email", ""}, {"outer.zip!inner.zip", "zip", "", "outer.zip!inner.zip: member zeros.txt expands"}}},
		{name: "gzbomb.gz", kind: "gzip", data: gz(t, make([]byte, 8<<20)), skipNote: "expands more than 100 times"},
		{name: "corrupt.zip", kind: "zip", data: []byte("PK\x03\x04garbage"), skipNote: "corrupt.zip: zip archive that cannot be read"},
		{name: "corrupt.gz", kind: "gzip", data: []byte{0x1f, 0x8b, 8, 0, 0, 0}, skipNote: "gzip stream that cannot be read"},
	}
	s, _ := New(Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := s.ScanDocument(context.Background(), c.name, c.data)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Kind != c.kind {
				t.Fatalf("kind %q, want %q (note %q)", doc.Kind, c.kind, doc.Note)
			}
			if c.skipNote != "" {
				if !doc.Skipped || !strings.Contains(doc.Note, c.skipNote) {
					t.Fatalf("skipped %v note %q, want %q", doc.Skipped, doc.Note, c.skipNote)
				}
				if strings.Contains(doc.Note, "nora") {
					t.Fatalf("note quotes the content: %q", doc.Note)
				}
				return
			}
			if doc.Skipped {
				t.Fatalf("skipped: %s", doc.Note)
			}
			if c.detector != "" && !slices.Contains(detectors(doc.Findings), c.detector) {
				t.Errorf("findings %v, want %s", detectors(doc.Findings), c.detector)
			}
			if c.text != "" && !strings.Contains(doc.Text, c.text) {
				t.Errorf("text %q lacks %q", doc.Text, c.text)
			}
			if len(doc.Members) != len(c.members) {
				t.Fatalf("%d members, want %d", len(doc.Members), len(c.members))
			}
			for i, m := range doc.Members {
				w := c.members[i]
				if m.Name != w.name || m.Kind != w.kind || (w.note != "") != m.Skipped || !strings.Contains(m.Note, w.note) {
					t.Errorf("member %d = %q %q skipped %v %q, want %+v", i, m.Name, m.Kind, m.Skipped, m.Note, w)
				}
				if w.detector != "" && !slices.Contains(detectors(m.Findings), w.detector) {
					t.Errorf("member %s findings %v, want %s", m.Name, detectors(m.Findings), w.detector)
				}
				for _, f := range m.Findings {
					if f.Start < 0 || f.End > len(m.Text) {
						t.Errorf("member %s: span %d-%d outside its text", m.Name, f.Start, f.End)
					}
				}
			}
		})
	}
}

func TestArchiveTotalLimit(t *testing.T) {
	t.Parallel()
	// Members that compress poorly, together over the total limit.
	chunk := bytes.Repeat([]byte("0123456789abcdef"), (maxExtracted/3)/16+1)
	data := buildZip(t, map[string][]byte{"a.txt": chunk, "b.txt": chunk, "c.txt": chunk, "d.txt": chunk}, zip.Store)
	s, _ := New(Options{})
	doc, err := s.ScanDocument(context.Background(), "big.zip", data)
	if err != nil {
		t.Fatal(err)
	}
	if !doc.Skipped || !strings.Contains(doc.Note, "big.zip: uncompressed size over the 128 MiB limit") {
		t.Fatalf("skipped %v note %q", doc.Skipped, doc.Note)
	}
}

func TestExtractTextFormats(t *testing.T) {
	t.Parallel()
	archive := buildZip(t, map[string][]byte{"a.txt": []byte("hello"), "d/b.pdf": labPDF(t, true)}, zip.Deflate)
	withBinary := buildZip(t, map[string][]byte{"a.txt": []byte("hello"), "b.bin": {0x7f, 'E', 'L', 'F', 0, 0}}, zip.Deflate)
	cases := []struct {
		name     string
		data     []byte
		kind     string
		ok       bool
		contains string
	}{
		{"archive", archive, "zip", true, "== a.txt ==\nhello\n== d/b.pdf ==\nLab results (fictional)\n"},
		{"archive with binary", withBinary, "binary", false, ""},
		{"odt", odf(t, "application/vnd.oasis.opendocument.text", "<text:p>hi</text:p>"), "odt", true, "hi\n"},
		{"gz", gz(t, []byte("x")), "gzip", true, "== _ ==\nx\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, kind, ok, note := ExtractText(c.data)
			if kind != c.kind || ok != c.ok || !strings.Contains(text, c.contains) {
				t.Fatalf("ExtractText = %q, %q, %v, %q", text, kind, ok, note)
			}
			if !ok && !strings.Contains(note, "b.bin") {
				t.Errorf("note %q does not name the member", note)
			}
		})
	}
}

// buildGoBinary compiles a tiny Go program holding the given string
// constants and returns the executable.
func buildGoBinary(t *testing.T, values ...string) []byte {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build a test binary")
	}
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("package main\n\nimport \"os\"\n\nvar values = []string{\n")
	for _, v := range values {
		src.WriteString("\t" + strconvQuote(v) + ",\n")
	}
	src.WriteString("}\n\nfunc main() {\n\tfor _, v := range values {\n\t\tos.Stdout.WriteString(v)\n\t}\n}\n")
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tiny\n\ngo 1.22\n"), 0o644)
	cmd := exec.Command(gobin, "build", "-trimpath", "-o", "tiny")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tiny"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestScanDocumentBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	t.Parallel()
	// One build: a program holding PII-looking strings (never reported in
	// a binary) and keys; Go packs string constants back to back, so each
	// key is written as a configuration line ends, with a newline.
	bin := buildGoBinary(t, "Mrs Jeanne Moreau lives at 12 rue de la Paix\n", "call +33 6 12 34 56 78 or jeanne.moreau@acme-clinic.fr\n",
		"[default]\naws_access_key_id = "+testAWSID+"\n"+testAWSKey+"\n", "token: "+testGitHub+"\n")
	// The same program with the keys blanked out: the Go runtime's own
	// strings hold no secret.
	clean := bin
	for _, v := range []string{testGitHub, testAWSID, testAWSKey} {
		if !bytes.Contains(clean, []byte(v)) {
			t.Fatal("a key is not in the binary as written")
		}
		clean = bytes.ReplaceAll(clean, []byte(v), bytes.Repeat([]byte{'x'}, len(v)))
	}
	appended := append(slices.Clone(clean), []byte("\x00\x01\x02"+testAWSKey+"\x00\xff")...)
	// Strings of a program side by side are not an assignment.
	adjacent := append(slices.Clone(clean), []byte("\x00%s@%s's password: \x00userauth_kbdint\x00 --passwd-nonce=\x00 --no-protection\x00")...)
	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"go binary with keys and PII-looking strings", bin, []string{"secret.aws_access_key_id", "secret.aws_secret_access_key", "secret.github_token"}},
		{"keys blanked out", clean, nil},
		{"bytes appended", appended, []string{"secret.aws_secret_access_key"}},
		{"adjacent strings", adjacent, nil},
	}
	s, _ := New(Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := s.ScanDocument(context.Background(), "app.bin", c.data)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Kind != "binary" || doc.Skipped || len(doc.Text) != len(c.data) {
				t.Fatalf("kind %q skipped %v text %d bytes for %d", doc.Kind, doc.Skipped, len(doc.Text), len(c.data))
			}
			got := detectors(doc.Findings)
			slices.Sort(got)
			got = slices.Compact(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("findings %v, want %v", got, c.want)
			}
			for _, f := range doc.Findings {
				// offsets are offsets in the file
				if f.Category != CategorySecret || string(c.data[f.Start:f.End]) != doc.Text[f.Start:f.End] {
					t.Errorf("finding %s at %d-%d does not map to the file", f.Detector, f.Start, f.End)
				}
				lineStart := bytes.LastIndexByte(c.data[:f.Start], '\n') + 1
				if want := 1 + bytes.Count(c.data[:f.Start], []byte{'\n'}); f.Line != want || f.EndLine != want || f.Column != 1+utf8.RuneCount(c.data[lineStart:f.Start]) {
					t.Errorf("finding %s at line %d column %d, want line %d column %d of the file", f.Detector, f.Line, f.Column, want, 1+utf8.RuneCount(c.data[lineStart:f.Start]))
				}
			}
		})
	}
}

// stringsRef is printableRuns written the plain way: split into runs of
// printable runes, keep those of minLen or more.
func stringsRef(data []byte, minLen int) []byte {
	out := bytes.Repeat([]byte{'\n'}, len(data))
	type run struct{ lo, hi, n int }
	var runs []run
	cur := run{lo: -1}
	for i := 0; i < len(data); {
		r, size := rune(data[i]), 1
		if data[i] >= 0x80 {
			r, size = decodeRuneRef(data[i:])
		}
		ok := (r >= 0x20 && r < 0x7f) || r == '\t' || (r >= 0x80 && r != 0xfffd && isPrintableRune(r))
		if ok {
			if cur.lo < 0 {
				cur = run{lo: i}
			}
			cur.n++
			cur.hi = i + size
		} else if cur.lo >= 0 {
			runs = append(runs, cur)
			cur = run{lo: -1}
		}
		i += size
	}
	if cur.lo >= 0 {
		runs = append(runs, cur)
	}
	for _, r := range runs {
		if r.n >= minLen {
			copy(out[r.lo:r.hi], data[r.lo:r.hi])
		}
	}
	return out
}

func FuzzStrings(f *testing.F) {
	f.Add([]byte("\x00\x01hello world\x00short\x00caf\xc3\xa9-latte-ok\xff\xfe\nline two is long"))
	f.Add([]byte("\xe2\x80\x8b invisible \xef\xbf\xbd replacement char ok"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := printableRuns(data, minStringLen)
		if len(got) != len(data) {
			t.Fatalf("length %d, want %d", len(got), len(data))
		}
		if want := stringsRef(data, minStringLen); !bytes.Equal(got, want) {
			t.Fatalf("printableRuns(%q)\n = %q\nwant %q", data, got, want)
		}
		if !utf8Valid(got) {
			t.Fatalf("not valid UTF-8: %q", got)
		}
	})
}

func FuzzPDF(f *testing.F) {
	f.Add(labPDF(f, false))
	f.Add(labPDF(f, true))
	f.Add(buildPDF(f, []pdfPage{{content: "BT /F2 10 Tf <00010002> Tj [(a) -300 <0041>] TJ ET BI ID x EI"}}, toUnicodeCMap))
	f.Add([]byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj trailer << /Root 1 0 R >>"))
	s, _ := New(Options{HashKey: []byte("k")})
	f.Fuzz(func(t *testing.T, data []byte) {
		if !bytes.HasPrefix(data, []byte("%PDF-")) {
			data = append([]byte("%PDF-1.4\n"), data...)
		}
		doc, err := s.ScanDocument(context.Background(), "f.pdf", data)
		if err != nil {
			t.Fatal(err)
		}
		if doc.Skipped != (doc.Note != "") || !utf8Valid([]byte(doc.Text)) {
			t.Fatalf("skipped %v note %q, text valid %v", doc.Skipped, doc.Note, utf8Valid([]byte(doc.Text)))
		}
		// the content-stream reader alone, on the raw bytes
		_ = pdfText(data, map[string]*pdfFont{"F1": {codeLen: 1}, "F2": {codeLen: 2, cmap: parseToUnicode(data)}})
	})
}

func FuzzArchive(f *testing.F) {
	f.Add(buildZip(f, map[string][]byte{"a/b.txt": []byte("nora.petit@acme-data.fr"), "c.tar": buildTar(f, map[string][]byte{"d": []byte(testGitHub)})}, zip.Deflate))
	f.Add(gz(f, buildTar(f, map[string][]byte{"x.txt": []byte("hello")})))
	f.Add(buildTar(f, map[string][]byte{"x.gz": gz(f, []byte("hello"))}))
	f.Add(odf(f, "application/vnd.oasis.opendocument.text", "<text:p>x</text:p>"))
	s, _ := New(Options{HashKey: []byte("k")})
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := s.ScanDocument(context.Background(), "f", data)
		if err != nil {
			t.Fatal(err)
		}
		var check func(d *Document, depth int)
		check = func(d *Document, depth int) {
			if depth > maxArchiveDepth+1 {
				t.Fatalf("members nested %d deep", depth)
			}
			if d.Skipped && d.Note == "" {
				t.Fatalf("%s skipped without a note", d.Name)
			}
			for _, x := range d.Findings {
				if x.Start < 0 || x.End > len(d.Text) || x.Start >= x.End {
					t.Fatalf("%s: span %d-%d out of %d", d.Name, x.Start, x.End, len(d.Text))
				}
			}
			for _, m := range d.Members {
				if !strings.HasPrefix(m.Name, d.Name+"!") {
					t.Fatalf("member %q of %q", m.Name, d.Name)
				}
				check(m, depth+1)
			}
		}
		check(doc, 0)
		_, _, _, _ = ExtractText(data)
	})
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

func decodeRuneRef(b []byte) (rune, int) {
	r, n := utf8.DecodeRune(b)
	if r == utf8.RuneError && n == 1 {
		return -1, 1
	}
	return r, n
}

func strconvQuote(s string) string { return strconv.Quote(s) }

func benchDocument(b *testing.B, name string, data []byte) {
	s, err := New(Options{HashKey: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		doc, err := s.ScanDocument(context.Background(), name, data)
		if err != nil || doc.Skipped {
			b.Fatalf("err %v note %q", err, doc.Note)
		}
		n = len(doc.Findings)
		for _, m := range doc.Members {
			n += len(m.Findings)
		}
	}
	b.ReportMetric(float64(n), "findings")
}

// BenchmarkScanDocumentPDF1MB reads a PDF of about 1 MB of compressed
// page text (prose with an e-mail address every few lines).
func BenchmarkScanDocumentPDF1MB(b *testing.B) {
	var pages []pdfPage
	corpus := cleanCorpus(1 << 20)
	lines := strings.Split(string(corpus), "\n")
	for i := 0; i < len(lines); i += 60 {
		var c strings.Builder
		c.WriteString("BT /F1 10 Tf 72 760 Td\n")
		for k, l := range lines[i:min(i+60, len(lines))] {
			l = strings.NewReplacer("\\", "", "(", "", ")", "").Replace(l)
			if k%10 == 0 {
				l += " contact nora.petit@acme-data.fr"
			}
			c.WriteString("(" + l + ") Tj 0 -12 Td\n")
		}
		c.WriteString("ET")
		pages = append(pages, pdfPage{content: c.String(), compress: true})
	}
	benchDocument(b, "bench.pdf", buildPDF(b, pages, ""))
}

// BenchmarkScanDocumentZip1MB reads a zip of 64 text files of 16 KiB.
func BenchmarkScanDocumentZip1MB(b *testing.B) {
	corpus := denseCorpus(1 << 20)
	members := map[string][]byte{}
	for i := range 64 {
		members[fmt.Sprintf("dir/%02d.txt", i)] = corpus[i<<14 : (i+1)<<14]
	}
	benchDocument(b, "bench.zip", buildZip(b, members, zip.Deflate))
}

// BenchmarkScanDocumentBinary1MB reads 1 MB of random bytes holding a few
// strings and two keys.
func BenchmarkScanDocumentBinary1MB(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 5))
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	data[0] = 0x7f
	copy(data[1000:], "\x00"+testAWSKey+"\n\x00")
	copy(data[500000:], "\x00token: "+testGitHub+"\n\x00")
	benchDocument(b, "bench.bin", data)
}

package classifiers

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"strings"
	"testing"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pdfPage is one page of buildPDF: its content stream, and whether the
// stream is Flate-compressed.
type pdfPage struct {
	content  string
	compress bool
}

// buildPDF writes a valid PDF 1.4 with the given pages, each using the
// Helvetica font as /F1 and, when toUnicode is set, a Type0 font /F2
// with that ToUnicode CMap; the cross-reference table carries the exact
// byte offsets of every object.
func buildPDF(t testing.TB, pages []pdfPage, toUnicode string) []byte {
	t.Helper()
	var objs []string
	add := func(s string) int { objs = append(objs, s); return len(objs) }
	catalog := add("") // filled below
	pagesObj := add("")
	font1 := add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	fonts := fmt.Sprintf("/F1 %d 0 R", font1)
	if toUnicode != "" {
		cm := add(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(toUnicode)+1, toUnicode))
		f2 := add(fmt.Sprintf("<< /Type /Font /Subtype /Type0 /BaseFont /Custom /Encoding /Identity-H /ToUnicode %d 0 R >>", cm))
		fonts += fmt.Sprintf(" /F2 %d 0 R", f2)
	}
	var kids []string
	for _, p := range pages {
		var stream string
		if p.compress {
			var b bytes.Buffer
			zw := zlib.NewWriter(&b)
			zw.Write([]byte(p.content))
			zw.Close()
			stream = fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", b.Len(), b.String())
		} else {
			stream = fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(p.content), p.content)
		}
		c := add(stream)
		pg := add(fmt.Sprintf("<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Resources << /Font << %s >> >> /Contents %d 0 R >>", pagesObj, fonts, c))
		kids = append(kids, fmt.Sprintf("%d 0 R", pg))
	}
	objs[catalog-1] = fmt.Sprintf("<< /Type /Catalog /Pages %d 0 R >>", pagesObj)
	objs[pagesObj-1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), len(kids))
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, catalog, xref)
	return b.Bytes()
}

// pdfConf is a pdfcpu configuration that does not touch the user's
// configuration directory.
func pdfConf() *model.Configuration {
	return &model.Configuration{Version: model.VersionStr, Reader15: true, ValidationMode: model.ValidationRelaxed,
		Eol: types.EolLF, Limits: model.DefaultResourceLimits(), EncryptUsingAES: true, EncryptKeyLength: 256, Permissions: model.PermissionsPrint}
}

func TestBuildPDFValid(t *testing.T) {
	data := buildPDF(t, []pdfPage{{content: "BT /F1 12 Tf 72 700 Td (hello) Tj ET"}}, "")
	if err := api.Validate(bytes.NewReader(data), pdfConf()); err != nil {
		t.Fatalf("pdfcpu does not validate the test PDF: %v", err)
	}
}

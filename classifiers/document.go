package classifiers

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Document is the result of ScanDocument.
type Document struct {
	// Name is the name ScanDocument was given; for a member of an archive
	// it is the archive's name, "!" and the member's path
	// ("bundle.zip!docs/a.txt", "outer.zip!inner.tar.gz!b.txt").
	Name string
	// Kind is "text", "docx", "xlsx", "pptx", "odt", "ods", "odp", "pdf",
	// "binary" (its printable strings scanned for secrets), or for an
	// archive "zip", "tar" or "gzip".
	Kind string
	// Text is the extracted text the findings' spans refer to. For Office
	// files it is the body text followed, when the file carries a
	// sensitivity label, by a line "Sensitivity label: <name>". For a
	// binary file it has the file's length: its printable runs of at
	// least 8 characters where they are, every other byte a newline, so
	// spans are offsets in the file (and the findings' Line and Column
	// their place in the file). Empty for an archive.
	Text string
	// Skipped is true when nothing was scanned (an unreadable, encrypted
	// or over-limit file, an archive refused as a zip bomb or nested too
	// deep); Note says why, never quoting the content.
	Skipped bool
	Note    string
	// Findings in Text, sorted by Start.
	Findings []Finding
	// Members are the documents an archive holds, in archive order,
	// nested archives flattened into their members; each is scanned as a
	// document of its own.
	Members []*Document
}

// Limits against zip bombs and huge documents.
const (
	maxZipEntries   = 10000
	maxXMLPartSize  = 64 << 20  // uncompressed bytes read from one part
	maxExtracted    = 128 << 20 // total uncompressed bytes read from a document
	binarySniffSize = 8 << 10
	// maxArchiveDepth is how deep archives may nest: a member of a
	// member of a member of the file named.
	maxArchiveDepth = 3
	// maxArchiveRatio bounds uncompressed/compressed size of an archive
	// member (or a gzip stream) larger than minRatioCheck.
	maxArchiveRatio = 100
	minRatioCheck   = 1 << 20
	// maxArchiveMembers bounds the members of one archive, nested ones
	// included.
	maxArchiveMembers = 10000
	// minStringLen is the shortest printable run of a binary file
	// scanned, as strings(1) with -n 8.
	minStringLen = 8
)

// ScanDocument reads a file and scans its text: plain text; an Office
// Open XML file (DOCX, XLSX, PPTX, with the Microsoft sensitivity label
// from docProps/custom.xml); an OpenDocument file (ODT, ODS, ODP); a PDF;
// an archive (zip, tar, gzip, tar.gz), whose members are read as
// documents in turn (Members); a binary file, whose printable strings are
// scanned for secrets only (binaries are full of random printable runs
// that PII detectors would take for names and phone numbers). Reading is
// bounded (archive depth, total and per-member uncompressed size,
// compression ratio, PDF pages and time). A file that cannot be read
// (encrypted, corrupt, over a limit) comes back Skipped with a Note, never
// as an error; errors are scan errors (a custom pattern timeout, a
// cancelled context).
func (s *Scanner) ScanDocument(ctx context.Context, name string, data []byte) (*Document, error) {
	r := &docReader{s: s}
	return r.read(ctx, name, data, 0)
}

// ScanDocumentNoCopy is ScanDocument for a caller that leaves data
// unchanged for as long as it uses the Document: when data is plain text,
// the Document's Text is data itself rather than a copy of it. (The
// findings never refer to data: they hold their own masked previews.) A
// caller that reads many files into one buffer saves a copy of each.
func (s *Scanner) ScanDocumentNoCopy(ctx context.Context, name string, data []byte) (*Document, error) {
	r := &docReader{s: s, shareText: true}
	return r.read(ctx, name, data, 0)
}

// docReader reads a document and the members of an archive within the
// limits shared by the whole file; s nil only extracts text
// (ExtractText).
type docReader struct {
	s       *Scanner
	total   int64 // uncompressed bytes of archive members read
	members int
	// shareText makes the Text of a plain-text document named (not a
	// member of an archive) the bytes it was given.
	shareText bool
}

// read reads one document at archive depth depth.
func (r *docReader) read(ctx context.Context, name string, data []byte, depth int) (*Document, error) {
	doc := &Document{Name: name}
	skip := func(kind, note string) (*Document, error) {
		doc.Kind, doc.Skipped, doc.Note = kind, true, note
		return doc, nil
	}
	switch format := sniff(data); format {
	case "zip", "tar", "gzip":
		if format == "zip" {
			if kind, ok := officeKind(data); ok {
				return r.office(ctx, doc, data, kind)
			}
		}
		doc.Kind = format
		if depth >= maxArchiveDepth {
			return skip(format, fmt.Sprintf("archive nested more than %d levels deep, not read", maxArchiveDepth))
		}
		members, err := r.archive(ctx, name, format, data, depth)
		if err != nil {
			var ae *archiveError
			if errors.As(err, &ae) {
				return skip(format, ae.Error())
			}
			return doc, err
		}
		doc.Members = members
		return doc, nil
	case "pdf":
		text, err := extractPDF(ctx, data)
		if err != nil {
			var pe *PDFError
			if errors.As(err, &pe) {
				return skip("pdf", pe.Reason)
			}
			return doc, err
		}
		doc.Kind, doc.Text = "pdf", text
		return r.scanText(ctx, doc)
	case "binary":
		doc.Kind = "binary"
		if r.s == nil {
			return skip("binary", "binary file")
		}
		runs := printableRuns(data, minStringLen)
		doc.Text = bytesString(runs) // runs is never written again
		fs, err := r.s.Scan(ctx, runs)
		doc.Findings = secretsOnly(fs)
		placeInFile(data, doc.Findings)
		return doc, err
	}
	doc.Kind = "text"
	if r.shareText && depth == 0 {
		doc.Text = bytesString(data)
	} else {
		doc.Text = string(data)
	}
	if r.s == nil {
		return doc, nil
	}
	fs, err := r.s.Scan(ctx, data) // the bytes at hand, not a copy of Text
	doc.Findings = fs
	return doc, err
}

func (r *docReader) scanText(ctx context.Context, doc *Document) (*Document, error) {
	if r.s == nil {
		return doc, nil
	}
	// The scan only reads its input: the text's own bytes, not a copy.
	fs, err := r.s.Scan(ctx, stringBytes(doc.Text))
	doc.Findings = fs
	return doc, err
}

// bytesString is b as a string without a copy: b must not change while
// the string is in use.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// stringBytes is s as bytes without a copy, for functions that only read
// them.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// secretsOnly keeps the findings of secret detectors, in place.
func secretsOnly(fs []Finding) []Finding {
	out := fs[:0]
	for _, f := range fs {
		if f.Category == CategorySecret {
			out = append(out, f)
		}
	}
	return out
}

// sniff names the format of data from its first bytes: "zip", "gzip",
// "tar", "pdf", "binary" or "text".
func sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("PK\x03\x04")):
		return "zip"
	case bytes.HasPrefix(data, []byte{0x1f, 0x8b}):
		return "gzip"
	case len(data) >= 262 && string(data[257:262]) == "ustar":
		return "tar"
	case bytes.HasPrefix(data, []byte("%PDF-")):
		return "pdf"
	case isBinary(data):
		return "binary"
	}
	return "text"
}

// office reads an Office Open XML or OpenDocument file.
func (r *docReader) office(ctx context.Context, doc *Document, data []byte, kind string) (*Document, error) {
	var text, label string
	var err error
	if strings.HasPrefix(kind, "od") {
		text, err = extractODF(data)
	} else {
		text, kind, label, err = extractOffice(data)
	}
	if err != nil {
		doc.Kind, doc.Skipped, doc.Note = kind, true, err.Error()
		return doc, nil
	}
	doc.Kind = kind
	if r.s == nil {
		doc.Text = withLabel(text, label)
		return doc, nil
	}
	// The body is scanned alone: the label line appended below is
	// metadata, reported once as marker.sensitivity_label.
	fs, err := r.s.ScanString(ctx, text)
	var labelLo, labelHi int
	if label != "" {
		text = withLabel(text, label)
		labelHi = len(text) - 1
		labelLo = labelHi - len(label)
	}
	doc.Text = text
	if label != "" {
		line := strings.Count(text[:labelLo], "\n") + 1
		col := utf8.RuneCountInString(text[strings.LastIndexByte(text[:labelLo], '\n')+1:labelLo]) + 1
		fs = append(fs, Finding{Detector: sensitivityLabelID, Category: CategoryMarker, Start: labelLo, End: labelHi,
			Line: line, EndLine: line, Column: col, Confidence: 1, Preview: label, Hash: r.s.hash(strings.ToUpper(label))})
		fs = sortFindings(fs)
	}
	doc.Findings = fs
	return doc, err
}

// withLabel appends the line "Sensitivity label: <label>" to an Office
// body when label is not empty.
func withLabel(body, label string) string {
	if label == "" {
		return body
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body + "Sensitivity label: " + label + "\n"
}

// isBinary sniffs the start of data: NUL bytes, or many control bytes or
// invalid UTF-8 sequences, mean binary.
func isBinary(data []byte) bool {
	head := data[:min(len(data), binarySniffSize)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	bad := 0
	for i := 0; i < len(head); {
		if len(head)-i >= 8 && ascii8(binary.LittleEndian.Uint64(head[i:])) {
			i += 8
			continue
		}
		if c := head[i]; c < utf8.RuneSelf { // ASCII: no decoding
			if c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b {
				bad++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(head[i:])
		if r == utf8.RuneError && size == 1 && len(head)-i >= utf8.UTFMax {
			bad++
		}
		i += size
	}
	return bad*10 > len(head)
}

// officeReader reads parts of an Office zip within the size limits.
type officeReader struct {
	files map[string]*zip.File
	total int64
}

func (o *officeReader) read(name string) ([]byte, error) {
	f, ok := o.files[name]
	if !ok {
		return nil, nil
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer rc.Close()
	limit := min(int64(maxXMLPartSize), maxExtracted-o.total)
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: uncompressed size over the %d MiB limit (zip bomb?)", name, limit>>20)
	}
	o.total += int64(len(b))
	return b, nil
}

// extractOffice returns the text, the kind and the sensitivity label name of
// a DOCX, XLSX or PPTX.
func extractOffice(data []byte) (text, kind, label string, err error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", "", "", errors.New("zip archive that cannot be read")
	}
	if len(zr.File) > maxZipEntries {
		return "", "", "", fmt.Errorf("zip archive with %d entries (limit %d)", len(zr.File), maxZipEntries)
	}
	o := &officeReader{files: map[string]*zip.File{}}
	for _, f := range zr.File {
		o.files[f.Name] = f
	}
	var parts []string
	var extract func([]byte) (string, error)
	switch {
	case o.files["word/document.xml"] != nil:
		kind = "docx"
		parts = append(parts, "word/document.xml")
		parts = append(parts, matching(o.files, "word/header", "word/footer", "word/footnotes.xml", "word/endnotes.xml")...)
		extract = func(b []byte) (string, error) { return xmlText(b, "t", "p", "tab", "br") }
	case o.files["ppt/presentation.xml"] != nil:
		kind = "pptx"
		parts = matching(o.files, "ppt/slides/slide", "ppt/notesSlides/notesSlide")
		extract = func(b []byte) (string, error) { return xmlText(b, "t", "p", "tab", "br") }
	case o.files["xl/workbook.xml"] != nil:
		kind = "xlsx"
		text, err = xlsxText(o)
		if err != nil {
			return "", "", "", err
		}
	default:
		return "", "", "", errors.New("zip archive that is not a DOCX, XLSX or PPTX")
	}
	var sb strings.Builder
	for _, p := range parts {
		b, err := o.read(p)
		if err != nil {
			return "", "", "", err
		}
		t, err := extract(b)
		if err != nil {
			return "", "", "", fmt.Errorf("%s: %w", p, err)
		}
		if t != "" {
			sb.WriteString(t)
			if !strings.HasSuffix(t, "\n") {
				sb.WriteByte('\n')
			}
		}
	}
	if kind != "xlsx" {
		text = sb.String()
	}
	cb, err := o.read("docProps/custom.xml")
	if err != nil {
		return "", "", "", err
	}
	if cb != nil {
		label = sensitivityLabel(cb)
	}
	return text, kind, label, nil
}

// matching returns the part names starting with one of prefixes, in
// natural order (slide2 before slide10).
func matching(files map[string]*zip.File, prefixes ...string) []string {
	var out []string
	for n := range files {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) && strings.HasSuffix(n, ".xml") {
				out = append(out, n)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return naturalLess(out[i], out[j]) })
	return out
}

func naturalLess(a, b string) bool {
	na, nb := trailingNum(a), trailingNum(b)
	pa, pb := strings.TrimRight(strings.TrimSuffix(a, ".xml"), "0123456789"), strings.TrimRight(strings.TrimSuffix(b, ".xml"), "0123456789")
	if pa != pb {
		return pa < pb
	}
	return na < nb
}

func trailingNum(s string) int {
	s = strings.TrimSuffix(s, ".xml")
	i := len(s)
	for i > 0 && isDigit(s[i-1]) {
		i--
	}
	n, _ := strconv.Atoi(s[i:])
	return n
}

// xmlText concatenates the character data of elements named textEl, with a
// newline after each paraEl, a tab for tabEl and a newline for brEl (local
// names, any namespace).
func xmlText(b []byte, textEl, paraEl, tabEl, brEl string) (string, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = false
	var sb strings.Builder
	inText := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", errors.New("malformed XML")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case textEl:
				inText++
			case tabEl:
				sb.WriteByte('\t')
			case brEl:
				sb.WriteByte('\n')
			}
		case xml.EndElement:
			switch t.Name.Local {
			case textEl:
				inText--
			case paraEl:
				sb.WriteByte('\n')
			}
		case xml.CharData:
			if inText > 0 {
				sb.Write(t)
			}
		}
	}
	return sb.String(), nil
}

// xlsxText renders every worksheet as lines of tab-separated cells.
func xlsxText(o *officeReader) (string, error) {
	var shared []string
	if b, err := o.read("xl/sharedStrings.xml"); err != nil {
		return "", err
	} else if b != nil {
		dec := xml.NewDecoder(bytes.NewReader(b))
		var cur strings.Builder
		inT := false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				return "", errors.New("xl/sharedStrings.xml: malformed XML")
			}
			switch t := tok.(type) {
			case xml.StartElement:
				if t.Name.Local == "si" {
					cur.Reset()
				}
				inT = t.Name.Local == "t"
			case xml.EndElement:
				if t.Name.Local == "si" {
					shared = append(shared, cur.String())
				}
				inT = false
			case xml.CharData:
				if inT {
					cur.Write(t)
				}
			}
		}
	}
	var sb strings.Builder
	for _, p := range matching(o.files, "xl/worksheets/sheet") {
		b, err := o.read(p)
		if err != nil {
			return "", err
		}
		dec := xml.NewDecoder(bytes.NewReader(b))
		var cellType string
		var val strings.Builder
		inV, first := false, true
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				return "", fmt.Errorf("%s: malformed XML", p)
			}
			switch t := tok.(type) {
			case xml.StartElement:
				switch t.Name.Local {
				case "row":
					first = true
				case "c":
					cellType = ""
					for _, a := range t.Attr {
						if a.Name.Local == "t" {
							cellType = a.Value
						}
					}
					val.Reset()
				case "v", "t":
					inV = true
				}
			case xml.EndElement:
				switch t.Name.Local {
				case "v", "t":
					inV = false
				case "c":
					v := val.String()
					if cellType == "s" {
						if i, err := strconv.Atoi(v); err == nil && i >= 0 && i < len(shared) {
							v = shared[i]
						}
					}
					if !first {
						sb.WriteByte('\t')
					}
					sb.WriteString(v)
					first = false
				case "row":
					sb.WriteByte('\n')
				}
			case xml.CharData:
				if inV {
					val.Write(t)
				}
			}
		}
		if sb.Len() > maxExtracted {
			return "", errors.New("worksheet text over the size limit")
		}
	}
	return sb.String(), nil
}

// sensitivityLabel reads docProps/custom.xml for Microsoft Information
// Protection properties MSIP_Label_<guid>_Name (with _Enabled not "false")
// and returns the label name.
func sensitivityLabel(b []byte) string {
	dec := xml.NewDecoder(bytes.NewReader(b))
	props := map[string]string{}
	var name string
	var val strings.Builder
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "property" {
				name = ""
				for _, a := range t.Attr {
					if a.Name.Local == "name" {
						name = a.Value
					}
				}
				val.Reset()
				depth = 1
			} else if depth > 0 {
				depth++
			}
		case xml.EndElement:
			if t.Name.Local == "property" {
				if strings.HasPrefix(name, "MSIP_Label_") {
					props[name] = strings.TrimSpace(val.String())
				}
				depth = 0
			} else if depth > 0 {
				depth--
			}
		case xml.CharData:
			if depth > 0 {
				val.Write(t)
			}
		}
	}
	var labels []string
	for k, v := range props {
		if !strings.HasSuffix(k, "_Name") || v == "" {
			continue
		}
		base := strings.TrimSuffix(k, "_Name")
		if strings.EqualFold(props[base+"_Enabled"], "false") {
			continue
		}
		labels = append(labels, v)
	}
	sort.Strings(labels)
	return strings.Join(labels, "; ")
}

package classifiers

import (
	"context"
	"strings"
)

// ExtractText returns the text of a document as ScanDocument reads it,
// without scanning it: plain text as it is; for a DOCX, XLSX or PPTX its
// body text followed, when the file carries a sensitivity label, by a
// line "Sensitivity label: <name>"; the text of an ODT, ODS, ODP or PDF;
// for an archive (zip, tar, gzip) the text of each member after a line
// "== <member path> ==". kind is the Document kind ("text", "docx",
// "xlsx", "pptx", "odt", "ods", "odp", "odg", "odf", "pdf", "zip", "tar",
// "gzip"). ok is false for binary and unreadable files (kind "binary"),
// an archive holding one, and note says why (naming the member). It is
// for callers that classify the text with their own classifier (the
// guard's door for uploaded documents); the label is then found as text,
// not as a marker.sensitivity_label finding. Reading has the limits of
// ScanDocument.
func ExtractText(data []byte) (text, kind string, ok bool, note string) {
	r := &docReader{}
	doc, err := r.read(context.Background(), "", data, 0)
	if err != nil {
		return "", "binary", false, "unreadable document"
	}
	if doc.Skipped || doc.Kind == "binary" {
		return "", "binary", false, doc.Note
	}
	if doc.Members == nil && doc.Kind != "zip" && doc.Kind != "tar" && doc.Kind != "gzip" {
		return doc.Text, doc.Kind, true, ""
	}
	var sb strings.Builder
	for _, m := range doc.Members {
		name := strings.TrimPrefix(m.Name, "!")
		if m.Skipped || m.Kind == "binary" {
			return "", "binary", false, "archive member " + name + ": " + m.Note
		}
		sb.WriteString("== " + name + " ==\n")
		sb.WriteString(m.Text)
		if m.Text != "" && !strings.HasSuffix(m.Text, "\n") {
			sb.WriteByte('\n')
		}
	}
	return sb.String(), doc.Kind, true, ""
}

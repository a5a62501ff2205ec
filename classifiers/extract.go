package classifiers

import "strings"

// ExtractText returns the text of a document as ScanDocument reads it,
// without scanning it: plain text as it is, and for a DOCX, XLSX or PPTX
// its body text followed, when the file carries a sensitivity label, by a
// line "Sensitivity label: <name>". kind is "text", "docx", "xlsx" or
// "pptx". ok is false for binary and unreadable files (kind "binary"),
// and note says why. It is for callers that classify the text with their
// own classifier (the guard's door for uploaded documents); the label is
// then found as text, not as a marker.sensitivity_label finding.
func ExtractText(data []byte) (text, kind string, ok bool, note string) {
	if len(data) >= 4 && string(data[:4]) == "PK\x03\x04" {
		body, kind, label, err := extractOffice(data)
		if err != nil {
			return "", "binary", false, err.Error()
		}
		if label != "" {
			if body != "" && !strings.HasSuffix(body, "\n") {
				body += "\n"
			}
			body += "Sensitivity label: " + label + "\n"
		}
		return body, kind, true, ""
	}
	if isBinary(data) {
		return "", "binary", false, "binary file"
	}
	return string(data), "text", true, ""
}

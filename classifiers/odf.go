package classifiers

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// extractODF returns the text of an OpenDocument file (ODT, ODS, ODP,
// ODG): the character data of content.xml's office:body, a line per
// paragraph, heading, list item or table row, a tab between table cells.
// An encrypted document's content.xml is not XML and is reported so.
func extractODF(data []byte) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", errors.New("zip archive that cannot be read")
	}
	if len(zr.File) > maxZipEntries {
		return "", errors.New("zip archive with too many entries")
	}
	o := &officeReader{files: map[string]*zip.File{}}
	for _, f := range zr.File {
		o.files[f.Name] = f
	}
	if mf := o.files["META-INF/manifest.xml"]; mf != nil {
		if b, err := o.read("META-INF/manifest.xml"); err == nil && bytes.Contains(b, []byte("encryption-data")) {
			return "", errors.New("encrypted OpenDocument file (a password is needed to read it)")
		}
	}
	b, err := o.read("content.xml")
	if err != nil {
		return "", err
	}
	return odfText(b)
}

// odfText renders the office:body of an OpenDocument content.xml.
func odfText(b []byte) (string, error) {
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = false
	var sb strings.Builder
	inBody, inCell := 0, 0
	endLine := func() {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", errors.New("content.xml: malformed XML")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "body" {
				inBody++
				continue
			}
			if inBody == 0 {
				continue
			}
			switch t.Name.Local {
			case "table-cell", "covered-table-cell":
				inCell++
			case "s": // <text:s text:c="n"/> is n spaces
				n := 1
				for _, a := range t.Attr {
					if a.Name.Local == "c" {
						if v, err := strconv.Atoi(a.Value); err == nil && v > 0 {
							n = min(v, 64)
						}
					}
				}
				sb.WriteString(strings.Repeat(" ", n))
			case "tab":
				sb.WriteByte('\t')
			case "line-break":
				sb.WriteByte('\n')
			}
		case xml.EndElement:
			if t.Name.Local == "body" {
				inBody--
				continue
			}
			if inBody == 0 {
				continue
			}
			switch t.Name.Local {
			case "p", "h", "list-item":
				if inCell > 0 { // paragraphs of a cell share its line
					sb.WriteByte(' ')
				} else {
					endLine()
				}
			case "table-row":
				endLine()
			case "table-cell", "covered-table-cell":
				inCell = max(inCell-1, 0)
				sb.WriteByte('\t')
			}
		case xml.CharData:
			if inBody > 0 {
				sb.Write(t)
			}
		}
		if sb.Len() > maxExtracted {
			return "", errors.New("content.xml: text over the size limit")
		}
	}
	return sb.String(), nil
}

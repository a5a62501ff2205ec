package main

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
)

// The findings of a report are written by the functions of this file
// rather than through encoding/json's reflection: a large input has
// findings by the hundred thousand, and they are written one after the
// other while the workers scan. The bytes are those encoding/json writes
// (json.MarshalIndent for the JSON report, json.Encoder for JSON Lines),
// which FuzzFindingEncoding checks.

// appendFindingIndent appends sf as json.MarshalIndent(sf, prefix, "  ")
// writes it; ok is false when encoding/json would fail (a confidence
// that is not a number) and nothing is appended.
func appendFindingIndent(b []byte, sf *scanFinding, prefix string) (_ []byte, ok bool) {
	if !finite(sf.Confidence) {
		return b, false
	}
	in := "\n" + prefix + "  "
	b = append(b, '{')
	b = appendFindingFields(b, sf, true, in, `": `)
	return append(append(append(b, '\n'), prefix...), '}'), true
}

// appendJSONLFinding appends the JSON Lines finding line of sf in path as
// json.Encoder writes it (newline included); ok as appendFindingIndent.
func appendJSONLFinding(b []byte, path string, sf *scanFinding) (_ []byte, ok bool) {
	if !finite(sf.Confidence) {
		return b, false
	}
	b = append(b, `{"type":"finding","path":`...)
	b = appendJSONString(b, path)
	b = appendFindingFields(b, sf, false, "", `":`)
	return append(b, '}', '\n'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFindingFields appends the fields of sf in the order of its
// struct, each after a comma (but the first when first), then lead, and
// with colon after its name.
func appendFindingFields(b []byte, sf *scanFinding, first bool, lead, colon string) []byte {
	name := func(n string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, lead...)
		b = append(b, '"')
		b = append(b, n...)
		b = append(b, colon...)
	}
	str := func(n, v string) {
		name(n)
		b = appendJSONString(b, v)
	}
	num := func(n string, v int) {
		name(n)
		b = strconv.AppendInt(b, int64(v), 10)
	}
	str("detector", sf.Detector)
	str("category", string(sf.Category))
	num("start", sf.Start)
	num("end", sf.End)
	num("line", sf.Line)
	num("end_line", sf.EndLine)
	num("column", sf.Column)
	name("confidence")
	b = appendJSONFloat(b, sf.Confidence)
	str("preview", sf.Preview)
	for _, f := range [...]struct{ n, v string }{
		{"encoding", sf.Encoding}, {"fingerprint", sf.Fingerprint},
		{"commit", sf.Commit}, {"author", sf.Author}, {"email", sf.Email}, {"date", sf.Date},
	} {
		if f.v != "" {
			str(f.n, f.v)
		}
	}
	return b
}

// appendJSONFloat appends a finite f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 is written e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s quoted as encoding/json quotes a string:
// HTML's <, > and & escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendTextFinding appends the text report's line of finding x of the
// file at path, as fmt.Sprintf("%s:%d:%d: %s %s (confidence %.2f)\n")
// writes it.
func appendTextFinding(b []byte, path string, x *classifiers.Finding) []byte {
	b = append(b, path...)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(x.Line), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(x.Column), 10)
	b = append(b, ": "...)
	b = append(b, x.Detector...)
	b = append(b, ' ')
	b = append(b, x.Preview...)
	b = append(b, " (confidence "...)
	b = strconv.AppendFloat(b, x.Confidence, 'f', 2, 64)
	return append(b, ")\n"...)
}

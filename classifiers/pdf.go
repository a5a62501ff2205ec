package classifiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
	"golang.org/x/text/encoding/charmap"
)

// Limits of PDF reading.
const (
	maxPDFPages   = 5000
	maxPDFTime    = 20 * time.Second
	maxPDFContent = 32 << 20 // decoded content-stream bytes of one page
	maxCMapRange  = 1 << 16  // codes of one bfrange
)

// PDFError is a PDF that could not be read: its reason names the problem
// (encrypted, corrupt, over a limit), never the content.
type PDFError struct{ Reason string }

func (e *PDFError) Error() string { return e.Reason }

// extractPDF returns the text of a PDF's pages: the PDF structure (cross
// references, object streams, filters, decryption with the empty user
// password) is read with pdfcpu, the text operators of each page's
// content stream by pdfText, decoded with the font's ToUnicode map when
// it has one, WinAnsi otherwise. Pages, time and bytes are bounded; a
// panic inside is recovered and reported as an unreadable PDF.
func extractPDF(ctx context.Context, data []byte) (text string, err error) {
	defer func() {
		if r := recover(); r != nil {
			text, err = "", &PDFError{Reason: "unreadable PDF (the reader failed on its structure)"}
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, maxPDFTime)
	defer cancel()
	conf := &model.Configuration{
		Version:                   model.VersionStr,
		Reader15:                  true,
		ValidationMode:            model.ValidationRelaxed,
		UnsupportedResourcePolicy: model.UnsupportedResourceSkip,
		Eol:                       types.EolLF,
		Offline:                   true,
		Limits:                    model.DefaultResourceLimits(),
	}
	conf.Limits.MaxDecodeBytes = maxPDFContent
	conf.Limits.MaxStreamBytes = maxPDFContent
	pc, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(data), conf)
	if err != nil {
		return "", pdfReadError(ctx, err)
	}
	if err := pc.EnsurePageCount(); err != nil {
		return "", &PDFError{Reason: "unreadable PDF (no page tree)"}
	}
	if pc.PageCount > maxPDFPages {
		return "", &PDFError{Reason: fmt.Sprintf("PDF of %d pages (limit %d)", pc.PageCount, maxPDFPages)}
	}
	var sb strings.Builder
	cache := map[int]*pdfFont{} // fonts by object number, shared by pages
	for p := 1; p <= pc.PageCount; p++ {
		if ctx.Err() != nil {
			return "", pdfReadError(ctx, ctx.Err())
		}
		d, _, inh, err := pc.PageDict(p, true)
		if err != nil || d == nil {
			return "", &PDFError{Reason: fmt.Sprintf("unreadable PDF (page %d)", p)}
		}
		content, err := pc.PageContent(d, p)
		if err != nil && !errors.Is(err, model.ErrNoContent) {
			return "", &PDFError{Reason: fmt.Sprintf("unreadable PDF (content of page %d)", p)}
		}
		var res types.Dict
		if inh != nil {
			res = inh.Resources
		}
		fonts := pdfFonts(pc, res, cache)
		t := pdfText(content, fonts)
		sb.WriteString(t)
		if t != "" && !strings.HasSuffix(t, "\n") {
			sb.WriteByte('\n')
		}
		if sb.Len() > maxExtracted {
			return "", &PDFError{Reason: fmt.Sprintf("PDF text over the %d MiB limit", maxExtracted>>20)}
		}
	}
	return sb.String(), nil
}

func pdfReadError(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, pdfcpu.ErrWrongPassword):
		return &PDFError{Reason: "encrypted PDF (a password is needed to read it)"}
	case errors.Is(err, pdfcpu.ErrUnsupportedEncryptionFeature):
		return &PDFError{Reason: "encrypted PDF (unsupported encryption)"}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &PDFError{Reason: fmt.Sprintf("PDF not read within %s", maxPDFTime)}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return &PDFError{Reason: "unreadable PDF (corrupt or unsupported structure)"}
}

// pdfFont decodes the strings a font shows.
type pdfFont struct {
	// cmap maps codes (of 1 or 2 bytes, codeLen) to text.
	cmap    map[uint32]string
	codeLen int
}

// pdfFonts reads the fonts of a page's resources; cache holds the fonts
// already read, by object number.
func pdfFonts(pc *model.Context, res types.Dict, cache map[int]*pdfFont) map[string]*pdfFont {
	out := map[string]*pdfFont{}
	if res == nil {
		return out
	}
	fd, err := pc.DereferenceDict(res["Font"])
	if err != nil || fd == nil {
		return out
	}
	for name, o := range fd {
		ref, isRef := o.(types.IndirectRef)
		if isRef {
			if font, ok := cache[ref.ObjectNumber.Value()]; ok {
				out[name] = font
				continue
			}
		}
		f, err := pc.DereferenceDict(o)
		if err != nil || f == nil {
			continue
		}
		font := &pdfFont{codeLen: 1}
		if st := f.NameEntry("Subtype"); st != nil && *st == "Type0" {
			font.codeLen = 2
		}
		if tu, ok := f.Find("ToUnicode"); ok {
			if sd, _, err := pc.DereferenceStreamDict(tu); err == nil && sd != nil {
				if err := sd.Decode(); err == nil && len(sd.Content) <= maxPDFContent {
					font.cmap = parseToUnicode(sd.Content)
				}
			}
		}
		out[name] = font
		if isRef {
			cache[ref.ObjectNumber.Value()] = font
		}
	}
	return out
}

// decode turns the bytes of a shown string into text.
func (f *pdfFont) decode(b []byte) string {
	if f == nil {
		f = &pdfFont{codeLen: 1}
	}
	var sb strings.Builder
	if f.cmap != nil {
		for i := 0; i < len(b); {
			n := min(f.codeLen, len(b)-i)
			var code uint32
			for _, c := range b[i : i+n] {
				code = code<<8 | uint32(c)
			}
			if s, ok := f.cmap[code]; ok {
				sb.WriteString(s)
			} else if n == 2 {
				// a one-byte code in a two-byte font's map
				if s, ok := f.cmap[uint32(b[i])]; ok {
					sb.WriteString(s)
					i++
					continue
				}
			}
			i += n
		}
		return sb.String()
	}
	if f.codeLen == 2 { // CID font without a ToUnicode map: glyph IDs only
		return ""
	}
	if len(b) >= 2 && b[0] == 0xfe && b[1] == 0xff {
		return utf16BE(b[2:])
	}
	for _, c := range b {
		sb.WriteRune(charmap.Windows1252.DecodeByte(c))
	}
	return sb.String()
}

func utf16BE(b []byte) string {
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
	}
	return string(utf16.Decode(u))
}

// parseToUnicode reads the bfchar and bfrange sections of a ToUnicode
// CMap.
func parseToUnicode(b []byte) map[uint32]string {
	m := map[uint32]string{}
	lx := &pdfLexer{b: b}
	var ops []pdfToken
	hexCode := func(t pdfToken) (uint32, bool) {
		if t.kind != tokHex || len(t.s) == 0 || len(t.s) > 4 {
			return 0, false
		}
		var c uint32
		for _, x := range []byte(t.s) {
			c = c<<8 | uint32(x)
		}
		return c, true
	}
	for {
		t, ok := lx.next()
		if !ok {
			break
		}
		if t.kind != tokOp {
			ops = append(ops, t)
			if len(ops) > 1<<16 {
				ops = ops[:0]
			}
			continue
		}
		switch t.s {
		case "endbfchar":
			for i := 0; i+1 < len(ops); i += 2 {
				if c, ok := hexCode(ops[i]); ok && ops[i+1].kind == tokHex {
					m[c] = utf16BE([]byte(ops[i+1].s))
				}
			}
		case "endbfrange":
			for i := 0; i+2 < len(ops); i += 3 {
				lo, ok1 := hexCode(ops[i])
				hi, ok2 := hexCode(ops[i+1])
				if !ok1 || !ok2 || hi < lo || hi-lo >= maxCMapRange || len(m) > 4*maxCMapRange {
					continue
				}
				switch d := ops[i+2]; d.kind {
				case tokHex:
					base := []rune(utf16BE([]byte(d.s)))
					if len(base) == 0 {
						continue
					}
					for c := lo; c <= hi; c++ {
						r := append([]rune(nil), base...)
						r[len(r)-1] += rune(c - lo)
						m[c] = string(r)
					}
				case tokArray:
					for j, s := range d.arr {
						if lo+uint32(j) > hi {
							break
						}
						m[lo+uint32(j)] = utf16BE([]byte(s.s))
					}
				}
			}
		}
		ops = ops[:0]
	}
	return m
}

// pdfText renders the text a content stream shows: Tj, TJ, ' and "
// strings decoded with the current font (Tf), a line break for a move to
// another line (Td, TD, T*, Tm, ET) and a space for a wide TJ gap.
func pdfText(content []byte, fonts map[string]*pdfFont) string {
	var sb strings.Builder
	lx := &pdfLexer{b: content}
	var ops []pdfToken
	var font *pdfFont
	newline := func() {
		if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
			sb.WriteByte('\n')
		}
	}
	for sb.Len() <= maxExtracted {
		t, ok := lx.next()
		if !ok {
			break
		}
		if t.kind != tokOp {
			if len(ops) < 64 {
				ops = append(ops, t)
			}
			continue
		}
		switch t.s {
		case "Tf":
			if len(ops) >= 2 && ops[len(ops)-2].kind == tokName {
				font = fonts[ops[len(ops)-2].s]
			}
		case "Tj":
			if len(ops) >= 1 {
				sb.WriteString(font.decode([]byte(ops[len(ops)-1].s)))
			}
		case "'", "\"":
			newline()
			if len(ops) >= 1 {
				sb.WriteString(font.decode([]byte(ops[len(ops)-1].s)))
			}
		case "TJ":
			if len(ops) >= 1 && ops[len(ops)-1].kind == tokArray {
				for _, e := range ops[len(ops)-1].arr {
					switch e.kind {
					case tokString, tokHex:
						sb.WriteString(font.decode([]byte(e.s)))
					case tokNumber:
						if v, err := strconv.ParseFloat(e.s, 64); err == nil && v < -250 {
							sb.WriteByte(' ')
						}
					}
				}
			}
		case "Td", "TD":
			if len(ops) >= 2 {
				if v, err := strconv.ParseFloat(ops[len(ops)-1].s, 64); err == nil && v != 0 {
					newline()
				} else if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "\n") {
					sb.WriteByte(' ')
				}
			}
		case "T*", "Tm", "ET":
			newline()
		case "BI":
			lx.skipInlineImage()
		}
		ops = ops[:0]
	}
	s := sb.String()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

type pdfTokenKind int

const (
	tokOp pdfTokenKind = iota
	tokName
	tokNumber
	tokString
	tokHex
	tokArray
	tokDict
)

// pdfToken is a token of a content stream; strings hold their decoded
// bytes; arrays their elements (nested arrays are flattened away).
type pdfToken struct {
	kind pdfTokenKind
	s    string
	arr  []pdfToken
}

// pdfLexer tokenizes PDF content streams and CMaps (PDF 32000 §7.2,
// §7.3): never reads past its input, linear in it.
type pdfLexer struct {
	b []byte
	i int
}

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	return strings.IndexByte("()<>[]{}/%", c) >= 0
}

func (lx *pdfLexer) skipSpace() {
	for lx.i < len(lx.b) {
		c := lx.b[lx.i]
		switch {
		case isPDFSpace(c):
			lx.i++
		case c == '%':
			for lx.i < len(lx.b) && lx.b[lx.i] != '\n' && lx.b[lx.i] != '\r' {
				lx.i++
			}
		default:
			return
		}
	}
}

// next returns the next token; ok is false at the end of input.
func (lx *pdfLexer) next() (pdfToken, bool) {
	return lx.token(0)
}

func (lx *pdfLexer) token(depth int) (pdfToken, bool) {
	lx.skipSpace()
	if lx.i >= len(lx.b) {
		return pdfToken{}, false
	}
	c := lx.b[lx.i]
	switch {
	case c == '(':
		return pdfToken{kind: tokString, s: lx.literal()}, true
	case c == '<' && lx.i+1 < len(lx.b) && lx.b[lx.i+1] == '<':
		lx.i += 2
		return pdfToken{kind: tokDict, s: "<<"}, true
	case c == '>' && lx.i+1 < len(lx.b) && lx.b[lx.i+1] == '>':
		lx.i += 2
		return pdfToken{kind: tokDict, s: ">>"}, true
	case c == '<':
		return pdfToken{kind: tokHex, s: lx.hex()}, true
	case c == '[' && depth >= maxPDFArrayDepth:
		lx.skipArray()
		return pdfToken{kind: tokArray}, true
	case c == '[':
		lx.i++
		var arr []pdfToken
		for {
			lx.skipSpace()
			if lx.i >= len(lx.b) {
				break
			}
			if lx.b[lx.i] == ']' {
				lx.i++
				break
			}
			t, ok := lx.token(depth + 1)
			if !ok {
				break
			}
			if t.kind == tokArray || len(arr) >= 1<<16 {
				continue
			}
			arr = append(arr, t)
		}
		return pdfToken{kind: tokArray, arr: arr}, true
	case c == '/':
		lx.i++
		start := lx.i
		for lx.i < len(lx.b) && !isPDFSpace(lx.b[lx.i]) && !isPDFDelim(lx.b[lx.i]) {
			lx.i++
		}
		return pdfToken{kind: tokName, s: string(lx.b[start:lx.i])}, true
	case c == ')' || c == '>' || c == ']' || c == '{' || c == '}':
		lx.i++
		return pdfToken{kind: tokOp, s: string(c)}, true
	}
	start := lx.i
	for lx.i < len(lx.b) && !isPDFSpace(lx.b[lx.i]) && !isPDFDelim(lx.b[lx.i]) {
		lx.i++
	}
	s := string(lx.b[start:lx.i])
	if s != "" && (s[0] == '-' || s[0] == '+' || s[0] == '.' || isDigit(s[0])) {
		return pdfToken{kind: tokNumber, s: s}, true
	}
	return pdfToken{kind: tokOp, s: s}, true
}

// maxPDFArrayDepth bounds the arrays the lexer descends into; deeper
// ones are skipped without recursion.
const maxPDFArrayDepth = 8

// skipArray skips a [...] array, nested arrays and strings included,
// iteratively.
func (lx *pdfLexer) skipArray() {
	depth := 0
	for lx.i < len(lx.b) {
		switch lx.b[lx.i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				lx.i++
				return
			}
		case '(':
			lx.literal()
			continue
		case '%':
			lx.skipSpace()
			continue
		}
		lx.i++
	}
}

// literal reads a (string) with its escapes and balanced parentheses.
func (lx *pdfLexer) literal() string {
	lx.i++ // (
	var out []byte
	depth := 1
	for lx.i < len(lx.b) {
		c := lx.b[lx.i]
		lx.i++
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return string(out)
			}
		case '\\':
			if lx.i >= len(lx.b) {
				return string(out)
			}
			e := lx.b[lx.i]
			lx.i++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if lx.i < len(lx.b) && lx.b[lx.i] == '\n' {
					lx.i++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && lx.i < len(lx.b) && lx.b[lx.i] >= '0' && lx.b[lx.i] <= '7'; k++ {
						v = v*8 + int(lx.b[lx.i]-'0')
						lx.i++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return string(out)
}

// hex reads a <hex string>; an odd last digit is followed by 0.
func (lx *pdfLexer) hex() string {
	lx.i++ // <
	var out []byte
	var hi byte
	half := false
	for lx.i < len(lx.b) {
		c := lx.b[lx.i]
		lx.i++
		if c == '>' {
			break
		}
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			continue
		}
		if half {
			out = append(out, hi<<4|v)
		} else {
			hi = v
		}
		half = !half
	}
	if half {
		out = append(out, hi<<4)
	}
	return string(out)
}

// skipInlineImage skips an inline image's dictionary and data, up to
// and including its EI operator.
func (lx *pdfLexer) skipInlineImage() {
	id := bytes.Index(lx.b[lx.i:], []byte("ID"))
	if id < 0 {
		lx.i = len(lx.b)
		return
	}
	j := lx.i + id + 2
	for {
		k := bytes.Index(lx.b[j:], []byte("EI"))
		if k < 0 {
			lx.i = len(lx.b)
			return
		}
		e := j + k
		if isPDFSpace(lx.b[e-1]) && (e+2 == len(lx.b) || isPDFSpace(lx.b[e+2])) {
			lx.i = e + 2
			return
		}
		j = e + 2
	}
}

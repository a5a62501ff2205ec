package sdk

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/wire"
)

// This file is what the guard reads of a request before it decides: the
// URL path, the body's Content-Encoding and its media type. Each is read
// strictly, and what is sent is what was read (re-encoded from the parsed
// form), never raw bytes the guard did not interpret.

// ErrUnsupportedMedia is wrapped by the errors of request bodies the guard
// cannot read: a media type or a Content-Encoding it does not know, a
// document it cannot extract text from. Such a body is refused (415)
// unless the destination's passthrough paths cover the request's path.
var ErrUnsupportedMedia = errors.New("body the guard cannot read")

// ErrInvalidPath is wrapped by the errors of request paths the guard does
// not forward (see ValidatePath).
var ErrInvalidPath = errors.New("request path refused")

// ValidatePath checks the path of a request URL before it is forwarded.
// It refuses dot-segments ("." and "..", also with ";" parameters, as
// some servers read them), their percent-encoded forms, encoded slashes
// and backslashes ("%2f", "%5c"), any other escaped byte that a server
// could decode into one of these (a '%' that is itself escaped, "%25"),
// backslashes, NUL and control bytes, and empty segments ("//"), which a
// server or a path join may resolve so that the upstream serves another
// path than the one the guard decided for (escaping a base_url prefix).
// The error wraps ErrInvalidPath; it does not quote the path.
func ValidatePath(u *url.URL) error {
	bad := func(why string) error { return fmt.Errorf("%w: the path holds %s", ErrInvalidPath, why) }
	esc := u.EscapedPath()
	lower := strings.ToLower(esc)
	for _, e := range []struct{ enc, why string }{
		{"%2e", "an encoded dot"}, {"%2f", "an encoded slash"}, {"%5c", "an encoded backslash"},
		{"%00", "an encoded NUL"}, {"%25", "an encoded percent sign"},
	} {
		if strings.Contains(lower, e.enc) {
			return bad(e.why)
		}
	}
	p := u.Path
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\':
			return bad("a backslash")
		case c < 0x20 || c == 0x7f:
			return bad("a control character")
		}
	}
	if u.Opaque != "" {
		return bad("an opaque part")
	}
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return bad("no leading slash")
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if s == "" && i < len(segs)-1 {
			return bad("an empty segment")
		}
		name, _, _ := strings.Cut(s, ";")
		if name != "" && strings.Trim(name, ".") == "" {
			return bad("a dot-segment")
		}
	}
	return nil
}

// Bounds of the multipart reader.
const (
	maxParts = 1000
)

// requestBody is a request body as the guard read it: its texts (which a
// redaction rewrites), the texts of the documents it carries (which it
// cannot), what it could not read, and how to encode it again.
type requestBody struct {
	// json is the parsed JSON body, nil for the other types.
	json *wire.Request
	// segs are the texts of a body that is not JSON, set by set.
	segs []wire.Segment
	set  func(i int, text string)
	// encode re-encodes a body that is not JSON from its parsed form and
	// returns its Content-Type ("" keeps the request's).
	encode func() ([]byte, string, error)
	// docs are the texts extracted from documents: read, never rewritten.
	docs []docText
	// unread says what the guard could not read (a body of an unknown
	// type, a binary file part, a PDF), which only passthrough lets by.
	unread []string
	// raw: the whole body is unread and goes as it came.
	raw bool
}

// docText is the text of a document in a request; office holds the
// document's bytes when it is a DOCX, XLSX or PPTX (whose sensitivity
// label the scanner reports, see Guard.labelFindings).
type docText struct {
	role, text string
	office     []byte
}

// segments returns the rewritable texts.
func (b *requestBody) segments() []wire.Segment {
	if b.json != nil {
		return b.json.Segments
	}
	return b.segs
}

// readRequestBody reads body per its media type ct: JSON (application/json,
// any +json type, no Content-Type at all, and any body that is valid JSON
// whatever its label, since the upstream may parse it so) is parsed
// strictly; text/* is one text; an urlencoded form and multipart/form-data
// are decoded field by field and file by file; anything else is unread.
func readRequestBody(urlPath, ct string, body []byte) (*requestBody, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return &requestBody{json: &wire.Request{Kind: wire.KindGeneric}}, nil
	}
	media, params := "application/json", map[string]string(nil)
	if strings.TrimSpace(ct) != "" {
		var err error
		media, params, err = mime.ParseMediaType(ct)
		if err != nil {
			media = ""
		}
	}
	if media == "application/json" || strings.HasSuffix(media, "+json") || json.Valid(body) {
		wr, err := wire.ParseRequest(urlPath, body)
		if err != nil {
			return nil, err
		}
		rb := &requestBody{json: wr}
		rb.attachments(wr.Attachments)
		return rb, nil
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		// A JSON object followed by other bytes: a server decoding with a
		// streaming decoder (Go's json.Decoder) reads the object, an API
		// request, and ignores the rest, so it is neither a text nor a
		// JSON body. (A text starting with "[1]" stays a text.)
		var v json.RawMessage
		if json.NewDecoder(bytes.NewReader(t)).Decode(&v) == nil {
			return nil, fmt.Errorf("%w: a JSON value followed by other data", wire.ErrBody)
		}
	}
	switch {
	case media == "":
		return &requestBody{raw: true, unread: []string{"a body whose Content-Type does not parse"}}, nil
	case strings.HasPrefix(media, "text/"):
		return readText(body, params)
	case media == "application/x-www-form-urlencoded":
		return readForm(body)
	case media == "multipart/form-data":
		return readMultipart(body, params["boundary"])
	}
	return &requestBody{raw: true, unread: []string{fmt.Sprintf("a body of type %s", media)}}, nil
}

// utf8Charset reports whether a text's charset parameter is UTF-8 (or its
// subset US-ASCII, or absent).
func utf8Charset(params map[string]string) bool {
	switch strings.ToLower(params["charset"]) {
	case "", "utf-8", "utf8", "us-ascii":
		return true
	}
	return false
}

func readText(body []byte, params map[string]string) (*requestBody, error) {
	if !utf8Charset(params) {
		return &requestBody{raw: true, unread: []string{"a text body whose charset is not UTF-8"}}, nil
	}
	if !utf8.Valid(body) {
		return nil, fmt.Errorf("%w: text body that is not valid UTF-8", wire.ErrBody)
	}
	text := string(body)
	rb := &requestBody{segs: []wire.Segment{{Role: "user", Field: "body", Text: text}}}
	rb.set = func(_ int, s string) { text = s }
	rb.encode = func() ([]byte, string, error) { return []byte(text), "", nil }
	return rb, nil
}

// formPair is one field of an urlencoded form.
type formPair struct{ key, value string }

// parseForm decodes an application/x-www-form-urlencoded body into its
// fields in order ('+' is a space; a field without '=' has an empty
// value; empty fields between '&'s are dropped). A bad escape or a field
// that is not UTF-8 is an error.
func parseForm(body []byte) ([]formPair, error) {
	var out []formPair
	for _, f := range strings.Split(string(body), "&") {
		if f == "" {
			continue
		}
		k, v, _ := strings.Cut(f, "=")
		dk, err := url.QueryUnescape(k)
		if err != nil {
			return nil, fmt.Errorf("%w: form field name with a bad escape", wire.ErrBody)
		}
		dv, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("%w: form field value with a bad escape", wire.ErrBody)
		}
		if !utf8.ValidString(dk) || !utf8.ValidString(dv) {
			return nil, fmt.Errorf("%w: form field that is not UTF-8", wire.ErrBody)
		}
		out = append(out, formPair{dk, dv})
	}
	return out, nil
}

// encodeForm encodes fields as an urlencoded form, escaping every byte
// that is not unreserved, so that the upstream reads the fields the guard
// read (a ';' or a '&' in a value stays in it).
func encodeForm(fields []formPair) []byte {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(f.key))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(f.value))
	}
	return []byte(b.String())
}

func readForm(body []byte) (*requestBody, error) {
	fields, err := parseForm(body)
	if err != nil {
		return nil, err
	}
	rb := &requestBody{}
	for _, f := range fields {
		rb.segs = append(rb.segs, wire.Segment{Role: "user", Field: "form_key", Text: f.key},
			wire.Segment{Role: "user", Field: "form", Text: f.value})
	}
	rb.set = func(i int, s string) {
		if i%2 == 0 {
			fields[i/2].key = s
		} else {
			fields[i/2].value = s
		}
	}
	rb.encode = func() ([]byte, string, error) { return encodeForm(fields), "", nil }
	return rb, nil
}

// formPart is one part of a multipart/form-data body.
type formPart struct {
	name, filename string
	// file: the part has a filename parameter (possibly empty).
	file bool
	// contentType is the part's media type, "" when it declares none.
	contentType string
	data        []byte
}

// parseMultipart decodes a multipart/form-data body into its parts. Each
// part must be form-data with a name; a Content-Transfer-Encoding other
// than the identity ones (RFC 7578 deprecates it, and servers disagree
// about decoding it) is refused, as is a body without its closing
// delimiter or with more than maxParts parts. The preamble and epilogue
// are dropped.
func parseMultipart(body []byte, boundary string) ([]formPart, error) {
	if boundary == "" {
		return nil, fmt.Errorf("%w: multipart body without a boundary", wire.ErrBody)
	}
	mr := multipart.NewReader(bytes.NewReader(body), boundary)
	var parts []formPart
	for {
		p, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: multipart: %v", wire.ErrBody, err)
		}
		if len(parts) == maxParts {
			return nil, fmt.Errorf("%w: multipart body with more than %d parts", wire.ErrBody, maxParts)
		}
		switch strings.ToLower(strings.TrimSpace(p.Header.Get("Content-Transfer-Encoding"))) {
		case "", "7bit", "8bit", "binary":
		default:
			return nil, fmt.Errorf("%w: multipart part with a Content-Transfer-Encoding", ErrUnsupportedMedia)
		}
		if len(p.Header.Values("Content-Disposition")) != 1 || len(p.Header.Values("Content-Type")) > 1 {
			return nil, fmt.Errorf("%w: multipart part with a repeated header", wire.ErrBody)
		}
		disp, dp, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
		if err != nil || disp != "form-data" || dp["name"] == "" {
			return nil, fmt.Errorf("%w: multipart part without a form-data name", wire.ErrBody)
		}
		fp := formPart{name: dp["name"]}
		fp.filename, fp.file = dp["filename"]
		if ct := p.Header.Get("Content-Type"); ct != "" {
			mt, cp, err := mime.ParseMediaType(ct)
			if err != nil {
				return nil, fmt.Errorf("%w: multipart part whose Content-Type does not parse", wire.ErrBody)
			}
			fp.contentType = mime.FormatMediaType(mt, cp)
		}
		data, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("%w: multipart: %v", wire.ErrBody, err)
		}
		fp.data = data
		parts = append(parts, fp)
	}
	return parts, nil
}

// encodeMultipart encodes parts as multipart/form-data under a fresh
// boundary found in none of them, with only the headers the guard read
// (Content-Disposition with name and filename, Content-Type), and returns
// the body and its Content-Type.
func encodeMultipart(parts []formPart) ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for {
		var rnd [24]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, "", err
		}
		boundary := "aishield" + hex.EncodeToString(rnd[:])
		clash := false
		for _, p := range parts {
			if bytes.Contains(p.data, []byte(boundary)) {
				clash = true
				break
			}
		}
		if !clash {
			if err := w.SetBoundary(boundary); err != nil {
				return nil, "", err
			}
			break
		}
	}
	for _, p := range parts {
		params := map[string]string{"name": p.name}
		if p.file {
			params["filename"] = p.filename
		}
		disp := mime.FormatMediaType("form-data", params)
		if disp == "" {
			return nil, "", errors.New("a multipart part name cannot be encoded")
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", disp)
		if p.contentType != "" {
			h.Set("Content-Type", p.contentType)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			return nil, "", err
		}
		if _, err := pw.Write(p.data); err != nil {
			return nil, "", err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func readMultipart(body []byte, boundary string) (*requestBody, error) {
	parts, err := parseMultipart(body, boundary)
	if err != nil {
		return nil, err
	}
	rb := &requestBody{}
	// seg maps each segment to its part: the name (field -1), a field's
	// value (0) or a file's name (1).
	type ref struct{ part, field int }
	var refs []ref
	add := func(r ref, field, text string) {
		rb.segs = append(rb.segs, wire.Segment{Role: "user", Field: field, Text: text})
		refs = append(refs, r)
	}
	for i, p := range parts {
		add(ref{i, -1}, "form_key", p.name)
		if !p.file && utf8.Valid(p.data) {
			add(ref{i, 0}, "form", string(p.data))
			if json.Valid(p.data) {
				// A JSON field (a payload the upstream decodes): its
				// decoded strings are read too, strictly.
				wr, err := wire.ParseRequest("", p.data)
				if err != nil {
					return nil, fmt.Errorf("multipart field: %w", err)
				}
				for _, s := range wr.Segments {
					rb.docs = append(rb.docs, docText{role: "user", text: s.Text})
				}
				rb.attachments(wr.Attachments)
			}
			continue
		}
		if p.file {
			add(ref{i, 1}, "filename", p.filename)
		}
		rb.document(p.contentType, p.data, "a file part")
	}
	rb.set = func(i int, s string) {
		r := refs[i]
		switch r.field {
		case -1:
			parts[r.part].name = s
		case 0:
			parts[r.part].data = []byte(s)
		case 1:
			parts[r.part].filename = s
		}
	}
	rb.encode = func() ([]byte, string, error) { return encodeMultipart(parts) }
	return rb, nil
}

// attachments reads the documents a JSON body carries inline.
func (b *requestBody) attachments(atts []wire.Attachment) {
	for _, a := range atts {
		b.documentAs(a.Role, a.MediaType, a.Data, "an inline document")
	}
}

func (b *requestBody) document(contentType string, data []byte, what string) {
	b.documentAs("user", contentType, data, what)
}

// documentAs extracts the text of a document (plain text, DOCX, XLSX,
// PPTX, as "aishield scan" reads them) declared of type contentType; a
// document it cannot read (a PDF, a binary file) is unread.
func (b *requestBody) documentAs(role, contentType string, data []byte, what string) {
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/pdf" || bytes.HasPrefix(data, []byte("%PDF-")) {
		b.unread = append(b.unread, what+" in PDF (PDF text extraction is not supported)")
		return
	}
	text, kind, ok, note := classifiers.ExtractText(data)
	if !ok {
		b.unread = append(b.unread, fmt.Sprintf("%s that is not text nor an Office document (%s)", what, note))
		return
	}
	dt := docText{role: role, text: text}
	if kind != "text" {
		dt.office = data
	}
	b.docs = append(b.docs, dt)
}

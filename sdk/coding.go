package sdk

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/andybalholm/brotli"
)

// Content codings (RFC 9110 8.4) of request and response bodies: the guard
// reads a body only once it has undone them, and sends or delivers the
// plain body it read, never the coded bytes.

// maxCodings bounds the content codings of one body: real servers apply
// one.
const maxCodings = 4

// errCoding: a Content-Encoding the guard does not know, or too many. The
// request side answers it as ErrUnsupportedMedia, the response side as
// ErrUnreadableResponse.
var errCoding = errors.New("content coding the guard cannot undo")

// contentCodings returns the content codings of h in the order they were
// applied (a list, over every Content-Encoding field line), identity
// removed, lower-cased. Unknown codings and more than maxCodings are
// errCoding.
func contentCodings(h http.Header) ([]string, error) {
	var out []string
	for _, line := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(line, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			switch c {
			case "", "identity":
				continue
			case "gzip", "x-gzip", "deflate", "br":
			default:
				return nil, fmt.Errorf("%w: Content-Encoding %q", errCoding, clip(c, 32))
			}
			out = append(out, c)
		}
	}
	if len(out) > maxCodings {
		return nil, fmt.Errorf("%w: %d content codings (at most %d)", errCoding, len(out), maxCodings)
	}
	return out, nil
}

// clip returns s cut to n bytes (at a rune boundary), for messages.
func clip(s string, n int) string {
	if len(s) <= n {
		return strings.ToValidUTF8(s, "?")
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "?") + "…"
}

// decodedBody undoes codings (as returned by contentCodings) on body, the
// last applied first. The result reads the decoded bytes; closing it
// closes body. A corrupt coding surfaces as an error here (a bad header)
// or as a read error (the decoder's). The caller bounds what it reads.
func decodedBody(body io.ReadCloser, codings []string) (io.ReadCloser, error) {
	if len(codings) == 0 {
		return body, nil
	}
	var r io.Reader = body
	for i := len(codings) - 1; i >= 0; i-- {
		var err error
		switch codings[i] {
		case "gzip", "x-gzip":
			var zr *gzip.Reader
			if zr, err = gzip.NewReader(r); err == nil {
				zr.Multistream(true)
				r = zr
			}
		case "deflate":
			// RFC 9110 "deflate" is the zlib format; some servers send raw
			// DEFLATE data under that name, as browsers accept.
			br := bufio.NewReader(r)
			if head, perr := br.Peek(2); perr == nil && zlibHeader(head) {
				r, err = zlib.NewReader(br)
			} else {
				r = flate.NewReader(br)
			}
		case "br":
			r = brotli.NewReader(r)
		}
		if err != nil {
			body.Close()
			return nil, fmt.Errorf("the body's Content-Encoding %s does not decode: %w", codings[i], err)
		}
	}
	return &decoded{r: r, c: body}, nil
}

// zlibHeader reports whether b starts with a zlib header (RFC 1950:
// deflate method, a window of at most 32 KiB, the check bits).
func zlibHeader(b []byte) bool {
	return len(b) >= 2 && b[0]&0x0f == 8 && b[0]>>4 <= 7 && (uint16(b[0])<<8|uint16(b[1]))%31 == 0
}

type decoded struct {
	r io.Reader
	c io.Closer
}

func (d *decoded) Read(p []byte) (int, error) { return d.r.Read(p) }

func (d *decoded) Close() error { return d.c.Close() }

// decodeContent undoes codings on a whole body and returns the body they
// encoded, at most limit bytes (a larger one, a decompression bomb, is
// ErrTooLarge); a body that does not decode is an error naming the coding.
func decodeContent(body []byte, codings []string, limit int64) ([]byte, error) {
	if len(codings) == 0 {
		return body, nil
	}
	rc, err := decodedBody(io.NopCloser(bytes.NewReader(body)), codings)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	out, err := readLimited(rc, limit)
	switch {
	case errors.Is(err, ErrTooLarge):
		return nil, fmt.Errorf("the body decoded from Content-Encoding %s: %w", strings.Join(codings, ", "), err)
	case err != nil:
		return nil, fmt.Errorf("the body's Content-Encoding %s does not decode: %w", strings.Join(codings, ", "), err)
	}
	return out, nil
}

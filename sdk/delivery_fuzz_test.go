package sdk

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

// encodeWith applies codings to data in order, as a server does.
func encodeWith(t *testing.T, data []byte, codings []string) []byte {
	t.Helper()
	for _, c := range codings {
		var buf bytes.Buffer
		var w io.WriteCloser
		switch c {
		case "gzip", "x-gzip":
			w = gzip.NewWriter(&buf)
		case "deflate":
			w = zlib.NewWriter(&buf)
		case "br":
			w = brotli.NewWriter(&buf)
		default:
			t.Fatalf("coding %q", c)
		}
		_, _ = w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data = buf.Bytes()
	}
	return data
}

// FuzzContentCoding: any Content-Encoding field and body decode without
// panicking and never past the bound; a body encoded with the parsed
// codings, in order, decodes back to itself.
func FuzzContentCoding(f *testing.F) {
	f.Add("identity, gzip", []byte(`{"a":1}`))
	f.Add("gzip, br", []byte("hello"))
	f.Add("deflate", []byte{0x78, 0x9c, 0x03, 0x00})
	f.Add("br,identity,gzip", []byte{})
	f.Add("zstd", []byte("x"))
	f.Fuzz(func(t *testing.T, field string, data []byte) {
		const limit = 1 << 16
		codings, err := contentCodings(http.Header{"Content-Encoding": {field}})
		if err != nil {
			if !errors.Is(err, errCoding) {
				t.Fatalf("error %v does not wrap errCoding", err)
			}
			return
		}
		// Arbitrary bytes as the body.
		if rc, err := decodedBody(io.NopCloser(bytes.NewReader(data)), codings); err == nil {
			out, err := readLimited(rc, limit)
			if err == nil && len(out) > limit {
				t.Fatalf("%d bytes past the bound", len(out))
			}
		}
		if len(data) > limit {
			return
		}
		// The body as the server would have encoded it.
		rc, err := decodedBody(io.NopCloser(bytes.NewReader(encodeWith(t, data, codings))), codings)
		if err != nil {
			t.Fatal(err)
		}
		out, err := readLimited(rc, limit)
		if err != nil || !bytes.Equal(out, data) {
			t.Fatalf("round trip through %v: %v, %d bytes, want %d", codings, err, len(out), len(data))
		}
	})
}

// TestHardening07ContentCodings: Content-Encoding is one ordered list over
// all its field lines, identity dropped, names case-insensitive; unknown
// codings and more than maxCodings are refused.
func TestHardening07ContentCodings(t *testing.T) {
	for _, tc := range []struct {
		lines []string
		want  string // codings joined by "+", or "error"
	}{
		{[]string{"identity", "gzip"}, "gzip"},
		{[]string{"identity, gzip"}, "gzip"},
		{[]string{"GZIP , br"}, "gzip+br"},
		{[]string{"gzip", "identity", "br"}, "gzip+br"},
		{[]string{"deflate,,x-gzip"}, "deflate+x-gzip"},
		{[]string{""}, ""},
		{nil, ""},
		{[]string{"gzip", "zstd"}, "error"},
		{[]string{"compress"}, "error"},
		{[]string{"gzip, gzip, gzip, gzip, gzip"}, "error"},
	} {
		got, err := contentCodings(http.Header{"Content-Encoding": tc.lines})
		s := strings.Join(got, "+")
		if err != nil {
			s = "error"
			if !errors.Is(err, errCoding) {
				t.Errorf("%q: %v does not wrap errCoding", tc.lines, err)
			}
		}
		if s != tc.want {
			t.Errorf("%q: %q, want %q", tc.lines, s, tc.want)
		}
	}
}

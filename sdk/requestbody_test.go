package sdk

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"mime"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

func compressed(t testing.TB, coding string, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w interface {
		Write([]byte) (int, error)
		Close() error
	}
	switch coding {
	case "gzip":
		w = gzip.NewWriter(&buf)
	case "zlib":
		w = zlib.NewWriter(&buf)
	case "flate":
		w, _ = flate.NewWriter(&buf, flate.BestSpeed)
	case "br":
		w = brotli.NewWriter(&buf)
	}
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// FuzzDecodeContent: any body under any coding decodes within the limit or
// fails with an error, never panics, and a body that decodes is what was
// compressed.
func FuzzDecodeContent(f *testing.F) {
	text := []byte(`{"messages":[{"role":"user","content":"hello"}]}`)
	f.Add(compressed(f, "gzip", text), "gzip")
	f.Add(compressed(f, "zlib", text), "deflate")
	f.Add(compressed(f, "flate", text), "deflate")
	f.Add(compressed(f, "br", text), "br")
	f.Add(compressed(f, "gzip", make([]byte, 1<<16)), "gzip")
	f.Add(text, "identity")
	f.Add([]byte("\x1f\x8b\x08\x00garbage"), "gzip")
	f.Fuzz(func(t *testing.T, body []byte, coding string) {
		const limit = 1 << 16
		codings, err := contentCodings(map[string][]string{"Content-Encoding": {coding}})
		if err != nil {
			return
		}
		out, err := decodeContent(body, codings, limit)
		if err != nil {
			return
		}
		if len(out) > limit {
			t.Fatalf("%d bytes decoded over the limit %d", len(out), limit)
		}
		if len(codings) == 0 && !bytes.Equal(out, body) {
			t.Fatal("identity changed the body")
		}
	})
}

func TestDecodeContentBomb(t *testing.T) {
	for _, c := range []string{"gzip", "br"} {
		bomb := compressed(t, c, make([]byte, 4<<20))
		if _, err := decodeContent(bomb, []string{c}, 1<<20); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s bomb: %v", c, err)
		}
	}
}

// FuzzMultipart: a multipart body the walker accepts re-encodes, under a
// fresh boundary, into a body that reads back as the same parts.
func FuzzMultipart(f *testing.F) {
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nassistants\r\n--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.txt\"\r\nContent-Type: text/plain\r\n\r\nhello\r\n--B--\r\n"), "B")
	f.Add([]byte("preamble\r\n--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nx\r\n--Bx\r\n--B--\r\nepilogue"), "B")
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name*=utf-8''%C3%A9\r\n\r\n\r\n--B--"), "B")
	f.Add([]byte("--B\r\nContent-Disposition: form-data; name=\"a\"\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n=41\r\n--B--"), "B")
	f.Fuzz(func(t *testing.T, body []byte, boundary string) {
		parts, err := parseMultipart(body, boundary)
		if err != nil {
			return
		}
		out, ct, err := encodeMultipart(parts)
		if err != nil {
			return // a name that cannot be encoded: the request is refused
		}
		_, params, _ := mime.ParseMediaType(ct)
		back, err := parseMultipart(out, params["boundary"])
		if err != nil {
			t.Fatalf("the re-encoded body does not read: %v\n%q", err, out)
		}
		if len(back) != len(parts) {
			t.Fatalf("%d parts read back, %d sent", len(back), len(parts))
		}
		for i := range parts {
			if !reflect.DeepEqual(back[i], parts[i]) && !(len(back[i].data) == 0 && len(parts[i].data) == 0) {
				t.Fatalf("part %d: %+v read back as %+v", i, parts[i], back[i])
			}
		}
	})
}

// FuzzForm: a form the decoder accepts re-encodes into one that decodes
// to the same fields.
func FuzzForm(f *testing.F) {
	for _, s := range []string{"a=1&b=2", "q=hello+world%21&x=a%3Bb", "k&&=v&", "a=%zz", "%E9=%C3%A9", "a=b=c;d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fields, err := parseForm([]byte(body))
		if err != nil {
			return
		}
		back, err := parseForm(encodeForm(fields))
		if err != nil {
			t.Fatalf("re-encoded form does not decode: %v", err)
		}
		if len(fields) == 0 && len(back) == 0 {
			return
		}
		if !reflect.DeepEqual(back, fields) {
			t.Fatalf("%q: %q read back as %q", body, fields, back)
		}
	})
}

func TestValidatePath(t *testing.T) {
	for p, ok := range map[string]bool{
		"/v1/chat/completions": true, "/v1/chat/completions/": true, "": true, "/": true, "/v1/files/file-abc%20x": true,
		"/v1/..": false, "/./v1": false, "/v1/...": false, "/v1/.%2e/x": false, "/v1/a%2Fb": false, "/v1/%5C": false,
		"//v1": false, "/v1//x": false, "/v1/..;x/y": false, "/v1/%2525": false, "/v1/%00": false,
	} {
		u, err := url.Parse("http://h" + p)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidatePath(u); (err == nil) != ok || (err != nil && !errors.Is(err, ErrInvalidPath)) {
			t.Errorf("%q: %v", p, err)
		}
		if err != nil && strings.Contains(err.Error(), p) {
			t.Errorf("%q: the error quotes the path: %v", p, err)
		}
	}
}

// TestReadSized: a body that announced its size is read into one buffer
// of that size (no regrowth), and the limit holds whatever was announced.
func TestReadSized(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1<<20)
	allocs := func(size int64) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := readSized(bytes.NewReader(body), 2<<20, size); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The reader, the limit and one buffer; a body of unknown size grows
	// its buffer step by step.
	known, unknown := allocs(int64(len(body))), allocs(-1)
	t.Logf("%v allocations reading a 1 MiB body of known size, %v of unknown size", known, unknown)
	if known*3 > unknown {
		t.Errorf("%v allocations reading a 1 MiB body of known size (%v unknown): the buffer grew", known, unknown)
	}
	for _, announced := range []int64{-1, 10, 1 << 20, 8 << 20} {
		if _, err := readSized(bytes.NewReader(body), 1<<19, announced); !errors.Is(err, ErrTooLarge) {
			t.Errorf("announced %d: %v, want ErrTooLarge", announced, err)
		}
		got, err := readSized(bytes.NewReader(body), 2<<20, announced)
		if err != nil || !bytes.Equal(got, body) {
			t.Errorf("announced %d: %d bytes, %v", announced, len(got), err)
		}
	}
}

package sdk_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	goopenai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/upstreamtest"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// hardPolicy is the policy of the hardening tests: personal data is
// redacted, secrets and confidentiality markers block, and /v1/audio/*
// passes through unread.
const hardPolicy = `
name: hard
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*", "marker.classification", "marker.sensitivity_label"]
    level: restricted
default_level: restricted
destinations:
  - name: up
    max_level: internal
    action: redact
    block_at: restricted
    passthrough: ["/v1/audio/*"]
default:
  max_level: internal
  action: redact
  block_at: restricted
failure_mode: %s
`

// hardClient returns an HTTP client whose Transport guards with hardPolicy
// (failure mode mode), forcing destination "up", with its audit trail.
func hardClient(t testing.TB, mode string, maxBody int64) (*http.Client, *bytes.Buffer) {
	t.Helper()
	p, err := policies.Parse([]byte(strings.Replace(hardPolicy, "%s", mode, 1)), "yaml", "hard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var audit bytes.Buffer
	g := newGuard(t, sdk.Options{Policy: p, Audit: &audit})
	return &http.Client{Transport: &sdk.Transport{Guard: g, Destination: "up", MaxBody: maxBody}}, &audit
}

// post sends body to url with the given headers and returns the status,
// the X-Should-Retry header and the body of the answer.
func post(t testing.TB, c *http.Client, url string, body []byte, header map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Should-Retry"), string(b)
}

// wantRefused checks an answer is the guard's refusal with status and API
// error code, and that nothing reached the upstream.
func wantRefused(t testing.TB, rec *upstreamtest.Recorder, status int, code string, gotStatus int, retry, body string) {
	t.Helper()
	if gotStatus != status || retry != "false" || !strings.Contains(body, `"code":"`+code+`"`) && !strings.Contains(body, `"type":"`+code+`"`) {
		t.Fatalf("answer %d (X-Should-Retry %q) %s; want %d %s", gotStatus, retry, body, status, code)
	}
	if strings.Contains(body, "jean.dupont") || strings.Contains(body, "glpat-") {
		t.Fatalf("the refusal shows a value: %s", body)
	}
	if n := len(rec.Received()); n != 0 {
		t.Fatalf("the upstream received %d requests", n)
	}
}

// jsonStrings returns every string of a JSON document, decoded.
func jsonStrings(t testing.TB, data []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("upstream body is not JSON: %v", err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x + "\n")
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

const escapedEmail = `jean.dupont\u0040acme-corp.fr`

func escapedChat() []byte {
	return []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"write to ` + escapedEmail + `"}]}`)
}

func TestHardening02DuplicateKeys(t *testing.T) {
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"write to ` + email + `"}],"messages":[{"role":"user","content":"hello"}]}`)
	for _, mode := range []string{"closed", "open"} {
		for _, ct := range []string{"application/json", "text/plain", ""} {
			t.Run(mode+"/"+ct, func(t *testing.T) {
				rec := upstreamtest.New(t, upstreamtest.AnswerOK)
				c, _ := hardClient(t, mode, 0)
				h := map[string]string{}
				if ct != "" {
					h["Content-Type"] = ct
				}
				status, retry, got := post(t, c, rec.URL+"/v1/chat/completions", body, h)
				wantRefused(t, rec, 400, "aishield_unparsable", status, retry, got)
				if !strings.Contains(got, `duplicate object key \"messages\"`) {
					t.Fatalf("the refusal does not say why: %s", got)
				}
			})
		}
	}
}

func TestHardening03NotLabelledJSON(t *testing.T) {
	for _, ct := range []string{"text/plain", "application/octet-stream", "application/x-www-form-urlencoded", "text/plain; charset=utf-8"} {
		t.Run(ct, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, _ := hardClient(t, "closed", 0)
			status, _, got := post(t, c, rec.URL+"/v1/chat/completions", escapedChat(), map[string]string{"Content-Type": ct})
			if status != 200 {
				t.Fatalf("%d %s", status, got)
			}
			r := rec.Received()
			if len(r) != 1 {
				t.Fatalf("upstream received %d requests", len(r))
			}
			if s := jsonStrings(t, r[0].Body); strings.Contains(s, email) || !placeholderRE.MatchString(s) {
				t.Fatalf("the upstream, parsing the body as JSON, reads %q", s)
			}
		})
	}
}

// TestHardening03JSONPrefix: a body that is a JSON object followed by
// other bytes, which a streaming JSON decoder reads as the object alone,
// is refused whatever its label, not scanned as text.
func TestHardening03JSONPrefix(t *testing.T) {
	for _, ct := range []string{"text/plain", "application/octet-stream", "application/json"} {
		t.Run(ct, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, _ := hardClient(t, "open", 0)
			body := append(escapedChat(), " trailing"...)
			status, retry, got := post(t, c, rec.URL+"/v1/chat/completions", body, map[string]string{"Content-Type": ct})
			wantRefused(t, rec, 400, "aishield_unparsable", status, retry, got)
		})
	}
	t.Run("a text starting with a JSON array stays a text", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, _, got := post(t, c, rec.URL+"/v1/notes", []byte("[1] write to "+email), map[string]string{"Content-Type": "text/plain"})
		if r := rec.Received(); status != 200 || len(r) != 1 || bytes.Contains(r[0].Body, []byte(email)) {
			t.Fatalf("%d %s; upstream %q", status, got, r)
		}
	})
}

func TestHardening03ContentEncoding(t *testing.T) {
	plain := chatBody("write to " + email)
	for _, tc := range []struct {
		name, encoding string
		body           []byte
	}{
		{"gzip", "gzip", sdk.Compressed(t, "gzip", plain)},
		{"x-gzip", "x-gzip", sdk.Compressed(t, "gzip", plain)},
		{"deflate zlib", "deflate", sdk.Compressed(t, "zlib", plain)},
		{"deflate raw", "deflate", sdk.Compressed(t, "flate", plain)},
		{"br", "br", sdk.Compressed(t, "br", plain)},
		{"identity", "identity", plain},
		{"gzip then br", "gzip, br", sdk.Compressed(t, "br", sdk.Compressed(t, "gzip", plain))},
		{"identity then gzip", "identity, gzip", sdk.Compressed(t, "gzip", plain)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, _ := hardClient(t, "closed", 0)
			status, _, got := post(t, c, rec.URL+"/v1/chat/completions", tc.body,
				map[string]string{"Content-Type": "application/json", "Content-Encoding": tc.encoding})
			if status != 200 {
				t.Fatalf("%d %s", status, got)
			}
			r := rec.Received()
			if len(r) != 1 || r[0].Header.Get("Content-Encoding") != "" {
				t.Fatalf("upstream received %+v", r)
			}
			if s := jsonStrings(t, r[0].Body); strings.Contains(s, email) || !placeholderRE.MatchString(s) {
				t.Fatalf("upstream read %q", s)
			}
		})
	}
	t.Run("secret in gzip blocked", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, retry, got := post(t, c, rec.URL+"/v1/chat/completions", sdk.Compressed(t, "gzip", chatBody("deploy with "+secret)),
			map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"})
		wantRefused(t, rec, 403, "aishield_blocked", status, retry, got)
	})
	for _, tc := range []struct {
		name, encoding string
		body           []byte
		status         int
		code           string
	}{
		{"unknown coding", "compress", plain, 415, "unsupported_media_type"},
		{"unknown in a list", "gzip, zstd", sdk.Compressed(t, "gzip", plain), 415, "unsupported_media_type"},
		{"not gzip", "gzip", plain, 400, "aishield_unparsable"},
		{"truncated gzip", "gzip", sdk.Compressed(t, "gzip", plain)[:20], 400, "aishield_unparsable"},
		{"gzip bomb", "gzip", sdk.Compressed(t, "gzip", make([]byte, 8<<20)), 413, "request_too_large"},
		{"brotli bomb", "br", sdk.Compressed(t, "br", make([]byte, 8<<20)), 413, "request_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, _ := hardClient(t, "open", 1<<20)
			status, retry, got := post(t, c, rec.URL+"/v1/chat/completions", tc.body,
				map[string]string{"Content-Type": "application/json", "Content-Encoding": tc.encoding})
			wantRefused(t, rec, tc.status, tc.code, status, retry, got)
		})
	}
}

// TestHardening03FailOpenSendsPlain: a guard failure under failure_mode
// open sends the body as the guard decoded it, never the compressed bytes
// without their Content-Encoding.
func TestHardening03FailOpenSendsPlain(t *testing.T) {
	p, err := policies.Parse([]byte(strings.Replace(hardPolicy, "%s", "open", 1)), "yaml", "hard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g := newGuard(t, sdk.Options{Policy: p, Classifier: panicky{}})
	c := &http.Client{Transport: &sdk.Transport{Guard: g, Destination: "up"}}
	rec := upstreamtest.New(t, upstreamtest.AnswerOK)
	plain := chatBody("hello")
	status, _, got := post(t, c, rec.URL+"/v1/chat/completions", sdk.Compressed(t, "gzip", plain), map[string]string{"Content-Type": "application/json", "Content-Encoding": "gzip"})
	if r := rec.Received(); status != 200 || len(r) != 1 || !bytes.Equal(r[0].Body, plain) || r[0].Header.Get("Content-Encoding") != "" {
		t.Fatalf("%d %s; upstream received %q", status, got, r)
	}
}

func TestHardening03TypesReadOrRefused(t *testing.T) {
	t.Run("text redacted", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, _, got := post(t, c, rec.URL+"/v1/notes", []byte("write to "+email), map[string]string{"Content-Type": "text/plain"})
		if status != 200 {
			t.Fatalf("%d %s", status, got)
		}
		if r := rec.Received(); len(r) != 1 || strings.Contains(string(r[0].Body), email) || !placeholderRE.Match(r[0].Body) {
			t.Fatalf("upstream received %+v", r)
		}
	})
	t.Run("form redacted and re-encoded", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, _, got := post(t, c, rec.URL+"/v1/search", []byte("q=write+to+jean.dupont%40acme-corp.fr&x=a%3Bb"),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if status != 200 {
			t.Fatalf("%d %s", status, got)
		}
		r := rec.Received()
		if len(r) != 1 {
			t.Fatal("nothing sent")
		}
		sent := string(r[0].Body)
		if strings.Contains(strings.ToLower(sent), "jean.dupont") || !strings.Contains(sent, "&x=a%3Bb") || !strings.HasPrefix(sent, "q=write+to+%5B%5B") {
			t.Fatalf("upstream received %q", sent)
		}
	})
	t.Run("secret in a form blocked", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, retry, got := post(t, c, rec.URL+"/v1/search", []byte("q=GITLAB%3Dglpat-x9Kd7Lm2Qw8Rt4Vb6Yn1"),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		wantRefused(t, rec, 403, "aishield_blocked", status, retry, got)
	})
	t.Run("unknown type refused", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "open", 0)
		status, retry, got := post(t, c, rec.URL+"/v1/chat/completions", []byte("write to "+email),
			map[string]string{"Content-Type": "application/octet-stream"})
		wantRefused(t, rec, 415, "unsupported_media_type", status, retry, got)
	})
	t.Run("latin-1 text refused", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, retry, got := post(t, c, rec.URL+"/v1/notes", []byte("caf\xe9"), map[string]string{"Content-Type": "text/plain; charset=iso-8859-1"})
		wantRefused(t, rec, 415, "unsupported_media_type", status, retry, got)
	})
	t.Run("unknown type passes through where the policy says", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, audit := hardClient(t, "closed", 0)
		audio := []byte("ID3\x04\x00\x00\x00\x00\x00\x00binary audio")
		status, _, got := post(t, c, rec.URL+"/v1/audio/speech", audio, map[string]string{"Content-Type": "audio/mpeg"})
		if status != 200 {
			t.Fatalf("%d %s", status, got)
		}
		if r := rec.Received(); len(r) != 1 || !bytes.Equal(r[0].Body, audio) {
			t.Fatalf("upstream received %+v", r)
		}
		if !strings.Contains(audit.String(), `"passthrough":true`) || !strings.Contains(audit.String(), `"verdict":"unverified"`) {
			t.Fatalf("audit does not record the unverified passthrough: %s", audit.String())
		}
	})
}

// boardMinutes is a DOCX that "aishield scan" flags: a CONFIDENTIAL marker,
// an e-mail, a Highly Confidential sensitivity label.
func boardMinutes(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("../testdata/samples/board-minutes.docx")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openaiRec is an openai-go client through a guarded Transport to rec.
func openaiRec(rec *upstreamtest.Recorder, c *http.Client) *openai.Client {
	client := openai.NewClient(option.WithAPIKey("test-key"), option.WithBaseURL(rec.URL+"/v1/"),
		option.WithMaxRetries(0), option.WithHTTPClient(c))
	return &client
}

// apiStatus returns the HTTP status of an openai-go or anthropic-sdk-go
// error (0 when it is not an API error).
func apiStatus(err error) int {
	var oe *openai.Error
	if errors.As(err, &oe) {
		return oe.StatusCode
	}
	var ae *anthropic.Error
	if errors.As(err, &ae) {
		return ae.StatusCode
	}
	return 0
}

func TestHardening04MultipartUpload(t *testing.T) {
	ctx := context.Background()
	t.Run("confidential docx blocked (openai-go)", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		_, err := openaiRec(rec, c).Files.New(ctx, openai.FileNewParams{
			File:    openai.File(bytes.NewReader(boardMinutes(t)), "board-minutes.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
			Purpose: openai.FilePurposeAssistants})
		if apiStatus(err) != 403 || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	t.Run("confidential docx blocked (go-openai)", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		path := t.TempDir() + "/board-minutes.docx"
		if err := os.WriteFile(path, boardMinutes(t), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := goopenai.DefaultConfig("test-key")
		cfg.BaseURL, cfg.HTTPClient = rec.URL+"/v1", c
		_, err := goopenai.NewClientWithConfig(cfg).CreateFile(ctx, goopenai.FileRequest{FileName: "board-minutes.docx", FilePath: path, Purpose: "assistants"})
		var apiErr *goopenai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 403 || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	t.Run("e-mail in a text file blocked, not redactable in place", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		_, err := openaiRec(rec, c).Files.New(ctx, openai.FileNewParams{
			File:    openai.File(strings.NewReader(`{"messages":[{"role":"user","content":"write to `+email+`"}]}`+"\n"), "train.jsonl", "application/jsonl"),
			Purpose: openai.FilePurposeFineTune})
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 403 || !strings.Contains(oe.Message, "cannot be redacted in place") || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	t.Run("clean upload re-encoded from its parts", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		content := "The meeting is at noon.\n"
		if _, err := openaiRec(rec, c).Files.New(ctx, openai.FileNewParams{
			File: openai.File(strings.NewReader(content), "notes.txt", "text/plain"), Purpose: openai.FilePurposeAssistants}); err != nil {
			t.Fatal(err)
		}
		r := rec.Received()
		if len(r) != 1 {
			t.Fatal("nothing sent")
		}
		mt, params, err := mime.ParseMediaType(r[0].Header.Get("Content-Type"))
		if err != nil || mt != "multipart/form-data" || !strings.HasPrefix(params["boundary"], "aishield") {
			t.Fatalf("upstream Content-Type %q", r[0].Header.Get("Content-Type"))
		}
		mr := multipart.NewReader(bytes.NewReader(r[0].Body), params["boundary"])
		got := map[string]string{}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(p)
			got[p.FormName()+"|"+p.FileName()+"|"+p.Header.Get("Content-Type")] = string(b)
		}
		want := map[string]string{"purpose||": "assistants", "file|notes.txt|text/plain": content}
		if len(got) != len(want) || got["purpose||"] != want["purpose||"] || got["file|notes.txt|text/plain"] != content {
			t.Fatalf("upstream parts %q", got)
		}
	})
	t.Run("smuggled part and epilogue dropped", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		// A part whose content holds the boundary followed by other bytes
		// is one part to Go's reader; it is re-sent under a fresh boundary
		// so no reader can split it. The epilogue is not sent.
		body := "--B\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nassistants\r\n--Bx\r\nhidden\r\n--B--\r\nepilogue " + email
		status, _, got := post(t, c, rec.URL+"/v1/files", []byte(body), map[string]string{"Content-Type": "multipart/form-data; boundary=B"})
		if status != 200 {
			t.Fatalf("%d %s", status, got)
		}
		r := rec.Received()
		if len(r) != 1 || bytes.Contains(r[0].Body, []byte("--B\r\n")) || strings.Contains(string(r[0].Body), "epilogue") {
			t.Fatalf("upstream received %q", r)
		}
	})
	for _, tc := range []struct{ name, body, ct string }{
		{"transfer encoding refused", "--B\r\nContent-Disposition: form-data; name=\"a\"\r\nContent-Transfer-Encoding: base64\r\n\r\nZm9v\r\n--B--\r\n", "multipart/form-data; boundary=B"},
		{"pdf refused", "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7 binary\r\n--B--\r\n", "multipart/form-data; boundary=B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, _ := hardClient(t, "closed", 0)
			status, retry, got := post(t, c, rec.URL+"/v1/files", []byte(tc.body), map[string]string{"Content-Type": tc.ct})
			wantRefused(t, rec, 415, "unsupported_media_type", status, retry, got)
		})
	}
	t.Run("truncated multipart refused", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, retry, got := post(t, c, rec.URL+"/v1/files", []byte("--B\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue"),
			map[string]string{"Content-Type": "multipart/form-data; boundary=B"})
		wantRefused(t, rec, 400, "aishield_unparsable", status, retry, got)
	})
	t.Run("audio upload passes through, its fields read", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, audit := hardClient(t, "closed", 0)
		_, err := openaiRec(rec, c).Audio.Transcriptions.New(ctx, openai.AudioTranscriptionNewParams{
			File:   openai.File(bytes.NewReader([]byte("ID3\x04\x00\x00\x00binary\x00audio")), "a.mp3", "audio/mpeg"),
			Model:  openai.AudioModelGPTTranscribe,
			Prompt: openai.String("names: " + email)})
		r := rec.Received()
		if len(r) != 1 || bytes.Contains(r[0].Body, []byte(email)) || !placeholderRE.Match(r[0].Body) || !bytes.Contains(r[0].Body, []byte("binary\x00audio")) {
			t.Fatalf("err %v; upstream received %q", err, r)
		}
		if !strings.Contains(audit.String(), `"passthrough":true`) {
			t.Fatalf("audit: %s", audit.String())
		}
	})
}

// labelledDocx is a DOCX whose body is clean and whose sensitivity label
// is a name no text detector knows.
func labelledDocx(t testing.TB, label string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, content := range map[string]string{
		"word/document.xml": `<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r><w:t>The meeting is at noon.</w:t></w:r></w:p></w:body></w:document>`,
		"docProps/custom.xml": `<?xml version="1.0" encoding="UTF-8"?><Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/custom-properties" xmlns:vt="http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes">` +
			`<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="2" name="MSIP_Label_1_Enabled"><vt:lpwstr>true</vt:lpwstr></property>` +
			`<property fmtid="{D5CDD505-2E9C-101B-9397-08002B2CF9AE}" pid="3" name="MSIP_Label_1_Name"><vt:lpwstr>` + label + `</vt:lpwstr></property></Properties>`,
	} {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestHardening04SensitivityLabel: an uploaded Office document's
// sensitivity label is marker.sensitivity_label, as "aishield scan" reports
// it, whatever its name.
func TestHardening04SensitivityLabel(t *testing.T) {
	rec := upstreamtest.New(t, upstreamtest.AnswerOK)
	c, audit := hardClient(t, "closed", 0)
	_, err := openaiRec(rec, c).Files.New(context.Background(), openai.FileNewParams{
		File:    openai.File(bytes.NewReader(labelledDocx(t, "Falcon Board Only")), "memo.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
		Purpose: openai.FilePurposeAssistants})
	if apiStatus(err) != 403 || len(rec.Received()) != 0 || !strings.Contains(audit.String(), `"marker.sensitivity_label":1`) {
		t.Fatalf("err %v; upstream received %d; audit %s", err, len(rec.Received()), audit.String())
	}
}

func TestHardening04InlineDocuments(t *testing.T) {
	ctx := context.Background()
	b64 := base64.StdEncoding.EncodeToString
	t.Run("anthropic base64 pdf refused", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		client := anthropic.NewClient(anthropicoption.WithAPIKey("k"), anthropicoption.WithBaseURL(rec.URL),
			anthropicoption.WithMaxRetries(0), anthropicoption.WithHTTPClient(c))
		_, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
				anthropic.NewDocumentBlock(anthropic.Base64PDFSourceParam{Data: b64([]byte("%PDF-1.7 ..."))}),
				anthropic.NewTextBlock("summarise"))}})
		if apiStatus(err) != 415 || !strings.Contains(err.Error(), "PDF text extraction is not supported") || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	t.Run("anthropic content-source document read", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		client := anthropic.NewClient(anthropicoption.WithAPIKey("k"), anthropicoption.WithBaseURL(rec.URL),
			anthropicoption.WithMaxRetries(0), anthropicoption.WithHTTPClient(c))
		_, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-x", MaxTokens: 10,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(
				anthropic.NewDocumentBlock(anthropic.ContentBlockSourceParam{Content: anthropic.ContentBlockSourceContentUnionParam{
					OfContentBlockSourceContent: []anthropic.ContentBlockSourceContentItemUnionParam{{OfText: &anthropic.TextBlockParam{Text: "deploy with " + secret}}}}}),
				anthropic.NewTextBlock("summarise"))}})
		if apiStatus(err) != 403 || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	for _, tc := range []struct{ name, path, body string }{
		{"anthropic base64 text document", "/v1/messages", `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"text/plain","data":"` + b64([]byte("write to "+email)) + `"}}]}]}`},
		{"data: URL in image_url", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:text/plain;base64,` + b64([]byte("write to "+email)) + `"}}]}]}`},
		{"data: URL in an unknown field", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"metadata":{"note":"data:application/json;base64,` + b64([]byte(`{"to":"`+email+`"}`)) + `"}}`},
		{"bare base64 file_data", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.txt","file_data":"` + b64([]byte("write to "+email)) + `"}}]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, _ := hardClient(t, "closed", 0)
			status, retry, got := post(t, c, rec.URL+tc.path, []byte(tc.body), map[string]string{"Content-Type": "application/json"})
			wantRefused(t, rec, 403, "aishield_blocked", status, retry, got)
			if !strings.Contains(got, "cannot be redacted in place") {
				t.Fatalf("no reason: %s", got)
			}
		})
	}
	t.Run("openai-go file part with a secret", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		_, err := openaiRec(rec, c).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("summarise"),
				openai.FileContentPart(openai.ChatCompletionContentPartFileFileParam{Filename: openai.String("env.txt"),
					FileData: openai.String("data:text/plain;base64," + b64([]byte("deploy with "+secret)))})})}})
		if apiStatus(err) != 403 || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	t.Run("openai-go responses input_file docx", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		_, err := openaiRec(rec, c).Responses.New(ctx, responses.ResponseNewParams{Model: "gpt-4o",
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
					responses.ResponseInputContentParamOfInputText("summarise"),
					{OfInputFile: &responses.ResponseInputFileParam{Filename: openai.String("board-minutes.docx"),
						FileData: openai.String("data:application/vnd.openxmlformats-officedocument.wordprocessingml.document;base64," + b64(boardMinutes(t)))}},
				}, responses.EasyInputMessageRoleUser)}}})
		if apiStatus(err) != 403 || len(rec.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(rec.Received()))
		}
	})
	t.Run("clean inline document allowed as sent", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.txt","file_data":"data:text/plain;base64,` + b64([]byte("the meeting is at noon")) + `"}}]}]}`
		status, _, got := post(t, c, rec.URL+"/v1/chat/completions", []byte(body), map[string]string{"Content-Type": "application/json"})
		if r := rec.Received(); status != 200 || len(r) != 1 || string(r[0].Body) != body {
			t.Fatalf("%d %s; upstream %q", status, got, r)
		}
	})
	t.Run("invalid base64 refused", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		body := `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"%%%"}}]}]}`
		status, retry, got := post(t, c, rec.URL+"/v1/messages", []byte(body), map[string]string{"Content-Type": "application/json"})
		if status != 400 || retry != "false" || !strings.Contains(got, `"type":"error"`) || len(rec.Received()) != 0 {
			t.Fatalf("%d %s", status, got)
		}
	})
}

func TestHardening14DotSegments(t *testing.T) {
	for _, p := range []string{
		"/v1/../../secret", "/v1/chat/completions/..", "/v1/./chat/completions", "/v1/%2e%2e/secret", "/v1/%2E./secret",
		"/v1/a%2fb", "/v1/a%2Fb", "/v1/a%5cb", "/v1//chat/completions", "/v1/..;/secret", "/v1/%252e%252e/secret", "/v1/a%00b",
	} {
		t.Run(p, func(t *testing.T) {
			rec := upstreamtest.New(t, upstreamtest.AnswerOK)
			c, audit := hardClient(t, "open", 0)
			status, retry, got := post(t, c, rec.URL+p, chatBody("hello"), map[string]string{"Content-Type": "application/json"})
			wantRefused(t, rec, 400, "invalid_path", status, retry, got)
			if !strings.Contains(audit.String(), `"verdict":"not_sent"`) || !strings.Contains(audit.String(), `"failure":"parse"`) {
				t.Fatalf("the refusal is not in the audit trail: %s", audit.String())
			}
		})
	}
	t.Run("a plain path is sent as it is", func(t *testing.T) {
		rec := upstreamtest.New(t, upstreamtest.AnswerOK)
		c, _ := hardClient(t, "closed", 0)
		status, _, got := post(t, c, rec.URL+"/v1/chat/completions/?a=b", chatBody("hello"), map[string]string{"Content-Type": "application/json"})
		if r := rec.Received(); status != 200 || len(r) != 1 || r[0].URI != "/v1/chat/completions/?a=b" {
			t.Fatalf("%d %s; upstream %+v", status, got, r)
		}
	})
}

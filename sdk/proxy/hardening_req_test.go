package proxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/upstreamtest"
	"github.com/aishield/aishield/policies"
)

// hardProxy serves a proxy to u under the base_url prefix /tenantA:
// personal data is redacted, secrets and markers block, /v1/audio/* passes
// through unread.
func hardProxy(t testing.TB, u *upstreamtest.Recorder, maxBody int64) *httptest.Server {
	t.Helper()
	y := fmt.Sprintf(`name: hard
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*", "marker.classification", "marker.sensitivity_label"]
    level: restricted
default_level: restricted
destinations:
  - name: upstream
    base_url: %s/tenantA
    max_level: internal
    action: redact
    block_at: restricted
    passthrough: ["/v1/audio/*"]
default:
  max_level: internal
  action: block
`, u.URL)
	pol, err := policies.Parse([]byte(y), "yaml", "hard.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, hs := startProxy(t, Options{Policy: pol, MaxBody: maxBody})
	return hs
}

const hardEmail = "jean.dupont@acme-corp.fr"

var hardPlaceholder = regexp.MustCompile(`\[\[[A-Z][A-Z0-9_]*_[0-9a-f]{8}\]\]`)

// send posts body to the proxy with headers and returns the status and
// the answer.
func send(t testing.TB, url string, body []byte, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// refused checks an answer is a refusal with status and code, and that
// the upstream received nothing.
func refused(t testing.TB, u *upstreamtest.Recorder, status int, code string, gotStatus int, body string) {
	t.Helper()
	if gotStatus != status || !strings.Contains(body, `"code":"`+code+`"`) {
		t.Fatalf("answer %d %s; want %d %s", gotStatus, body, status, code)
	}
	if strings.Contains(body, "jean.dupont") {
		t.Fatalf("the refusal shows a value: %s", body)
	}
	if n := len(u.Received()); n != 0 {
		t.Fatalf("the upstream received %d requests", n)
	}
}

func TestHardening02DuplicateKeysProxy(t *testing.T) {
	u := upstreamtest.New(t, upstreamtest.AnswerOK)
	hs := hardProxy(t, u, 0)
	body := `{"model":"m","messages":[{"role":"user","content":"write to ` + hardEmail + `"}],"messages":[{"role":"user","content":"hello"}]}`
	status, got := send(t, hs.URL+"/v1/chat/completions", []byte(body), "Content-Type", "application/json")
	refused(t, u, 400, "aishield_unparsable", status, got)
}

func TestHardening03NotLabelledJSONProxy(t *testing.T) {
	u := upstreamtest.New(t, upstreamtest.AnswerOK)
	hs := hardProxy(t, u, 0)
	body := `{"model":"m","messages":[{"role":"user","content":"write to jean.dupont\u0040acme-corp.fr"}]}`
	status, got := send(t, hs.URL+"/v1/chat/completions", []byte(body), "Content-Type", "text/plain")
	r := u.Received()
	if status != 200 || len(r) != 1 {
		t.Fatalf("%d %s; upstream received %d", status, got, len(r))
	}
	if s := string(r[0].Body); strings.Contains(s, `jean.dupont\u0040`) || !hardPlaceholder.MatchString(s) {
		t.Fatalf("upstream received %s", s)
	}
}

func TestHardening03ContentEncodingProxy(t *testing.T) {
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		w.Write(b)
		w.Close()
		return buf.Bytes()
	}
	chat := []byte(`{"model":"m","messages":[{"role":"user","content":"write to ` + hardEmail + `"}]}`)
	t.Run("gzip decoded, checked, sent plain", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		status, got := send(t, hs.URL+"/v1/chat/completions", gz(chat), "Content-Type", "application/json", "Content-Encoding", "gzip")
		r := u.Received()
		if status != 200 || len(r) != 1 {
			t.Fatalf("%d %s; upstream received %d", status, got, len(r))
		}
		if r[0].Header.Get("Content-Encoding") != "" || bytes.Contains(r[0].Body, []byte(hardEmail)) || !hardPlaceholder.Match(r[0].Body) {
			t.Fatalf("upstream received %+v", r[0])
		}
	})
	t.Run("unknown coding refused", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		status, got := send(t, hs.URL+"/v1/chat/completions", chat, "Content-Type", "application/json", "Content-Encoding", "zstd")
		refused(t, u, 415, "unsupported_media_type", status, got)
	})
	t.Run("gzip bomb refused", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 1<<20)
		status, got := send(t, hs.URL+"/v1/chat/completions", gz(make([]byte, 16<<20)), "Content-Type", "application/json", "Content-Encoding", "gzip")
		refused(t, u, 413, "request_too_large", status, got)
	})
	t.Run("unknown type refused", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		status, got := send(t, hs.URL+"/v1/chat/completions", []byte("write to "+hardEmail), "Content-Type", "application/octet-stream")
		refused(t, u, 415, "unsupported_media_type", status, got)
	})
	t.Run("passthrough below the base_url prefix", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		audio := []byte("ID3\x04\x00binary audio")
		status, got := send(t, hs.URL+"/v1/audio/speech", audio, "Content-Type", "audio/mpeg")
		if r := u.Received(); status != 200 || len(r) != 1 || !bytes.Equal(r[0].Body, audio) || r[0].URI != "/tenantA/v1/audio/speech" {
			t.Fatalf("%d %s; upstream received %+v", status, got, r)
		}
	})
}

func TestHardening04MultipartProxy(t *testing.T) {
	docx, err := os.ReadFile("../../testdata/samples/board-minutes.docx")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/board-minutes.docx"
	if err := os.WriteFile(path, docx, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("confidential docx blocked (go-openai)", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		_, err := client(hs.URL, "a").CreateFile(context.Background(), openai.FileRequest{FileName: "board-minutes.docx", FilePath: path, Purpose: "assistants"})
		var apiErr *openai.APIError
		if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 403 || len(u.Received()) != 0 {
			t.Fatalf("err %v; upstream received %d", err, len(u.Received()))
		}
	})
	t.Run("clean upload re-encoded (go-openai)", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		clean := t.TempDir() + "/notes.txt"
		if err := os.WriteFile(clean, []byte("The meeting is at noon.\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := client(hs.URL, "a").CreateFile(context.Background(), openai.FileRequest{FileName: "notes.txt", FilePath: clean, Purpose: "assistants"}); err != nil {
			t.Fatal(err)
		}
		r := u.Received()
		if len(r) != 1 {
			t.Fatal("nothing sent")
		}
		_, params, err := mime.ParseMediaType(r[0].Header.Get("Content-Type"))
		if err != nil || !strings.HasPrefix(params["boundary"], "aishield") {
			t.Fatalf("Content-Type %q", r[0].Header.Get("Content-Type"))
		}
		mr := multipart.NewReader(bytes.NewReader(r[0].Body), params["boundary"])
		parts := map[string]string{}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(p)
			parts[p.FormName()+"|"+p.FileName()] = string(b)
		}
		if parts["purpose|"] != "assistants" || parts["file|notes.txt"] != "The meeting is at noon.\n" {
			t.Fatalf("upstream parts %q", parts)
		}
	})
}

// rawRequest sends a request line with path as it is (like curl
// --path-as-is) and returns the status line and the body.
func rawRequest(t testing.TB, addr, path string, body []byte) (int, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", path, addr, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHardening14DotSegmentsProxy(t *testing.T) {
	chat := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	for _, p := range []string{
		"/v1/../../secret", "/d/upstream/../../secret", "/d/upstream/v1/../../../admin", "/v1/%2e%2e/%2e%2e/secret",
		"/v1/%2E%2E/secret", "/v1/a%2fb/chat/completions", "/v1/a%5c..%5csecret", "/v1//chat/completions", "/v1/..;/secret",
		"/v1/%252e%252e/secret",
	} {
		t.Run(p, func(t *testing.T) {
			u := upstreamtest.New(t, upstreamtest.AnswerOK)
			hs := hardProxy(t, u, 0)
			status, got := rawRequest(t, hs.Listener.Addr().String(), p, chat)
			refused(t, u, 400, "invalid_path", status, got)
		})
	}
	t.Run("the validated path under the prefix", func(t *testing.T) {
		u := upstreamtest.New(t, upstreamtest.AnswerOK)
		hs := hardProxy(t, u, 0)
		for _, p := range []string{"/v1/chat/completions", "/d/upstream/v1/chat/completions"} {
			if status, got := rawRequest(t, hs.Listener.Addr().String(), p, chat); status != 200 {
				t.Fatalf("%s: %d %s", p, status, got)
			}
		}
		r := u.Received()
		if len(r) != 2 || r[0].URI != "/tenantA/v1/chat/completions" || r[1].URI != "/tenantA/v1/chat/completions" {
			t.Fatalf("upstream received %+v", r)
		}
	})
}

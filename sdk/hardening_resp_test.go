package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// scripted is an upstream whose every answer is written by answer; it
// records the bodies it received.
type scripted struct {
	URL    string
	mu     sync.Mutex
	bodies []string
}

func newScripted(t testing.TB, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *scripted {
	s := &scripted{}
	s.URL = newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		answer(w, r, b)
	}))
	return s
}

func (s *scripted) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// completionJSON is a chat completion answering text.
func completionJSON(text string) []byte {
	b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": text}}},
		"usage": map[string]any{"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}})
	return b
}

// goOpenAI is a go-openai client to base whose HTTP client (which follows
// redirects, as go-openai's default does) goes through a Transport with g.
func goOpenAI(g *sdk.Guard, base string, max int64) *openai.Client {
	cfg := openai.DefaultConfig("sk-test-caller")
	cfg.BaseURL = base + "/v1"
	cfg.HTTPClient = &http.Client{Transport: &sdk.Transport{Guard: g, MaxBody: max}}
	return openai.NewClientWithConfig(cfg)
}

func chatOf(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}}
}

// apiErrorCode returns the code of go-openai's API error err ("" when err
// is not one) and its HTTP status.
func apiErrorCode(err error) (string, int) {
	var ae *openai.APIError
	if !errors.As(err, &ae) {
		return "", 0
	}
	code, _ := ae.Code.(string)
	return code, ae.HTTPStatusCode
}

// TestHardening01RedirectTransport: an upstream redirect never reaches the
// caller's http.Client (which would follow it): the Transport answers 502
// upstream_redirect, naming the target's host but not its query, and the
// redirect's target receives nothing.
func TestHardening01RedirectTransport(t *testing.T) {
	elsewhere := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(completionJSON("from elsewhere"))
	})
	for _, status := range []int{301, 302, 303, 307, 308} {
		up := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Location", elsewhere.URL+r.URL.Path+"?sig=LOCATIONQUERY")
			w.WriteHeader(status)
		})
		g := newGuard(t, sdk.Options{})
		ctx, refused := sdk.WithRefusal(context.Background())
		_, err := goOpenAI(g, up.URL, 0).CreateChatCompletion(ctx, chatOf("hello "+email))
		code, st := apiErrorCode(err)
		if code != "upstream_redirect" || st != 502 {
			t.Fatalf("%d: err = %v, want a 502 upstream_redirect", status, err)
		}
		if n := len(elsewhere.received()); n != 0 {
			t.Fatalf("%d: the redirect's target received %d requests", status, n)
		}
		if len(up.received()) != 1 || strings.Contains(up.received()[0], email) {
			t.Fatalf("%d: upstream received %q", status, up.received())
		}
		msg := err.Error()
		if !strings.Contains(msg, strings.TrimPrefix(elsewhere.URL, "http://")) || strings.Contains(msg, "LOCATIONQUERY") {
			t.Fatalf("%d: message %q: want the target's host, not its query", status, msg)
		}
		if !errors.Is(refused(), sdk.ErrUpstreamRedirect) {
			t.Fatalf("%d: filed %v, want ErrUpstreamRedirect", status, refused())
		}
	}
}

// TestHardening06StatusesVerified: an answer with any status below 400
// (300, 302 without Location, 203) is verified and restored like a 200:
// go-openai takes it for a success.
func TestHardening06StatusesVerified(t *testing.T) {
	for _, status := range []int{300, 302, 203} {
		for _, tc := range []struct {
			name  string
			reply func(last string) string
			code  string
		}{
			{"clean", func(last string) string { return "You said: " + last }, ""},
			{"template", func(string) string { return "ok <|im_start|>user\nanother customer's prompt" }, "aishield_contamination"},
		} {
			up := newScripted(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				var req openai.ChatCompletionRequest
				_ = json.Unmarshal(body, &req)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				_, _ = w.Write(completionJSON(tc.reply(req.Messages[len(req.Messages)-1].Content)))
			})
			g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
			resp, err := goOpenAI(g, up.URL, 0).CreateChatCompletion(context.Background(), chatOf("hello "+email))
			code, _ := apiErrorCode(err)
			if code != tc.code {
				t.Fatalf("%d %s: err = %v, want code %q", status, tc.name, err, tc.code)
			}
			if tc.code == "" && resp.Choices[0].Message.Content != "You said: hello "+email {
				t.Fatalf("%d: got %q, want the answer restored", status, resp.Choices[0].Message.Content)
			}
		}
	}
}

// TestHardening07ContentTypes: a non-error answer must be JSON (no type:
// a body that parses as JSON), an SSE stream or UTF-8 plain text; any other
// type is refused (502 unreadable_response), unless the destination's
// passthrough globs match the path, when it goes through unverified.
func TestHardening07ContentTypes(t *testing.T) {
	foreign := completionJSON("ok <|im_start|>user\nanother customer's prompt")
	for _, tc := range []struct {
		name, ct string
		body     []byte
		code     string
	}{
		{"octet-stream", "application/octet-stream", foreign, "unreadable_response"},
		{"png", "image/png", foreign, "unreadable_response"},
		{"html", "text/html", []byte("<html>login</html>"), "unreadable_response"},
		{"unknown", "application/x-whatever", completionJSON("fine"), "unreadable_response"},
		{"none, not JSON", "", []byte("plain words"), "unreadable_response"},
		{"none, JSON", "", foreign, "aishield_contamination"},
		{"problem+json", "application/problem+json; charset=utf-8", foreign, "aishield_contamination"},
		{"text/plain", "text/plain; charset=utf-8", []byte("fine text"), ""},
	} {
		up := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header()["Content-Type"] = []string{tc.ct}
			if tc.ct == "" {
				w.Header()["Content-Type"] = nil // no sniffing
			}
			_, _ = w.Write(tc.body)
		})
		g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
		status, code, body := postThrough(t, &sdk.Transport{Guard: g}, up.URL+"/v1/chat/completions", chatBody("hello"))
		if code != tc.code || (tc.code != "" && status != 502) {
			t.Fatalf("%s: %d %q %s, want code %q", tc.name, status, code, body, tc.code)
		}
	}
}

// TestHardening07Passthrough: with passthrough globs, a body the guard
// cannot read goes through on the matching paths only.
func TestHardening07Passthrough(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nnot really")
	up := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	})
	pol, err := policies.Parse([]byte(strings.Replace(strings.Replace(testPolicy, "%s", "closed", 1),
		"    max_input_tokens: 5000\n", "    max_input_tokens: 5000\n    passthrough: [\"/v1/images/*\"]\n", 1)), "yaml", "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var audit bytes.Buffer
	g := newGuard(t, sdk.Options{Policy: pol, Audit: &audit})
	tr := &sdk.Transport{Guard: g, Destination: "openai-test"}
	status, _, body := postThrough(t, tr, up.URL+"/v1/images/generations", []byte(`{"model":"gpt-image-1","prompt":"a cat"}`))
	if status != 200 || !bytes.Equal(body, png) {
		t.Fatalf("passthrough path: %d %q", status, body)
	}
	if !strings.Contains(audit.String(), `"unverified"`) {
		t.Fatalf("audit does not record the answer unverified: %s", audit.String())
	}
	status, code, _ := postThrough(t, tr, up.URL+"/v1/chat/completions", chatBody("hello"))
	if status != 502 || code != "unreadable_response" {
		t.Fatalf("other path: %d %q", status, code)
	}
}

// TestHardening07ContentEncoding: Content-Encoding is a list applied in
// order; the guard undoes it (last first), verifies the decoded body and
// delivers it decoded, without Content-Encoding. An unknown coding is
// refused, and so is a body that decodes past MaxBody.
func TestHardening07ContentEncoding(t *testing.T) {
	clean := completionJSON("the decoded answer")
	foreign := completionJSON("ok <|im_start|>user\nanother customer's prompt")
	for _, tc := range []struct {
		name   string
		ce     []string // Content-Encoding field lines
		body   []byte
		code   string
		answer string
	}{
		{"identity then gzip lines", []string{"identity", "gzip"}, sdk.Compressed(t, "gzip", clean), "", "the decoded answer"},
		{"identity, gzip", []string{"identity, gzip"}, sdk.Compressed(t, "gzip", clean), "", "the decoded answer"},
		{"gzip hides foreign text", []string{"identity", "gzip"}, sdk.Compressed(t, "gzip", foreign), "aishield_contamination", ""},
		{"deflate (zlib)", []string{"deflate"}, sdk.Compressed(t, "zlib", clean), "", "the decoded answer"},
		{"deflate (raw)", []string{"deflate"}, sdk.Compressed(t, "flate", clean), "", "the decoded answer"},
		{"br", []string{"br"}, sdk.Compressed(t, "br", clean), "", "the decoded answer"},
		{"gzip, br", []string{"gzip, br"}, sdk.Compressed(t, "br", sdk.Compressed(t, "gzip", clean)), "", "the decoded answer"},
		{"br hides foreign text", []string{"br"}, sdk.Compressed(t, "br", foreign), "aishield_contamination", ""},
		{"zstd", []string{"zstd"}, clean, "unreadable_response", ""},
		{"corrupt gzip", []string{"gzip"}, []byte("not gzip at all"), "unreadable_response", ""},
		{"bomb", []string{"gzip"}, sdk.Compressed(t, "gzip", bytes.Repeat([]byte(" "), 4<<20)), "response_too_large", ""},
	} {
		up := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "application/json")
			w.Header()["Content-Encoding"] = tc.ce
			_, _ = w.Write(tc.body)
		})
		g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
		tr := &sdk.Transport{Guard: g, MaxBody: 1 << 20}
		status, code, body := postThrough(t, tr, up.URL+"/v1/chat/completions", chatBody("hello"))
		if code != tc.code {
			t.Fatalf("%s: %d %q %s, want code %q", tc.name, status, code, body, tc.code)
		}
		if tc.code == "" {
			resp, err := goOpenAI(g, up.URL, 1<<20).CreateChatCompletion(context.Background(), chatOf("hello"))
			if err != nil || resp.Choices[0].Message.Content != tc.answer {
				t.Fatalf("%s: go-openai got %+v, %v", tc.name, resp, err)
			}
		}
	}
}

// postThrough posts body to url through tr (in an http.Client, which
// follows redirects) and returns the status, the API error code (if any)
// and the body; it fails the test if the answer has a Content-Encoding.
func postThrough(t *testing.T, tr *sdk.Transport, url string, body []byte) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("delivered with Content-Encoding %q", ce)
	}
	var e struct {
		Error struct{ Code string }
	}
	if resp.StatusCode >= 400 {
		_ = json.Unmarshal(out, &e)
	}
	return resp.StatusCode, e.Error.Code, out
}

// TestHardening07EncodedStream: a stream under "identity, gzip" is decoded
// as it is read and verified like any stream: go-openai reads the clean
// one, and foreign text in the compressed one cuts it.
func TestHardening07EncodedStream(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		cut        bool
	}{
		{"clean", "All good here.", false},
		{"foreign", "All good <|im_start|>user\nanother customer's question", true},
	} {
		up := newScripted(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header()["Content-Encoding"] = []string{"identity", "gzip"}
			_, _ = w.Write(sdk.Compressed(t, "gzip", sseChat(tc.text, []byte{4})))
		})
		g := newVerifiedGuard(t, sdk.Options{Policy: testPolicyMode(t, "closed")}, []byte("k"))
		cfg := openai.DefaultConfig("test-key")
		cfg.BaseURL = up.URL + "/v1"
		cfg.HTTPClient = &http.Client{Transport: &sdk.Transport{Guard: g}}
		st, err := openai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), chatOf("hello"))
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for {
			r, err := st.Recv()
			if err != nil {
				var ce *sdk.ContaminationError
				if tc.cut != errors.As(err, &ce) || !tc.cut && !errors.Is(err, io.EOF) {
					t.Fatalf("%s: ended with %v", tc.name, err)
				}
				break
			}
			got.WriteString(r.Choices[0].Delta.Content)
		}
		st.Close()
		if !tc.cut && got.String() != tc.text || tc.cut && strings.Contains(got.String(), "another customer") {
			t.Fatalf("%s: go-openai read %q", tc.name, got.String())
		}
	}
}

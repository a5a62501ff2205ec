package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

const chunk = `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"%s"}}]}` + "\n\n"

// TestProxyUpstreamFaults drives the proxy against upstreams that misbehave
// and checks that each failure reaches the client as a clear error in the
// API's format: never a panic, never unverified text.
func TestProxyUpstreamFaults(t *testing.T) {
	words := func(n int) string { return strings.TrimSpace(strings.Repeat("calm words of a clean answer ", n)) }
	tests := []struct {
		name       string
		upstream   http.HandlerFunc
		stream     bool
		body       string // request body; "" sends a small chat
		wantStatus int    // for non-streams
		wantCode   string // error code in the JSON error or the stream's error event
		maxText    int    // stream: most bytes of (verified) text the client may have received
	}{
		{name: "killed mid-stream", stream: true, wantCode: "upstream_unavailable", maxText: 20 * len(words(2)),
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for range 20 {
					io.WriteString(w, strings.Replace(chunk, "%s", words(2), 1))
				}
				w.(http.Flusher).Flush()
				conn, _, _ := w.(http.Hijacker).Hijack()
				conn.Close()
			}},
		{name: "truncated stream", stream: true, wantCode: "stream_truncated", maxText: 2000,
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for range 3 {
					io.WriteString(w, strings.Replace(chunk, "%s", words(1), 1))
				}
			}},
		{name: "malformed SSE", stream: true, wantCode: "aishield_guard_error", maxText: 0,
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\n\ndata: \x00\xff garbage\n\n"+strings.Repeat("x", 2<<20))
			}},
		{name: "garbage JSON response", wantStatus: 500, wantCode: "aishield_guard_error",
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"choices":[{"message":{"content":"half`)
			}},
		{name: "upstream 503", wantStatus: 503, wantCode: "upstream_error",
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(503)
				io.WriteString(w, `{"error":{"message":"overloaded, retry later","type":"server_error"}}`)
			}},
		{name: "upstream 500 HTML", wantStatus: 500, wantCode: "upstream_error",
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(500)
				io.WriteString(w, "<html>oops</html>")
			}},
		{name: "slow upstream", wantStatus: 504, wantCode: "upstream_timeout",
			upstream: func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-time.After(time.Second):
				case <-r.Context().Done():
				}
			}},
		{name: "garbage JSON request", body: "{not json", wantStatus: 400, wantCode: "aishield_unparsable",
			upstream: func(w http.ResponseWriter, r *http.Request) { t.Error("a garbage request reached the upstream") }},
		{name: "oversized request", body: `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("a", 70<<10) + `"}]}`,
			wantStatus: 413, wantCode: "request_too_large",
			upstream: func(w http.ResponseWriter, r *http.Request) { t.Error("an oversized request reached the upstream") }},
		{name: "oversized response", wantStatus: 502, wantCode: "response_too_large",
			upstream: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"choices":[{"message":{"content":"`+strings.Repeat("a", 80<<10)+`"}}]}`)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := httptest.NewServer(tt.upstream)
			defer up.Close()
			_, hs := startProxy(t, Options{Policy: testPolicy(t, up.URL, 0), MaxBody: 64 << 10,
				UpstreamTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond})
			body := tt.body
			if body == "" {
				body = `{"model":"m","messages":[{"role":"user","content":"Tell me about the weekly schedule."}]`
				if tt.stream {
					body += `,"stream":true`
				}
				body += `}`
			}
			req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-test")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if !tt.stream || resp.StatusCode != 200 {
				var e struct {
					Error struct{ Message, Type, Code string }
				}
				data, _ := io.ReadAll(resp.Body)
				if err := json.Unmarshal(data, &e); err != nil {
					t.Fatalf("status %d, body not OpenAI error JSON: %q", resp.StatusCode, data)
				}
				if (tt.wantStatus != 0 && resp.StatusCode != tt.wantStatus) || e.Error.Code != tt.wantCode || e.Error.Message == "" {
					t.Errorf("status %d error %+v, want %d %s", resp.StatusCode, e.Error, tt.wantStatus, tt.wantCode)
				}
				return
			}
			// A stream: text events, then exactly one error event.
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 4<<20)
			text, code := 0, ""
			for sc.Scan() {
				line, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok || line == "[DONE]" {
					continue
				}
				var ev struct {
					Choices []struct{ Delta struct{ Content string } }
					Error   *struct{ Code, Message string }
				}
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatalf("the client received a malformed event: %.100q", line)
				}
				if ev.Error != nil {
					if code != "" {
						t.Errorf("two error events")
					}
					code = ev.Error.Code
					continue
				}
				if code != "" {
					t.Errorf("text after the error event")
				}
				for _, c := range ev.Choices {
					text += len(c.Delta.Content)
				}
			}
			if code != tt.wantCode {
				t.Errorf("stream error code %q, want %q", code, tt.wantCode)
			}
			if text > tt.maxText {
				t.Errorf("client received %d bytes of text, at most %d expected", text, tt.maxText)
			}
		})
	}
}

// TestProxyRouting: only policy destinations with a base URL are reachable.
func TestProxyRouting(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-caller" {
			t.Errorf("the caller's key did not pass through")
		}
		w.Header().Set("Content-Type", "application/json")
		// The policy declares the upstream's tokenizer: its usage must
		// cover the whole prompt (the message and the canary line).
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"fine"},"finish_reason":"stop"}],"usage":{"prompt_tokens":120,"completion_tokens":1,"total_tokens":121}}`)
	}))
	defer up.Close()
	p, err := New(context.Background(), Options{Policy: testPolicy(t, up.URL, 0)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(p)
	defer hs.Close()
	cases := []struct {
		path string
		want int
	}{
		{"/d/upstream/v1/chat/completions", 200},
		{"/d/nowhere/v1/chat/completions", 404}, // no base_url: unreachable
		{"/d/evil.example.com/v1/chat/completions", 404},
		{"/v1/chat/completions", 404}, // no --upstream
		{"/healthz", 200},
	}
	for _, c := range cases {
		req, _ := http.NewRequest("POST", hs.URL+c.path, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello there, how are you today?"}]}`))
		req.Header.Set("Authorization", "Bearer sk-caller")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.path, resp.StatusCode, c.want)
		}
	}
	// Anthropic paths get Anthropic's error format.
	resp, _ := http.Post(hs.URL+"/d/nope/v1/messages", "application/json", strings.NewReader(`{}`))
	var e struct{ Type string }
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if e.Type != "error" {
		t.Errorf("anthropic error type %q", e.Type)
	}
	if _, err := New(context.Background(), Options{Policy: testPolicy(t, up.URL, 0), Upstream: "nowhere"}); err == nil {
		t.Error("an upstream without base_url was accepted")
	}
	// The go-openai client sees a blocked request as an APIError.
	cfg := openai.DefaultConfig("sk-caller")
	cfg.BaseURL = hs.URL + "/d/upstream/v1"
	_, err = openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), chatReq("token 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", 8, false))
	var ae *openai.APIError
	if !errors.As(err, &ae) || ae.HTTPStatusCode != 403 || ae.Code != "aishield_blocked" {
		t.Errorf("blocked request: %v", err)
	}
}

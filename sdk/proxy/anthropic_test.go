package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/verify"
)

// anthropicPolicy declares one Anthropic destination, "claude", at base;
// every inbound signal blocks and requests carry a canary.
func anthropicPolicy(t testing.TB, base string) *policies.Policy {
	t.Helper()
	y := fmt.Sprintf(`name: proxy-anthropic-test
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*", "marker.classification"]
    level: restricted
default_level: restricted
destinations:
  - name: claude
    base_url: %s
    provider: anthropic
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: 200000
    shared: true
default:
  max_level: internal
  action: block
%s`, base, blockAll)
	p, err := policies.Parse([]byte(y), "yaml", "proxy-anthropic-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// messagesRequest is what the upstream reads of a Messages API request.
type messagesRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream bool `json:"stream"`
}

// texts returns the text of a string or of an array of text blocks.
func texts(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct{ Type, Text string }
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// anthropicUpstream speaks Anthropic's Messages API (POST /v1/messages, a
// JSON message or the SSE events message_start, content_block_start,
// ping, content_block_delta, content_block_stop, message_delta and
// message_stop). It checks the caller's x-api-key, records what it
// received, and answers with answer(the user's text as received).
type anthropicUpstream struct {
	key    string
	answer func(user string) string

	mu       sync.Mutex
	received []string // system + user text of every request, as sent
	n        int
}

// setAnswer replaces the answer function.
func (u *anthropicUpstream) setAnswer(f func(user string) string) {
	u.mu.Lock()
	u.answer = f
	u.mu.Unlock()
}

func (u *anthropicUpstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.received[len(u.received)-1]
}

func (u *anthropicUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	apiErr := func(status int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		apiErr(404, "not_found_error", "no such endpoint")
		return
	}
	if r.Header.Get("x-api-key") != u.key || r.Header.Get("anthropic-version") == "" {
		apiErr(401, "authentication_error", "invalid x-api-key")
		return
	}
	var req messagesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 || req.MaxTokens <= 0 {
		apiErr(400, "invalid_request_error", "malformed request")
		return
	}
	// The last user turn, consecutive user messages merged as the API
	// merges them.
	system, user := texts(req.System), ""
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "user"; i-- {
		user = strings.TrimPrefix(texts(req.Messages[i].Content)+"\n"+user, "\n")
	}
	user = strings.TrimSuffix(user, "\n")
	u.mu.Lock()
	u.received = append(u.received, system+"\n"+user)
	u.n++
	id := fmt.Sprintf("msg_01Test%04d", u.n)
	answerFn := u.answer
	u.mu.Unlock()
	answer := answerFn(user)
	in := (len(system)+len(user))/3 + 8 // Claude's tokens are ~3.5 bytes
	out := len(answer)/4 + 1
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", "req_"+id)
		json.NewEncoder(w).Encode(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content":     []any{map[string]any{"type": "text", "text": answer}},
			"stop_reason": "end_turn", "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "output_tokens": out},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1}}})
	event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
		"content_block": map[string]any{"type": "text", "text": ""}})
	event("ping", map[string]any{"type": "ping"})
	// Small deltas, so that placeholders and foreign values straddle
	// events.
	for i := 0; i < len(answer); i += 7 {
		event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": answer[i:min(i+7, len(answer))]}})
	}
	event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// claude asks the official Anthropic client (base URL: the proxy) one
// question, plain or streamed, and returns the text it received.
func claude(ctx context.Context, c anthropic.Client, text string, stream bool) (string, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model("claude-test-1"),
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "You are a helpful assistant for a clinic's front desk."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))},
	}
	if !stream {
		msg, err := c.Messages.New(ctx, params)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, bl := range msg.Content {
			b.WriteString(bl.Text)
		}
		return b.String(), nil
	}
	st := c.Messages.NewStreaming(ctx, params)
	defer st.Close()
	var msg anthropic.Message
	var b strings.Builder
	for st.Next() {
		ev := st.Current()
		if err := msg.Accumulate(ev); err != nil {
			return b.String(), err
		}
		if d, ok := ev.AsAny().(anthropic.ContentBlockDeltaEvent); ok {
			b.WriteString(d.Delta.Text)
		}
	}
	return b.String(), st.Err()
}

// TestProxyAnthropicMessages drives the official Anthropic Go client
// through the proxy to an upstream speaking the Messages API, plain and
// streamed: redacted values leave as placeholders and come back restored;
// a foreign entity, another exchange's canary and another exchange's text
// are refused with an Anthropic-format error (a 502 error body, or an error
// event); the caller's x-api-key reaches the upstream and never the logs.
func TestProxyAnthropicMessages(t *testing.T) {
	const apiKey = "sk-ant-api03-caller-key-7f3a9c"
	const email = "quentin.arnaud@sfr.fr"
	report := rareText(3, 60)
	var canary string // the canary of the previous exchange, as the upstream saw it

	tests := []struct {
		name   string
		prior  string // a request sent first through the proxy ("" for none)
		user   string
		answer func(user string) string
		signal string // "" for a clean answer
		want   string // clean: a substring the client must read
	}{
		{name: "redacted value restored", user: "Draft a two-line reply to " + email + " confirming Friday's appointment.",
			answer: func(user string) string {
				ph := user[strings.Index(user, "[[") : strings.Index(user, "]]")+2]
				return "Dear patient,\n\nWe confirm your appointment on Friday; we will write to " + ph + " if anything changes."
			},
			want: "we will write to " + email + " if anything"},
		{name: "foreign entity", user: "Draft a reply confirming Friday's appointment.",
			answer: func(string) string {
				return "Dear patient, your appointment is confirmed. Also contact margaux.delacroix@orange.fr about her invoice."
			},
			signal: "inbound.foreign_entity"},
		{name: "foreign canary", prior: "What are the opening hours on Saturday?", user: "Confirm Friday's appointment, briefly.",
			answer: func(string) string { return "Confirmed for Friday. Reference " + canary + " on file." },
			signal: "inbound.canary"},
		{name: "cross exchange", prior: "Summarise this inspection log: " + report, user: "Confirm Friday's appointment, briefly.",
			answer: func(string) string { return "Confirmed. Note: " + report[:160] },
			signal: "inbound.cross_exchange"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				up := &anthropicUpstream{key: apiKey, answer: tt.answer}
				hu := httptest.NewServer(up)
				defer hu.Close()
				var logs syncBuffer
				_, hs := startProxy(t, Options{Policy: anthropicPolicy(t, hu.URL), Upstream: "claude",
					Log: slog.New(slog.NewTextHandler(&logs, nil))})
				c := anthropic.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey(apiKey), option.WithMaxRetries(0),
					option.WithRequestTimeout(30*time.Second))
				ctx := context.Background()
				if tt.prior != "" {
					// Another team behind the same proxy, with the same
					// provider key: the material of its exchange is not
					// this caller's own.
					other := anthropic.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey(apiKey), option.WithMaxRetries(0),
						option.WithRequestTimeout(30*time.Second), option.WithHeader(DefaultPrincipalHeader, "another-team"))
					up.setAnswer(func(string) string { return "Noted." })
					if _, err := claude(ctx, other, tt.prior, false); err != nil {
						t.Fatalf("prior request: %v", err)
					}
					i := strings.Index(up.last(), verify.CanaryPrefix)
					if i < 0 {
						t.Fatalf("the prior request carried no canary: %q", up.last())
					}
					canary = up.last()[i : i+verify.CanaryLen]
					up.setAnswer(tt.answer)
				}
				got, err := claude(ctx, c, tt.user, stream)
				if strings.Contains(up.last(), email) {
					t.Errorf("the e-mail address reached the upstream in clear")
				}
				if strings.Contains(logs.String(), apiKey) || strings.Contains(logs.String(), "api03") {
					t.Errorf("the caller's x-api-key was logged: %s", logs.String())
				}
				if tt.signal == "" {
					if err != nil || !strings.Contains(got, tt.want) {
						t.Fatalf("clean answer: %q, %v; want it to contain %q", got, err, tt.want)
					}
					return
				}
				var ae *anthropic.Error
				if !errors.As(err, &ae) {
					t.Fatalf("contaminated answer: the client got %q, error %v (want an *anthropic.Error)", got, err)
				}
				var body struct {
					Type  string `json:"type"`
					Error struct{ Type, Message string }
				}
				if json.Unmarshal([]byte(ae.RawJSON()), &body) != nil || body.Type != "error" ||
					body.Error.Type != "aishield_contamination" || !strings.Contains(body.Error.Message, tt.signal) {
					t.Fatalf("error %s, want an Anthropic error of type aishield_contamination naming %s", ae.RawJSON(), tt.signal)
				}
				if !stream && (ae.StatusCode != http.StatusBadGateway || ae.Response.Header.Get("X-Should-Retry") != "false") {
					t.Errorf("status %d X-Should-Retry %q, want 502 and false", ae.StatusCode, ae.Response.Header.Get("X-Should-Retry"))
				}
				for _, leak := range []string{"margaux.delacroix", canary, report[:160]} {
					if leak != "" && strings.Contains(got, leak) {
						t.Errorf("foreign material reached the client: %q", got)
					}
				}
			})
		}
	}
}

// TestProxyUpstreamErrors: provider errors reach the client in the API's
// format with their status and retry headers, for OpenAI and Anthropic
// paths: a 401 and a 429 with Retry-After as the provider wrote them, an
// HTML 404 and a 529 rewritten in the API's format; the official Anthropic
// client honours the Retry-After it reads through the proxy.
func TestProxyUpstreamErrors(t *testing.T) {
	openaiErr := func(typ, code, msg string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%q}}`, msg, typ, code)
	}
	anthropicErr := func(typ, msg string) string {
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
	}
	tests := []struct {
		name, path   string
		status       int
		header       map[string]string
		body, ctype  string
		wantBody     string // exact pass-through, or "" when rewritten
		wantType     string // rewritten: the error type expected
		wantHeader   map[string]string
		wantNoHeader string
	}{
		{name: "openai 401", path: "/v1/chat/completions", status: 401, ctype: "application/json",
			body:     openaiErr("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-cal***er."),
			wantBody: "same", wantNoHeader: "X-Should-Retry"},
		{name: "openai 429", path: "/v1/chat/completions", status: 429, ctype: "application/json",
			header:   map[string]string{"Retry-After": "7", "X-Ratelimit-Remaining-Requests": "0"},
			body:     openaiErr("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
			wantBody: "same", wantHeader: map[string]string{"Retry-After": "7", "X-Ratelimit-Remaining-Requests": "0"}, wantNoHeader: "X-Should-Retry"},
		{name: "anthropic 401", path: "/v1/messages", status: 401, ctype: "application/json",
			body: anthropicErr("authentication_error", "invalid x-api-key"), wantBody: "same", wantNoHeader: "X-Should-Retry"},
		{name: "anthropic 429", path: "/v1/messages", status: 429, ctype: "application/json",
			header:   map[string]string{"Retry-After": "12", "Request-Id": "req_011"},
			body:     anthropicErr("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
			wantBody: "same", wantHeader: map[string]string{"Retry-After": "12", "Request-Id": "req_011"}, wantNoHeader: "X-Should-Retry"},
		{name: "anthropic 404 HTML", path: "/v1/messages", status: 404, ctype: "text/html",
			body: "<html><body>Not Found</body></html>", wantType: "upstream_error"},
		{name: "anthropic 529 overloaded", path: "/v1/messages", status: 529, ctype: "application/json",
			header: map[string]string{"Retry-After": "3"}, body: anthropicErr("overloaded_error", "Overloaded"),
			wantType: "overloaded_error", wantHeader: map[string]string{"Retry-After": "3"}, wantNoHeader: "X-Should-Retry"},
		{name: "openai 503", path: "/v1/chat/completions", status: 503, ctype: "application/json",
			header: map[string]string{"Retry-After": "2"}, body: openaiErr("server_error", "", "The engine is currently overloaded."),
			wantType: "server_error", wantHeader: map[string]string{"Retry-After": "2"}, wantNoHeader: "X-Should-Retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", tt.ctype)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer up.Close()
			_, hs := startProxy(t, Options{Policy: testPolicy(t, up.URL, 0)})
			body := `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"What are the opening hours?"}]}`
			req, _ := http.NewRequest("POST", hs.URL+tt.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-caller")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			for k, v := range tt.wantHeader {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s: %q, want %q", k, got, v)
				}
			}
			if tt.wantNoHeader != "" && resp.Header.Get(tt.wantNoHeader) != "" {
				t.Errorf("%s set on a provider error: %q", tt.wantNoHeader, resp.Header.Get(tt.wantNoHeader))
			}
			if tt.wantBody != "" {
				if string(data) != tt.body {
					t.Errorf("body %q, want the provider's %q", data, tt.body)
				}
				return
			}
			var e struct {
				Type  string
				Error struct{ Type, Code, Message string }
			}
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatalf("rewritten error is not JSON: %q", data)
			}
			anthropicPath := strings.HasSuffix(tt.path, "/messages")
			if (anthropicPath && e.Type != "error") || e.Error.Type != tt.wantType ||
				!strings.Contains(e.Error.Message, fmt.Sprintf("HTTP %d", tt.status)) {
				t.Errorf("rewritten error %s, want type %s and the upstream status", data, tt.wantType)
			}
		})
	}

	// The Anthropic client, with its default retries, reads Retry-After
	// through the proxy: a 429 asking for 50 ms, then the answer.
	var calls int
	var mu sync.Mutex
	good := &anthropicUpstream{key: "sk-ant-k", answer: func(string) string { return "Open 9 to 17." }}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After-Ms", "50")
			w.WriteHeader(429)
			io.WriteString(w, anthropicErr("rate_limit_error", "slow down"))
			return
		}
		good.ServeHTTP(w, r)
	}))
	defer up.Close()
	_, hs := startProxy(t, Options{Policy: anthropicPolicy(t, up.URL), Upstream: "claude"})
	c := anthropic.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey("sk-ant-k"))
	got, err := claude(context.Background(), c, "What are the opening hours?", false)
	if err != nil || got != "Open 9 to 17." || calls != 2 {
		t.Errorf("after a 429: %q, %v, %d upstream calls", got, err, calls)
	}
}

package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	openaigo "github.com/openai/openai-go/v3"
	openaigoopt "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/sdk"
)

// quietInbound is the inbound section of the tests whose upstream answers
// a fixed text: no canary and no usage check (the fixed answer reports no
// usage), every other signal blocks.
const quietInbound = `inbound:
  signals:
    canary: "off"
    usage_mismatch: "off"
  canary: false
`

// fixedUpstream answers every chat with answer (in OpenAI's JSON), adds
// a hop-by-hop header to its response, and records the headers of what it
// receives.
type fixedUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	answer  string
	headers []http.Header
}

func newFixedUpstream(t testing.TB, answer string) *fixedUpstream {
	u := &fixedUpstream{answer: answer}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.headers = append(u.headers, r.Header.Clone())
		answer := u.answer
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Connection", "X-Upstream-Hop")
		w.Header().Set("X-Upstream-Hop", "private to the hop")
		w.Header().Set("X-Request-Id", "req_42")
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop"}}})
		w.Write(b)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *fixedUpstream) setAnswer(s string) {
	u.mu.Lock()
	u.answer = s
	u.mu.Unlock()
}

// last returns the headers of the last request received.
func (u *fixedUpstream) last() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.headers) == 0 {
		return nil
	}
	return u.headers[len(u.headers)-1]
}

func (u *fixedUpstream) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.headers)
}

// post sends a chat with the given headers to the proxy at base and returns
// the response (its body read) and the body.
func post(t testing.TB, base, text string, header map[string]string) (*http.Response, string) {
	t.Helper()
	body, _ := json.Marshal(chatReq(text, 16, false))
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(data)
}

// auditRecords reads a trail, checking its chain.
func auditRecords(t testing.TB, trail string) []sdk.AuditRecord {
	t.Helper()
	var recs []sdk.AuditRecord
	if _, _, err := sdk.ReadAudit(strings.NewReader(trail), false, func(_ int, r *sdk.AuditRecord) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatalf("audit trail: %v", err)
	}
	return recs
}

var keyPrincipal = regexp.MustCompile(`^key:[0-9a-f]{32}$`)

// TestProxyPrincipal: each request is attributed to the principal its
// X-Aishield-Principal header names (the header is not forwarded), else to
// a keyed hash of the caller's credential (bearer token or x-api-key: the
// same key gives the same principal, in every proxy sharing the canary
// key), never to the key itself: the raw keys appear neither in the audit
// trail nor in the log. A principal header that is not short printable
// text is refused before anything is sent; the header's name is
// configurable.
func TestProxyPrincipal(t *testing.T) {
	const keyA, keyB = "sk-proj-principal-A-7Hq2xR", "sk-proj-principal-B-9Lm4tW"
	up := newFixedUpstream(t, "Noted, thank you.")
	pol := testPolicyInbound(t, up.URL, 0, quietInbound)
	canaryKey := []byte("deployment canary key")
	var audit, logs syncBuffer
	_, hs := startProxy(t, Options{Policy: pol, CanaryKey: canaryKey, AuditLog: sdk.NewAuditLog(&audit, ""),
		Log: slog.New(slog.NewTextHandler(&logs, nil))})

	tests := []struct {
		name       string
		header     map[string]string
		wantStatus int
		want       string // "" unknown, "=name" the principal of an earlier case, else the exact value
	}{
		{name: "header", header: map[string]string{"X-Aishield-Principal": " team-billing ", "Authorization": "Bearer " + keyA}, want: "team-billing"},
		{name: "bearer", header: map[string]string{"Authorization": "Bearer " + keyA}, want: "key"},
		{name: "bearer again", header: map[string]string{"Authorization": "bearer " + keyA}, want: "=bearer"},
		{name: "x-api-key", header: map[string]string{"X-Api-Key": keyA}, want: "=bearer"},
		{name: "other key", header: map[string]string{"Authorization": "Bearer " + keyB}, want: "key"},
		{name: "no credential", header: map[string]string{}, want: ""},
		{name: "header too long", header: map[string]string{"X-Aishield-Principal": strings.Repeat("p", 300), "Authorization": "Bearer " + keyA},
			wantStatus: http.StatusBadRequest},
	}
	got := map[string]string{}
	var n int // audit records so far
	for _, tt := range tests {
		before := up.count()
		resp, body := post(t, hs.URL, "What are the opening hours on Saturday?", tt.header)
		if tt.wantStatus != 0 {
			if resp.StatusCode != tt.wantStatus || !strings.Contains(body, "invalid_principal") ||
				resp.Header.Get("X-Should-Retry") != "false" || up.count() != before {
				t.Errorf("%s: %d %s (upstream reached: %v); want %d invalid_principal, not sent",
					tt.name, resp.StatusCode, body, up.count() != before, tt.wantStatus)
			}
			continue
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.name, resp.StatusCode, body)
		}
		if h := up.last(); h.Get("X-Aishield-Principal") != "" || h.Get("Authorization")+h.Get("X-Api-Key") == "" && len(tt.header) > 0 {
			t.Errorf("%s: upstream headers %v: the principal header must be removed, the credential kept", tt.name, h)
		}
		recs := auditRecords(t, audit.String())
		if len(recs) != n+1 {
			t.Fatalf("%s: %d audit records, want %d", tt.name, len(recs), n+1)
		}
		n++
		p := recs[len(recs)-1].Principal
		got[tt.name] = p
		switch {
		case tt.want == "key":
			if !keyPrincipal.MatchString(p) {
				t.Errorf("%s: principal %q, want key:<32 hex digits>", tt.name, p)
			}
		case strings.HasPrefix(tt.want, "="):
			if p != got[tt.want[1:]] {
				t.Errorf("%s: principal %q, want %q (the same credential)", tt.name, p, got[tt.want[1:]])
			}
		case p != tt.want:
			t.Errorf("%s: principal %q, want %q", tt.name, p, tt.want)
		}
	}
	if got["bearer"] == got["other key"] {
		t.Errorf("two keys, one principal %q", got["bearer"])
	}
	for _, k := range []string{keyA, keyB, "principal-A", "principal-B"} {
		if strings.Contains(audit.String(), k) || strings.Contains(logs.String(), k) {
			t.Errorf("a caller's key (%s) reached the audit trail or the log", k)
		}
	}

	// Another proxy sharing the canary key names the caller alike; one
	// with another key does not. A configured header name replaces the
	// default one, which is then an ordinary header.
	for _, tc := range []struct {
		name      string
		canaryKey []byte
		same      bool
	}{{"same canary key", canaryKey, true}, {"other canary key", []byte("another deployment"), false}} {
		var audit2 syncBuffer
		_, hs2 := startProxy(t, Options{Policy: pol, CanaryKey: tc.canaryKey, AuditLog: sdk.NewAuditLog(&audit2, ""),
			PrincipalHeader: "x-team"})
		post(t, hs2.URL, "What are the opening hours on Saturday?", map[string]string{"Authorization": "Bearer " + keyA})
		post(t, hs2.URL, "What are the opening hours on Sunday?", map[string]string{"X-Team": "radiology", "X-Aishield-Principal": "ignored"})
		if h := up.last(); h.Get("X-Team") != "" || h.Get("X-Aishield-Principal") != "ignored" {
			t.Errorf("%s: upstream headers %v: X-Team must be removed, X-Aishield-Principal passed", tc.name, h)
		}
		recs := auditRecords(t, audit2.String())
		if len(recs) != 2 || (recs[0].Principal == got["bearer"]) != tc.same || recs[1].Principal != "radiology" {
			t.Errorf("%s: principals %q, %q; want the first equal to %q: %v, the second radiology",
				tc.name, recs[0].Principal, recs[1].Principal, got["bearer"], tc.same)
		}
	}
}

// TestProxyForwardingHeaders: the upstream learns nothing of the caller's
// address or of earlier hops (Forwarded and X-Forwarded-* are dropped and
// none are added), hop-by-hop headers are not passed either way, and the
// caller's credential and the provider's request ID are.
func TestProxyForwardingHeaders(t *testing.T) {
	up := newFixedUpstream(t, "Noted, thank you.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound)})
	resp, body := post(t, hs.URL, "What are the opening hours?", map[string]string{
		"Authorization":     "Bearer sk-caller",
		"Forwarded":         "for=192.0.2.60;proto=http;by=203.0.113.43",
		"X-Forwarded-For":   "192.0.2.60, 198.51.100.17",
		"X-Forwarded-Host":  "intranet.example",
		"X-Forwarded-Proto": "http",
		"Connection":        "X-Client-Hop",
		"X-Client-Hop":      "private to the hop",
		"X-Custom":          "kept",
	})
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	h := up.last()
	for _, k := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Client-Hop"} {
		if v := h.Values(k); len(v) > 0 {
			t.Errorf("%s reached the upstream: %q", k, v)
		}
	}
	if h.Get("Authorization") != "Bearer sk-caller" || h.Get("X-Custom") != "kept" {
		t.Errorf("upstream headers %v: the credential and end-to-end headers must pass", h)
	}
	if resp.Header.Get("X-Upstream-Hop") != "" || resp.Header.Get("X-Request-Id") != "req_42" {
		t.Errorf("response headers %v: the hop-by-hop header must not pass, the request ID must", resp.Header)
	}
}

// truncatedUpstream sends three chunks of a chat stream and then ends the
// body without the terminal event (cleanly, or by resetting the
// connection when kill is set).
func truncatedUpstream(t testing.TB, kill bool) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, s := range []string{"The opening ", "hours are nine ", "to five on "} {
			fmt.Fprintf(w, chunk, s)
		}
		w.(http.Flusher).Flush()
		if kill {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestProxyStreamEndsCleanly: an upstream stream that ends without its
// terminal event, or whose connection is reset mid-stream, reaches the
// client as the verified text followed by one error event
// (stream_truncated, upstream_unavailable), and then a clean end of the
// HTTP response (no aborted connection): a raw reader gets no read error,
// and the real clients, go-openai and openai-go, report the error event
// itself rather than an unexpected EOF.
func TestProxyStreamEndsCleanly(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill bool
		code string
	}{{"truncated", false, "stream_truncated"}, {"reset", true, "upstream_unavailable"}} {
		t.Run(tc.name, func(t *testing.T) {
			up := truncatedUpstream(t, tc.kill)
			// A proxy per client: each would otherwise hold the previous
			// exchange, which ended incomplete, as a suspect source of the
			// same answer.
			proxy := func() string {
				_, hs := startProxy(t, Options{Policy: testPolicy(t, up.URL, 0)})
				return hs.URL
			}
			ctx := context.Background()

			// Raw HTTP: the body ends cleanly, its last event is the error.
			body, _ := json.Marshal(chatReq("What are the opening hours?", 16, true))
			req, _ := http.NewRequest("POST", proxy()+"/v1/chat/completions", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer sk-raw")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("reading the stream: %v (the response was aborted, not ended)", err)
			}
			var events []string
			sc := bufio.NewScanner(bytes.NewReader(data))
			for sc.Scan() {
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
					events = append(events, d)
				}
			}
			var last struct {
				Error struct{ Type, Code, Message string }
			}
			if len(events) == 0 || json.Unmarshal([]byte(events[len(events)-1]), &last) != nil ||
				last.Error.Code != tc.code || strings.Count(string(data), `"error":`) != 1 {
				t.Fatalf("stream %q: want one final error event with code %s", data, tc.code)
			}

			// go-openai: the error event surfaces as an *openai.APIError.
			st, err := client(proxy(), "go-openai").CreateChatCompletionStream(ctx, chatReq("What are the opening hours?", 16, true))
			if err != nil {
				t.Fatal(err)
			}
			var text strings.Builder
			for {
				r, err := st.Recv()
				if err != nil {
					var ae *openai.APIError
					if !errors.As(err, &ae) || ae.Code != tc.code || errors.Is(err, io.ErrUnexpectedEOF) {
						t.Errorf("go-openai: %v (%T), want an APIError with code %s", err, err, tc.code)
					}
					break
				}
				for _, c := range r.Choices {
					text.WriteString(c.Delta.Content)
				}
			}
			st.Close()
			if !strings.HasPrefix("The opening hours are nine to five on ", text.String()) {
				t.Errorf("go-openai read %q", text.String())
			}

			// openai-go: the error event surfaces as a *ssestream.StreamError.
			c := openaigo.NewClient(openaigoopt.WithBaseURL(proxy()+"/v1/"), openaigoopt.WithAPIKey("sk-openai-go"),
				openaigoopt.WithMaxRetries(0), openaigoopt.WithRequestTimeout(30*time.Second))
			s := c.Chat.Completions.NewStreaming(ctx, openaigo.ChatCompletionNewParams{Model: "pagedcache-1",
				Messages: []openaigo.ChatCompletionMessageParamUnion{openaigo.UserMessage("What are the opening hours?")}})
			for s.Next() {
			}
			var se *ssestream.StreamError
			if err := s.Err(); !errors.As(err, &se) || !strings.Contains(se.Message, tc.code) {
				t.Errorf("openai-go: %v (%T), want a StreamError naming %s", err, err, tc.code)
			}
			s.Close()
		})
	}
}

// TestProxyTooLargeByType: an oversized request body is answered 413,
// whether its length was declared or not, and is never sent; an oversized
// response 502 response_too_large.
func TestProxyTooLargeByType(t *testing.T) {
	up := newFixedUpstream(t, "Noted. "+strings.Repeat("a long answer ", 200))
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound), MaxBody: 2 << 10})
	big, _ := json.Marshal(chatReq(strings.Repeat("a long question ", 300), 16, false))
	for _, declared := range []bool{true, false} {
		var body io.Reader = bytes.NewReader(big)
		if !declared {
			body = struct{ io.Reader }{body} // unknown length: sent chunked
		}
		req, _ := http.NewRequest("POST", hs.URL+"/v1/chat/completions", body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), `"request_too_large"`) ||
			resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("declared length %v: %d %s, want 413 request_too_large", declared, resp.StatusCode, data)
		}
	}
	if up.count() != 0 {
		t.Errorf("an oversized request reached the upstream")
	}
	resp, data := post(t, hs.URL, "What are the opening hours?", nil)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(data, `"response_too_large"`) {
		t.Errorf("oversized response: %d %s, want 502 response_too_large", resp.StatusCode, data)
	}
}

// timeoutErr is a network timeout.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

// TestClassifyByType: errors are told apart by type and stage, never by
// their text: ErrTooLarge is 413 on the request and 502 on the response,
// whatever the message says, and a message that merely says "larger than"
// is no size error.
func TestClassifyByType(t *testing.T) {
	p := &Proxy{opts: Options{MaxBody: 1 << 10}}
	tests := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"request too large", &sdk.GuardError{Stage: sdk.StageParse, Err: fmt.Errorf("reading request body: %w", sdk.ErrTooLarge)}, 413, "request_too_large"},
		{"response too large", &sdk.GuardError{Stage: sdk.StageResponse, Err: fmt.Errorf("reading response body: %w", sdk.ErrTooLarge)}, 502, "response_too_large"},
		{"response text says larger than", &sdk.GuardError{Stage: sdk.StageResponse, Err: errors.New("a number larger than the schema allows")}, 500, "aishield_guard_error"},
		{"request text says larger than", &sdk.GuardError{Stage: sdk.StageParse, Err: errors.New("array larger than expected")}, 400, "aishield_unparsable"},
		{"client body unreadable", &sdk.GuardError{Stage: sdk.StageParse, Err: fmt.Errorf("reading request body: %w", &clientBodyError{err: io.ErrUnexpectedEOF})}, 400, "unreadable_body"},
		{"blocked", &sdk.BlockedError{Destination: "upstream"}, 403, "aishield_blocked"},
		{"over capacity", &sdk.BlockedError{Destination: "upstream", OverCapacity: true}, 400, "aishield_over_capacity"},
		{"contaminated", &sdk.ContaminationError{Destination: "upstream"}, 502, "aishield_contamination"},
		{"timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, 504, "upstream_timeout"},
		{"idle", fmt.Errorf("%w: %w", errIdle, context.Canceled), 504, "upstream_timeout"},
		{"deadline", context.DeadlineExceeded, 504, "upstream_timeout"},
		{"refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), 502, "upstream_unavailable"},
	}
	for _, tt := range tests {
		status, _, code, msg := p.classify(tt.err, "upstream")
		if status != tt.status || code != tt.code || msg == "" {
			t.Errorf("%s: %d %s %q, want %d %s", tt.name, status, code, msg, tt.status, tt.code)
		}
	}
}

// TestProxyAuditRestart: a proxy restarted on the same audit file (two
// proxy.New, each opening it with sdk.OpenAuditLog as aishield proxy
// --audit does) continues its chain: sdk.ReadAudit finds it intact. The
// control opens the file the old way (a new chain appended to an old one),
// which reads as tampered at the first line of the second run.
func TestProxyAuditRestart(t *testing.T) {
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(1<<16, 16), pagedcache.WithContextLen(1<<17))
	pol := testPolicy(t, ts.URL, 0)
	run := func(path string, continueChain bool) {
		var log *sdk.AuditLog
		var f *os.File
		var err error
		if continueChain {
			log, f, err = sdk.OpenAuditLog(path)
		} else {
			f, err = os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
			log = sdk.NewAuditLog(f, "")
		}
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := New(context.Background(), Options{Policy: pol, Upstream: "upstream", AuditLog: log})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(p)
		defer func() { hs.Close(); p.Close() }()
		c := client(hs.URL, "restart")
		if _, err := ask(context.Background(), c, "What is the weekly schedule?", 8, false); err != nil {
			t.Fatal(err)
		}
		if _, err := ask(context.Background(), c, "deploy with 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", 8, false); err == nil {
			t.Fatal("a secret was not blocked")
		}
	}
	for _, continueChain := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "audit.jsonl")
		run(path, true)
		run(path, continueChain)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		n, _, err := sdk.ReadAudit(bytes.NewReader(data), false, nil)
		var ce *sdk.ChainError
		switch {
		case continueChain && (err != nil || n != 4):
			t.Errorf("restarted proxy: %d lines, %v; want 4 lines, chain intact", n, err)
		case !continueChain && (!errors.As(err, &ce) || ce.Line != 3):
			t.Errorf("control (a new chain appended): %v; want the chain broken at line 3", err)
		}
		if strings.Contains(string(data), "sk-test-restart") {
			t.Error("the caller's key reached the audit trail")
		}
	}
}

// TestProxyMetrics: /metrics counts, from the guard's audit records, the
// decisions, blocked requests, redacted values, verdicts, contaminations
// and signals per destination, and, from the handler, the requests by
// status and their latency.
func TestProxyMetrics(t *testing.T) {
	up := newFixedUpstream(t, "Noted, thank you.")
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, quietInbound)})
	if resp, body := post(t, hs.URL, "Reply to quentin.arnaud@sfr.fr about Friday.", nil); resp.StatusCode != 200 {
		t.Fatalf("redacted request: %d %s", resp.StatusCode, body)
	}
	if resp, _ := post(t, hs.URL, "deploy with 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", nil); resp.StatusCode != 403 {
		t.Fatalf("secret: %d", resp.StatusCode)
	}
	up.setAnswer("Confirmed. Also write to margaux.delacroix@orange.fr about her invoice.")
	if resp, _ := post(t, hs.URL, "Confirm Friday's appointment.", nil); resp.StatusCode != 502 {
		t.Fatalf("foreign entity: %d", resp.StatusCode)
	}
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`aishield_proxy_requests_total{destination="upstream",code="200"} 1`,
		`aishield_proxy_requests_total{destination="upstream",code="403"} 1`,
		`aishield_proxy_requests_total{destination="upstream",code="502"} 1`,
		`aishield_decisions_total{destination="upstream",action="allow"} 1`,
		`aishield_decisions_total{destination="upstream",action="block"} 1`,
		`aishield_decisions_total{destination="upstream",action="redact"} 1`,
		`aishield_blocked_total{destination="upstream",reason="content"} 1`,
		`aishield_redacted_values_total{destination="upstream"} 1`,
		`aishield_verdicts_total{destination="upstream",verdict="clean"} 1`,
		`aishield_verdicts_total{destination="upstream",verdict="contaminated"} 1`,
		`aishield_verdicts_total{destination="upstream",verdict="not_sent"} 1`,
		`aishield_contaminations_total{destination="upstream"} 1`,
		`aishield_inbound_signals_total{signal="inbound.foreign_entity"} 1`,
		"aishield_proxy_in_flight_requests 0",
		"aishield_proxy_request_duration_seconds_count 3",
	} {
		if !strings.Contains(string(data), want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, data)
		}
	}
}

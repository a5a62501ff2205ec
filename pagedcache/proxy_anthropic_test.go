package pagedcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/proxy"
)

// claudePolicy declares the paged-cache server at base as an Anthropic
// destination whose declared input limit is the model's context (so an
// over-capacity prompt does go out); every inbound signal blocks, requests
// carry a canary (usage_mismatch takes the action usage, so that the
// content signals can be tested alone), and quarantine is off so that every answer is judged on
// its own.
func claudePolicy(t *testing.T, base string, contextLen int, usage string) *policies.Policy {
	t.Helper()
	y := fmt.Sprintf(`name: pagedcache-anthropic
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*"]
    level: restricted
default_level: internal
destinations:
  - name: claude
    base_url: %s
    provider: anthropic
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: %d
    tokenizer: cl100k_base
    shared: true
default:
  max_level: internal
  action: block
inbound:
  signals:
    foreign_entity: block
    canary: block
    cross_exchange: block
    template_fragment: block
    usage_mismatch: %s
  canary: true
quarantine:
  enabled: false
`, base, contextLen, usage)
	p, err := policies.Parse([]byte(y), "yaml", "pagedcache-anthropic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// claudeAsk sends one user message with the official Anthropic client,
// plain or streamed (accumulated as the SDK does), and returns the text.
func claudeAsk(ctx context.Context, c anthropic.Client, text string, maxTokens int64, stream bool) (string, error) {
	params := anthropic.MessageNewParams{Model: "claude-test-1", MaxTokens: maxTokens,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}}
	var msg anthropic.Message
	if !stream {
		m, err := c.Messages.New(ctx, params)
		if err != nil {
			return "", err
		}
		msg = *m
	} else {
		st := c.Messages.NewStreaming(ctx, params)
		defer st.Close()
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				return "", err
			}
		}
		if err := st.Err(); err != nil {
			var b strings.Builder
			for _, bl := range msg.Content {
				b.WriteString(bl.Text)
			}
			return b.String(), err
		}
	}
	var b strings.Builder
	for _, bl := range msg.Content {
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// TestProxyAnthropicPagedCache is the Anthropic path end to end with the
// bundled tools: the official Anthropic client, aishield's proxy (its
// /v1/messages route) and the paged-cache server's Messages API. A victim
// tenant's clean traffic passes; another tenant's over-capacity prompt,
// which the server with the incident's fault decodes over the victim's
// pages and answers 200, is refused by the proxy (fail closed), plain and
// streamed, and none of the victim's text reaches that client. Without the
// fault the server's own 400 reaches the client.
//
// A refused stream ends with Anthropic's error event, which the client
// reads as an *anthropic.Error: it never receives a complete message, nor
// any text: the prompt count of message_start is checked before the first
// delta goes out.
func TestProxyAnthropicPagedCache(t *testing.T) {
	t.Parallel()
	victimDoc := func(i int) string {
		return strings.Repeat(fmt.Sprintf("Customer ZEPHYR-4471 owes 98,000 EUR under contract %c. ", 'A'+i), 12)
	}
	tests := []struct {
		fault      bool
		usage      string // the usage_mismatch signal's action
		wantSignal string // the signal the refusal names
	}{
		{true, "block", "inbound.usage_mismatch"},
		{false, "block", ""},
	}
	for _, tt := range tests {
		fault := tt.fault
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("fault=%v/usage=%s/stream=%v", fault, tt.usage, stream), func(t *testing.T) {
				t.Parallel()
				opts := []pagedcache.Option{pagedcache.WithCapacity(2048, 16), pagedcache.WithContextLen(8192), pagedcache.WithSeed(7)}
				if fault {
					opts = append(opts, pagedcache.WithFaults(pagedcache.FaultOversizeStalePages))
				}
				ts := pagedcache.NewTestServer(t, opts...)
				p, err := proxy.New(context.Background(), proxy.Options{Policy: claudePolicy(t, ts.URL, 8192, tt.usage), Upstream: "claude"})
				if err != nil {
					t.Fatal(err)
				}
				hs := httptest.NewServer(p)
				t.Cleanup(func() { hs.Close(); p.Close() })
				client := func(key string) anthropic.Client {
					return anthropic.NewClient(option.WithBaseURL(hs.URL), option.WithAPIKey(key), option.WithMaxRetries(0),
						option.WithRequestTimeout(30*time.Second))
				}
				ctx := context.Background()

				// The victim's clean answers pass. (An answer may be empty:
				// the model may quote only the line of the proxy's canary,
				// which the proxy removes.)
				victim := client("sk-ant-victim-key")
				delivered := 0
				for i := range 3 {
					got, err := claudeAsk(ctx, victim, victimDoc(i), 32, stream)
					if err != nil {
						t.Fatalf("victim's clean request %d refused: %v", i, err)
					}
					delivered += len(got)
				}
				if delivered == 0 {
					t.Fatalf("the victim's three clean answers were all empty")
				}
				got, err := claudeAsk(ctx, client("sk-ant-mallory-key"), strings.Repeat(" lorem", 3000), 64, stream)
				// The proxy refuses a stream at its first event, while the
				// server may still be decoding: its record is written when
				// the server is done.
				var rec pagedcache.RequestRecord
				ok := false
				for deadline := time.Now().Add(10 * time.Second); !ok && time.Now().Before(deadline); {
					if rec, ok = ts.Request("4"); !ok {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if !ok {
					t.Fatalf("the over-capacity request did not reach the server")
				}
				var ae *anthropic.Error
				if !errors.As(err, &ae) {
					t.Fatalf("over-capacity request: the client got %q, error %v (want an *anthropic.Error)", got, err)
				}
				if got != "" {
					t.Errorf("text of a refused answer reached the client (stream %v): %q", stream, got)
				}
				var body struct {
					Type  string `json:"type"`
					Error struct{ Type, Message string }
				}
				if json.Unmarshal([]byte(ae.RawJSON()), &body) != nil || body.Type != "error" {
					t.Fatalf("error %s is not Anthropic's format", ae.RawJSON())
				}
				if !fault {
					if rec.Status != 400 || ae.StatusCode != 400 || body.Error.Type != "invalid_request_error" ||
						!strings.Contains(body.Error.Message, "prompt is too long") {
						t.Errorf("correct mode: server %d, client %d %s", rec.Status, ae.StatusCode, ae.RawJSON())
					}
					return
				}
				// The server did leak: ground truth says the answer read the
				// victim's pages and answered 200.
				if rec.Status != 200 || rec.Outcome != "decoded-after-abort" || len(rec.ForeignTenants()) != 1 {
					t.Fatalf("server record %+v: the fault did not reproduce", rec)
				}
				t.Logf("refused: %s", body.Error.Message)
				if body.Error.Type != "aishield_contamination" || !strings.Contains(body.Error.Message, tt.wantSignal) {
					t.Errorf("error %s, want aishield_contamination naming %s", ae.RawJSON(), tt.wantSignal)
				}
				if !stream && (ae.StatusCode != http.StatusBadGateway || ae.Response.Header.Get("X-Should-Retry") != "false") {
					t.Errorf("status %d X-Should-Retry %q, want 502 and false", ae.StatusCode, ae.Response.Header.Get("X-Should-Retry"))
				}
				// Clean traffic still passes after the refusal.
				if _, err := claudeAsk(ctx, victim, "What are the opening hours on Saturday?", 24, stream); err != nil {
					t.Errorf("clean request after the refusal: %v", err)
				}
			})
		}
	}
}

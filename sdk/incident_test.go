package sdk_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// TestIncident replays the 2026 incident against the project's paged-cache
// server in its faulty mode (over-long prompts decoded over stale pages,
// HTTP 200): with the destination's real KV capacity declared, the guard
// refuses the over-long request before sending it; with only the
// advertised context declared, the verifier catches the other tenant's data
// in the response.
func TestIncident(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t,
		pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
	plain := func(key string) *openai.Client {
		cfg := openai.DefaultConfig(key)
		cfg.BaseURL = ts.URL + "/v1"
		return openai.NewClientWithConfig(cfg)
	}
	// Another customer of the shared service, not behind our guard.
	if _, err := plain("sk-clinic").CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 48,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Patient Jane Roe, NHS 943 476 5919, diagnosis F32.1. Draft the referral."}}}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat(" lorem", 5000) // over the 4,095-token capacity, under the 16,384 context

	sent := &countingRT{}
	guarded := func(maxInput int) (*sdk.Client, *policies.Policy) {
		src := strings.Replace(testPolicy, "%s", "closed", 1) // base levels and signals
		src = strings.Replace(src, "destinations:\n", "destinations:\n  - name: shared-llm\n    base_url: "+ts.URL+
			"\n    max_level: internal\n    action: redact\n    block_at: restricted\n    shared: true\n    max_input_tokens: "+
			strconv.Itoa(maxInput)+"\n", 1)
		pol, err := policies.Parse([]byte(src), "yaml", "incident.yaml")
		if err != nil {
			t.Fatal(err)
		}
		g := newVerifiedGuard(t, sdk.Options{Policy: pol}, []byte("k"))
		cfg := openai.DefaultConfig("sk-other")
		cfg.BaseURL = ts.URL + "/v1"
		cfg.HTTPClient = &http.Client{Transport: sent}
		return sdk.NewClient(g, cfg), pol
	}
	_ = plain
	req := openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 48, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: long}}}

	t.Run("real capacity declared: refused before sending", func(t *testing.T) {
		c, _ := guarded(4096)
		before := sent.n.Load()
		_, err := c.CreateChatCompletion(ctx, req)
		var be *sdk.BlockedError
		if !errors.As(err, &be) || !be.OverCapacity {
			t.Fatalf("err = %v, want an over-capacity *BlockedError", err)
		}
		if sent.n.Load() != before {
			t.Fatal("the over-long request reached the server")
		}
	})
	t.Run("advertised context only: contaminated response refused", func(t *testing.T) {
		c, _ := guarded(16384)
		_, err := c.CreateChatCompletion(ctx, req)
		var ce *sdk.ContaminationError
		if !errors.As(err, &ce) {
			t.Fatalf("err = %v, want *ContaminationError", err)
		}
		for _, s := range ce.Signals {
			t.Logf("signal %s %s %s", s.ID, s.Detector, s.Preview)
		}
		if strings.Contains(err.Error(), "943 476 5919") || strings.Contains(err.Error(), "9434765919") {
			t.Fatalf("the other tenant's value leaked into the error: %v", err)
		}
	})
}

// countingRT counts the requests that reach the inner transport.
type countingRT struct{ n atomic.Int64 }

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// TestProviderErrorsPassThrough sends the same over-long request twice to
// the paged-cache server in its correct mode, which refuses it with an
// OpenAI-format 400 context_length_exceeded: both answers reach the caller
// as that 400, plain and streamed. Error bodies are the provider's, not
// model output: they are not fingerprinted, so the second identical error
// is not taken for the first one's text (inbound.cross_exchange).
func TestProviderErrorsPassThrough(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(8192), pagedcache.WithSeed(1))
	src := strings.Replace(testPolicy, "%s", "closed", 1)
	src = strings.Replace(src, "usage_mismatch: flag", "usage_mismatch: block\n    cross_exchange: block\n    foreign_entity: block\n  canary: true", 1)
	src = strings.Replace(src, "destinations:\n", "destinations:\n  - name: shared-llm\n    base_url: "+ts.URL+
		"\n    max_level: internal\n    action: redact\n    block_at: restricted\n    max_input_tokens: 100000\n", 1)
	pol, err := policies.Parse([]byte(src), "yaml", "errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var audit strings.Builder
	g := newVerifiedGuard(t, sdk.Options{Policy: pol, Audit: &audit}, []byte("k"))
	cfg := openai.DefaultConfig("sk-tenant")
	cfg.BaseURL = ts.URL + "/v1"
	c := sdk.NewClient(g, cfg)
	long := "Write to " + email + " about this: " + strings.Repeat(" lorem ipsum dolor", 3000)
	req := openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 48, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: long}}}
	var msgs []string
	for i := range 4 {
		var err error
		if i%2 == 0 {
			_, err = c.CreateChatCompletion(ctx, req)
		} else {
			sreq := req
			sreq.Stream = true
			var st *openai.ChatCompletionStream
			st, err = c.CreateChatCompletionStream(ctx, sreq)
			if err == nil {
				st.Close()
				t.Fatalf("request %d: stream opened", i)
			}
		}
		var ae *openai.APIError
		if !errors.As(err, &ae) || ae.HTTPStatusCode != http.StatusBadRequest || ae.Code != "context_length_exceeded" {
			t.Fatalf("request %d: err = %v, want the provider's 400 context_length_exceeded", i, err)
		}
		msgs = append(msgs, ae.Message)
	}
	digits := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, s)
	}
	if digits(msgs[0]) != digits(msgs[3]) || !strings.Contains(msgs[0], "maximum context length") {
		t.Fatalf("messages differ or lost: %q", msgs)
	}
	n, _, err := sdk.ReadAudit(strings.NewReader(audit.String()), false, nil)
	if err != nil || n != 4 {
		t.Fatalf("audit %d lines, %v", n, err)
	}
	if strings.Count(audit.String(), `"verdict":"error"`) != 4 || strings.Contains(audit.String(), "contaminated") {
		t.Fatalf("audit verdicts:\n%s", audit.String())
	}
}

package pagedcachetest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// chat sends one question; through sdk.Transport, a refusal of the guard is
// answered as an HTTP error go-openai reports, and the guard's typed error
// is recovered with sdk.WithRefusal.
func chat(t *testing.T, c *openai.Client, text string) (openai.ChatCompletionResponse, error) {
	t.Helper()
	ctx, refused := sdk.WithRefusal(context.Background())
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 64,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}})
	if r := refused(); r != nil {
		return resp, r
	}
	return resp, err
}

func client(ts *pagedcache.TestServer, key string, rt http.RoundTripper) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = ts.URL + "/v1"
	cfg.HTTPClient = &http.Client{Transport: rt}
	return openai.NewClientWithConfig(cfg)
}

func TestIncidentIsCaught(t *testing.T) {
	// The incident's engine, scaled down: a 4,096-token cache behind a
	// model accepting 8,192 tokens, LIFO reuse, over-long prompts decoded
	// over stale pages.
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages))
	victim := client(ts, "sk-victim", http.DefaultTransport)
	if _, err := chat(t, victim, strings.Repeat("Board memo: we acquire Globex on 12 March. ", 20)); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat(" lorem", 5000) // over 4,096 tokens, under 8,192

	// Without aishield: HTTP 200, usage says 1 prompt token, and the
	// ground truth shows the answer read the victim's pages.
	resp, err := chat(t, client(ts, "sk-other", http.DefaultTransport), long)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := ts.Request(resp.ID)
	if resp.Usage.PromptTokens != 1 || len(rec.ForeignReads()) == 0 {
		t.Fatalf("no leak reproduced: usage %+v, record %+v", resp.Usage, rec)
	}

	// With aishield and the destination's real capacity declared, the
	// request never leaves.
	pol, err := policies.Parse([]byte(`name: t
levels: [public, internal, confidential, restricted]
destinations:
  - name: shared
    max_level: internal
    action: redact
    max_input_tokens: 4096
    shared: true
`), "yaml", "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := sdk.New(context.Background(), sdk.Options{Policy: pol, Destination: "shared"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = chat(t, client(ts, "sk-other", &sdk.Transport{Guard: g}), long)
	var be *sdk.BlockedError
	if !errors.As(err, &be) || !be.OverCapacity {
		t.Fatalf("over-capacity request not refused: %v", err)
	}
}

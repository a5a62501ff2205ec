package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/traffic"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
)

// testPolicy declares one destination, "upstream", at base with the given
// max_input_tokens; every inbound signal blocks.
func testPolicy(t testing.TB, base string, maxInput int) *policies.Policy {
	t.Helper()
	return testPolicyInbound(t, base, maxInput, blockAll)
}

// blockAll is the inbound section of testPolicy: every signal blocks and
// requests carry a canary.
const blockAll = `inbound:
  signals:
    foreign_entity: block
    canary: block
    cross_exchange: block
    template_fragment: block
    usage_mismatch: block
  canary: true
`

// testPolicyInbound is testPolicy with the given inbound section. Unless
// the section holds a quarantine section of its own, quarantine is off:
// these tests judge answers one by one (quarantine_test.go tests
// quarantines).
func testPolicyInbound(t testing.TB, base string, maxInput int, inbound string) *policies.Policy {
	t.Helper()
	if !strings.Contains(inbound, "quarantine:") {
		inbound += "quarantine:\n  enabled: false\n"
	}
	y := fmt.Sprintf(`name: proxy-test
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*", "marker.classification"]
    level: restricted
default_level: restricted
destinations:
  - name: upstream
    base_url: %s
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: %d
    tokenizer: cl100k_base
    shared: true
  - name: nowhere
    max_level: internal
    action: block
default:
  max_level: internal
  action: block
%s`, base, maxInput, inbound)
	p, err := policies.Parse([]byte(y), "yaml", "proxy-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// startProxy serves a Proxy for pol on a loopback port.
func startProxy(t testing.TB, opts Options) (*Proxy, *httptest.Server) {
	t.Helper()
	if opts.Upstream == "" {
		opts.Upstream = "upstream"
	}
	p, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(p)
	t.Cleanup(func() { hs.Close(); p.Close() })
	return p, hs
}

// client is a go-openai client for tenant through the proxy at base.
func client(base, tenant string) *openai.Client {
	cfg := openai.DefaultConfig("sk-test-" + tenant)
	cfg.BaseURL = base + "/v1"
	cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	return openai.NewClientWithConfig(cfg)
}

func chatReq(text string, maxTokens int, stream bool) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{Model: "pagedcache-1", MaxCompletionTokens: maxTokens, Stream: stream,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}}
}

// ask sends one chat and returns the answer text and the error.
func ask(ctx context.Context, c *openai.Client, text string, maxTokens int, stream bool) (string, error) {
	return traffic.Complete(ctx, c, chatReq(text, maxTokens, stream))
}

// contaminated reports, from the server's ground truth, whether the answer
// of the request with response ID id read tokens another request wrote
// (prefix-cache pages holding the request's own tokens excepted).
func contaminated(t testing.TB, ts *pagedcache.TestServer, seq int) bool {
	rec := record(t, ts, seq)
	for _, rd := range rec.Reads {
		if rd.Request != rec.Seq && !rd.Shared {
			return true
		}
	}
	return rec.LateWritesLanded > 0
}

// record returns the server's ground truth of its seq-th request.
func record(t testing.TB, ts *pagedcache.TestServer, seq int) pagedcache.RequestRecord {
	t.Helper()
	var rec pagedcache.RequestRecord
	ok := false
	for wait := time.Millisecond; wait < 2*time.Second && !ok; wait *= 2 {
		rec, ok = ts.Request(fmt.Sprint(seq))
		if !ok {
			time.Sleep(wait)
		}
	}
	if !ok {
		t.Fatalf("no ground truth for request %d", seq)
	}
	return rec
}

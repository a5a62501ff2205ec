package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/proxy"
)

// Example puts the proxy in front of a provider: the e-mail address
// leaves as a placeholder and comes back restored, a secret is refused
// before anything is sent, and the audit trail names the caller by a
// keyed hash of its API key.
func Example() {
	placeholder := regexp.MustCompile(`\[\[[A-Z_]+_[0-9a-f]+\]\]`)
	var mu sync.Mutex
	var upstreamSaw string // what the provider received
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		upstreamSaw = string(body)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "I will write to " + placeholder.FindString(string(body)) + "."}}}})
	}))
	defer provider.Close()
	pol, err := policies.Parse([]byte(`name: example
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*"]
    level: restricted
destinations:
  - name: provider
    base_url: `+provider.URL+`
    max_level: internal
    action: redact
    block_at: restricted
`), "yaml", "example.yaml")
	if err != nil {
		panic(err)
	}
	var trail strings.Builder
	p, err := proxy.New(context.Background(), proxy.Options{Policy: pol, Upstream: "provider", AuditLog: sdk.NewAuditLog(&trail, "")})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	srv := httptest.NewServer(p) // an application's base URL: srv.URL + "/v1"
	defer srv.Close()

	chat := func(text string) (int, string) {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": text}}})
		req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer sk-example-key")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var out struct {
			Choices []struct{ Message struct{ Content string } }
			Error   struct{ Code string }
		}
		json.NewDecoder(resp.Body).Decode(&out)
		if len(out.Choices) > 0 {
			return resp.StatusCode, out.Choices[0].Message.Content
		}
		return resp.StatusCode, out.Error.Code
	}
	fmt.Println(chat("Reply to quentin.arnaud@sfr.fr about Friday."))
	mu.Lock()
	fmt.Println("the provider saw the address:", strings.Contains(upstreamSaw, "quentin.arnaud"))
	mu.Unlock()
	fmt.Println(chat("Deploy with 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"))
	fmt.Println("the trail holds the key:", strings.Contains(trail.String(), "sk-example-key"),
		"names its hash:", strings.Contains(trail.String(), `"principal":"key:`))
	// Output:
	// 200 I will write to quentin.arnaud@sfr.fr.
	// the provider saw the address: false
	// 403 aishield_blocked
	// the trail holds the key: false names its hash: true
}

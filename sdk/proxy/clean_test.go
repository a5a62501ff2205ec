package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/traffic"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
)

// cleanPolicy is the policy of the clean-traffic suite: two destinations,
// the paged-cache server and a response cache in front of it, every inbound
// signal blocking and canaries on, as a cautious team would run it.
func cleanPolicy(t testing.TB, llm, cached, faqbot string) *policies.Policy {
	t.Helper()
	y := fmt.Sprintf(`name: clean-traffic
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*", "marker.classification"]
    level: restricted
default_level: restricted
destinations:
  - name: llm
    base_url: %s
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: 200000
    tokenizer: cl100k_base
    shared: true
  - name: cached
    base_url: %s
    max_level: internal
    action: redact
    block_at: restricted
    shared: true
  - name: faqbot
    base_url: %s
    max_level: internal
    action: redact
    block_at: restricted
default:
  max_level: internal
  action: block
%s`, llm, cached, faqbot, blockAll)
	p, err := policies.Parse([]byte(y), "yaml", "clean-traffic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// responseCache is a response cache in front of a deterministic upstream:
// requests whose last user message is the same get the same stored answer,
// whoever sends them (a cache keyed on the question, as FAQ caches are).
type responseCache struct {
	next string
	mu   sync.Mutex
	seen map[[32]byte][]byte
	hits int
}

func (c *responseCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	var req struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	last := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			last = m.Content
		}
	}
	key := sha256.Sum256([]byte(r.URL.Path + "\x00" + last))
	c.mu.Lock()
	cached, ok := c.seen[key]
	if ok {
		c.hits++
	}
	c.mu.Unlock()
	if !ok {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, c.next+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, "upstream", http.StatusBadGateway)
			return
		}
		cached, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(cached)
			return
		}
		c.mu.Lock()
		c.seen[key] = cached
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(cached)
}

// faqBot is a deterministic support bot: every wording of a known question
// gets the question's canned answer, streamed when asked.
func faqBot(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string                           `json:"model"`
		Stream   bool                             `json:"stream"`
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	prompt := 0
	last := ""
	for _, m := range req.Messages {
		prompt += len(m.Content)/4 + 4
		if m.Role == "user" {
			last = m.Content
		}
	}
	answer, ok := traffic.FAQAnswer(last)
	if !ok {
		answer = "I do not know; let me open a ticket for you."
	}
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": len(answer) / 4, "total_tokens": prompt + len(answer)/4}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "faq-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}},
			"usage":   usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	event := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", data)
		if fl != nil {
			fl.Flush()
		}
	}
	for len(answer) > 0 {
		n := min(12, len(answer))
		event(map[string]any{"id": "faq-1", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": answer[:n]}}}})
		answer = answer[n:]
	}
	event(map[string]any{"id": "faq-1", "object": "chat.completion.chunk", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
	event(map[string]any{"id": "faq-1", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// cleanResult is what the suite measured.
type cleanResult struct {
	sent, delivered int
	byKind          map[string][2]int // kind → sent, false alarms
	alarms          []string          // one line per false alarm (masked signals only)
	cacheHits       int
	signs, trips    int // signs of a faulty service, quarantines tripped
	staleReads      int // the server's ground truth: answer tokens read from another request's slots
}

// runCleanTraffic sends the clean mix through a real proxy to a real
// paged-cache server with no fault, and counts the answers refused.
func runCleanTraffic(t testing.TB, seed uint64, n, workers int) cleanResult {
	t.Helper()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(1<<18, 64), pagedcache.WithContextLen(1<<18),
		pagedcache.WithSeed(seed))
	cache := &responseCache{next: ts.URL, seen: map[[32]byte][]byte{}}
	cs := httptest.NewServer(cache)
	t.Cleanup(cs.Close)
	fs := httptest.NewServer(http.HandlerFunc(faqBot))
	t.Cleanup(fs.Close)
	px, hs := startProxy(t, Options{Policy: cleanPolicy(t, ts.URL, cs.URL, fs.URL), Upstream: "llm"})
	mix := traffic.CleanMix(traffic.CleanOptions{Seed: seed, Exchanges: n})

	clients := map[string]*openai.Client{}
	for _, x := range mix {
		if clients[x.Principal] == nil {
			cfg := openai.DefaultConfig(x.Principal)
			cfg.BaseURL = hs.URL + "/v1"
			cfg.HTTPClient = &http.Client{Timeout: time.Minute}
			clients[x.Principal] = openai.NewClientWithConfig(cfg)
			cfg.BaseURL = hs.URL + "/d/cached/v1"
			clients["cached/"+x.Principal] = openai.NewClientWithConfig(cfg)
			cfg.BaseURL = hs.URL + "/d/faqbot/v1"
			clients["faqbot/"+x.Principal] = openai.NewClientWithConfig(cfg)
		}
	}
	res := cleanResult{byKind: map[string][2]int{}}
	var mu sync.Mutex
	history := map[int][]openai.ChatCompletionMessage{}
	var wg sync.WaitGroup
	queues := make([]chan traffic.CleanExchange, workers)
	for w := range queues {
		queues[w] = make(chan traffic.CleanExchange, 64)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := range queues[w] {
				req := openai.ChatCompletionRequest{Model: "pagedcache-1", MaxCompletionTokens: x.MaxTokens, Stream: x.Stream}
				if x.Seed != nil {
					s := int(*x.Seed)
					req.Seed = &s
				}
				if x.System != "" {
					req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: "system", Content: x.System})
				}
				mu.Lock()
				req.Messages = append(req.Messages, history[x.Conversation]...)
				mu.Unlock()
				req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: "user", Content: x.User})
				c := clients[x.Principal]
				switch x.Kind {
				case traffic.KindCached:
					c = clients["cached/"+x.Principal]
				case traffic.KindFAQ, traffic.KindParaphrase:
					c = clients["faqbot/"+x.Principal]
				}
				answer, err := traffic.Complete(context.Background(), c, req)
				mu.Lock()
				k := res.byKind[x.Kind]
				k[0]++
				res.sent++
				if err != nil {
					k[1]++
					res.alarms = append(res.alarms, fmt.Sprintf("#%d %s %s: %s", x.N, x.Kind, x.Principal, alarmText(err)))
				} else {
					res.delivered++
					if x.Kind == traffic.KindConversation {
						history[x.Conversation] = append(history[x.Conversation],
							openai.ChatCompletionMessage{Role: "user", Content: x.User},
							openai.ChatCompletionMessage{Role: "assistant", Content: answer})
					}
				}
				res.byKind[x.Kind] = k
				mu.Unlock()
			}
		}()
	}
	for _, x := range mix {
		queues[x.Conversation%workers] <- x
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	cache.mu.Lock()
	res.cacheHits = cache.hits
	cache.mu.Unlock()
	res.staleReads = staleTokenReads(t, ts.URL)
	// The quarantine is on (the policy's default): clean traffic must show
	// no sign of a faulty service, and trip nothing.
	hs2, err := px.Guard().Quarantine().Health(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs2 {
		for sign, st := range h.Signs {
			res.signs += int(st.Count)
			res.alarms = append(res.alarms, fmt.Sprintf("sign %s on %s: %d", sign, h.Destination, st.Count))
		}
		if h.State != nil {
			res.trips++
		}
	}
	return res
}

// staleTokenReads reads the server's ground truth from its metrics: answer
// tokens read from slots another request wrote.
func staleTokenReads(t testing.TB, url string) int {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, "pagedcache_stale_token_reads_total{"); ok {
			_, v, _ := strings.Cut(rest, "} ")
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("metrics: %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatal("metrics: no pagedcache_stale_token_reads_total")
	return 0
}

// alarmText renders a refusal without the answer's text: the API error's
// code and message (the guard's messages carry masked previews only).
func alarmText(err error) string {
	var ae *openai.APIError
	if errors.As(err, &ae) {
		return fmt.Sprintf("%d %v: %s", ae.HTTPStatusCode, ae.Code, ae.Message)
	}
	return err.Error()
}

func (r cleanResult) report() string {
	var b strings.Builder
	kinds := make([]string, 0, len(r.byKind))
	for k := range r.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "%d clean exchanges, %d delivered, %d refused (response cache hits %d); %d signs of a faulty service, %d quarantines tripped; server's stale token reads %d\n",
		r.sent, r.delivered, r.sent-r.delivered, r.cacheHits, r.signs, r.trips, r.staleReads)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-15s %5d sent %4d refused\n", k, r.byKind[k][0], r.byKind[k][1])
	}
	for i, a := range r.alarms {
		if i == 60 {
			fmt.Fprintf(&b, "  … %d more\n", len(r.alarms)-20)
			break
		}
		fmt.Fprintf(&b, "  %s\n", a)
	}
	return b.String()
}

// cleanCount is the size of the clean-traffic test: AISHIELD_CLEAN_TRAFFIC
// exchanges (CI runs 10,000 without the race detector), else 2,000.
func cleanCount(t testing.TB) int {
	if v := os.Getenv("AISHIELD_CLEAN_TRAFFIC"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			t.Fatalf("AISHIELD_CLEAN_TRAFFIC=%q: want a number of exchanges, at least 100", v)
		}
		return n
	}
	return 2000
}

// TestCleanTraffic: everyday traffic through the proxy is never refused.
func TestCleanTraffic(t *testing.T) {
	n := cleanCount(t)
	for _, seed := range []uint64{1, 2} {
		res := runCleanTraffic(t, seed, n/2, 4)
		t.Logf("seed %d: %s", seed, res.report())
		if res.sent != n/2 || res.delivered != res.sent || res.signs != 0 || res.trips != 0 || res.staleReads != 0 {
			t.Errorf("seed %d: %d of %d clean exchanges refused:\n%s", seed, res.sent-res.delivered, res.sent, res.report())
		}
	}
}

// BenchmarkCleanTraffic sends the clean mix through the proxy and reports
// the false alarms (goal: 0) and the throughput.
func BenchmarkCleanTraffic(b *testing.B) {
	n := max(b.N, 1000)
	start := time.Now()
	res := runCleanTraffic(b, 1, n, 8)
	b.ReportMetric(float64(res.sent-res.delivered), "false-alarms")
	b.ReportMetric(float64(res.sent)/time.Since(start).Seconds(), "exchanges/s")
	_ = slices.Clone(res.alarms)
}

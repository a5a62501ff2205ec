package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/traffic"
	"github.com/aishield/aishield/pagedcache"
)

// counting counts the requests that reach the upstream.
type counting struct {
	n  atomic.Int64
	rt http.RoundTripper
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// TestProxyFaultModes sends the demo's multi-tenant traffic (documents with
// personal data, secrets and markers; prompts over the KV capacity) through
// the proxy to the paged-cache server in every fault mode and for several
// seeds, with go-openai over real HTTP. The policy declares only the
// advertised context, so over-capacity prompts do go out and inbound
// verification must stop what comes back; it declares the server's
// tokenizer, so a silently truncated prompt is caught by the usage check.
// Ground truth from the server decides: nothing contaminated or truncated
// reaches the client, and no clean answer is refused.
func TestProxyFaultModes(t *testing.T) {
	modes := append([]pagedcache.Fault{""}, pagedcache.Faults()...)
	for _, fault := range modes {
		name := string(fault)
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			for _, seed := range []uint64{3, 4, 5} {
				faultRun(t, fault, seed)
			}
		})
	}
}

func faultRun(t *testing.T, fault pagedcache.Fault, seed uint64) {
	opts := []pagedcache.Option{pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192), pagedcache.WithSeed(seed + 4)}
	if fault != "" {
		opts = append(opts, pagedcache.WithFaults(fault))
	}
	ts := pagedcache.NewTestServer(t, opts...)
	up := &counting{rt: http.DefaultTransport}
	_, hs := startProxy(t, Options{Policy: testPolicy(t, ts.URL, 8192), Transport: up})
	sc := traffic.NewScenario(traffic.ScenarioOptions{Seed: seed, Rounds: 3, OversizeTokens: 5000})
	var delivered, caught, truncated, blocked, clean, rejected int
	for _, r := range sc.Requests {
		ten, _ := sc.Tenant(r.Tenant)
		cfg := openai.DefaultConfig(ten.APIKey)
		cfg.BaseURL = hs.URL + "/v1"
		c := openai.NewClientWithConfig(cfg)
		before := up.n.Load()
		text, err := ask(context.Background(), c, r.System+"\n\n"+r.User, r.MaxTokens, r.Stream)
		var be *openai.APIError
		if up.n.Load() == before {
			// Refused before sending: only for content.
			if err == nil || !errors.As(err, &be) || be.HTTPStatusCode != http.StatusForbidden {
				t.Fatalf("seed %d request %d not sent, error %v", seed, r.N, err)
			}
			blocked++
			continue
		}
		rec := record(t, ts, int(up.n.Load()))
		if rec.Status != http.StatusOK {
			// The server refused it (over its limit): the client gets the
			// server's own error, status and code.
			if !errors.As(err, &be) || be.HTTPStatusCode != rec.Status {
				t.Errorf("seed %d request %d: the server answered %d, the client got %v", seed, r.N, rec.Status, err)
			}
			rejected++
			continue
		}
		foreign := contaminated(t, ts, int(up.n.Load()))
		dropped := rec.Outcome == "truncated" || rec.Outcome == "decoded-after-abort"
		switch {
		case (foreign || dropped) && err == nil:
			t.Errorf("seed %d request %d (oversize %v, stream %v): %s answer delivered (foreign %v): %.80q",
				seed, r.N, r.Oversize, r.Stream, rec.Outcome, foreign, text)
		case foreign:
			caught++
		case dropped:
			truncated++
			if !strings.Contains(err.Error(), "inbound.usage_mismatch") {
				t.Errorf("seed %d request %d: truncated answer refused for another reason: %v", seed, r.N, err)
			}
		case err == nil:
			clean++
			delivered++
		default:
			clean++
			t.Errorf("seed %d request %d (stream %v): clean answer refused (false alarm): %v", seed, r.N, r.Stream, err)
		}
	}
	if blocked == 0 || delivered == 0 {
		t.Errorf("seed %d: blocked %d delivered %d", seed, blocked, delivered)
	}
	switch fault {
	case pagedcache.FaultOversizeStalePages:
		if caught+truncated != 2 {
			t.Errorf("seed %d: caught %d contaminated and %d dropped answers, want the 2 over-capacity ones", seed, caught, truncated)
		}
	case pagedcache.FaultAutoTruncate:
		if truncated != 2 {
			t.Errorf("seed %d: caught %d truncated answers, want the 2 over-capacity ones", seed, truncated)
		}
	case "":
		if rejected != 2 {
			t.Errorf("seed %d: the server refused %d requests, want the 2 over-capacity ones", seed, rejected)
		}
	}
	t.Logf("%s seed %d: %d blocked outbound, %d refused by the server, %d contaminated and %d truncated caught, %d of %d clean delivered",
		fault, seed, blocked, rejected, caught, truncated, delivered, clean)
}

// TestProxyLoad holds 16 concurrent go-openai clients (plain and streaming)
// through the proxy in front of the paged-cache server with the incident's
// fault on, for a bounded number of requests: no errors, and no answer
// that read another request's pages reaches a client.
func TestProxyLoad(t *testing.T) {
	const clients = 16
	perClient := 25
	if testing.Short() {
		perClient = 6
	}
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(65536, 16), pagedcache.WithContextLen(131072),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages))
	_, hs := startProxy(t, Options{Policy: testPolicy(t, ts.URL, 65536)})
	var wg sync.WaitGroup
	var errs, leaks atomic.Int64
	// Every prompt is under the capacity and the answers read only their
	// own pages: any error, a clean answer withheld included, fails.
	fail := func(err error, what string) {
		errs.Add(1)
		t.Errorf("%s: %v", what, err)
	}
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := openai.DefaultConfig(fmt.Sprintf("sk-load-%d", i))
			cfg.BaseURL = hs.URL + "/v1"
			c := openai.NewClientWithConfig(cfg)
			for j := range perClient {
				text := fmt.Sprintf("Client %d, question %d: %s", i, j, prose(uint64(i*1000+j), 60))
				stream := j%2 == 1
				req := chatReq(text, 48, stream)
				if !stream {
					resp, err := c.CreateChatCompletion(context.Background(), req)
					if err != nil {
						fail(err, fmt.Sprintf("client %d request %d", i, j))
						continue
					}
					rec, ok := ts.Request(resp.ID)
					if !ok {
						t.Errorf("no ground truth for %s", resp.ID)
						continue
					}
					if len(rec.ForeignReads()) > 0 {
						leaks.Add(1)
					}
					continue
				}
				if _, err := ask(context.Background(), c, text, 48, true); err != nil {
					fail(err, fmt.Sprintf("client %d stream %d", i, j))
				}
			}
		}()
	}
	wg.Wait()
	total := int64(clients * perClient)
	if errs.Load() != 0 || leaks.Load() != 0 {
		t.Errorf("%d of %d requests failed, %d leaked answers", errs.Load(), total, leaks.Load())
	}
	t.Logf("%d clients x %d requests: %d errors, %d leaks", clients, perClient, errs.Load(), leaks.Load())
}

// prose is n words of real documentation (the Go distribution's, as
// traffic.GoDocuments reads it), from a seeded place: clean text whose
// vocabulary and phrasing are those people send, different for every seed.
func prose(seed uint64, n int) string {
	words := proseWords()
	r := rand.New(rand.NewPCG(seed, 99))
	start := r.IntN(len(words))
	out := make([]string, n)
	for i := range out {
		out[i] = words[(start+i)%len(words)]
	}
	return strings.Join(out, " ")
}

// proseWords are the words of the documents, without those holding a
// digit: the paged-cache model joins quotes of its prompt, and joined digit
// groups of a prompt full of numbers ("02 Jan 06" then "-0700 2006") can
// form a phone number the prompt never held, which the verifier rightly
// reports as a value the request did not contain. The load test wants
// answers that hold only their own values.
var proseWords = sync.OnceValue(func() []string {
	var words []string
	for _, d := range traffic.GoDocuments() {
		for _, w := range strings.Fields(d) {
			if !strings.ContainsAny(w, "0123456789") {
				words = append(words, w)
			}
		}
	}
	return words
})

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

	"github.com/aishield/aishield/internal/demo"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/sdk"
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
// the proxy to the paged-cache server in every fault mode, with go-openai
// over real HTTP. The policy declares only the advertised context, so
// over-capacity prompts do go out and inbound verification must stop what
// comes back. Ground truth from the server decides what was contaminated.
func TestProxyFaultModes(t *testing.T) {
	modes := append([]pagedcache.Fault{""}, pagedcache.Faults()...)
	for _, fault := range modes {
		name := string(fault)
		if name == "" {
			name = "correct"
		}
		t.Run(name, func(t *testing.T) {
			opts := []pagedcache.Option{pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192), pagedcache.WithSeed(7)}
			if fault != "" {
				opts = append(opts, pagedcache.WithFaults(fault))
			}
			ts := pagedcache.NewTestServer(t, opts...)
			up := &counting{rt: http.DefaultTransport}
			_, hs := startProxy(t, Options{Policy: testPolicy(t, ts.URL, 8192), Transport: up})
			sc := demo.NewScenario(demo.ScenarioOptions{Seed: 3, Rounds: 3, OversizeTokens: 5000})
			var delivered, caught, blocked, clean, spliced, small, rejected int
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
						t.Fatalf("request %d not sent, error %v", r.N, err)
					}
					blocked++
					continue
				}
				if rec := record(t, ts, int(up.n.Load())); rec.Status != http.StatusOK {
					// The server refused it (correct mode: over its limit).
					// Whatever the client got must be an error.
					if err == nil {
						t.Errorf("request %d: the server answered %d, the client got no error", r.N, rec.Status)
					}
					rejected++
					t.Logf("request %d: server answered %d; client got: %v", r.N, rec.Status, err)
					continue
				}
				foreign := contaminated(t, ts, int(up.n.Load()))
				switch {
				case foreign && err == nil:
					if r.Oversize {
						t.Errorf("request %d (over capacity): contaminated answer delivered: %.80q", r.N, text)
					} else {
						small++ // a few tokens of another request spliced in: below the verifier's 64-byte guarantee
						t.Logf("request %d: contaminated answer delivered (short foreign splice)", r.N)
					}
				case foreign:
					caught++
				case err == nil:
					clean++
					delivered++
				default:
					clean++
					var ce *sdk.ContaminationError
					msg := err.Error()
					if errors.As(err, &ce) || containsAny(msg, "inbound.foreign_entity", "inbound.foreign_placeholder") {
						spliced++
						t.Logf("request %d: clean answer withheld (spliced quote of its own data): %v", r.N, err)
						continue
					}
					t.Errorf("request %d: clean answer refused: %v", r.N, err)
				}
			}
			if spliced > 1 {
				t.Errorf("%d clean answers withheld, want at most 1", spliced)
			}
			if blocked == 0 || delivered == 0 {
				t.Errorf("blocked %d delivered %d", blocked, delivered)
			}
			if fault == pagedcache.FaultOversizeStalePages && caught < 2 {
				t.Errorf("caught %d contaminated answers, want the 2 over-capacity ones", caught)
			}
			t.Logf("%s: %d blocked outbound, %d refused by the server, %d contaminated caught, %d short splices delivered, %d of %d clean delivered",
				name, blocked, rejected, caught, small, delivered, clean)
		})
	}
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if len(x) > 0 && len(s) >= len(x) && indexOf(s, x) >= 0 {
			return true
		}
	}
	return false
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
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
	var errs, leaks, withheld atomic.Int64
	// fail counts an error; a clean answer withheld by the verifier (a
	// false alarm) is counted apart: the paged-cache model answers by
	// splicing short quotes of its context, and a splice can forge a
	// canary- or entity-shaped token (reported to the verifier's owners).
	fail := func(err error, what string) {
		var ae *openai.APIError
		if errors.As(err, &ae) && ae.HTTPStatusCode == http.StatusBadGateway && ae.Code == "aishield_contamination" ||
			strings.Contains(err.Error(), "contains foreign material") {
			withheld.Add(1)
			t.Logf("%s: clean answer withheld: %v", what, err)
			return
		}
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
	if errs.Load() != 0 || leaks.Load() != 0 || withheld.Load()*100 > total {
		t.Errorf("%d errors, %d leaked answers, %d clean answers withheld (at most 1%% allowed)", errs.Load(), leaks.Load(), withheld.Load())
	}
	t.Logf("%d clients x %d requests: %d errors, %d leaks, %d withheld", clients, perClient, errs.Load(), leaks.Load(), withheld.Load())
}

// prose is n words of seeded, clean text, different for every seed.
func prose(seed uint64, n int) string {
	words := strings.Fields("the a schedule comfort mode eco morning evening weekly thermostat room heat window door sensor battery screen menu period day night change keep open close set start stop warm cold quiet quick simple light")
	r := rand.New(rand.NewPCG(seed, 99))
	out := make([]string, n)
	for i := range out {
		out[i] = words[r.IntN(len(words))]
	}
	return strings.Join(out, " ")
}

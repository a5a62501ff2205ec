package sdk_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// probeEchoServer answers every chat completion with answer(prompt words).
func probeEchoServer(t *testing.T, answer func(words string) string) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		prompt := req.Messages[len(req.Messages)-1].Content
		_, words, _ := strings.Cut(prompt, "write nothing else:")
		w.Header().Set("Content-Type", "application/json")
		text := answer(strings.TrimSpace(words))
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
			"usage": map[string]any{"prompt_tokens": len(prompt), "completion_tokens": len(text)}}) // at least the real counts
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A model that says a few words of its own around the words is not
// contamination; material from elsewhere is, and trips the quarantine.
func TestProbeJudgesTheAnswer(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		answer func(words string) string
		reason string // "" clean; else what the reasons hold
	}{
		{"exact echo", func(w string) string { return w }, ""},
		{"a model's preamble", func(w string) string { return "Sure! Here are the words: " + w }, ""},
		{"someone's e-mail", func(w string) string { return w + " mail amelie.fontaine@orange.fr" }, "inbound.foreign_entity"}, // the verifier refuses it first
		// A name alone is foreign to an answer only when another request
		// of ours carried it (inbound.sourced); to a probe it always is.
		{"a stranger's name", func(w string) string { return w + " Amelie Fontaine" }, "finding:pii.person_name"},
		{"another request's text", func(w string) string {
			return w + " The discharge letter for the patient in ward seven says the treatment continues until March"
		}, "foreign_words:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, _ := probeEchoServer(t, c.answer)
			g, err := sdk.New(ctx, sdk.Options{Policy: quarantinePolicy(t, srv.URL, "http://127.0.0.1:1", "")})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			res, err := g.Probe(ctx, "shared-llm", nil, http.Header{"Authorization": {"Bearer sk-probe"}})
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(res.Reasons, " ")
			if res.Contaminated != (c.reason != "") || !strings.Contains(joined, c.reason) {
				t.Fatalf("contaminated %v reasons %q, want %q", res.Contaminated, joined, c.reason)
			}
			if strings.Contains(joined, "amelie") {
				t.Errorf("a reason carries the value: %q", joined)
			}
			st, err := g.Quarantine().Check(ctx, "shared-llm")
			if err != nil || st.Quarantined != res.Contaminated {
				t.Errorf("quarantined %v after a probe contaminated %v (%v)", st.Quarantined, res.Contaminated, err)
			}
			if res.Contaminated && st.State.Signs[policies.SignProbe] != 1 {
				t.Errorf("tripped by %v, want the probe sign", st.State.Signs)
			}
		})
	}
}

// On a server that behaves, probes never come back contaminated: 0 false
// trips, whatever the words drawn.
func TestProbeCleanServer(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithSeed(3))
	g, err := sdk.New(ctx, sdk.Options{Policy: quarantinePolicy(t, ts.URL, "http://127.0.0.1:1", "")})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tokens := 0
	for i := range 40 {
		res, err := g.Probe(ctx, "shared-llm", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Contaminated {
			t.Fatalf("probe %d on a clean server: %v", i, res.Reasons)
		}
		if res.PromptTokens == 0 {
			t.Fatalf("probe %d: no usage", i)
		}
		tokens += res.PromptTokens + res.CompletionTokens
	}
	if st, _ := g.Quarantine().Check(ctx, "shared-llm"); st.Quarantined {
		t.Error("quarantined by clean probes")
	}
	t.Logf("%.0f tokens per probe", float64(tokens)/40)
}

// Two processes sharing a Redis store probe a destination once per
// interval between them.
func TestProberSharedSchedule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1100*time.Millisecond)
	defer cancel()
	srv, n := probeEchoServer(t, func(w string) string { return w })
	c := redistest.Client(t)
	pol := quarantinePolicy(t, srv.URL, "http://127.0.0.1:1", "    quarantine:\n      probe:\n        every: 1s\n")
	var wg sync.WaitGroup
	var probes atomic.Int64
	for range 2 {
		g, err := sdk.New(context.Background(), sdk.Options{Policy: pol, Quarantine: quarantine.NewRedisStore(c, "probe")})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		p := &sdk.Prober{Guard: g, OnProbe: func(r sdk.ProbeResult, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				probes.Add(1) // sent as the run ended
				return
			}
			if err != nil || r.Contaminated {
				t.Errorf("probe %+v %v", r, err)
			}
			probes.Add(1)
		}}
		if d := p.Destinations(); len(d) != 1 || d[0] != "shared-llm" {
			t.Fatalf("destinations %v", d)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Run(ctx) }()
	}
	wg.Wait()
	// One claim at the start and, 1 s later, maybe one more.
	if got := probes.Load(); got < 1 || got > 2 || n.Load() > got {
		t.Errorf("%d probes (%d requests) in 1.1 s at one per second for two processes", got, n.Load())
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3/option"
	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// long is the over-long request: about 5,000 tokens, over the scaled-down
// server's 4,096-token KV cache and under its 16,384-token context.
var long = strings.Repeat(" lorem", 5000)

// incidentServer starts the incident's engine scaled down, like
// incidentOptions, and has the clinic send its note straight to it, not
// through aishield.
func incidentServer(t *testing.T) *pagedcache.TestServer { return incidentServerNote(t, clinic) }

func incidentServerNote(t *testing.T, note string) *pagedcache.TestServer {
	t.Helper()
	ts := pagedcache.NewTestServer(t,
		pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
	if err := sendDirect(context.Background(), ts.URL+"/v1", "sk-clinic", note); err != nil {
		t.Fatal(err)
	}
	return ts
}

// metric reads one counter of the server's /metrics.
func metric(t *testing.T, ts *pagedcache.TestServer, name string) int {
	t.Helper()
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+"{") {
			n, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// withCapacity is the default preset with the server's real KV capacity
// declared for the destinations it does not list (its default).
func withCapacity(t *testing.T, tokens int) *policies.Policy {
	t.Helper()
	src, err := policies.PresetSource("default")
	if err != nil {
		t.Fatal(err)
	}
	const at = "\ndefault:\n"
	if !strings.Contains(string(src), at) {
		t.Fatal("the default preset has no default: section")
	}
	yaml := strings.Replace(string(src), at, at+"  max_input_tokens: "+strconv.Itoa(tokens)+"\n", 1)
	pol, err := policies.Parse([]byte(yaml), "yaml", "default-with-capacity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func preset(t *testing.T) *policies.Policy {
	t.Helper()
	pol, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	if pol.Default.MaxInputTokens != 0 {
		t.Fatalf("the default preset declares a capacity (%d) for its default destination: the over-long request would not be sent", pol.Default.MaxInputTokens)
	}
	return pol
}

func config(ts *pagedcache.TestServer) openai.ClientConfig {
	cfg := openai.DefaultConfig("sk-other")
	cfg.BaseURL = ts.URL + "/v1"
	return cfg
}

// noValues fails when a value of the clinic's note shows in msg.
func noValues(t *testing.T, msg string) {
	t.Helper()
	for _, v := range []string{"amelie.fontaine@orange.fr", "9434765919", "+33612345678", "hugo.fontaine@free.fr", "cabinet.renaud@medecins-lyon.fr"} {
		if strings.Contains(msg, v) {
			t.Errorf("the clinic's %q is in the error: %s", v, msg)
		}
	}
}

// TestREADMESnippet runs the README's go-openai snippet (newClient, ask,
// explain) against the 2026 incident scaled down.
func TestREADMESnippet(t *testing.T) {
	ctx := context.Background()

	t.Run("capacity undeclared: the contaminated answer is refused", func(t *testing.T) {
		ts := incidentServer(t)
		client, err := newClient(ctx, preset(t), config(ts))
		if err != nil {
			t.Fatal(err)
		}
		answer, err := ask(ctx, client, long)
		var contaminated *sdk.ContaminationError
		if !errors.As(err, &contaminated) {
			t.Fatalf("answer %q, err %v: want *sdk.ContaminationError", answer, err)
		}
		if answer != "" {
			t.Errorf("an answer came with the refusal: %q", answer)
		}
		// The server's ground truth: the request was sent, aborted and
		// decoded over the clinic's stale pages, answering 200.
		if n := metric(t, ts, "pagedcache_oversize_decoded_total"); n != 1 {
			t.Errorf("%d over-long requests decoded, want 1", n)
		}
		if n := metric(t, ts, "pagedcache_stale_token_reads_total"); n == 0 {
			t.Error("the answer read no stale token: nothing to catch")
		}
		msg := explain(err)
		if !strings.HasPrefix(msg, "answer refused") {
			t.Errorf("explain: %s", msg)
		}
		noValues(t, msg)

		// The answer showed a faulty service (a dropped prompt): the
		// destination is quarantined, and personal data no longer goes.
		question := "Tell quentin.arnaud@sfr.fr that the thermostat schedule changes on Monday."
		sent := metric(t, ts, "vllm:prompt_tokens_total")
		_, err = ask(ctx, client, question)
		var quarantined *quarantine.Error
		if !errors.As(err, &quarantined) || quarantined.Destination != "default" {
			t.Fatalf("personal data after the leak: %v, want *quarantine.Error", err)
		}
		if !strings.HasPrefix(explain(err), "not sent (default quarantined)") {
			t.Errorf("explain: %s", explain(err))
		}
		if n := metric(t, ts, "vllm:prompt_tokens_total"); n != sent {
			t.Error("the request reached the quarantined service")
		}

		// Once a person has looked and cleared it, the same client answers
		// a question of its own, and the answer keeps its value (restored
		// from the placeholder the server saw).
		if _, ok, err := client.Guard().Quarantine().Clear(ctx, "default"); !ok || err != nil {
			t.Fatalf("clear: %v %v", ok, err)
		}
		answer, err = ask(ctx, client, question)
		if err != nil {
			t.Fatalf("a clean question: %v", err)
		}
		if strings.Contains(answer, "[[PII_EMAIL_") {
			t.Errorf("placeholder not restored: %q", answer)
		}
	})

	t.Run("capacity declared: refused before sending", func(t *testing.T) {
		ts := incidentServer(t)
		client, err := newClient(ctx, withCapacity(t, 4096), config(ts))
		if err != nil {
			t.Fatal(err)
		}
		_, err = ask(ctx, client, long)
		var blocked *sdk.BlockedError
		if !errors.As(err, &blocked) || !blocked.OverCapacity {
			t.Fatalf("err %v: want an over-capacity *sdk.BlockedError", err)
		}
		if n := metric(t, ts, "vllm:prompt_tokens_total"); n > 100 {
			t.Errorf("the server processed %d prompt tokens: the over-long request reached it", n)
		}
		if !strings.HasPrefix(explain(err), "not sent (over capacity: true)") {
			t.Errorf("explain: %s", explain(err))
		}
	})
}

// recorder keeps the bodies of the requests that reach the server.
type recorder struct {
	mu     sync.Mutex
	bodies []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, string(b))
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.bodies)
}

// TestREADMERedaction checks what the README says of the snippet with the
// default preset: an e-mail address leaves as a placeholder and the answer
// has it back; a GitHub token is blocked before sending.
func TestREADMERedaction(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithSeed(1))
	rec := &recorder{}
	cfg := config(ts)
	cfg.HTTPClient = &http.Client{Transport: rec}
	client, err := newClient(ctx, preset(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const email = "quentin.arnaud@sfr.fr"
	// The model quotes its context: asked often enough, it quotes the
	// placeholder, which must come back as the address.
	restored := false
	for i := 0; i < 20 && !restored; i++ {
		answer, err := ask(ctx, client, fmt.Sprintf("Reply to %s: the thermostat schedule changes on day %d.", email, i))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(answer, "[[PII_EMAIL_") {
			t.Fatalf("placeholder not restored: %q", answer)
		}
		restored = strings.Contains(answer, email)
	}
	if !restored {
		t.Error("no answer quoted the address back")
	}
	for _, b := range rec.sent() {
		if strings.Contains(b, email) || !strings.Contains(b, "[[PII_EMAIL_") {
			t.Fatalf("the server saw %s", b)
		}
	}
	n := len(rec.sent())
	_, err = ask(ctx, client, "Why does the deploy fail? GITHUB_TOKEN=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")
	var blocked *sdk.BlockedError
	if !errors.As(err, &blocked) || blocked.OverCapacity {
		t.Fatalf("err %v: want *sdk.BlockedError for its content", err)
	}
	if len(rec.sent()) != n {
		t.Error("the blocked request reached the server")
	}
	if strings.Contains(explain(err), "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") {
		t.Errorf("the token is in the explanation: %s", explain(err))
	}
}

// prose is another customer's note with no identifier in it.
const prose = "Discharge letter. The patient was admitted with a moderate depressive episode and discharged " +
	"on sertraline; follow-up with the community mental health team in four weeks. Draft the referral."

// TestPreset shows what the default preset does with an answer over a
// dropped prompt that quotes only another customer's prose: no value,
// placeholder, canary or text of an exchange aishield saw, so nothing but
// the provider's impossible usage (1 prompt token for about 5,000) gives it
// away. The default preset flags inbound.usage_mismatch: the answer is
// delivered and the audit trail records it as flagged. A policy that blocks
// the signal (usage_mismatch: block, as the strict and pci presets do)
// refuses it.
func TestPreset(t *testing.T) {
	ctx := context.Background()
	serve := func(t *testing.T) *pagedcache.TestServer {
		ts := pagedcache.NewTestServer(t,
			pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384),
			pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
		if err := sendDirect(ctx, ts.URL+"/v1", "sk-clinic", prose); err != nil {
			t.Fatal(err)
		}
		return ts
	}

	t.Run("default preset: refused on the usage alone", func(t *testing.T) {
		ts := serve(t)
		var records []sdk.AuditRecord
		var mu sync.Mutex
		g, err := sdk.New(ctx, sdk.Options{Policy: preset(t), OnRecord: func(r sdk.AuditRecord) {
			mu.Lock()
			records = append(records, r)
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ask(ctx, sdk.NewClient(g, config(ts)), long)
		var contaminated *sdk.ContaminationError
		if !errors.As(err, &contaminated) || contaminated.Signals[0].ID != policies.SignalUsageMismatch {
			t.Fatalf("err %v: want *sdk.ContaminationError by %s", err, policies.SignalUsageMismatch)
		}
		if metric(t, ts, "pagedcache_stale_token_reads_total") == 0 {
			t.Fatal("the answer read no stale token")
		}
		mu.Lock()
		defer mu.Unlock()
		// The exchange, refused, then the quarantine its dropped prompt
		// tripped.
		if len(records) != 2 || records[0].Verdict != sdk.VerdictContaminated || records[0].Signals[policies.SignalUsageMismatch] == 0 ||
			records[1].Event != quarantine.EventTripped || records[1].Exchange != records[0].Exchange {
			t.Fatalf("audit records %+v: want one refused by %s, then the quarantine it tripped", records, policies.SignalUsageMismatch)
		}
	})

	t.Run("usage_mismatch: flag: delivered, flagged", func(t *testing.T) {
		ts := serve(t)
		src, err := policies.PresetSource("default")
		if err != nil {
			t.Fatal(err)
		}
		yaml := strings.Replace(string(src), "usage_mismatch: block", "usage_mismatch: flag", 1)
		if yaml == string(src) {
			t.Fatal("the default preset does not block usage_mismatch any more")
		}
		pol, err := policies.Parse([]byte(yaml), "yaml", "default-usage-flag.yaml")
		if err != nil {
			t.Fatal(err)
		}
		client, err := newClient(ctx, pol, config(ts))
		if err != nil {
			t.Fatal(err)
		}
		if answer, err := ask(ctx, client, long); err != nil || answer == "" {
			t.Fatalf("answer %q, err %v: a flagged answer is delivered", answer, err)
		}
	})
}

// TestREADMETransport runs the README's openai-go snippet (newOpenAIClient,
// askOpenAI) against the same incident: the answer is refused, and the
// prompt is sent once, not again, although openai-go retries failed round
// trips by default.
func TestREADMETransport(t *testing.T) {
	ctx := context.Background()
	ts := incidentServer(t)
	g, err := sdk.New(ctx, sdk.Options{Policy: preset(t)})
	if err != nil {
		t.Fatal(err)
	}
	client := newOpenAIClient(g, option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("sk-other"))
	_, err = askOpenAI(ctx, client, long)
	var contaminated *sdk.ContaminationError
	if !errors.As(err, &contaminated) {
		t.Fatalf("err %v: want *sdk.ContaminationError", err)
	}
	noValues(t, err.Error())
	if n := metric(t, ts, "pagedcache_oversize_decoded_total"); n != 1 {
		t.Errorf("the over-long prompt was sent %d times, want once", n)
	}
}

package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// quarantinePolicy is a policy with a shared destination at shared and a
// local one at local, and the given quarantine section for the shared one.
func quarantinePolicy(t *testing.T, shared, local, section string) *policies.Policy {
	t.Helper()
	src := `name: quarantine-test
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["secret.*"]
    level: restricted
destinations:
  - name: shared-llm
    base_url: ` + shared + `
    max_level: internal
    action: redact
    block_at: restricted
    shared: true
    contract: true
` + section + `
  - name: local
    base_url: ` + local + `
    max_level: confidential
    action: redact
default:
  max_level: public
  action: block
inbound:
  canary: true
`
	p, err := policies.Parse([]byte(src), "yaml", "quarantine-test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recordingRT counts the requests that leave, per host, and keeps their
// Authorization headers.
type recordingRT struct {
	mu    sync.Mutex
	hosts map[string]int
	auth  map[string][]string
}

func (r *recordingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	if r.hosts == nil {
		r.hosts, r.auth = map[string]int{}, map[string][]string{}
	}
	r.hosts[req.URL.Host]++
	r.auth[req.URL.Host] = append(r.auth[req.URL.Host], req.Header.Get("Authorization"))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func (r *recordingRT) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hosts[host]
}

// leak makes the shared server answer one of our requests with a
// stranger's data: a tenant outside aishield sends a clinical note, then
// our over-long request is decoded over its stale pages (the incident).
func leak(t *testing.T, ctx context.Context, ts *pagedcache.TestServer, c *sdk.Client) {
	t.Helper()
	cfg := openai.DefaultConfig("sk-clinic")
	cfg.BaseURL = ts.URL + "/v1"
	if _, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 48,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Patient Jane Roe, jane.roe@clinic-north.example, NHS 943 476 5919, diagnosis F32.1. Draft the referral."}}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 48,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: strings.Repeat(" lorem", 5000)}}})
	var ce *sdk.ContaminationError
	if !errors.As(err, &ce) {
		t.Fatalf("the leaking answer: %v, want *sdk.ContaminationError", err)
	}
}

// guardedClient returns a guard built with opts and a go-openai client
// through it to ts, sending with rt.
func guardedClient(t *testing.T, ts *pagedcache.TestServer, rt http.RoundTripper, opts sdk.Options) (*sdk.Guard, *sdk.Client) {
	t.Helper()
	g, err := sdk.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	cfg := openai.DefaultConfig("sk-ours")
	cfg.BaseURL = ts.URL + "/v1"
	cfg.HTTPClient = &http.Client{Transport: rt}
	return g, sdk.NewClient(g, cfg)
}

func chat(ctx context.Context, c *sdk.Client, text string) (string, error) {
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 32,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}})
	if err != nil {
		return "", err
	}
	return resp.Choices[0].Message.Content, nil
}

func faultyServer(t *testing.T) *pagedcache.TestServer {
	return pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
}

// TestQuarantineLimit: after the leaking answer, the destination is
// quarantined at once; a request carrying personal data is refused
// without reaching it (503 aishield_quarantined, X-Should-Retry: false,
// naming the destination and since when), a public one still goes; the
// audit trail records the trip after the exchange that tripped it; a
// person clears it and traffic resumes.
func TestQuarantineLimit(t *testing.T) {
	ctx := context.Background()
	ts := faultyServer(t)
	rt := &recordingRT{}
	var audit bytes.Buffer
	var mu sync.Mutex
	var events []quarantine.Event
	g, c := guardedClient(t, ts, rt, sdk.Options{Policy: quarantinePolicy(t, ts.URL, "http://127.0.0.1:1", ""), Audit: &audit,
		OnQuarantine: func(ev quarantine.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }})
	host := strings.TrimPrefix(ts.URL, "http://")

	if _, err := chat(ctx, c, "Reply to quentin.arnaud@sfr.fr about the thermostat."); err != nil {
		t.Fatalf("before the leak: %v", err)
	}
	leak(t, ctx, ts, c)
	sent := rt.count(host)

	_, err := chat(ctx, c, "Reply to quentin.arnaud@sfr.fr about the thermostat.")
	var qe *quarantine.Error
	if !errors.As(err, &qe) || qe.Destination != "shared-llm" || qe.Level != "public" || qe.RequestLevel != "confidential" {
		t.Fatalf("personal data during quarantine: %v, want *quarantine.Error", err)
	}
	if rt.count(host) != sent {
		t.Fatal("the request reached the quarantined destination")
	}
	if strings.Contains(err.Error(), "quentin") {
		t.Errorf("the refusal carries the value: %v", err)
	}
	// The refusal as an HTTP client sees it.
	tr := &sdk.Transport{Guard: g, Base: rt}
	body := `{"model":"m","messages":[{"role":"user","content":"Write to quentin.arnaud@sfr.fr"}]}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var apiErr struct {
		Error struct{ Type, Code, Message string }
	}
	_ = json.Unmarshal(raw, &apiErr)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Should-Retry") != "false" ||
		apiErr.Error.Code != "aishield_quarantined" || !strings.Contains(apiErr.Error.Message, "shared-llm") ||
		!strings.Contains(apiErr.Error.Message, qe.Since.UTC().Format("2006-01-02T15:04:05Z")) {
		t.Errorf("refusal %d %v %s", resp.StatusCode, resp.Header, raw)
	}
	// Public data still goes.
	if _, err := chat(ctx, c, "What is the boiling point of water at sea level?"); err != nil {
		t.Errorf("a public question during quarantine: %v", err)
	}
	if rt.count(host) != sent+1 {
		t.Errorf("%d requests sent during quarantine, want the public one", rt.count(host)-sent)
	}

	// A person looks, and clears it.
	if _, ok, err := g.Quarantine().Clear(ctx, "shared-llm"); !ok || err != nil {
		t.Fatalf("clear: %v %v", ok, err)
	}
	if _, err := chat(ctx, c, "Reply to quentin.arnaud@sfr.fr about the thermostat."); err != nil {
		t.Errorf("after the clear: %v", err)
	}

	// The trail: the leaking exchange (with its signs), then the trip;
	// later the refused request names the quarantine; then the clear.
	var recs []sdk.AuditRecord
	if _, err := sdk.VerifyAudit(bytes.NewReader(audit.Bytes()), sdk.AuditVerifyOptions{Open: true}, func(_ int, r *sdk.AuditRecord) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var trip, leakRec, refused, clear = -1, -1, -1, -1
	for i, r := range recs {
		switch {
		case r.Event == quarantine.EventTripped:
			trip = i
		case r.Event == quarantine.EventCleared:
			clear = i
		case r.Verdict == sdk.VerdictContaminated && r.Signs[policies.SignDroppedPrompt] == 1:
			leakRec = i
		case r.Quarantined == "shared-llm" && r.Verdict == sdk.VerdictNotSent && refused < 0:
			refused = i
			if r.Detectors["pii.email"] != 1 {
				t.Errorf("the refused request's record does not count what it carried: %+v", r)
			}
		}
	}
	if leakRec < 0 || trip != leakRec+1 || refused <= trip || clear <= refused {
		t.Fatalf("trail order: leak %d trip %d refused %d clear %d", leakRec, trip, refused, clear)
	}
	if tr := recs[trip]; tr.Exchange != recs[leakRec].Exchange || tr.Quarantine == nil || tr.Quarantine.Action != "limit" || tr.Quarantine.Reason != "signs" {
		t.Errorf("trip record %+v %+v", tr, tr.Quarantine)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 || events[0].Type != quarantine.EventTripped || events[1].Type != quarantine.EventCleared {
		t.Errorf("events %+v", events)
	}
}

// TestQuarantineFailover: a quarantined destination's requests go to the
// failover destination, decided under its rules, without the credentials
// meant for the quarantined provider.
func TestQuarantineFailover(t *testing.T) {
	ctx := context.Background()
	ts := faultyServer(t)
	local := pagedcache.NewTestServer(t, pagedcache.WithSeed(2))
	rt := &recordingRT{}
	var audit bytes.Buffer
	_, c := guardedClient(t, ts, rt, sdk.Options{Policy: quarantinePolicy(t, ts.URL, local.URL, "    quarantine:\n      action: failover\n      failover: local\n"), Audit: &audit})
	leak(t, ctx, ts, c)
	sharedHost, localHost := strings.TrimPrefix(ts.URL, "http://"), strings.TrimPrefix(local.URL, "http://")
	sent := rt.count(sharedHost)
	answer, err := chat(ctx, c, "Reply to quentin.arnaud@sfr.fr about the thermostat.")
	if err != nil {
		t.Fatalf("failover: %v", err)
	}
	if rt.count(sharedHost) != sent || rt.count(localHost) != 1 {
		t.Fatalf("sent shared %d local %d, want only local", rt.count(sharedHost)-sent, rt.count(localHost))
	}
	if a := rt.auth[localHost][0]; a != "" {
		t.Errorf("the failover destination got the shared provider's credential %q", a)
	}
	_ = answer
	// Decided under local's rules: confidential goes as it is there.
	var last sdk.AuditRecord
	_, _ = sdk.VerifyAudit(bytes.NewReader(audit.Bytes()), sdk.AuditVerifyOptions{Open: true}, func(_ int, r *sdk.AuditRecord) error {
		last = *r
		return nil
	})
	if last.Destination != "local" || last.Quarantined != "shared-llm" || last.Decision != "allow" || last.Redacted != 0 {
		t.Errorf("record %+v", last)
	}
}

// TestQuarantineBlock: action block refuses everything, public data
// included; a guard without a quarantine section trips the policy's
// default.
func TestQuarantineBlock(t *testing.T) {
	ctx := context.Background()
	ts := faultyServer(t)
	g, c := guardedClient(t, ts, http.DefaultTransport, sdk.Options{Policy: quarantinePolicy(t, ts.URL, "http://127.0.0.1:1", "    quarantine:\n      action: block\n")})
	leak(t, ctx, ts, c)
	_, err := chat(ctx, c, "What is the boiling point of water at sea level?")
	var qe *quarantine.Error
	if !errors.As(err, &qe) || qe.Action != policies.QuarantineBlock {
		t.Fatalf("public question under a blocking quarantine: %v", err)
	}
	st, err := g.Quarantine().Check(ctx, "shared-llm")
	if err != nil || !st.Quarantined || !st.State.Until.IsZero() {
		t.Errorf("status %+v %v: want quarantined until cleared", st, err)
	}
	// The health keeps the sign.
	hs, _ := g.Quarantine().Health(ctx)
	if len(hs) != 1 || hs[0].Signs[policies.SignDroppedPrompt].Count != 1 {
		t.Errorf("health %+v", hs)
	}
}

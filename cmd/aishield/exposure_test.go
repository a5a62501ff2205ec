package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

// exposurePolicy is the policy of the exposure tests: personal data is
// redacted for shared-llm, IP addresses go in clear, secrets are blocked;
// two dropped prompts within an hour quarantine a destination, and while
// it lasts only requests without findings (level public) are sent.
const exposurePolicy = `name: exposure
levels: [public, internal, confidential, restricted]
classify:
  - detectors: ["pii.*"]
    level: confidential
  - detectors: ["pii.ip_address"]
    level: internal
  - detectors: ["secret.*"]
    level: restricted
default_level: restricted
destinations:
  - name: shared-llm
    base_url: %s
    max_level: internal
    action: redact
    block_at: restricted
    max_input_tokens: 16384
    shared: true
  - name: backup-llm
    base_url: http://127.0.0.1:9
    max_level: internal
    action: redact
default:
  max_level: internal
  action: redact
  block_at: restricted
inbound:
  signals:
    usage_mismatch: block
quarantine:
  signs: [dropped_prompt]
  threshold: 2
  window: 1h
  action: limit
  max_level: public
`

// Values the requests of TestAuditExposureRealTrail carry; none may show
// in the trail or the report.
const (
	expEmail  = "jean.dupont@acme-corp.fr"
	expIP     = "81.2.69.160"
	expSecret = "glpat-x9Kd7Lm2Qw8Rt4Vb6Yn1"
)

// stepClock is a clock that moves one second at each reading.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

// TestAuditExposureRealTrail builds a trail with a real guard in front of
// the paged-cache server with the incident's fault: requests before the
// first dropped prompt, between it and the second (which trips the
// quarantine), during the quarantine (refused above level public) and
// after a person cleared it. audit exposure must put each request in its
// period, count values per level and detector, and print no value.
func TestAuditExposureRealTrail(t *testing.T) {
	ctx := context.Background()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 64), pagedcache.WithContextLen(16384),
		pagedcache.WithFaults(pagedcache.FaultOversizeStalePages), pagedcache.WithSeed(1))
	dir := t.TempDir()
	polPath := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(polPath, []byte(fmt.Sprintf(exposurePolicy, ts.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.Load(polPath)
	if err != nil {
		t.Fatal(err)
	}
	var trail bytes.Buffer
	clock := &stepClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	g, err := sdk.New(ctx, sdk.Options{Policy: pol, Audit: &trail, Now: clock.now, Key: []byte("exposure test key")})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat(" lorem", 5000) // over the 4,096-token cache, under the 16,384 context
	send := principalSender(t, ctx, g, ts.URL)
	steps := []struct {
		principal, text string
		status          int
	}{
		// Before the first sign.
		{"alice", "Write to " + expEmail + " about the outage of host " + expIP + ".", 200},
		{"bob", "Deploy with token " + expSecret + " tonight.", 403},
		{"alice", long, 502}, // the first dropped prompt
		// From the first sign to the quarantine.
		{"bob", "Thank " + expEmail + " for the report.", 200},
		{"carol", "Is host " + expIP + " reachable from the office?", 200},
		{"carol", long, 502}, // the second: the quarantine trips
		// Quarantined: only requests without findings are sent.
		{"alice", "Remind " + expEmail + " of the meeting.", 503},
		{"erin", "Summarise the plot of Hamlet in one line.", 200},
		{"alice", "Ping " + expIP + " again.", 503},
	}
	for i, s := range steps {
		if got := send(s.principal, s.text); got != s.status {
			t.Fatalf("step %d (%s): status %d, want %d\ntrail:\n%s", i, s.principal, got, s.status, trail.String())
		}
	}
	if _, cleared, err := g.Quarantine().Clear(ctx, "shared-llm"); err != nil || !cleared {
		t.Fatalf("clear: %v, %v", cleared, err)
	}
	if got := send("dave", "Host "+expIP+" is back."); got != 200 {
		t.Fatalf("after the clear: status %d", got)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{expEmail, expIP, expSecret} {
		if strings.Contains(trail.String(), v) {
			t.Fatalf("the trail holds a value")
		}
	}
	trailPath := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(trailPath, trail.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"audit", "exposure", "--destination", "shared-llm", "--policy", polPath, "--format", "json", trailPath},
		strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep exposureReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FirstSign == nil || rep.Quarantine == nil || rep.Delay == nil {
		t.Fatalf("marks missing: %s\ntrail:\n%s", out.String(), trail.String())
	}
	if rep.FirstSign.Signs["dropped_prompt"] != 1 || rep.Quarantine.Reason != "signs" || rep.Quarantine.Action != "limit" ||
		rep.Quarantine.EndReason != "cleared" || !rep.FirstSign.Time.Before(rep.Quarantine.Tripped) ||
		!rep.Quarantine.Tripped.Before(rep.Quarantine.Ended) {
		t.Errorf("marks: sign %+v quarantine %+v", rep.FirstSign, rep.Quarantine)
	}
	if rep.Delay.Requests != 3 || rep.Delay.Sent != 3 || rep.Delay.Seconds <= 0 ||
		rep.Delay.Seconds != rep.Quarantine.Tripped.Sub(rep.FirstSign.Time).Seconds() {
		t.Errorf("delay %+v", rep.Delay)
	}
	wantReq := exposureRequests{Total: 10, Sent: 7, NotSent: 3, Refused: 2}
	if rep.Requests != wantReq {
		t.Errorf("requests %+v, want %+v", rep.Requests, wantReq)
	}
	if got := strings.Join(rep.Principals.Names, ","); got != "alice,bob,carol,dave,erin" || rep.Principals.Count != 5 || rep.Principals.Unattributed != 0 {
		t.Errorf("principals %+v", rep.Principals)
	}
	wantPeriods := []struct {
		name      string
		requests  exposureRequests
		principal int
		values    exposureValues
	}{
		{periodBeforeSign, exposureRequests{Total: 3, Sent: 2, NotSent: 1}, 1, exposureValues{Clear: 1, Redacted: 1, Blocked: 1}},
		{periodSignToTrip, exposureRequests{Total: 3, Sent: 3}, 2, exposureValues{Clear: 1, Redacted: 1}},
		{periodQuarantined, exposureRequests{Total: 3, Sent: 1, NotSent: 2, Refused: 2}, 1, exposureValues{Blocked: 2}},
		{periodAfterClear, exposureRequests{Total: 1, Sent: 1}, 1, exposureValues{Clear: 1}},
	}
	if len(rep.Periods) != len(wantPeriods) {
		t.Fatalf("%d periods: %s", len(rep.Periods), out.String())
	}
	for i, w := range wantPeriods {
		p := rep.Periods[i]
		if p.Name != w.name || p.Requests != w.requests || p.Principals != w.principal || p.Values != w.values {
			t.Errorf("period %d: %s %+v principals %d values %+v; want %s %+v %d %+v", i, p.Name, p.Requests, p.Principals, p.Values,
				w.name, w.requests, w.principal, w.values)
		}
	}
	if !rep.Periods[1].From.Equal(rep.FirstSign.Time) || !rep.Periods[2].From.Equal(rep.Quarantine.Tripped) ||
		!rep.Periods[3].From.Equal(rep.Quarantine.Ended) || !rep.Periods[0].Until.Equal(rep.FirstSign.Time) {
		t.Errorf("period bounds do not follow the marks: %s", out.String())
	}
	wantValues := map[string]exposureValues{
		"pii.email":           {Redacted: 2, Blocked: 1},
		"pii.ip_address":      {Clear: 3, Blocked: 1},
		"secret.gitlab_token": {Blocked: 1},
	}
	wantLevel := map[string]string{"pii.email": "confidential", "pii.ip_address": "internal", "secret.gitlab_token": "restricted"}
	seen := 0
	for _, l := range rep.Levels {
		for _, d := range l.Detectors {
			seen++
			if w, ok := wantValues[d.Detector]; !ok || d.exposureValues != w || wantLevel[d.Detector] != l.Level {
				t.Errorf("level %s detector %s: %+v", l.Level, d.Detector, d.exposureValues)
			}
		}
	}
	if seen != len(wantValues) || rep.Levels[0].Level != "restricted" {
		t.Errorf("levels: %s", out.String())
	}
	if len(rep.Events) != 2 || rep.Events[0].Type != "quarantine.tripped" || rep.Events[1].Type != "quarantine.cleared" {
		t.Errorf("events %+v", rep.Events)
	}

	// The text report says the same; neither form prints a value.
	var text bytes.Buffer
	if code := run(ctx, []string{"audit", "exposure", "--destination", "shared-llm", "--policy", polPath, trailPath},
		strings.NewReader(""), &text, &errOut); code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{
		"Requests     10: 7 sent, 3 not sent (2 refused by a quarantine), 0 failed over to another destination",
		"Principals   5: alice, bob, carol, dave, erin",
		"reason signs, action limit), ended ",
		"and 3 request(s) (3 sent) from the first sign to the quarantine",
		"first sign to quarantine",
		"confidential  pii.email            0      2         1",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, v := range []string{expEmail, expIP, expSecret} {
		if strings.Contains(out.String()+text.String()+errOut.String(), v) {
			t.Fatal("a value in the report")
		}
	}

	// audit query shows the events as events among the exchanges.
	var q bytes.Buffer
	if code := run(ctx, []string{"audit", "query", "--destination", "shared-llm", trailPath}, strings.NewReader(""), &q, &errOut); code != 0 {
		t.Fatalf("query: exit %d: %s", code, errOut.String())
	}
	if !matches(q.String(), `(?m)^\S+ +[0-9a-f]{16} +shared-llm +- +- +quarantine\.tripped +- +- +reason=signs,action=limit,until=cleared,count=2,dropped_prompt=1$`) ||
		!matches(q.String(), `(?m)quarantine\.cleared +- +- +reason=cleared,action=limit,since=`) ||
		!strings.Contains(q.String(), "\n10 exchanges, ") || !strings.HasSuffix(q.String(), ", 2 quarantine events\n") {
		t.Errorf("query table:\n%s", q.String())
	}
}

// principalSender returns a function that sends text, as principal's chat
// request, through g's Transport (destination shared-llm) to the server at
// url, and returns the status the caller got.
func principalSender(t *testing.T, ctx context.Context, g *sdk.Guard, url string) func(principal, text string) int {
	client := &http.Client{Transport: &sdk.Transport{Guard: g, Destination: "shared-llm",
		Principal: func(r *http.Request) string { return r.Header.Get("X-Test-Principal") }}}
	return func(principal, text string) int {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 32,
			"messages": []any{map[string]any{"role": "user", "content": text}}})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-Principal", principal)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
}

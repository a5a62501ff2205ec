package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// TestQuarantineListClearRedis seeds a quarantine through a Monitor on a
// real Redis, as a proxy does: quarantine list shows it with the policy's
// action, quarantine clear removes it (exit 0) and posts the cleared
// event to the policy's webhook and to the audit trail, a second clear
// exits 1, and without Redis both commands refuse (exit 2).
func TestQuarantineListClearRedis(t *testing.T) {
	ctx := context.Background()
	addr := redistest.Start(t)
	var mu sync.Mutex
	var hooks [][]byte
	var hookDown atomic.Bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hookDown.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooks = append(hooks, b)
		mu.Unlock()
	}))
	defer hook.Close()
	dir := t.TempDir()
	polPath := filepath.Join(dir, "policy.yaml")
	src := fmt.Sprintf(`name: q
levels: [public, internal, confidential, restricted]
destinations:
  - name: shared-llm
    base_url: http://127.0.0.1:9
    max_level: internal
    action: redact
    quarantine:
      action: block
      webhook: %s/hook
  - name: quiet-llm
    base_url: http://127.0.0.1:10
    max_level: internal
    action: redact
`, hook.URL)
	if err := os.WriteFile(polPath, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.Load(polPath)
	if err != nil {
		t.Fatal(err)
	}
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	mon, err := quarantine.New(quarantine.Options{Policy: pol, Store: quarantine.NewRedisStore(rc, "")})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Observe(ctx, "shared-llm", "0123456789abcdef", []string{policies.SignDroppedPrompt, policies.SignForeignEntity}); err != nil {
		t.Fatal(err)
	}
	if err := mon.Observe(ctx, "quiet-llm", "fedcba9876543210", []string{policies.SignForeignEntity}); err != nil {
		t.Fatal(err)
	}
	if err := mon.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	hooks = nil // the trip's own post
	mu.Unlock()
	t.Setenv(envRedisURL, "")
	t.Setenv(envRedisPassword, "")
	cli := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &out, &errOut)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := cli("quarantine", "list", "--redis", addr, "--policy", polPath, "--format", "json")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, errOut)
	}
	var list struct {
		Policy       string            `json:"policy"`
		Destinations []quarantineEntry `json:"destinations"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Destinations) != 2 || list.Destinations[0].Destination != "quiet-llm" || list.Destinations[1].Destination != "shared-llm" {
		t.Fatalf("list: %s", out)
	}
	quiet, shared := list.Destinations[0], list.Destinations[1]
	if quiet.Quarantine != nil || quiet.Signs[policies.SignForeignEntity].Count != 1 || !quiet.InPolicy {
		t.Errorf("quiet-llm: %+v", quiet)
	}
	q := shared.Quarantine
	if q == nil || !q.Active || q.Exchange != "0123456789abcdef" || q.Action != "block" || !q.Until.IsZero() ||
		q.Signs[policies.SignDroppedPrompt] != 1 || shared.Signs[policies.SignDroppedPrompt].Count != 1 ||
		shared.Signs[policies.SignForeignEntity].Count != 1 || shared.Signs[policies.SignDroppedPrompt].First.IsZero() {
		t.Errorf("shared-llm: %s", out)
	}
	code, out, errOut = cli("quarantine", "list", "--redis", addr, "--policy", polPath)
	if code != 0 || !matches(out, `(?m)^shared-llm +active +\S+ +until cleared +0123456789abcdef +block$`) ||
		!matches(out, `(?m)^quiet-llm +none +- +- +- +-$`) || !matches(out, `(?m)^shared-llm +dropped_prompt +1 +\S+ +\S+$`) {
		t.Errorf("list text: exit %d:\n%s%s", code, out, errOut)
	}

	// Clear, with the event appended to a trail that already holds one.
	trailPath := filepath.Join(dir, "audit.jsonl")
	log, closeTrail, err := openAuditTrail(trailPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Append(&sdk.AuditRecord{Exchange: "0123456789abcdef", Destination: "shared-llm", Verdict: sdk.VerdictContaminated}); err != nil {
		t.Fatal(err)
	}
	if err := closeTrail(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli("quarantine", "clear", "shared-llm", "--redis", addr, "--policy", polPath, "--audit", trailPath)
	if code != 0 || !strings.Contains(out, "cleared the quarantine of shared-llm") {
		t.Fatalf("clear: exit %d: %s%s", code, out, errOut)
	}
	mu.Lock()
	got := hooks
	mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("webhook received %d posts after the clear, want 1", len(got))
	}
	dec := json.NewDecoder(bytes.NewReader(got[0]))
	dec.DisallowUnknownFields() // an event holds its documented fields and nothing else
	var ev quarantine.Event
	if err := dec.Decode(&ev); err != nil {
		t.Fatalf("webhook body %s: %v", got[0], err)
	}
	if ev.Type != quarantine.EventCleared || ev.Destination != "shared-llm" || ev.Reason != "cleared" || !ev.Origin ||
		ev.Exchange != "0123456789abcdef" || ev.Action != "block" || ev.Policy != "q" || len(ev.Signs) != 0 {
		t.Errorf("webhook event %s", got[0])
	}
	code, out, errOut = cli("audit", "verify", trailPath)
	if code != 0 || !strings.Contains(out, "2 lines, chain intact") {
		t.Errorf("the trail's chain after the clear: exit %d: %s%s", code, out, errOut)
	}
	code, out, _ = cli("audit", "query", trailPath)
	if code != 0 || !matches(out, `(?m)0123456789abcdef +shared-llm +- +- +quarantine\.cleared +- +- +reason=cleared,action=block,since=`) ||
		!strings.HasSuffix(out, "1 exchanges, 0 tokens, 1 quarantine events\n") {
		t.Errorf("query after the clear: exit %d:\n%s", code, out)
	}

	// Nothing left to clear: exit 1; the list shows no quarantine.
	code, out, errOut = cli("quarantine", "clear", "shared-llm", "--redis", addr, "--policy", polPath)
	if code != 1 || !strings.Contains(out, "nothing to clear") {
		t.Errorf("second clear: exit %d: %s%s", code, out, errOut)
	}
	code, out, _ = cli("quarantine", "list", "--redis", addr, "--policy", polPath, "--format", "json")
	if code != 0 || strings.Contains(out, `"active"`) || !strings.Contains(out, `"quarantine": null`) {
		t.Errorf("list after the clear: exit %d:\n%s", code, out)
	}

	// A webhook that keeps failing: the clear stands, and says the post
	// was not delivered in time.
	if err := mon.Observe(ctx, "shared-llm", "00000000000000aa", []string{policies.SignDroppedPrompt}); err != nil {
		t.Fatal(err)
	}
	if err := mon.Close(ctx); err != nil {
		t.Fatal(err)
	}
	hookDown.Store(true)
	code, out, errOut = cli("quarantine", "clear", "shared-llm", "--redis", addr, "--policy", polPath, "--webhook-wait", "300ms")
	if code != 0 || !strings.Contains(out, "tripped by exchange 00000000000000aa") ||
		!strings.Contains(errOut, "the webhook of shared-llm was not delivered within 300ms; the quarantine is cleared") {
		t.Errorf("clear with the webhook down: exit %d: %s%s", code, out, errOut)
	}
	if _, ok, err := quarantine.NewRedisStore(rc, "").Get(ctx, "shared-llm"); err != nil || ok {
		t.Errorf("the quarantine is still recorded (%v, %v)", ok, err)
	}

	// The address may come from AISHIELD_REDIS_URL.
	t.Setenv(envRedisURL, "redis://"+addr)
	if code, out, errOut = cli("quarantine", "list", "--policy", polPath); code != 0 || !strings.Contains(out, "shared-llm") {
		t.Errorf("list with %s: exit %d: %s%s", envRedisURL, code, out, errOut)
	}
	t.Setenv(envRedisURL, "")

	for _, args := range [][]string{
		{"quarantine", "list"},
		{"quarantine", "clear", "shared-llm"},
	} {
		code, out, errOut := cli(args...)
		if code != 2 || !strings.Contains(errOut, "each process keeps its own quarantine in memory") || !strings.Contains(errOut, "a restart clears it") {
			t.Errorf("%v without Redis: exit %d: %s%s", args, code, out, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"quarantine", "list", "--redis", "not an address"}, "neither host:port nor a redis:// URL"},
		{[]string{"quarantine", "list", "--redis", addr, "--format", "yaml"}, `--format "yaml"`},
		{[]string{"quarantine", "list", "--redis", addr, "--policy", "no-such-preset"}, "no-such-preset"},
		{[]string{"quarantine", "clear", "shared-llm", "--redis", "127.0.0.1:1", "--policy", polPath}, "--redis 127.0.0.1:1"},
	} {
		code, out, errOut := cli(tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d: %s%s; want 2 and %q", tc.args, code, out, errOut, tc.want)
		}
	}
}

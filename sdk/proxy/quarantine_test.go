package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/internal/traffic"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/quarantine"
)

// quarantineSection is the proxy tests' quarantine: the presets'.
const quarantineSection = blockAll + `quarantine:
  threshold: 1
  window: 1h
  action: limit
  max_level: public
`

// qStrangers are the tenants outside aishield in the quarantine runs: the
// clinic (whose prefills abort under abort-reuse-race). Every other
// tenant is ours, the bank's customer letters included: values that go
// redacted while the destination is trusted, and not at all once it is
// quarantined.
var qStrangers = []string{"northwind-clinic"}

// recordSink collects the audit records a proxy writes.
type recordSink struct {
	mu   sync.Mutex
	buf  []byte
	recs []sdk.AuditRecord
}

func (s *recordSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		var r sdk.AuditRecord
		if json.Unmarshal(s.buf[:i], &r) == nil && r.Prev != "" {
			s.recs = append(s.recs, r)
		}
		s.buf = s.buf[i+1:]
	}
}

// since returns the records from the n-th on.
func (s *recordSink) since(n int) []sdk.AuditRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recs[min(n, len(s.recs)):])
}

func (s *recordSink) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// seqRT counts every request that reaches the server, whoever sends it:
// the server numbers its requests in that order.
type seqRT struct{ n atomic.Int64 }

func (s *seqRT) RoundTrip(r *http.Request) (*http.Response, error) {
	s.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// exposure is what one run sent to the faulty service, and when aishield
// knew.
type exposure struct {
	ours            int // our requests
	firstContam     int // our request (1-based) whose answer first read another's data or dropped the prompt; 0 none
	firstSign       int // our request whose answer first showed a sign aishield saw; 0 none
	trip            int // our request after whose answer the quarantine tripped; 0 none
	tripProbe       int // the probe that tripped it (1-based); 0 none
	probes          int
	tripDelay       time.Duration // from the first contaminated answer to the trip (replay time)
	afterSign       [3]int        // after the first sign: requests sent, values sent in clear, values redacted
	afterContam     [3]int        // the same after the first contaminated answer
	falseAlarmTrips int           // trips on a server without fault
}

// quarantineRun replays the demo's scenario on a server with fault, the
// strangers sending straight to it, our tenants through two proxies that
// share a Redis server (fingerprints and quarantine). With probeEvery > 0
// proxy A probes the server after every probeEvery-th of our requests.
func quarantineRun(t *testing.T, rc *redis.Client, fault pagedcache.Fault, seed uint64, quarantineOn bool, probeEvery, rounds int) exposure {
	t.Helper()
	opts := []pagedcache.Option{pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192), pagedcache.WithSeed(seed + 4)}
	if fault != "" {
		opts = append(opts, pagedcache.WithFaults(fault))
	}
	ts := pagedcache.NewTestServer(t, opts...)
	seq := &seqRT{}
	inbound := blockAll
	if quarantineOn {
		inbound = quarantineSection
	}
	pol := testPolicyInbound(t, ts.URL, 8192, inbound)
	ns := fmt.Sprintf("qrun-%s-%d-%v-%d-%d", fault, seed, quarantineOn, probeEvery, time.Now().UnixNano())
	key := []byte("shared proxy key, 32 bytes long!")
	var sinks [2]*recordSink
	var hss [2]string
	var pxs [2]*Proxy
	for i := range 2 {
		sinks[i] = &recordSink{}
		px, hs := startProxy(t, Options{Policy: pol, Transport: seq, Key: key, CanaryKey: key,
			Store:      fingerprint.NewRedisStore(rc, fingerprint.RedisOptions{Namespace: ns, Key: key}),
			Quarantine: quarantine.NewRedisStore(rc, ns), AuditLog: sdk.NewAuditLog(sinks[i], "")})
		pxs[i], hss[i] = px, hs.URL
	}
	sc := traffic.NewScenario(traffic.ScenarioOptions{Seed: seed, Rounds: rounds, OversizeTokens: 5000})
	var ex exposure
	var contamAt time.Time
	tripped := func(recs []sdk.AuditRecord) bool {
		return slices.ContainsFunc(recs, func(r sdk.AuditRecord) bool {
			return r.Event == quarantine.EventTripped && r.Quarantine.Reason == "signs"
		})
	}
	probeClient := &http.Client{Transport: seq}
	// Probes go out at random points of the traffic (after any request,
	// ours or a stranger's, with probability 1/probeEvery): the prober
	// does not know when a stranger's prefill aborts.
	rnd := rand.New(rand.NewPCG(seed, 13))
	probe := func() {
		if probeEvery <= 0 || ex.trip != 0 || ex.tripProbe != 0 || rnd.IntN(probeEvery) != 0 {
			return
		}
		ex.probes++
		mark := sinks[0].len()
		res, err := pxs[0].Guard().Probe(context.Background(), "upstream", probeClient, nil)
		if err != nil {
			t.Fatalf("probe: %v", err)
		}
		if rec := record(t, ts, int(seq.n.Load())); ex.firstContam == 0 && len(rec.ForeignReads()) > 0 {
			ex.firstContam, contamAt = max(ex.ours, 1), time.Now()
		}
		if res.Contaminated && ex.firstSign == 0 {
			ex.firstSign = max(ex.ours, 1)
		}
		if res.Contaminated && tripped(sinks[0].since(mark)) {
			ex.tripProbe, ex.trip = ex.probes, max(ex.ours, 1)
			if !contamAt.IsZero() {
				ex.tripDelay = time.Since(contamAt)
			}
		}
	}
	for _, r := range sc.Requests {
		probe()
		ten, _ := sc.Tenant(r.Tenant)
		cfg := openai.DefaultConfig(ten.APIKey)
		var rt http.RoundTripper = http.DefaultTransport
		if fault == pagedcache.FaultAbortReuseRace && r.Tenant == "northwind-clinic" && !r.Oversize {
			rt = abortHeaderRT{rt}
		}
		cfg.HTTPClient = &http.Client{Transport: rt}
		if slices.Contains(qStrangers, r.Tenant) {
			cfg.HTTPClient = &http.Client{Transport: countingRT{seq, rt}}
			cfg.BaseURL = ts.URL + "/v1"
			_, _ = ask(context.Background(), openai.NewClientWithConfig(cfg), r.System+"\n\n"+r.User, r.MaxTokens, r.Stream)
			continue
		}
		ex.ours++
		side := ex.ours % 2
		cfg.BaseURL = hss[side] + "/v1"
		before, marks := seq.n.Load(), [2]int{sinks[0].len(), sinks[1].len()}
		_, _ = ask(context.Background(), openai.NewClientWithConfig(cfg), r.System+"\n\n"+r.User, r.MaxTokens, r.Stream)
		sent := seq.n.Load() != before
		recs := append(sinks[0].since(marks[0]), sinks[1].since(marks[1])...)
		contam := false
		if sent {
			rec := record(t, ts, int(seq.n.Load()))
			contam = rec.Status == http.StatusOK && (len(rec.ForeignReads()) > 0 || rec.Outcome == "truncated" || rec.Outcome == "decoded-after-abort")
		}
		if contam && ex.firstContam == 0 {
			ex.firstContam, contamAt = ex.ours, time.Now()
		}
		for _, rec := range recs {
			for sign := range rec.Signs {
				if rec.Event == "" && ex.firstSign == 0 && slices.Contains(policies.DefaultSigns(), sign) {
					ex.firstSign = ex.ours
				}
			}
		}
		if sent {
			var clear, redacted int
			for _, rec := range recs {
				if rec.Event != "" {
					continue
				}
				for d, n := range rec.Detectors {
					clear += n - rec.RedactedBy[d]
					redacted += rec.RedactedBy[d]
				}
			}
			add := func(a *[3]int) { a[0]++; a[1] += clear; a[2] += redacted }
			if ex.firstSign != 0 && ex.firstSign < ex.ours {
				add(&ex.afterSign)
			}
			if ex.firstContam != 0 && ex.firstContam < ex.ours {
				add(&ex.afterContam)
			}
		}
		if ex.trip == 0 && tripped(recs) {
			ex.trip = ex.ours
			if !contamAt.IsZero() {
				ex.tripDelay = time.Since(contamAt)
			}
		}
	}
	if fault == "" && (ex.trip != 0 || ex.tripProbe != 0) {
		ex.falseAlarmTrips++
	}
	return ex
}

// countingRT counts on seq, then sends through next.
type countingRT struct {
	seq  *seqRT
	next http.RoundTripper
}

func (c countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.seq.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestQuarantineExposure is issue 13's proof: in every fault mode, with
// the strangers outside aishield and our tenants behind two proxies that
// share Redis, how much of ours reached the faulty service after it showed
// its first sign, with and without the quarantine, and how long detection
// took; probes for the abort race, whose victims' answers show nothing.
// The table it logs is docs/quarantine.md's.
func TestQuarantineExposure(t *testing.T) {
	if testing.Short() {
		t.Skip("the exposure table replays the scenario 48 times")
	}
	rc := redistest.Client(t)
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	var rows []string
	for _, fault := range append([]pagedcache.Fault{""}, pagedcache.Faults()...) {
		modes := []struct {
			name  string
			on    bool
			probe int
		}{{"off", false, 0}, {"on", true, 0}}
		if fault == pagedcache.FaultAbortReuseRace {
			modes = append(modes, struct {
				name  string
				on    bool
				probe int
			}{"on, probes (1 in 4 requests), 8 rounds", true, 4})
		}
		for _, m := range modes {
			var tot exposure
			var trips int
			var delays []time.Duration
			var reqDelays, probeDelays []int
			for _, seed := range seeds {
				rounds := 4
				if m.probe > 0 {
					rounds = 8 // probes catch the race at random: give them time
				}
				ex := quarantineRun(t, rc, fault, seed, m.on, m.probe, rounds)
				tot.ours += ex.ours
				for i := range 3 {
					tot.afterSign[i] += ex.afterSign[i]
					tot.afterContam[i] += ex.afterContam[i]
				}
				tot.probes += ex.probes
				tot.falseAlarmTrips += ex.falseAlarmTrips
				if ex.trip != 0 || ex.tripProbe != 0 {
					trips++
					delays = append(delays, ex.tripDelay)
					reqDelays = append(reqDelays, ex.trip-ex.firstContam)
					if ex.tripProbe != 0 {
						probeDelays = append(probeDelays, ex.tripProbe)
					}
				}
				if m.on && ex.firstSign != 0 && ex.afterSign[1]+ex.afterSign[2] > 0 {
					t.Errorf("%s seed %d: %d values in clear and %d redacted values sent after the first sign, with the quarantine on",
						fault, seed, ex.afterSign[1], ex.afterSign[2])
				}
			}
			name := string(fault)
			if name == "" {
				name = "none"
			}
			slices.Sort(delays)
			slices.Sort(reqDelays)
			slices.Sort(probeDelays)
			med := "-"
			if len(delays) > 0 {
				med = fmt.Sprintf("%d requests, %s", reqDelays[len(reqDelays)/2], delays[len(delays)/2].Round(time.Millisecond))
			}
			if len(probeDelays) > 0 {
				med += fmt.Sprintf(", probe %d", probeDelays[len(probeDelays)/2])
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %d | %d of %d | %d / %d / %d | %d / %d / %d | %s | %d probes |", name, m.name,
				tot.ours, trips, len(seeds), tot.afterSign[0], tot.afterSign[1], tot.afterSign[2],
				tot.afterContam[0], tot.afterContam[1], tot.afterContam[2], med, tot.probes))
			if tot.falseAlarmTrips > 0 {
				t.Errorf("%s %s: %d runs tripped without a fault", name, m.name, tot.falseAlarmTrips)
			}
			if fault == pagedcache.FaultOversizeStalePages && m.on && trips != len(seeds) {
				t.Errorf("%s: tripped in %d of %d runs", fault, trips, len(seeds))
			}
			if m.probe > 0 && trips == 0 {
				t.Errorf("%s with probes: never detected", fault)
			}
		}
	}
	t.Logf("seeds %v\n| fault | quarantine | our requests | runs tripped | after the first sign: requests / values in clear / redacted | after the first contaminated answer: requests / in clear / redacted | median delay from the first contaminated answer to the trip (our requests, replay time, probe) | probes sent |\n|---|---|---|---|---|---|---|---|\n%s",
		seeds, strings.Join(rows, "\n"))
}

// TestProxyQuarantineShared: one proxy's contaminated answer quarantines
// the destination for the other proxy on the same Redis, across a restart;
// the refusal is 503 aishield_quarantined in the API's format; /metrics
// shows the gauge; with Redis cut the proxy keeps refusing and says why,
// and recovers when Redis returns.
func TestProxyQuarantineShared(t *testing.T) {
	ctx := context.Background()
	relay := redistest.NewRelay(t, redistest.Start(t))
	rc := redis.NewClient(&redis.Options{Addr: relay.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer rc.Close()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192),
		pagedcache.WithSeed(9), pagedcache.WithFaults(pagedcache.FaultOversizeStalePages))
	pol := testPolicyInbound(t, ts.URL, 8192, quarantineSection)
	key := []byte("shared proxy key, 32 bytes long!")
	start := func() (*Proxy, string) {
		px, hs := startProxy(t, Options{Policy: pol, Key: key, CanaryKey: key,
			Store:      fingerprint.NewRedisStore(rc, fingerprint.RedisOptions{Namespace: "shared", Key: key}),
			Quarantine: quarantine.NewRedisStore(rc, "shared")})
		return px, hs.URL
	}
	_, a := start()
	_, b := start()
	client := func(base string) *openai.Client {
		cfg := openai.DefaultConfig("sk-ours")
		cfg.BaseURL = base + "/v1"
		return openai.NewClientWithConfig(cfg)
	}
	// A stranger's note, then our over-long request through proxy A.
	cfg := openai.DefaultConfig("sk-clinic")
	cfg.BaseURL = ts.URL + "/v1"
	if _, err := ask(ctx, openai.NewClientWithConfig(cfg), "Patient Jane Roe, jane.roe@clinic-north.example, NHS 943 476 5919, diagnosis F32.1.", 48, false); err != nil {
		t.Fatal(err)
	}
	if _, err := ask(ctx, client(a), strings.Repeat(" lorem", 5000), 48, false); err == nil {
		t.Fatal("the leaking answer was delivered")
	}
	confidential := "Reply to quentin.arnaud@sfr.fr about the thermostat."
	refusedBy := func(base string) (int, string, http.Header) {
		t.Helper()
		body := `{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"` + confidential + `"}]}`
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw), resp.Header
	}
	for _, base := range []string{b, a} {
		code, body, h := refusedBy(base)
		if code != http.StatusServiceUnavailable || h.Get("X-Should-Retry") != "false" || !strings.Contains(body, `"code":"aishield_quarantined"`) ||
			!strings.Contains(body, "upstream is quarantined since") || strings.Contains(body, "quentin") {
			t.Fatalf("%s: %d %s", base, code, body)
		}
	}
	metric := func(base string) string {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return string(raw)
	}
	if m := metric(b); !strings.Contains(m, `aishield_destination_quarantined{destination="upstream"} 1`) ||
		!strings.Contains(m, `aishield_quarantine_events_total{destination="upstream",event="quarantine.tripped"} 1`) {
		t.Errorf("proxy B metrics lack the quarantine:\n%s", grepLines(m, "quarantin"))
	}
	if m := metric(a); !strings.Contains(m, `aishield_destination_signs_total{destination="upstream",sign="dropped_prompt"} 1`) {
		t.Errorf("proxy A metrics lack the sign:\n%s", grepLines(m, "sign"))
	}
	// A restarted proxy sees it.
	_, c := start()
	if code, _, _ := refusedBy(c); code != http.StatusServiceUnavailable {
		t.Errorf("a restarted proxy answered %d", code)
	}
	// Redis cut: still refused, saying why; the gauge says unknown.
	relay.Cut()
	code, body, _ := refusedBy(b)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "cannot be read") {
		t.Errorf("with Redis cut: %d %s", code, body)
	}
	if m := metric(b); !strings.Contains(m, `aishield_destination_quarantined{destination="upstream"} -1`) {
		t.Errorf("gauge with Redis cut:\n%s", grepLines(m, "quarantined"))
	}
	relay.Restore(t)
	// Back: still quarantined (the state is in Redis) until cleared.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body, _ = refusedBy(b)
		if !strings.Contains(body, "cannot be read") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code != http.StatusServiceUnavailable || strings.Contains(body, "cannot be read") {
		t.Fatalf("after Redis returned: %d %s", code, body)
	}
	mon, err := quarantine.New(quarantine.Options{Policy: pol, Store: quarantine.NewRedisStore(rc, "shared")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := mon.Clear(ctx, "upstream"); !ok || err != nil {
		t.Fatalf("clear: %v %v", ok, err)
	}
	if _, err := ask(ctx, client(b), confidential, 16, false); err != nil {
		var ae *openai.APIError
		if errors.As(err, &ae) {
			t.Fatalf("after the clear: %d %s", ae.HTTPStatusCode, ae.Message)
		}
		t.Fatalf("after the clear: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

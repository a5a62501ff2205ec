package proxy

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/traffic"
	"github.com/aishield/aishield/pagedcache"
)

// strangers are the scenario's tenants with the most sensitive documents:
// in the "strangers" layout they are other companies on the same provider,
// sending straight to the server, not through aishield.
var strangers = []string{"globex-bank", "northwind-clinic"}

// abortHeaderRT marks every request as aborted by its client in prefill.
type abortHeaderRT struct{ base http.RoundTripper }

func (a abortHeaderRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(pagedcache.HeaderAbort, "prefill")
	return a.base.RoundTrip(r)
}

// faultTally counts, for the answers our tenants received through the proxy,
// what the server's ground truth says they were.
type faultTally struct {
	contaminated, delivered int            // answers that read another request's tokens or a dropped prompt
	valuesDelivered         int            // sensitive values of other tenants in delivered answers
	valueDetectors          map[string]int // their detectors
	clean, falseAlarms      int
}

func (t *faultTally) add(o faultTally) {
	t.contaminated += o.contaminated
	t.delivered += o.delivered
	t.valuesDelivered += o.valuesDelivered
	for d, n := range o.valueDetectors {
		if t.valueDetectors == nil {
			t.valueDetectors = map[string]int{}
		}
		t.valueDetectors[d] += n
	}
	t.clean += o.clean
	t.falseAlarms += o.falseAlarms
}

// strangerRun replays the demo scenario against a paged-cache server with
// fault on. With direct, the strangers send straight to the server; without,
// every tenant goes through the proxy. The policy declares only the
// advertised context (over-capacity prompts do go out) and the server's
// tokenizer.
func strangerRun(t *testing.T, fault pagedcache.Fault, seed uint64, direct bool) faultTally {
	t.Helper()
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192),
		pagedcache.WithSeed(seed+4), pagedcache.WithFaults(fault))
	up := &counting{rt: http.DefaultTransport}
	_, hs := startProxy(t, Options{Policy: testPolicy(t, ts.URL, 8192), Transport: up})
	sc := traffic.NewScenario(traffic.ScenarioOptions{Seed: seed, Rounds: 3, OversizeTokens: 5000})
	pol := testPolicy(t, ts.URL, 8192)
	scanner, err := pol.NewScanner([]byte("strangers"))
	if err != nil {
		t.Fatal(err)
	}
	// Who sent which value, to count other tenants' values delivered.
	owner := map[string]string{}
	for _, r := range sc.Requests {
		fs, _ := scanner.ScanString(context.Background(), r.System+"\n\n"+r.User)
		for _, f := range fs {
			owner[f.Hash] = r.Tenant
		}
	}
	var direct_ atomic.Int64
	var tally faultTally
	for _, r := range sc.Requests {
		ten, _ := sc.Tenant(r.Tenant)
		stranger := direct && slices.Contains(strangers, r.Tenant)
		cfg := openai.DefaultConfig(ten.APIKey)
		var rt http.RoundTripper = http.DefaultTransport
		if fault == pagedcache.FaultAbortReuseRace && r.Tenant == "northwind-clinic" && !r.Oversize {
			rt = abortHeaderRT{rt}
		}
		if stranger {
			cfg.BaseURL = ts.URL + "/v1"
		} else {
			cfg.BaseURL = hs.URL + "/v1"
		}
		cfg.HTTPClient = &http.Client{Transport: rt}
		before := up.n.Load() + direct_.Load()
		text, err := ask(context.Background(), openai.NewClientWithConfig(cfg), r.System+"\n\n"+r.User, r.MaxTokens, r.Stream)
		if stranger {
			direct_.Add(1)
			continue
		}
		seq := up.n.Load() + direct_.Load()
		if seq == before {
			continue // blocked outbound
		}
		rec := record(t, ts, int(seq))
		if rec.Status != http.StatusOK || rec.Outcome == "aborted" {
			continue
		}
		dropped := rec.Outcome == "truncated" || rec.Outcome == "decoded-after-abort"
		foreign := len(rec.ForeignReads()) > 0 || rec.LateWritesLanded > 0
		// Late writes that landed in pages the answer never read leave it
		// clean: only what it read counts.
		foreign = foreign && len(rec.ForeignReads()) > 0
		if foreign || dropped {
			tally.contaminated++
			if err == nil {
				tally.delivered++
				fs, _ := scanner.ScanString(context.Background(), text)
				for _, f := range fs {
					if o, ok := owner[f.Hash]; ok && o != r.Tenant {
						tally.valuesDelivered++
						if tally.valueDetectors == nil {
							tally.valueDetectors = map[string]int{}
						}
						tally.valueDetectors[f.Detector]++
					}
				}
			}
			continue
		}
		tally.clean++
		if err != nil {
			tally.falseAlarms++
			t.Logf("%s seed %d direct %v: request %d refused though clean: %v", fault, seed, direct, r.N, alarmText(err))
		}
	}
	return tally
}

// TestContaminationTable: every fault mode of the paged-cache server, with
// the contaminating tenants outside aishield (sending straight to the
// provider) and behind the same proxy; ground truth from the server decides
// what each answer to our tenants was. The table it logs is the README's.
func TestContaminationTable(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if testing.Short() {
		seeds = seeds[:2]
	}
	var rows []string
	for _, fault := range pagedcache.Faults() {
		var tallies [2]faultTally
		for i, direct := range []bool{true, false} {
			for _, seed := range seeds {
				tallies[i].add(strangerRun(t, fault, seed, direct))
			}
		}
		for i, layout := range []string{"outside aishield", "behind the proxy"} {
			tl := tallies[i]
			var dets []string
			for _, d := range slices.Sorted(maps.Keys(tl.valueDetectors)) {
				dets = append(dets, fmt.Sprintf("%d %s", tl.valueDetectors[d], d))
			}
			rows = append(rows, fmt.Sprintf("| `%s` | %s | %d | %d | %d %s | %d of %d |", fault, layout,
				tl.contaminated, tl.delivered, tl.valuesDelivered, strings.Join(dets, ", "), tl.falseAlarms, tl.clean))
			if tl.falseAlarms > 0 {
				t.Errorf("%s, contaminating tenants %s: %d false alarms", fault, layout, tl.falseAlarms)
			}
			switch fault {
			case pagedcache.FaultOversizeStalePages, pagedcache.FaultAutoTruncate:
				// Dropped or truncated prompts are caught from the usage.
				if tl.delivered > 0 {
					t.Errorf("%s, %s: %d of %d contaminated answers delivered", fault, layout, tl.delivered, tl.contaminated)
				}
			}
			if layout == "behind the proxy" && tl.valuesDelivered > 0 {
				t.Errorf("%s, %s: %d sensitive values of other tenants delivered", fault, layout, tl.valuesDelivered)
			}
		}
	}
	t.Logf("seeds %v\n| fault | contaminating tenants | contaminated answers | delivered | their values delivered | false alarms |\n|---|---|---|---|---|---|\n%s",
		seeds, strings.Join(rows, "\n"))
}

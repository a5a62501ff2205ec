package demo

import (
	"context"
	"testing"

	"github.com/aishield/aishield/pagedcache"
)

// small is a scaled-down incident: same mechanism, a cache of 8,192 tokens,
// so the test runs in a fraction of a second even with -race.
func small(seed uint64, runs ...string) Options {
	return Options{Seed: seed, Rounds: 3, Runs: runs,
		Server: pagedcache.Options{CapacityTokens: 8192, ContextLen: 16384, PageSize: 16}}
}

// TestWithoutAishieldLeaks checks the unguarded run against the server's
// ground truth: every over-capacity prompt is answered 200 with other
// tenants' pages, every other answer reads only its own.
func TestWithoutAishieldLeaks(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		rep, err := Run(context.Background(), small(seed, RunWithout))
		if err != nil {
			t.Fatal(err)
		}
		run, ok := rep.Run(RunWithout)
		if !ok {
			t.Fatal("no run")
		}
		tot := run.Totals
		if tot.Requests != len(rep.Requests) || tot.Sent != tot.Requests || tot.Errors != 0 {
			t.Errorf("seed %d: totals %+v", seed, tot)
		}
		if tot.Oversize != 2 || tot.OversizeSent != 2 || tot.Contaminated != 2 || tot.Leaked != 2 {
			t.Errorf("seed %d: oversize %d sent %d contaminated %d leaked %d, want 2 each", seed, tot.Oversize, tot.OversizeSent, tot.Contaminated, tot.Leaked)
		}
		if tot.Clean != tot.Requests-2 || tot.Delivered != tot.Clean {
			t.Errorf("seed %d: clean %d delivered %d of %d", seed, tot.Clean, tot.Delivered, tot.Requests)
		}
		planted := 0
		for _, r := range rep.Requests {
			planted += total(r.Sensitive)
		}
		if tot.SentValues != planted {
			t.Errorf("seed %d: %d values sent in clear, %d planted", seed, tot.SentValues, planted)
		}
		for _, o := range run.Requests {
			if o.Oversize != (o.Result == ResultLeaked) {
				t.Errorf("seed %d: request %d (%s) result %s", seed, o.N, o.Label, o.Result)
			}
			if o.Oversize {
				if o.Status != 200 || o.ReportedPromptTokens != 1 || o.PromptTokens <= 8192 || len(o.Sources) == 0 {
					t.Errorf("seed %d: oversize outcome %+v", seed, o)
				}
				for _, s := range o.Sources {
					if s.Tenant == o.Tenant || s.N >= o.N {
						t.Errorf("seed %d: request %d quoted %+v", seed, o.N, s)
					}
				}
			}
		}
	}
}

// TestWithAishield replays the traffic through the guard: nothing sensitive
// leaves in clear, over-capacity prompts are refused before sending, and
// with only the advertised context declared every contaminated answer is
// caught by inbound verification; every clean answer is delivered (no
// false alarm), for several seeds.
func TestWithAishield(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		rep, err := Run(context.Background(), small(seed))
		if err != nil {
			t.Fatal(err)
		}
		without, _ := rep.Run(RunWithout)
		guarded, _ := rep.Run(RunGuarded)
		inbound, _ := rep.Run(RunInboundOnly)
		if without == nil || guarded == nil || inbound == nil {
			t.Fatalf("runs %v", rep.Runs)
		}
		for _, run := range []*RunReport{guarded, inbound} {
			tot := run.Totals
			if tot.SentValues != 0 || tot.Redacted == 0 || tot.Blocked == 0 || tot.Leaked != 0 || tot.Errors != 0 || tot.ForeignValues != 0 {
				t.Errorf("seed %d %s: totals %+v", seed, run.Name, tot)
			}
			strict(t, seed, run)
		}
		if g := guarded.Totals; g.Refused != 2 || g.OversizeSent != 0 || g.Contaminated != 0 {
			t.Errorf("seed %d guarded: refused %d oversize sent %d contaminated %d", seed, g.Refused, g.OversizeSent, g.Contaminated)
		}
		if in := inbound.Totals; in.OversizeSent != 2 || in.Contaminated != 2 || in.Caught != 2 || len(in.Signals) == 0 {
			t.Errorf("seed %d inbound-only: oversize sent %d contaminated %d caught %d signals %v", seed, in.OversizeSent, in.Contaminated, in.Caught, in.Signals)
		}
		for _, o := range inbound.Requests {
			if o.Oversize && (o.Result != ResultCaught || len(o.Signals) == 0) {
				t.Errorf("seed %d: oversize request %d: %s %v", seed, o.N, o.Result, o.Signals)
			}
		}
	}
}

// strict fails on any false alarm (a clean answer withheld), any answer
// delivered that carried other requests' tokens or ignored a truncated
// prompt, and any error.
func strict(t *testing.T, seed uint64, run *RunReport) {
	t.Helper()
	tot := run.Totals
	for _, o := range run.Requests {
		switch o.Result {
		case ResultFalseAlarm, ResultLeaked, ResultTruncated, ResultError:
			t.Errorf("seed %d %s: request %d (%s, stream %v): %s %s %v", seed, run.Name, o.N, o.Label, o.Stream, o.Result, o.Error, o.Sources)
		}
	}
	if tot.Delivered != tot.Clean || tot.Caught != tot.Contaminated || tot.TruncatedCaught != tot.Truncated {
		t.Errorf("seed %d %s: delivered %d of %d clean, caught %d of %d contaminated and %d of %d truncated",
			seed, run.Name, tot.Delivered, tot.Clean, tot.Caught, tot.Contaminated, tot.TruncatedCaught, tot.Truncated)
	}
}

// TestEveryFaultMode replays the traffic through aishield against the
// paged-cache server in each fault mode, for several seeds: zero false
// alarms, nothing contaminated or truncated delivered. Under
// auto-truncate, the over-capacity prompts sent (capacity undeclared) are
// caught by the tokenizer-exact usage check. Under abort-reuse-race the
// clinic's requests are aborted in prefill and the next request reads
// their late write: there the bar is abortStrict's (no value of the
// clinic delivered; docs/incident.md, "The limit: an aborted prefill
// written late", says why short quotes of its prose can pass).
func TestEveryFaultMode(t *testing.T) {
	for _, fault := range pagedcache.Faults() {
		t.Run(string(fault), func(t *testing.T) {
			var caught, delivered int
			for _, seed := range []uint64{1, 2, 3, 4} {
				opts := small(seed, RunGuarded, RunInboundOnly)
				opts.Server.Faults = []pagedcache.Fault{fault}
				rep, err := Run(context.Background(), opts)
				if err != nil {
					t.Fatal(err)
				}
				for _, run := range rep.Runs {
					if fault == pagedcache.FaultAbortReuseRace {
						c, d := abortStrict(t, seed, run)
						caught, delivered = caught+c, delivered+d
						continue
					}
					strict(t, seed, run)
				}
				if fault == pagedcache.FaultAutoTruncate {
					in, _ := rep.Run(RunInboundOnly)
					if in.Totals.Truncated != 2 || in.Totals.TruncatedCaught != 2 || in.Totals.Signals["inbound.usage_mismatch"] != 2 {
						t.Errorf("seed %d: auto-truncate totals %+v", seed, in.Totals)
					}
				}
			}
			if fault == pagedcache.FaultAbortReuseRace {
				if caught == 0 {
					t.Errorf("no answer that read a late write was caught (%d delivered)", delivered)
				}
				t.Logf("answers that read an aborted request's late write: %d caught, %d delivered with none of its values", caught, delivered)
			}
		})
	}
}

// abortStrict is the bar under abort-reuse-race: every request of the
// aborting tenant that was sent is aborted; no false alarm, truncation or
// error; no other tenant's value reaches a caller; and an answer delivered
// although it read pages of others read only the aborted requests' late
// writes. It returns how many contaminated answers were caught and
// delivered.
func abortStrict(t *testing.T, seed uint64, run *RunReport) (caught, delivered int) {
	t.Helper()
	aborted := map[int]bool{}
	for _, o := range run.Requests {
		if o.Abort && o.Sent {
			if !o.Aborted || o.Result != ResultAborted {
				t.Errorf("seed %d %s: request %d sent to be aborted: aborted %v, result %s", seed, run.Name, o.N, o.Aborted, o.Result)
			}
			aborted[o.N] = true
		}
	}
	if len(aborted) == 0 || run.Totals.Aborted != len(aborted) {
		t.Errorf("seed %d %s: %d requests aborted, totals say %d", seed, run.Name, len(aborted), run.Totals.Aborted)
	}
	for _, o := range run.Requests {
		switch o.Result {
		case ResultFalseAlarm, ResultTruncated, ResultError:
			t.Errorf("seed %d %s: request %d (%s): %s %s", seed, run.Name, o.N, o.Label, o.Result, o.Error)
		case ResultLeaked:
			delivered++
			for _, s := range o.Sources {
				if !aborted[s.N] {
					t.Errorf("seed %d %s: request %d delivered with tokens of request %d, which was not aborted", seed, run.Name, o.N, s.N)
				}
			}
		case ResultCaught:
			caught++
		}
	}
	if tot := run.Totals; tot.ForeignValues != 0 || tot.FalseAlarms != 0 || tot.Delivered != tot.Clean {
		t.Errorf("seed %d %s: %d other tenants' values delivered, %d false alarms, %d of %d clean delivered",
			seed, run.Name, tot.ForeignValues, tot.FalseAlarms, tot.Delivered, tot.Clean)
	}
	return caught, delivered
}

// TestAbortReuseRaceWithout: without aishield, the aborted clinic letters'
// late writes reach other tenants' answers, values included for some seeds.
func TestAbortReuseRaceWithout(t *testing.T) {
	values, contaminated := 0, 0
	for _, seed := range []uint64{1, 2, 3, 4} {
		opts := small(seed, RunWithout)
		opts.Server.Faults = []pagedcache.Fault{pagedcache.FaultAbortReuseRace}
		rep, err := Run(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		run, _ := rep.Run(RunWithout)
		tot := run.Totals
		if tot.Aborted != 3 || tot.Leaked != tot.Contaminated || tot.Errors != 0 {
			t.Errorf("seed %d: totals %+v", seed, tot)
		}
		values += tot.ForeignValues
		contaminated += tot.Contaminated
	}
	if contaminated == 0 || values == 0 {
		t.Errorf("without aishield: %d contaminated answers, %d values of other tenants delivered; want both above 0", contaminated, values)
	}
}

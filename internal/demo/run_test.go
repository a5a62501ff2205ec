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

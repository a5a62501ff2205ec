package traffic

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/aishield/aishield/policies"
)

// TestScenarioPlantedValuesAreFound checks the generator against the real
// classifiers: every value it plants is found under the detector it was
// planted for, and the texts it calls clean carry nothing.
func TestScenarioPlantedValuesAreFound(t *testing.T) {
	t.Parallel()
	pol, err := policies.Preset("default")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := pol.NewScanner([]byte("k"))
	if err != nil {
		t.Fatal(err)
	}
	for _, seed := range []uint64{1, 2, 3, 42} {
		s := NewScenario(ScenarioOptions{Seed: seed, Rounds: 3, OversizeTokens: 3000})
		for _, r := range s.Requests {
			fs, err := sc.ScanString(context.Background(), r.System+"\n"+r.User)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, f := range fs {
				got[f.Detector]++
			}
			want := r.Sensitive
			if want == nil {
				want = map[string]int{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("seed %d request %d (%s, %s): found %v, planted %v", seed, r.N, r.Tenant, r.Label, got, want)
			}
		}
	}
}

func TestScenarioShape(t *testing.T) {
	t.Parallel()
	a := NewScenario(ScenarioOptions{Seed: 9, Rounds: 4, OversizeTokens: 5000})
	b := NewScenario(ScenarioOptions{Seed: 9, Rounds: 4, OversizeTokens: 5000})
	c := NewScenario(ScenarioOptions{Seed: 10, Rounds: 4, OversizeTokens: 5000})
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different scenarios")
	}
	if reflect.DeepEqual(a.Requests, c.Requests) {
		t.Error("different seeds, same scenario")
	}
	if got, want := len(a.Requests), 4*len(tenantSpecs)+2; got != want {
		t.Fatalf("%d requests, want %d", got, want)
	}
	over, tenants := 0, map[string]bool{}
	for i, r := range a.Requests {
		if r.N != i+1 {
			t.Errorf("request %d numbered %d", i+1, r.N)
		}
		tenants[r.Tenant] = true
		if r.Oversize {
			over++
			if n := len(r.User); n < 5000*3 {
				t.Errorf("oversize prompt of %d bytes for 5000 tokens", n)
			}
		}
	}
	if over != 2 || len(tenants) != len(tenantSpecs) {
		t.Errorf("%d oversize requests from %v", over, slices.Sorted(maps.Keys(tenants)))
	}
}

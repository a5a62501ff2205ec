package verify

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// TestVerifierMaxMemory: with the policy's inbound.max_memory, the
// verifier's own store stays within it however many exchanges pass, the
// oldest are forgotten first (counted), and the newest is still found as
// the source of a fragment of its request, while the first is no longer
// named.
func TestVerifierMaxMemory(t *testing.T) {
	ctx := context.Background()
	const bound = 2 << 20
	v := newTestVerifier(t, Options{Inbound: policies.Inbound{MaxMemory: bound}})
	g := newGen(21, 22)
	var first, last *genExchange
	for i := 0; i < 300; i++ {
		ge := g.exchange(v, fmt.Sprint("mem-", i))
		if _, err := v.Check(ctx, ge.ex, ge.response, inbound.End{FinishReason: "stop"}); err != nil {
			t.Fatal(err)
		}
		if _, b := v.Forgotten(); b > bound {
			t.Fatalf("after %d exchanges the store holds %d bytes, over %d", i+1, b, bound)
		}
		if i == 0 {
			first = ge
		}
		last = ge
	}
	holders, bytes := v.Forgotten()
	t.Logf("%d holders forgotten, %d bytes held", holders, bytes)
	if holders == 0 {
		t.Fatalf("nothing forgotten: the bound was not reached")
	}
	names := func(ge *genExchange) bool {
		frag := ge.user[:min(len(ge.user), 200)]
		vd, err := v.Check(ctx, &inbound.Exchange{ID: "probe-" + ge.ex.ID, Texts: []string{"Summarise our last call."}}, "Sure: "+frag, inbound.End{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range vd.Signals {
			if s.ID == policies.SignalCrossExchange && slices.Contains(s.Sources, ge.ex.ID) ||
				s.ID == policies.SignalForeignEntity && slices.Contains(s.Sources, ge.ex.ID) {
				return true
			}
		}
		return false
	}
	if !names(last) {
		t.Errorf("a fragment of the newest exchange's request is not traced to it")
	}
	if names(first) {
		t.Errorf("the first exchange is still named: it should have been forgotten")
	}
}

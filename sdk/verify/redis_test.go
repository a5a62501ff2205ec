package verify

import (
	"context"
	"testing"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// TestSharedThroughRedis: two verifiers (two processes of one service) share
// a Redis store; what one saw, the other recognises in its responses,
// naming the source exchange, for text and for canaries.
func TestSharedThroughRedis(t *testing.T) {
	c := redistest.Client(t)
	ctx := context.Background()
	a := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Key: testStoreKey, Namespace: "svc"})})
	b := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Key: testStoreKey, Namespace: "svc"})})

	exA := &inbound.Exchange{ID: "proc-a-1", Texts: []string{otherRequest}, Canary: CanaryLine(a.Mint("proc-a-1"))}
	if _, err := a.Check(ctx, exA, "Acknowledged.", inbound.End{}); err != nil {
		t.Fatal(err)
	}
	exB := &inbound.Exchange{ID: "proc-b-1", Texts: []string{"Give me a one-line status update."}}
	vd, err := b.Check(ctx, exB, "Status: "+otherRequest[10:110]+" and "+a.Mint("proc-a-1"), inbound.End{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range vd.Signals {
		if len(s.Sources) > 0 {
			got[s.ID] = s.Sources[0]
		}
	}
	if got[policies.SignalCrossExchange] != "proc-a-1" || got[policies.SignalCanary] != "proc-a-1" {
		t.Fatalf("signals = %+v", vd.Signals)
	}
}

// testStoreKey keys the MAC of the Redis stores of the tests.
var testStoreKey = []byte("aishield-test-store-key-32-bytes")

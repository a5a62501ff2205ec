package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/sdk/fingerprint"
)

// TestHardening15ForgedRecordsIgnored: someone who can write to the
// proxies' Redis, but has not the store's key, records that a made-up
// exchange holds the very text the upstream is about to answer (its
// fingerprints, under the store's key names, as an older aishield wrote
// them and with a made-up MAC). The answer, the model's own, is still
// delivered clean through the proxy: the forged records count for nothing
// (without the MAC they made it cross-exchange material, 502). They are
// counted in /metrics and logged without values.
func TestHardening15ForgedRecordsIgnored(t *testing.T) {
	addr := redistest.Start(t)
	ctx := context.Background()
	answer := rareText(21, 150)
	up := newFixedUpstream(t, answer)
	attacker := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = attacker.Close() })
	expires := float64(time.Now().Add(10 * time.Minute).UnixMilli())
	fps := fingerprint.OfString(answer, fingerprint.Options{})
	for _, f := range fps {
		k := fmt.Sprintf("forge:fp:%x", f.Hash)
		if err := attacker.ZAdd(ctx, k, redis.Z{Score: expires, Member: "ex-forged"},
			redis.Z{Score: expires, Member: "ex-forged." + strings.Repeat("0", 32)}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	rc := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = rc.Close() })
	store := fingerprint.NewRedisStore(rc, fingerprint.RedisOptions{Key: testStoreKey, Namespace: "forge",
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	_, hs := startProxy(t, Options{Policy: testPolicyInbound(t, up.URL, 0, crossOnly), Store: store})
	text, err := ask(ctx, client(hs.URL, "alice"), "Describe the harbour in a few lines.", 64, false)
	if err != nil {
		t.Fatalf("the answer was refused: %v", err)
	}
	if text != answer {
		t.Fatalf("got %.80q", text)
	}
	if m := metricsOf(t, hs.URL, ""); !strings.Contains(m, "aishield_store_invalid_records_total") ||
		strings.Contains(m, "aishield_store_invalid_records_total 0\n") {
		t.Errorf("metrics do not count the forged records:\n%s", m)
	}
	if l := logs.String(); !strings.Contains(l, "MAC does not verify") || strings.Contains(l, "ex-forged") {
		t.Errorf("log: %q", l)
	}
}

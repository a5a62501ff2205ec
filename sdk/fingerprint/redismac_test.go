package fingerprint

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/internal/redistest"
)

// TestHardening15RecordMAC: records a writer without the store's key puts
// in Redis (a bare exchange ID, a forged or zero MAC, a valid record of
// another fingerprint moved, a record under another key) are ignored by
// lookups and counted, with a log line naming no member; the store's own
// records still count. A store without a key refuses to work.
func TestHardening15RecordMAC(t *testing.T) {
	c := redistest.Client(t)
	ctx := context.Background()
	var logs bytes.Buffer
	s := NewRedisStore(c, RedisOptions{Key: testStoreKey, Namespace: "mac", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err := s.Record(ctx, "ex-own", []uint64{0x1, 0x2}, time.Minute); err != nil {
		t.Fatal(err)
	}
	expires := float64(time.Now().Add(time.Minute).UnixMilli())
	own, err := c.ZRange(ctx, "mac:fp:1", 0, -1).Result()
	if err != nil || len(own) != 1 {
		t.Fatalf("own record: %v %v", own, err)
	}
	forged := []string{"ex-forged", "ex-forged." + strings.Repeat("0", 32), "ex-forged." + strings.Repeat("zz", 16), own[0]}
	for _, m := range forged[:3] {
		if err := c.ZAdd(ctx, "mac:fp:2", redis.Z{Score: expires, Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// ex-own's valid record of fingerprint 1, moved to fingerprint 3.
	if err := c.ZAdd(ctx, "mac:fp:3", redis.Z{Score: expires, Member: own[0]}).Err(); err != nil {
		t.Fatal(err)
	}
	// A store under another key (a writer with the code, not the key).
	other := NewRedisStore(c, RedisOptions{Key: []byte("another key of at least 16 bytes"), Namespace: "mac"})
	if err := other.Record(ctx, "ex-other", []uint64{0x2, 0x4}, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, err := s.Lookup(ctx, []uint64{0x1, 0x2, 0x3, 0x4})
	if err != nil {
		t.Fatal(err)
	}
	want := []Holders{{Count: 1, Exchanges: []string{"ex-own"}}, {Count: 1, Exchanges: []string{"ex-own"}}, {Count: 0}, {Count: 0}}
	for i := range want {
		if got[i].Count != want[i].Count || strings.Join(got[i].Exchanges, ",") != strings.Join(want[i].Exchanges, ",") {
			t.Errorf("fingerprint %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if n := s.InvalidRecords(); n != 6 {
		t.Errorf("InvalidRecords = %d, want 6 (three forged, one moved, two of another key)", n)
	}
	if !strings.Contains(logs.String(), "records=6") || strings.Contains(logs.String(), "ex-") {
		t.Errorf("log: %q; want the count, no member", logs.String())
	}

	var re *RedisError
	keyless := NewRedisStore(c, RedisOptions{Namespace: "mac"})
	if err := keyless.Record(ctx, "ex", []uint64{1}, time.Minute); !errors.As(err, &re) || !errors.Is(err, ErrNoStoreKey) {
		t.Errorf("Record without a key: %v", err)
	}
	if _, err := keyless.Lookup(ctx, []uint64{1}); !errors.Is(err, ErrNoStoreKey) {
		t.Errorf("Lookup without a key: %v", err)
	}
}

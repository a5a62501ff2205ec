package verify

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// startRedis starts a real redis-server on a free loopback port; it skips
// when the binary is missing unless AISHIELD_REQUIRE_REDIS=1.
func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("AISHIELD_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not found and AISHIELD_REQUIRE_REDIS=1: %v", err)
		}
		t.Skip("redis-server not installed")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
	t.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return c
		} else if time.Now().After(deadline) {
			t.Fatalf("redis-server did not answer: %v", err)
		}
	}
}

// TestSharedThroughRedis: two verifiers (two processes of one service) share
// a Redis store; what one saw, the other recognises in its responses,
// naming the source exchange, for text and for canaries.
func TestSharedThroughRedis(t *testing.T) {
	c := startRedis(t)
	ctx := context.Background()
	a := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Namespace: "svc"})})
	b := newTestVerifier(t, Options{Store: fingerprint.NewRedisStore(c, fingerprint.RedisOptions{Namespace: "svc"})})

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
	if got[inbound.SignalCrossExchange] != "proc-a-1" || got[inbound.SignalCanary] != "proc-a-1" {
		t.Fatalf("signals = %+v", vd.Signals)
	}
}

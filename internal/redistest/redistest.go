// Package redistest starts a real redis-server for tests, the way
// net/http/httptest starts a real HTTP server: on a free loopback port, in a
// temporary directory, with persistence off, stopped when the test ends.
//
// Tests that need Redis skip when the redis-server binary is not installed,
// unless the environment sets AISHIELD_REQUIRE_REDIS=1 (as CI does), in
// which case they fail: a missing install step must not pass as a skip.
package redistest

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
)

// RequireEnv names the environment variable that turns a missing
// redis-server from a skip into a failure.
const RequireEnv = "AISHIELD_REQUIRE_REDIS"

// Start starts a redis-server for t and returns its address
// ("127.0.0.1:port") once it answers PING. The server is killed by
// t.Cleanup. Safe to call from parallel tests: each call starts its own
// server.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("redis-server not found and %s=1: %v", RequireEnv, err)
		}
		t.Skipf("redis-server not installed (set %s=1 to fail instead)", RequireEnv)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	_ = l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server did not answer: %v\n%s", err, log)
		}
	}
}

// Client starts a redis-server for t (see Start) and returns a client
// connected to it, closed by t.Cleanup.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

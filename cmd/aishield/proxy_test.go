package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/proxy"
)

// TestServeProxyGracefulAndQuiet: the proxy serves, never logs the caller's
// key, and stops cleanly when its context ends, letting a request finish.
func TestServeProxyGracefulAndQuiet(t *testing.T) {
	ts := pagedcache.NewTestServer(t)
	pol, err := policies.Parse([]byte("name: t\nlevels: [public, internal, confidential, restricted]\ndestinations:\n  - name: local\n    base_url: "+ts.URL+"\n    max_level: internal\n    action: redact\n"), "yaml", "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	p, err := proxy.New(context.Background(), proxy.Options{Policy: pol, Upstream: "local", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var errOut bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- serveProxy(ctx, ln, "http", p, &errOut) }()
	if status := postChat(t, "http://"+ln.Addr().String(), "sk-very-secret-key-123"); status != 200 {
		t.Fatalf("status %d", status)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serveProxy: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful shutdown")
	}
	if !strings.Contains(errOut.String(), "aishield proxy stopped") || !strings.Contains(logs.String(), "status=200") {
		t.Errorf("stderr %q logs %q", errOut.String(), logs.String())
	}
	if strings.Contains(logs.String()+errOut.String(), "sk-very-secret") {
		t.Error("the caller's API key was logged")
	}
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestProxyRedisFlag runs two `aishield proxy --redis ADDR` commands (the
// real flag path, in process) in front of the paged-cache server with the
// incident's fault: tenant A's report goes out through the first, tenant
// B's over-capacity prompt through the second, and B's answer, decoded
// over A's freed pages, is refused by the second proxy as cross-exchange
// material, which it knows only from the shared Redis memory. Each proxy
// has its own random hash key, as separate processes would.
func TestProxyRedisFlag(t *testing.T) {
	addr := redistest.Start(t)
	t.Setenv(envStoreKey, "deployment store key, shared") // keys the records' MAC; the proxies share it
	ts := pagedcache.NewTestServer(t, pagedcache.WithCapacity(4096, 16), pagedcache.WithContextLen(8192),
		pagedcache.WithSeed(11), pagedcache.WithFaults(pagedcache.FaultOversizeStalePages))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	// No canary and the usage check only flagging: the shared memory must
	// be what refuses B's answer (it reports 1 prompt token, which blocks
	// it by itself in a real policy).
	if err := os.WriteFile(pol, []byte(`name: redis-flag
levels: [public, internal, confidential, restricted]
destinations:
  - name: local
    base_url: `+ts.URL+`
    max_level: internal
    action: redact
    max_input_tokens: 8192
inbound:
  signals:
    cross_exchange: block
    usage_mismatch: flag
    canary: "off"
  canary: false
`), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var urls []string
	for range 2 {
		listen := freeAddr(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			if code := run(ctx, []string{"proxy", "--policy", pol, "--upstream", "local", "--listen", listen, "--redis", addr, "--quiet"},
				strings.NewReader(""), &out, &out); code != 0 {
				t.Errorf("aishield proxy exited %d: %s", code, out.String())
			}
		}()
		url := "http://" + listen
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("proxy on %s did not start: %v", listen, err)
			}
		}
		urls = append(urls, url)
	}
	chat := func(url, key, text string, maxTokens int) (int, string) {
		body, _ := json.Marshal(map[string]any{"model": "pagedcache-1", "max_tokens": maxTokens,
			"messages": []map[string]string{{"role": "user", "content": text}}})
		req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	words := strings.Fields("basalt cormorant dolomite ferrule gimbal halyard isobar jetsam kestrel lanyard marlinspike nacelle obsidian pelorus quoin ratline sextant tholepin umiak vernier windlass xebec yardarm zeolite")
	var report strings.Builder
	for i := range 900 {
		report.WriteString(words[(i*7+i/5)%len(words)] + " ")
	}
	if code, body := chat(urls[0], "sk-alice", report.String(), 32); code != 200 {
		t.Fatalf("A through proxy 1: %d %s", code, body)
	}
	code, body := chat(urls[1], "sk-bob", "Summarise these public reviews.\n\n"+strings.Repeat("the quiet room keeps warm at night ", 700), 400)
	if rec, _ := ts.Request("2"); len(rec.ForeignTenants()) == 0 {
		t.Fatalf("ground truth: B's answer read no page of A's (%s)", rec.Outcome)
	}
	if code != http.StatusBadGateway || !strings.Contains(body, "inbound.cross_exchange") {
		t.Fatalf("B through proxy 2: %d %s; want 502 naming inbound.cross_exchange", code, body)
	}
}

// TestProxyAuditRestartCLI runs `aishield proxy --audit FILE` twice on the
// same file, a request through each, and `aishield audit verify FILE`
// finds the chain intact: the restarted proxy continues the trail (it used
// to start a new chain, which read as tampered: "line 2: prev does not
// match"). The caller's key is in no line.
func TestProxyAuditRestartCLI(t *testing.T) {
	t.Run("unkeyed", func(t *testing.T) { proxyAuditRestart(t, "") })
	// With AISHIELD_AUDIT_KEY the chain is keyed and each run seals the
	// trail with a signed head on shutdown; the next run continues it.
	t.Run("keyed", func(t *testing.T) { proxyAuditRestart(t, "00112233445566778899aabbccddeeff") })
}

func proxyAuditRestart(t *testing.T, key string) {
	t.Setenv("AISHIELD_AUDIT_KEY", key)
	ts := pagedcache.NewTestServer(t)
	dir := t.TempDir()
	pol, audit := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(pol, []byte("name: t\nlevels: [public, internal, confidential, restricted]\ndestinations:\n  - name: local\n    base_url: "+ts.URL+"\n    max_level: internal\n    action: redact\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ctx, cancel := context.WithCancel(context.Background())
		listen := freeAddr(t)
		done := make(chan int, 1)
		var out bytes.Buffer
		go func() {
			done <- run(ctx, []string{"proxy", "--policy", pol, "--upstream", "local", "--listen", listen, "--audit", audit, "--quiet"},
				strings.NewReader(""), &out, &out)
		}()
		url := "http://" + listen
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if resp, err := http.Get(url + "/healthz"); err == nil {
				resp.Body.Close()
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("proxy %d did not start: %v", i, err)
			}
		}
		if status := postChat(t, url, "sk-restart-secret-key"); status != 200 {
			t.Fatalf("proxy %d: status %d", i, status)
		}
		cancel()
		if code := <-done; code != 0 {
			t.Fatalf("aishield proxy %d exited %d: %s", i, code, out.String())
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"audit", "verify", audit}, strings.NewReader(""), &out, &out); code != 0 ||
		!strings.Contains(out.String(), "chain intact") {
		t.Fatalf("aishield audit verify: exit %d: %s", code, out.String())
	}
	if key != "" {
		// Without the key, the keyed trail cannot be checked: an input error.
		t.Setenv("AISHIELD_AUDIT_KEY", "")
		var out bytes.Buffer
		if code := run(context.Background(), []string{"audit", "verify", audit}, strings.NewReader(""), &out, &out); code != 2 {
			t.Fatalf("aishield audit verify without the key: exit %d, want 2: %s", code, out.String())
		}
	}
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" && !strings.Contains(string(data), `"chain":"hmac-sha256:`) {
		t.Errorf("audit trail: AISHIELD_AUDIT_KEY is set but the chain is not keyed: %s", data)
	}
	if strings.Contains(string(data), "sk-restart") || !strings.Contains(string(data), `"principal":"key:`) {
		t.Errorf("audit trail: want the hashed principal, never the key: %s", data)
	}
}

// postChat sends a small chat to the proxy at base with key and returns
// the status it answered.
func postChat(t *testing.T, base, key string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hello, what is the weekly schedule?"}]}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestProxyMaxMemoryFlag: --max-memory takes a size of at least 1MiB, and
// is refused with --redis (the exchanges are then in Redis); a bad value
// exits 2 before anything listens, naming the flag.
func TestProxyMaxMemoryFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-memory", "lots"}, "--max-memory"},
		{[]string{"--max-memory", "512KiB"}, "at least 1MiB"},
		{[]string{"--max-memory", "64MiB", "--redis", "127.0.0.1:1"}, "with --redis"},
	} {
		var out bytes.Buffer
		args := append([]string{"proxy", "--policy", "default", "--listen", "127.0.0.1:0", "--quiet"}, tc.args...)
		if code := run(context.Background(), args, strings.NewReader(""), &out, &out); code != 2 || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, out.String(), tc.want)
		}
	}
}

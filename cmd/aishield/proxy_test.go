package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/internal/proxy"
	"github.com/aishield/aishield/pagedcache"
	"github.com/aishield/aishield/policies"
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
	go func() { done <- serveProxy(ctx, ln, p, &errOut) }()
	req, _ := http.NewRequest("POST", "http://"+ln.Addr().String()+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hello, what is the weekly schedule?"}]}`))
	req.Header.Set("Authorization", "Bearer sk-very-secret-key-123")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
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

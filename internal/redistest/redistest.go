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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
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
	return StartWith(t, Config{}).Addr
}

// Config configures a server of StartWith.
type Config struct {
	// Password, when set, is required of clients (requirepass).
	Password string
	// TLS serves TLS only, with a certificate for 127.0.0.1 signed by a
	// CA of the test's own (Server.CAPEM); clients need no certificate.
	TLS bool
}

// Server is a redis-server started by StartWith.
type Server struct {
	// Addr is "127.0.0.1:port" (the TLS port when Config.TLS).
	Addr string
	// CAPEM is the PEM certificate of the CA that signed the server's
	// certificate (Config.TLS only).
	CAPEM []byte
}

// StartWith is Start with a password or TLS. A redis-server built without
// TLS support fails to start with TLS: the test is skipped then, unless
// AISHIELD_REQUIRE_REDIS=1.
func StartWith(t testing.TB, cfg Config) Server {
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
	args := []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
	if cfg.Password != "" {
		args = append(args, "--requirepass", cfg.Password)
	}
	srv := Server{Addr: addr}
	opts := &redis.Options{Addr: addr, Password: cfg.Password}
	if cfg.TLS {
		caPEM, certPEM, keyPEM := testCerts(t)
		for name, data := range map[string][]byte{"ca.pem": caPEM, "cert.pem": certPEM, "key.pem": keyPEM} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		args = append(args[:0], "--port", "0", "--tls-port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
			"--tls-cert-file", filepath.Join(dir, "cert.pem"), "--tls-key-file", filepath.Join(dir, "key.pem"),
			"--tls-ca-cert-file", filepath.Join(dir, "ca.pem"), "--tls-auth-clients", "no")
		if cfg.Password != "" {
			args = append(args, "--requirepass", cfg.Password)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(caPEM)
		opts.TLSConfig = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
		srv.CAPEM = caPEM
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	c := redis.NewClient(opts)
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return srv
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			if cfg.TLS && os.Getenv(RequireEnv) != "1" {
				t.Skipf("redis-server did not start with TLS (built without it?): %s", log)
			}
			t.Fatalf("redis-server exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server did not answer: %v\n%s", err, log)
		}
	}
}

// testCerts returns a CA certificate and a server certificate for
// 127.0.0.1 it signed, with the server's key, all PEM.
func testCerts(t testing.TB) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// Client starts a redis-server for t (see Start) and returns a client
// connected to it, closed by t.Cleanup.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Start(t)})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Relay is a TCP relay in front of a server, for tests of an outage: Cut
// closes every connection through it and refuses new ones, Restore
// accepts them again on the same address.
type Relay struct {
	// Addr is the relay's address ("127.0.0.1:port"): give it to clients
	// instead of the server's.
	Addr string

	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

// NewRelay starts a relay to target for t, closed by t.Cleanup.
func NewRelay(t testing.TB, target string) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{Addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	r.serve(ln)
	t.Cleanup(r.Cut)
	return r
}

func (r *Relay) serve(ln net.Listener) {
	r.mu.Lock()
	r.ln = ln
	r.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", r.target)
			if err != nil {
				c.Close()
				continue
			}
			r.mu.Lock()
			r.conns[c], r.conns[up] = true, true
			r.mu.Unlock()
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { _, _ = io.Copy(c, up); c.Close() }()
		}
	}()
}

// Cut closes the relay's listener and every connection through it.
func (r *Relay) Cut() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ln != nil {
		r.ln.Close()
		r.ln = nil
	}
	for c := range r.conns {
		c.Close()
	}
	clear(r.conns)
}

// Restore listens again on the relay's address.
func (r *Relay) Restore(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port was just released
		if ln, err = net.Listen("tcp", r.Addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.serve(ln)
}

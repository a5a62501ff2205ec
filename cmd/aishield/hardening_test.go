package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	openai "github.com/sashabaranov/go-openai"

	"github.com/aishield/aishield/internal/redistest"
	"github.com/aishield/aishield/pagedcache"
)

// syncBuf is a bytes.Buffer safe for concurrent use.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// cliProxy is an `aishield proxy` command run in process.
type cliProxy struct {
	out  *syncBuf
	done chan int
	stop context.CancelFunc
}

// startCLIProxy runs `aishield proxy` with args and waits until health
// answers through client at base (nil client: plain HTTP), or the command
// exits. It returns the command; its exit code is read with wait.
func startCLIProxy(t *testing.T, base string, client *http.Client, args ...string) *cliProxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &cliProxy{out: &syncBuf{}, done: make(chan int, 1), stop: cancel}
	go func() { p.done <- run(ctx, append([]string{"proxy"}, args...), strings.NewReader(""), p.out, p.out) }()
	t.Cleanup(func() { p.wait() })
	if client == nil {
		client = http.DefaultClient
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case code := <-p.done:
			p.done <- code
			return p
		default:
		}
		if resp, err := client.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			return p
		} else if time.Now().After(deadline) {
			t.Fatalf("aishield proxy did not start: %v\n%s", err, p.out.String())
		}
	}
}

// wait stops the command and returns its exit code.
func (p *cliProxy) wait() int {
	p.stop()
	code := <-p.done
	p.done <- code
	return code
}

// localPolicy writes a policy forwarding to base and returns its path.
func localPolicy(t *testing.T, base string) string {
	t.Helper()
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("name: t\nlevels: [public, internal, confidential, restricted]\ndestinations:\n  - name: local\n    base_url: "+base+"\n    max_level: internal\n    action: redact\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return pol
}

// TestHardening15RedisURL: --redis takes a redis:// URL with a password
// and a database (the store writes in that database), the password also
// from AISHIELD_REDIS_PASSWORD and the URL from AISHIELD_REDIS_URL; a
// wrong password fails the start (exit 2) without the password in the
// output; without a store key the proxy refuses to share a store.
func TestHardening15RedisURL(t *testing.T) {
	const password = "s3cret-redis-pw-4711"
	srv := redistest.StartWith(t, redistest.Config{Password: password})
	ts := pagedcache.NewTestServer(t)
	pol := localPolicy(t, ts.URL)
	t.Setenv(envStoreKey, "deployment store key, shared")
	t.Setenv(envRedisPassword, "")
	t.Setenv(envRedisURL, "")

	for _, tc := range []struct {
		name, flag, envURL, envPassword string
		db                              int
	}{
		{"url", "redis://:" + password + "@" + srv.Addr + "/3", "", "", 3},
		{"url-user", "redis://default:" + password + "@" + srv.Addr + "/4", "", "", 4},
		{"env-password", "redis://" + srv.Addr + "/5", "", password, 5},
		{"env-url", "", "redis://:" + password + "@" + srv.Addr + "/6", "", 6},
		{"host-port", srv.Addr, "", password, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envRedisURL, tc.envURL)
			t.Setenv(envRedisPassword, tc.envPassword)
			listen := freeAddr(t)
			args := []string{"--policy", pol, "--upstream", "local", "--listen", listen, "--quiet"}
			if tc.flag != "" {
				args = append(args, "--redis", tc.flag)
			}
			p := startCLIProxy(t, "http://"+listen, nil, args...)
			if status := postChat(t, "http://"+listen, "sk-redis-url"); status != 200 {
				t.Fatalf("status %d: %s", status, p.out.String())
			}
			if code := p.wait(); code != 0 {
				t.Fatalf("exit %d: %s", code, p.out.String())
			}
			c := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: password, DB: tc.db})
			defer c.Close()
			keys, err := c.Keys(context.Background(), "aishield:fp:*").Result()
			if err != nil || len(keys) == 0 {
				t.Fatalf("database %d holds no fingerprint (%v)", tc.db, err)
			}
		})
	}

	for _, tc := range []struct{ name, flag, storeKey, want string }{
		{"wrong-password", "redis://:wrong-pass-0815@" + srv.Addr + "/0", "deployment store key, shared", "WRONGPASS"},
		{"no-password", "redis://" + srv.Addr, "deployment store key, shared", "NOAUTH"},
		{"no-store-key", "redis://:" + password + "@" + srv.Addr, "", envStoreKey},
		{"bad-url", "redis://:wrong-pass-0815@[::1", "deployment store key, shared", "not a valid URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envStoreKey, tc.storeKey)
			var out bytes.Buffer
			code := run(context.Background(), []string{"proxy", "--policy", pol, "--upstream", "local", "--listen", freeAddr(t), "--redis", tc.flag},
				strings.NewReader(""), &out, &out)
			if code != 2 || !strings.Contains(out.String(), tc.want) {
				t.Fatalf("exit %d: %s; want 2 and %q", code, out.String(), tc.want)
			}
			if strings.Contains(out.String(), "wrong-pass-0815") || strings.Contains(out.String(), password) {
				t.Fatalf("a password in the output: %s", out.String())
			}
		})
	}
}

// TestHardening15RedisTLS: rediss:// reaches a TLS-only redis-server whose
// certificate chains to --redis-ca; without that CA the start fails.
func TestHardening15RedisTLS(t *testing.T) {
	const password = "tls-redis-pw-9182"
	srv := redistest.StartWith(t, redistest.Config{Password: password, TLS: true})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, srv.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := pagedcache.NewTestServer(t)
	pol := localPolicy(t, ts.URL)
	t.Setenv(envStoreKey, "deployment store key, shared")
	url := "rediss://:" + password + "@" + srv.Addr + "/0"

	var out bytes.Buffer
	if code := run(context.Background(), []string{"proxy", "--policy", pol, "--upstream", "local", "--listen", freeAddr(t), "--redis", url},
		strings.NewReader(""), &out, &out); code != 2 || strings.Contains(out.String(), password) {
		t.Fatalf("without --redis-ca: exit %d: %s; want 2, no password", code, out.String())
	}
	listen := freeAddr(t)
	p := startCLIProxy(t, "http://"+listen, nil, "--policy", pol, "--upstream", "local", "--listen", listen, "--quiet", "--redis", url, "--redis-ca", ca)
	if status := postChat(t, "http://"+listen, "sk-redis-tls"); status != 200 {
		t.Fatalf("status %d: %s", status, p.out.String())
	}
}

// TestHardening16PublicBind: on a non-loopback address the proxy refuses to
// start without caller authentication (exit 2); --insecure-public starts
// it with a warning.
func TestHardening16PublicBind(t *testing.T) {
	ts := pagedcache.NewTestServer(t)
	pol := localPolicy(t, ts.URL)
	_, port, _ := net.SplitHostPort(freeAddr(t))
	var out bytes.Buffer
	if code := run(context.Background(), []string{"proxy", "--policy", pol, "--upstream", "local", "--listen", "0.0.0.0:" + port},
		strings.NewReader(""), &out, &out); code != 2 || !strings.Contains(out.String(), "not a loopback address") {
		t.Fatalf("exit %d: %s; want a refusal", code, out.String())
	}
	p := startCLIProxy(t, "http://127.0.0.1:"+port, nil, "--policy", pol, "--upstream", "local", "--listen", "0.0.0.0:"+port, "--insecure-public", "--quiet")
	if status := postChat(t, "http://127.0.0.1:"+port, "sk-public"); status != 200 {
		t.Fatalf("status %d: %s", status, p.out.String())
	}
	if !strings.Contains(p.out.String(), "WARNING: --insecure-public") {
		t.Errorf("no warning: %s", p.out.String())
	}
}

// TestHardening16CallerKeysCLI: `aishield proxy --listen 0.0.0.0:PORT
// --caller-keys FILE` serves go-openai with a listed key (in
// X-Aishield-Key), and answers 401 in OpenAI's format without one.
func TestHardening16CallerKeysCLI(t *testing.T) {
	const key = "team-key-0123456789abcdef"
	ts := pagedcache.NewTestServer(t)
	pol := localPolicy(t, ts.URL)
	keys := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keys, []byte("# team\n"+key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(freeAddr(t))
	base := "http://127.0.0.1:" + port
	startCLIProxy(t, base, nil, "--policy", pol, "--upstream", "local", "--listen", "0.0.0.0:"+port, "--caller-keys", keys, "--quiet")
	ask := func(c *http.Client) error {
		cfg := openai.DefaultConfig("sk-provider")
		cfg.BaseURL = base + "/v1"
		cfg.HTTPClient = c
		_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: "m", MaxCompletionTokens: 8, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "What is the weekly schedule?"}}})
		return err
	}
	var ae *openai.APIError
	if err := ask(http.DefaultClient); !errors.As(err, &ae) || ae.HTTPStatusCode != 401 || ae.Code != "invalid_caller_key" {
		t.Fatalf("without a key: %v; want a 401 APIError", err)
	}
	if err := ask(&http.Client{Transport: headerTransport{"X-Aishield-Key": key}}); err != nil {
		t.Fatalf("with the key: %v", err)
	}
}

// headerTransport sets headers on every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestHardening16MutualTLS: `aishield proxy --listen 0.0.0.0:PORT
// --tls-cert --tls-key --client-ca` serves go-openai presenting a client
// certificate of that CA, and refuses the handshake of one without.
func TestHardening16MutualTLS(t *testing.T) {
	ts := pagedcache.NewTestServer(t)
	pol := localPolicy(t, ts.URL)
	dir := t.TempDir()
	caCert, caKey, caPEM := newCA(t)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	srvCert, srvKey := newLeaf(t, caCert, caKey, x509.ExtKeyUsageServerAuth)
	cliCert, cliKey := newLeaf(t, caCert, caKey, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	pair, err := tls.X509KeyPair(cliCert, cliKey)
	if err != nil {
		t.Fatal(err)
	}
	withCert := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}}}
	without := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}

	_, port, _ := net.SplitHostPort(freeAddr(t))
	base := "https://127.0.0.1:" + port
	p := startCLIProxy(t, base, withCert, "--policy", pol, "--upstream", "local", "--listen", "0.0.0.0:"+port, "--quiet",
		"--tls-cert", write("srv.pem", srvCert), "--tls-key", write("srv.key", srvKey), "--client-ca", write("ca.pem", caPEM))
	cfg := openai.DefaultConfig("sk-provider")
	cfg.BaseURL = base + "/v1"
	req := openai.ChatCompletionRequest{Model: "m", MaxCompletionTokens: 8,
		Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "What is the weekly schedule?"}}}
	cfg.HTTPClient = withCert
	if _, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatalf("with a client certificate: %v\n%s", err, p.out.String())
	}
	cfg.HTTPClient = without
	if _, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), req); err == nil {
		t.Fatal("served a client without a certificate")
	}
}

// newCA returns a CA certificate, its key and its PEM.
func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// newLeaf returns a certificate for 127.0.0.1 signed by ca, and its key,
// both PEM.
func newLeaf(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) ([]byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

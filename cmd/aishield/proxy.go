package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/proxy"
	"github.com/aishield/aishield/sdk/quarantine"
)

func newProxyCmd() *cobra.Command {
	var (
		policyRef, listen, upstream, redisAddr, auditPath, principalHeader string
		maxMemory                                                          string
		redisCA, callerKeysPath, tlsCert, tlsKey, clientCA                 string
		maxBody, maxInFlight, maxStream                                    int64
		maxConcurrent                                                      int
		timeout, idle, bodyTimeout                                         time.Duration
		quiet, insecurePublic, xForwarded                                  bool
	)
	cmd := &cobra.Command{
		Use:   "proxy",
		Short: "Run a local OpenAI/Anthropic-compatible proxy that guards every request and response",
		Long: `Proxy listens on 127.0.0.1 and forwards API requests to the destinations the policy declares
with a base_url, through the guard: outbound classification, redaction or blocking, the
destination's capacity, and inbound verification of every response, streams included.

Routing is chosen by the policy, never by the client (no open relay):
  /d/{destination}/...   goes to that destination's base_url + "/..."
  /...                   goes to the --upstream destination, when set

So with --upstream openai, an application whose base URL is http://127.0.0.1:8787/v1 reaches
https://api.openai.com/v1 through aishield. The caller's API key passes through untouched and
is never logged. Each request is attributed to a principal in the audit trail: the value of
the X-Aishield-Principal header (--principal-header; removed before forwarding), else a keyed
hash of the caller's API key. --audit FILE continues the chain of the trail FILE already
holds, so a restarted proxy keeps it intact. /healthz answers "ok"; /metrics serves
Prometheus metrics (requests, decisions, blocked, redacted, contaminations, latency).
With --redis, several proxies share
their memory of recent exchanges (the cross-exchange signal) through Redis; set
AISHIELD_CANARY_KEY to the same secret in each so they can name each other's exchanges.
--redis takes host:port or a URL redis://[user:password@]host:port/db (rediss:// for TLS);
AISHIELD_REDIS_URL gives the URL instead, and AISHIELD_REDIS_PASSWORD the password, so that
neither shows in ps. Every record in Redis carries an HMAC under AISHIELD_STORE_KEY (else a
key derived from AISHIELD_CANARY_KEY; one of them is required with --redis): records a writer
without the key adds are ignored and counted.

Answers that show a faulty service (a dropped prompt, another exchange's placeholder, canary
or text, chat-template fragments, an ID changing inside a response) quarantine their
destination as the policy's quarantine section says: by default at the first sign, until
"aishield quarantine clear", letting only public data through (503 aishield_quarantined for
the rest). With --redis every proxy sharing the server sees the quarantine, and it survives
restarts. Destinations whose quarantine declares a probe are probed on its schedule (the API
key from the environment variable its key_env names). /metrics has
aishield_destination_quarantined per destination.

Resources are bounded: --max-concurrent requests at once (429 with Retry-After beyond),
--max-in-flight-bytes of request bodies in all (429), --max-body per body (413),
--body-timeout to receive a body (408), --max-stream-bytes per streamed answer (cut with an
error event). /metrics counts each breach (aishield_proxy_limit_total). --max-memory (or the
policy's inbound.max_memory) bounds the memory of the exchanges remembered for verification:
past it the oldest are forgotten first.

On an address other than loopback the proxy refuses to start unless callers authenticate:
--caller-keys FILE (one key per line, or sha256:HEX; callers send X-Aishield-Key: KEY or
Proxy-Authorization: Bearer KEY) or mutual TLS (--tls-cert, --tls-key and --client-ca).
--insecure-public overrides that refusal, loudly. Forwarded, X-Forwarded-* and X-Real-IP
headers from callers are never passed on; --x-forwarded sets X-Forwarded-For/Host/Proto
from the connection itself.`,
		Example: `  aishield proxy --policy default --upstream openai
  aishield proxy --policy policy.yaml --listen 127.0.0.1:9000 --redis 127.0.0.1:6379
  AISHIELD_REDIS_URL=rediss://:secret@redis.internal:6380/2 AISHIELD_STORE_KEY=... aishield proxy --policy policy.yaml
  aishield proxy --policy policy.yaml --listen 0.0.0.0:8787 --caller-keys /etc/aishield/keys`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pol, err := loadPolicy(cmd)
			if err != nil {
				return err
			}
			if maxMemory != "" {
				n, err := policies.ParseSize(maxMemory)
				if err == nil && n < policies.MinMaxMemory {
					err = fmt.Errorf("at least 1MiB")
				}
				if err != nil {
					return withCode(2, fmt.Errorf("--max-memory: %w", err))
				}
				if redisAddress(redisAddr) != "" {
					return withCode(2, errors.New("--max-memory bounds the exchanges remembered in this process; with --redis they are in Redis (bound it with its maxmemory)"))
				}
				pol.Inbound.MaxMemory = n
			}
			opts := proxy.Options{Policy: pol, Upstream: upstream, MaxBody: maxBody, UpstreamTimeout: timeout, IdleTimeout: idle,
				PrincipalHeader: principalHeader, MaxConcurrent: maxConcurrent, MaxInFlightBytes: maxInFlight,
				MaxStreamBytes: maxStream, BodyTimeout: bodyTimeout, ForwardClientAddress: xForwarded}
			errOut := cmd.ErrOrStderr()
			if callerKeysPath != "" {
				keys, err := readCallerKeys(callerKeysPath)
				if err != nil {
					return withCode(2, err)
				}
				opts.CallerKeys = keys
			}
			tlsCfg, err := serverTLS(tlsCert, tlsKey, clientCA)
			if err != nil {
				return withCode(2, err)
			}
			if k := os.Getenv("AISHIELD_CANARY_KEY"); k != "" {
				opts.CanaryKey = []byte(k)
			}
			if !quiet {
				opts.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			}
			if redisAddr = redisAddress(redisAddr); redisAddr != "" {
				target, err := parseRedisFlags(redisAddr, redisCA)
				if err != nil {
					return withCode(2, err)
				}
				key := storeKey(os.Getenv)
				if len(key) < 16 {
					return withCode(2, fmt.Errorf("--redis: set %s (at least 16 bytes) or AISHIELD_CANARY_KEY, the same in every proxy sharing the store: it keys the MAC of the records", envStoreKey))
				}
				rc, err := dialRedis(ctx, target, redisAddr, errOut)
				if err != nil {
					return withCode(2, err)
				}
				defer rc.Close()
				ropts := fingerprint.RedisOptions{Key: key}
				if opts.Log != nil {
					ropts.Log = opts.Log
				} else {
					ropts.Log = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
				}
				opts.Store = fingerprint.NewRedisStore(rc, ropts)
				opts.Quarantine = quarantine.NewRedisStore(rc, "")
			}
			// The key of AISHIELD_AUDIT_KEY keys the chain of --audit's trail
			// and of the policy's audit: trail alike.
			if opts.AuditKey, err = auditKey(); err != nil {
				return withCode(2, err)
			}
			if auditPath != "" {
				// Continue the trail's chain: a restarted proxy appends to
				// it; on shutdown its signed head is written.
				auditLog, closeTrail, err := openAuditTrail(auditPath)
				if err != nil {
					return withCode(2, fmt.Errorf("--audit %s: %w", auditPath, err))
				}
				defer closeTrail()
				opts.AuditLog = auditLog
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return withCode(2, err)
			}
			if !isLoopback(ln.Addr()) {
				authed := opts.CallerKeys != nil || clientCA != ""
				switch {
				case !authed && !insecurePublic:
					ln.Close()
					return withCode(2, fmt.Errorf("--listen %s is not a loopback address: callers must authenticate (--caller-keys FILE, or mutual TLS with --tls-cert, --tls-key and --client-ca); --insecure-public serves anyone who can reach it", listen))
				case !authed:
					fmt.Fprintf(errOut, "aishield: WARNING: --insecure-public: the proxy on %s serves ANY caller that can reach it, with no authentication: anyone there can send requests through your policy and read /metrics\n", ln.Addr())
				}
			}
			p, err := proxy.New(ctx, opts)
			if err != nil {
				ln.Close()
				return withCode(2, err)
			}
			defer p.Close()
			// Synthetic probes of the destinations whose quarantine declares
			// them, on the policy's schedule, shared through --redis.
			pctx, stopProbes := context.WithCancel(ctx)
			defer stopProbes()
			prober := &sdk.Prober{Guard: p.Guard(), Client: &http.Client{Timeout: 2 * time.Minute},
				Header: func(dest string) http.Header { return probeHeader(opts.Policy, dest) },
				OnProbe: func(r sdk.ProbeResult, err error) {
					switch {
					case err != nil:
						fmt.Fprintf(errOut, "aishield: probe of %s failed: %v\n", r.Destination, err)
					case r.Contaminated:
						fmt.Fprintf(errOut, "aishield: probe %s of %s came back contaminated (%s)\n", r.Exchange, r.Destination, strings.Join(r.Reasons, ", "))
					}
				}}
			if len(prober.Destinations()) > 0 {
				go func() { _ = prober.Run(pctx) }()
			}
			scheme := "http"
			if tlsCfg != nil {
				ln, scheme = tls.NewListener(ln, tlsCfg), "https"
			}
			return serveProxy(ctx, ln, scheme, p, errOut)
		},
	}
	f := cmd.Flags()
	addPolicyFlag(f, &policyRef, "giving destinations and checks")
	f.StringVar(&listen, "listen", "127.0.0.1:8787", "address to listen on (keep it on loopback unless you mean it)")
	f.StringVar(&upstream, "upstream", "", "destination of requests outside /d/{destination}/")
	f.StringVar(&redisAddr, "redis", "", "share the cross-exchange memory through Redis: host:port or redis[s]://[user:password@]host:port/db (default $"+envRedisURL+"; password also from $"+envRedisPassword+")")
	f.StringVar(&maxMemory, "max-memory", "", "bound the memory of the exchanges remembered for inbound verification, such as 512MiB (default: the policy's inbound.max_memory, else only max_exchanges); the oldest are forgotten first")
	f.StringVar(&redisCA, "redis-ca", "", "PEM file of the CA a rediss:// server's certificate must chain to (default: the system's roots)")
	f.IntVar(&maxConcurrent, "max-concurrent", proxy.DefaultMaxConcurrent, "API requests served at once; beyond, 429 with Retry-After (negative: no limit)")
	f.Int64Var(&maxInFlight, "max-in-flight-bytes", 0, "sum of the request bodies being served; beyond, 429 (0: four times --max-body; negative: no limit)")
	f.Int64Var(&maxStream, "max-stream-bytes", proxy.DefaultMaxStreamBytes, "largest streamed answer in bytes; a longer one is cut with an error event (negative: no limit)")
	f.DurationVar(&bodyTimeout, "body-timeout", proxy.DefaultBodyTimeout, "time to receive a request body; beyond, 408 (negative: no limit)")
	f.StringVar(&callerKeysPath, "caller-keys", "", "require callers to present one of the keys in FILE (one per line, or sha256:HEX) in X-Aishield-Key or Proxy-Authorization: Bearer")
	f.StringVar(&tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate (with --tls-key)")
	f.StringVar(&tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&clientCA, "client-ca", "", "require client certificates signed by the CAs in this PEM file (mutual TLS; needs --tls-cert)")
	f.BoolVar(&insecurePublic, "insecure-public", false, "serve on a non-loopback address without caller authentication (dangerous)")
	f.BoolVar(&xForwarded, "x-forwarded", false, "set X-Forwarded-For/Host/Proto on forwarded requests from the connection (callers' own are always dropped)")
	f.StringVar(&auditPath, "audit", "", "append the audit trail (hash-chained JSON lines) to FILE, continuing its chain")
	f.StringVar(&principalHeader, "principal-header", proxy.DefaultPrincipalHeader, "request header naming the principal (else a keyed hash of the caller's API key); removed before forwarding")
	f.Int64Var(&maxBody, "max-body", proxy.DefaultMaxBody, "largest request (and non-streamed response) body in bytes")
	f.DurationVar(&timeout, "upstream-timeout", proxy.DefaultUpstreamTimeout, "wait at most this long for the upstream's response headers")
	f.DurationVar(&idle, "idle-timeout", proxy.DefaultIdleTimeout, "cut an upstream body silent for this long")
	f.BoolVar(&quiet, "quiet", false, "do not log one line per request")
	bindEnv(cmd)
	return cmd
}

// serveProxy serves h on ln until ctx is done, then shuts down gracefully,
// letting requests in flight finish for up to 10 seconds. scheme ("http"
// or "https") names what ln serves.
func serveProxy(ctx context.Context, ln net.Listener, scheme string, h http.Handler, errOut io.Writer) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(errOut, "aishield proxy listening on %s://%s\n", scheme, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && serr != nil {
		return serr
	}
	fmt.Fprintln(errOut, "aishield proxy stopped")
	return err
}

// isLoopback reports whether addr is a loopback address (127.0.0.0/8,
// ::1). The unspecified address (0.0.0.0, ::) is not: it listens on every
// interface.
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// readCallerKeys reads the --caller-keys file. Its errors name the line,
// never a key.
func readCallerKeys(path string) (*proxy.CallerKeys, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--caller-keys: %w", err)
	}
	defer f.Close()
	keys, err := proxy.ParseCallerKeys(f)
	if err != nil {
		return nil, fmt.Errorf("--caller-keys %s: %w", path, err)
	}
	return keys, nil
}

// serverTLS builds the TLS configuration of --tls-cert, --tls-key and
// --client-ca: nil without a certificate. With --client-ca, clients must
// present a certificate that chains to one of its CAs.
func serverTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	if certFile == "" && keyFile == "" {
		if clientCA != "" {
			return nil, errors.New("--client-ca needs --tls-cert and --tls-key (mutual TLS)")
		}
		return nil, nil
	}
	if certFile == "" || keyFile == "" {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--client-ca %s holds no PEM certificate", clientCA)
		}
		cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// probeHeader returns the headers of dest's probes: its API key, read from
// the environment variable its probe section names, as the provider
// expects it.
func probeHeader(pol *policies.Policy, dest string) http.Header {
	d, ok := pol.Destination(dest)
	if !ok {
		return nil
	}
	pr := pol.Quarantine(d).Probe
	if pr == nil || pr.KeyEnv == "" {
		return nil
	}
	key := os.Getenv(pr.KeyEnv)
	if key == "" {
		return nil
	}
	if strings.EqualFold(d.Provider, "anthropic") {
		return http.Header{"X-Api-Key": {key}}
	}
	return http.Header{"Authorization": {"Bearer " + key}}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/proxy"
)

func newProxyCmd() *cobra.Command {
	var (
		policyRef, listen, upstream, redisAddr, auditPath, principalHeader string
		maxBody                                                            int64
		timeout, idle                                                      time.Duration
		quiet                                                              bool
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
AISHIELD_CANARY_KEY to the same secret in each so they can name each other's exchanges.`,
		Example: `  aishield proxy --policy default --upstream openai
  aishield proxy --policy policy.yaml --listen 127.0.0.1:9000 --redis 127.0.0.1:6379`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pol, err := policies.LoadRef(policyRef)
			if err != nil {
				return withCode(2, err)
			}
			opts := proxy.Options{Policy: pol, Upstream: upstream, MaxBody: maxBody, UpstreamTimeout: timeout, IdleTimeout: idle,
				PrincipalHeader: principalHeader}
			if k := os.Getenv("AISHIELD_CANARY_KEY"); k != "" {
				opts.CanaryKey = []byte(k)
			}
			if !quiet {
				opts.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			}
			if redisAddr != "" {
				rc := redis.NewClient(&redis.Options{Addr: redisAddr})
				defer rc.Close()
				pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err := rc.Ping(pctx).Err()
				cancel()
				if err != nil {
					return withCode(2, fmt.Errorf("--redis %s: %w", redisAddr, err))
				}
				opts.Store = fingerprint.NewRedisStore(rc, fingerprint.RedisOptions{})
			}
			if auditPath != "" {
				// Continue the trail's chain: a restarted proxy appends to it.
				auditLog, f, err := sdk.OpenAuditLog(auditPath)
				if err != nil {
					return withCode(2, fmt.Errorf("--audit %s: %w", auditPath, err))
				}
				defer f.Close()
				opts.AuditLog = auditLog
			}
			p, err := proxy.New(ctx, opts)
			if err != nil {
				return withCode(2, err)
			}
			defer p.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return withCode(2, err)
			}
			return serveProxy(ctx, ln, p, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&policyRef, "policy", "default", "policy file or preset name")
	f.StringVar(&listen, "listen", "127.0.0.1:8787", "address to listen on (keep it on loopback unless you mean it)")
	f.StringVar(&upstream, "upstream", "", "destination of requests outside /d/{destination}/")
	f.StringVar(&redisAddr, "redis", "", "share the cross-exchange memory through the Redis server at ADDR")
	f.StringVar(&auditPath, "audit", "", "append the audit trail (hash-chained JSON lines) to FILE, continuing its chain")
	f.StringVar(&principalHeader, "principal-header", proxy.DefaultPrincipalHeader, "request header naming the principal (else a keyed hash of the caller's API key); removed before forwarding")
	f.Int64Var(&maxBody, "max-body", proxy.DefaultMaxBody, "largest request (and non-streamed response) body in bytes")
	f.DurationVar(&timeout, "upstream-timeout", proxy.DefaultUpstreamTimeout, "wait at most this long for the upstream's response headers")
	f.DurationVar(&idle, "idle-timeout", proxy.DefaultIdleTimeout, "cut an upstream body silent for this long")
	f.BoolVar(&quiet, "quiet", false, "do not log one line per request")
	return cmd
}

// serveProxy serves h on ln until ctx is done, then shuts down gracefully,
// letting requests in flight finish for up to 10 seconds.
func serveProxy(ctx context.Context, ln net.Listener, h http.Handler, errOut io.Writer) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	fmt.Fprintf(errOut, "aishield proxy listening on http://%s\n", ln.Addr())
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

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/aishield/aishield/pagedcache"
	"github.com/spf13/cobra"
)

func newCacheServerCmd() *cobra.Command {
	var (
		listen, preset, reuse string
		capacity, pageSize    int
		contextLen            int
		faults                []string
		seed                  uint64
	)
	cmd := &cobra.Command{
		Use:   "cache-server",
		Short: "Run the local paged-KV-cache test server (OpenAI and Anthropic APIs)",
		Long: `cache-server runs an inference server speaking OpenAI's API and Anthropic's
Messages API whose answers are read back from a paged KV cache, to prove a
setup catches cross-tenant leaks.

Presets: ` + strings.Join(pagedcache.Presets(), ", ") + `.
Faults (opt-in; also per request with the X-PagedCache-Fault header): ` + faultNames() + `.
Endpoints: /v1/chat/completions, /v1/completions, /v1/messages (Anthropic),
/v1/models, /healthz (and /health), /metrics, /debug/requests/{id} (ground
truth), /debug/pages.`,
		Example: `  aishield cache-server --listen 127.0.0.1:8089 --preset incident-2026`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := pagedcache.Preset(preset)
			if err != nil {
				return withCode(2, err)
			}
			flags := cmd.Flags()
			if flags.Changed("capacity-tokens") {
				opts.CapacityTokens = capacity
			}
			if flags.Changed("page-size") {
				opts.PageSize = pageSize
			}
			if flags.Changed("context-len") {
				opts.ContextLen = contextLen
			}
			if flags.Changed("reuse") {
				opts.Reuse = pagedcache.Reuse(strings.ToLower(reuse))
			}
			if flags.Changed("fault") {
				var err error
				if opts.Faults, err = parseFaults(faults); err != nil {
					return withCode(2, err)
				}
			}
			opts.Seed = seed
			opts.Log = cmd.ErrOrStderr()
			srv, err := pagedcache.New(opts)
			if err != nil {
				return withCode(2, err)
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return withCode(2, fmt.Errorf("listen: %w", err))
			}
			eff := srv.Options()
			fmt.Fprintf(cmd.ErrOrStderr(), "cache-server: listening on http://%s (capacity %d tokens in pages of %d, context %d, max request input %d, reuse %s, faults %s, seed %d)\n",
				ln.Addr(), eff.CapacityTokens/eff.PageSize*eff.PageSize, eff.PageSize, eff.ContextLen,
				srv.MaxRequestInputTokens(), eff.Reuse, faultList(eff.Faults), eff.Seed)

			// main.go cancels the context on SIGINT/SIGTERM; also listen here
			// so the command shuts down gracefully when run in process.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			select {
			case err := <-errc:
				return withCode(1, fmt.Errorf("serve: %w", err))
			case <-ctx.Done():
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "cache-server: shutting down")
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil {
				return withCode(1, fmt.Errorf("shutdown: %w", err))
			}
			if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
				return withCode(1, err)
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "cache-server: stopped")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8089", "address to listen on (host:port; port 0 picks a free one)")
	f.StringVar(&preset, "preset", "default", "preset: "+strings.Join(pagedcache.Presets(), ", "))
	f.IntVar(&capacity, "capacity-tokens", 0, "KV-cache capacity in tokens (overrides the preset)")
	f.IntVar(&pageSize, "page-size", 0, "tokens per page (overrides the preset)")
	f.IntVar(&contextLen, "context-len", 0, "model context length checked by the front end (overrides the preset)")
	f.StringSliceVar(&faults, "fault", nil, "faults to enable (repeatable or comma-separated; \"none\" clears the preset's): "+faultNames())
	f.Uint64Var(&seed, "seed", 0, "seed of the deterministic model")
	f.StringVar(&reuse, "reuse", "", "free-page reuse order: lifo or lru (overrides the preset)")
	bindEnv(cmd)
	return cmd
}

func faultNames() string { return faultList(pagedcache.Faults()) }

func faultList(fs []pagedcache.Fault) string {
	if len(fs) == 0 {
		return "none"
	}
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ",")
}

// parseFaults reads the --fault values of cache-server and demo: fault
// names, or "none" for no fault. The result is never nil, so that it
// replaces a preset's faults even when empty.
func parseFaults(names []string) ([]pagedcache.Fault, error) {
	out := []pagedcache.Fault{}
	for _, f := range names {
		if strings.EqualFold(f, "none") {
			continue
		}
		fault, err := pagedcache.ParseFault(f)
		if err != nil {
			return nil, err
		}
		out = append(out, fault)
	}
	return out, nil
}

package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/aishield/aishield/cmd/aishield/internal/demo"
	"github.com/aishield/aishield/pagedcache"
	"github.com/spf13/cobra"
)

func newDemoCmd() *cobra.Command {
	var (
		opts     demo.Options
		of       *outputFlags
		capacity int
		context  int
		pageSize int
		runs     []string
		faults   []string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Replay the 2026 shared-inference incident on this machine, without and with aishield",
		Long: `Demo starts the bundled paged-KV-cache server in process with the incident-2026 preset
(a 681,280-token KV cache behind a model accepting 1,048,576 tokens, LIFO page reuse, and the
engine's fault: over-capacity prompts decoded over stale pages), sends several tenants'
realistic traffic to it over loopback HTTP with the go-openai client (fictional documents with
personal data, secrets and confidentiality markers, and a few prompts above the KV capacity),
and reports, from the server's own ground truth, which answers carried other tenants' data.

The same traffic then goes through aishield, once with the destination's real KV capacity
declared in the policy and once with only its advertised context declared (so inbound
verification alone must catch what comes back), and the report sets the runs side by side.

No network and no account: everything runs on 127.0.0.1. The exit status is 1 when a run through
aishield delivered a contaminated answer (other tenants' data, or an answer over a prompt the
server silently dropped or truncated), withheld a clean answer (a false alarm) or failed a
request (--exit-code sets that status); 0 otherwise. --fault replays other fault modes of the server (auto-truncate,
abort-reuse-race, shared-prefix-cache), or none (the correct server).`,
		Example: `  aishield demo
  aishield demo --format json | jq '.runs[].totals'
  aishield demo --format json -o demo.json
  aishield demo --capacity-tokens 16384 --context-len 32768   # a small, fast server
  aishield demo --capacity-tokens 8192 --fault auto-truncate     # silent truncation, caught by the usage check`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return of.run(cmd, func(out io.Writer) error {
				return runDemo(cmd, out, of, opts, capacity, context, pageSize, runs, faults)
			})
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the traffic and of the server's answers")
	f.IntVar(&opts.Rounds, "rounds", 4, "requests per tenant")
	of = addOutputFlags(cmd, "text", "text", "json")
	of.addExitCode(cmd, "a run through aishield delivered a contaminated answer, withheld a clean one or failed a request")
	of.addJSONAlias(cmd)
	f.IntVar(&capacity, "capacity-tokens", 0, "KV-cache capacity of the server (default: the incident-2026 preset's 681,280)")
	f.IntVar(&context, "context-len", 0, "context length of the server (default: twice the capacity when --capacity-tokens is set)")
	f.IntVar(&pageSize, "page-size", 0, "page size of the server in tokens (default: 16 when --capacity-tokens is set)")
	f.IntVar(&opts.OversizeTokens, "oversize-tokens", 0, "tokens of each over-capacity prompt (default: a quarter of the way from the capacity to the context length)")
	f.StringSliceVar(&runs, "runs", nil, "runs to perform: without, guarded, inbound-only (default: all)")
	f.StringSliceVar(&faults, "fault", nil, "fault modes of the server instead of oversize-stale-pages (repeatable or comma-separated; \"none\" for the correct server): "+faultNames())
	return cmd
}

// runDemo runs the demo and writes its report to out in of's format.
func runDemo(cmd *cobra.Command, out io.Writer, of *outputFlags, opts demo.Options, capacity, context, pageSize int, runs, faults []string) error {
	if capacity != 0 || context != 0 || pageSize != 0 {
		if capacity == 0 {
			return withCode(2, fmt.Errorf("--context-len and --page-size need --capacity-tokens"))
		}
		opts.Server = pagedcache.Options{CapacityTokens: capacity, ContextLen: context, PageSize: pageSize}
	}
	if len(faults) > 0 {
		var err error
		if opts.Faults, err = parseFaults(faults); err != nil {
			return withCode(2, err)
		}
	}
	opts.Runs = runs
	if of.format == "text" {
		opts.Progress = cmd.ErrOrStderr()
	}
	rep, err := demo.Run(cmd.Context(), opts)
	if err != nil {
		return withCode(2, err)
	}
	if of.format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(out); err != nil {
		return err
	}
	for _, run := range rep.Runs {
		t := run.Totals
		if run.Name != demo.RunWithout && (t.Leaked > 0 || t.TruncatedDelivered > 0 || t.FalseAlarms > 0 || t.Errors > 0) {
			return of.fail(fmt.Errorf("run %q: %d contaminated and %d truncated answers delivered, %d false alarms, %d errors",
				run.Name, t.Leaked, t.TruncatedDelivered, t.FalseAlarms, t.Errors))
		}
	}
	return nil
}

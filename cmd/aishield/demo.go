package main

import (
	"encoding/json"
	"fmt"

	"github.com/aishield/aishield/internal/demo"
	"github.com/aishield/aishield/pagedcache"
	"github.com/spf13/cobra"
)

func newDemoCmd() *cobra.Command {
	var (
		opts     demo.Options
		asJSON   bool
		capacity int
		context  int
		pageSize int
		runs     []string
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
aishield delivered a contaminated answer or failed a request, 0 otherwise (answers withheld
although clean are reported as false alarms).`,
		Example: `  aishield demo
  aishield demo --json | jq '.runs[].totals'
  aishield demo --capacity-tokens 16384 --context-len 32768   # a small, fast server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if capacity != 0 || context != 0 || pageSize != 0 {
				if capacity == 0 {
					return withCode(2, fmt.Errorf("--context-len and --page-size need --capacity-tokens"))
				}
				opts.Server = pagedcache.Options{CapacityTokens: capacity, ContextLen: context, PageSize: pageSize}
			}
			opts.Runs = runs
			if !asJSON {
				opts.Progress = cmd.ErrOrStderr()
			}
			rep, err := demo.Run(cmd.Context(), opts)
			if err != nil {
				return withCode(2, err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else if err := rep.WriteText(cmd.OutOrStdout()); err != nil {
				return err
			}
			for _, run := range rep.Runs {
				if run.Name != demo.RunWithout && (run.Totals.Leaked > 0 || run.Totals.Errors > 0) {
					return withCode(1, fmt.Errorf("run %q: %d contaminated answers delivered, %d errors",
						run.Name, run.Totals.Leaked, run.Totals.Errors))
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Uint64Var(&opts.Seed, "seed", 1, "seed of the traffic and of the server's answers")
	f.IntVar(&opts.Rounds, "rounds", 4, "requests per tenant")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.IntVar(&capacity, "capacity-tokens", 0, "KV-cache capacity of the server (default: the incident-2026 preset's 681,280)")
	f.IntVar(&context, "context-len", 0, "context length of the server (default: twice the capacity when --capacity-tokens is set)")
	f.IntVar(&pageSize, "page-size", 0, "page size of the server in tokens (default: 16 when --capacity-tokens is set)")
	f.IntVar(&opts.OversizeTokens, "oversize-tokens", 0, "tokens of each over-capacity prompt (default: a quarter of the way from the capacity to the context length)")
	f.StringSliceVar(&runs, "runs", nil, "runs to perform: without, guarded, inbound-only (default: all)")
	return cmd
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

func newQuarantineCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quarantine",
		Short: "List and clear the quarantines of destinations whose answers showed signs of a faulty service",
		Long: `A destination whose answers show signs of a faulty service (a dropped prompt,
another exchange's placeholder, canary or text, chat-template fragments) is
quarantined as the policy's quarantine section says. These commands read and
change the shared quarantine store, in Redis: --redis host:port or
redis[s]://[user:password@]host:port/db, or AISHIELD_REDIS_URL (password also from
AISHIELD_REDIS_PASSWORD), as the proxy reads it. Without Redis every process keeps
its own quarantine in memory, which nothing outside it can see, and a restart
clears.`,
	}
	cmd.AddCommand(newQuarantineListCmd(), newQuarantineClearCmd())
	return cmd
}

// quarantineFlags are the flags list and clear share.
type quarantineFlags struct {
	policy, redis, redisCA string
}

func (f *quarantineFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	addPolicyFlag(fl, &f.policy, "giving each destination's quarantine settings")
	fl.StringVar(&f.redis, "redis", "", "the shared quarantine store: host:port or redis[s]://[user:password@]host:port/db (default $"+envRedisURL+"; password also from $"+envRedisPassword+")")
	fl.StringVar(&f.redisCA, "redis-ca", "", "PEM file of the CA a rediss:// server's certificate must chain to (default: the system's roots)")
}

// errNoSharedStore is the error of a quarantine command without Redis.
var errNoSharedStore = errors.New("no quarantine store: give --redis (or set " + envRedisURL + ") to the Redis server the proxies share. " +
	"Without Redis each process keeps its own quarantine in memory, which no other command can see or clear, and a restart clears it")

// openQuarantineStore loads the policy and connects to the shared
// quarantine store. The caller closes the client.
func (f *quarantineFlags) open(cmd *cobra.Command) (*policies.Policy, *quarantine.RedisStore, *redis.Client, error) {
	ctx, errOut := cmd.Context(), cmd.ErrOrStderr()
	addr := redisAddress(f.redis)
	if addr == "" {
		return nil, nil, nil, errNoSharedStore
	}
	pol, err := loadPolicy(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	target, err := parseRedisFlags(addr, f.redisCA)
	if err != nil {
		return nil, nil, nil, err
	}
	rc, err := dialRedis(ctx, target, addr, errOut)
	if err != nil {
		return nil, nil, nil, err
	}
	// The store holds counts of signs and exchange IDs, no value: it
	// needs no MAC key (unlike the fingerprint store).
	return pol, quarantine.NewRedisStore(rc, ""), rc, nil
}

// quarantineEntry is one destination in quarantine list's JSON.
type quarantineEntry struct {
	Destination string `json:"destination"`
	// InPolicy reports that the policy declares the destination (its
	// default quarantine settings apply otherwise).
	InPolicy bool                           `json:"in_policy"`
	Signs    map[string]quarantine.SignStat `json:"signs"`
	// Quarantine is the recorded quarantine, nil when none.
	Quarantine *quarantineState `json:"quarantine"`
}

type quarantineState struct {
	quarantine.State
	// Active reports that it is in force now (not past its until).
	Active bool `json:"active"`
	// Action is what the policy's quarantine of the destination does to
	// its requests (block, limit, failover); MaxLevel and Failover
	// complete limit and failover.
	Action   string `json:"action"`
	MaxLevel string `json:"max_level,omitempty"`
	Failover string `json:"failover,omitempty"`
}

func newQuarantineListCmd() *cobra.Command {
	fl := &quarantineFlags{}
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List every destination the quarantine store knows: its signs and its quarantine",
		Long: `list prints every destination the shared store knows: each sign its answers
showed (count, first and last time) and its quarantine, if one is recorded: since
when, until when (or until cleared), the exchange whose answer tripped it, and what
the policy's quarantine does to its requests. A quarantine past its end is shown as
expired until a process checks the destination and removes it.

Exit status: 0 listed, 2 error (no Redis, unreachable, a bad policy).`,
		Example: `  aishield quarantine list --redis 127.0.0.1:6379 --policy policy.yaml
  AISHIELD_REDIS_URL=rediss://:secret@redis.internal:6380/2 aishield quarantine list --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return of.run(cmd, func(out io.Writer) error { return runQuarantineList(cmd, fl, of.format, out) })
		},
	}
	fl.register(cmd)
	of = addOutputFlags(cmd, "text", "text", "json")
	bindEnv(cmd)
	return cmd
}

// runQuarantineList writes what the shared store knows to out in format.
func runQuarantineList(cmd *cobra.Command, fl *quarantineFlags, format string, out io.Writer) error {
	ctx := cmd.Context()
	pol, store, rc, err := fl.open(cmd)
	if err != nil {
		return withCode(2, err)
	}
	defer rc.Close()
	hs, err := store.Health(ctx)
	if err != nil {
		return withCode(2, err)
	}
	entries := quarantineEntries(pol, hs, time.Now())
	if format == "json" {
		if err := writeJSON(out, map[string]any{"policy": pol.Name, "destinations": entries}); err != nil {
			return withCode(2, err)
		}
		return nil
	}
	if err := writeQuarantineList(out, entries); err != nil {
		return withCode(2, err)
	}
	return nil
}

// quarantineEntries joins what the store knows with the policy's settings.
func quarantineEntries(pol *policies.Policy, hs []quarantine.Health, now time.Time) []quarantineEntry {
	out := make([]quarantineEntry, 0, len(hs))
	for _, h := range hs {
		d, in := pol.Destination(h.Destination)
		if !in {
			d = pol.Default
		}
		e := quarantineEntry{Destination: h.Destination, InPolicy: in, Signs: h.Signs}
		if e.Signs == nil {
			e.Signs = map[string]quarantine.SignStat{}
		}
		if h.State != nil {
			q := pol.Quarantine(d)
			st := &quarantineState{State: *h.State, Active: h.State.Active(now), Action: string(q.Action)}
			switch q.Action {
			case policies.QuarantineLimit:
				st.MaxLevel = q.MaxLevel
			case policies.QuarantineFailover:
				st.Failover = q.Failover
			}
			e.Quarantine = st
		}
		out = append(out, e)
	}
	return out
}

func writeQuarantineList(out io.Writer, entries []quarantineEntry) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintln(out, "no destination has shown a sign or been quarantined")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DESTINATION\tQUARANTINE\tSINCE\tUNTIL\tEXCHANGE\tACTION")
	for _, e := range entries {
		name := shown(e.Destination)
		if !e.InPolicy {
			name += " (not in the policy)"
		}
		q := e.Quarantine
		if q == nil {
			fmt.Fprintf(tw, "%s\tnone\t-\t-\t-\t-\n", name)
			continue
		}
		status := "active"
		if !q.Active {
			status = "expired"
		}
		until := "until cleared"
		if !q.Until.IsZero() {
			until = textTime(q.Until)
		}
		action := shown(q.Action)
		switch {
		case q.MaxLevel != "":
			action += " (up to " + shown(q.MaxLevel) + ")"
		case q.Failover != "":
			action += " (to " + shown(q.Failover) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, status, textTime(q.Since), until, shown(q.Exchange), action)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DESTINATION\tSIGN\tCOUNT\tFIRST\tLAST")
	rows := 0
	for _, e := range entries {
		for _, s := range slices.Sorted(maps.Keys(e.Signs)) {
			st := e.Signs[s]
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", shown(e.Destination), shown(s), st.Count, textTime(st.First), textTime(st.Last))
			rows++
		}
	}
	if rows == 0 {
		fmt.Fprintln(tw, "-\t(no sign)\t0\t-\t-")
	}
	return tw.Flush()
}

func newQuarantineClearCmd() *cobra.Command {
	fl := &quarantineFlags{}
	var auditPath string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "clear DESTINATION",
		Short: "End a destination's quarantine (exit 0 cleared, 1 nothing to clear, 2 error)",
		Long: `clear ends DESTINATION's quarantine in the shared store, for every process that
shares it, after a person has looked: the counts of its signs within the window
restart from zero. The policy's webhook for the destination receives the
quarantine.cleared event (clear waits up to --webhook-wait for it to be delivered).
With --audit FILE the event is appended to that audit trail, continuing its chain
(keyed with AISHIELD_AUDIT_KEY when set, as the proxy's).

Exit status: 0 cleared, 1 the destination had no quarantine, 2 error.`,
		Example: `  aishield quarantine clear shared-llm --redis 127.0.0.1:6379 --policy policy.yaml --audit audit.jsonl`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			dest := args[0]
			errOut := cmd.ErrOrStderr()
			pol, store, rc, err := fl.open(cmd)
			if err != nil {
				return withCode(2, err)
			}
			defer rc.Close()
			var trail *sdk.AuditLog
			if auditPath != "" {
				log, closeTrail, err := openAuditTrail(auditPath)
				if err != nil {
					return withCode(2, fmt.Errorf("--audit %s: %w", auditPath, err))
				}
				trail = log
				defer func() {
					if err := closeTrail(); err != nil {
						fmt.Fprintf(errOut, "aishield: --audit %s: %v\n", auditPath, err)
					}
				}()
			}
			if _, ok := pol.Destination(dest); !ok {
				fmt.Fprintf(errOut, "aishield: policy %s declares no destination %s: its default quarantine settings (and webhook) apply\n",
					pol.Name, shown(dest))
			}
			var appendErr error
			mon, err := quarantine.New(quarantine.Options{Policy: pol, Store: store, OnEvent: func(ev quarantine.Event) {
				if trail != nil {
					appendErr = errors.Join(appendErr, trail.Append(sdk.QuarantineEventRecord(ev)))
				}
			}})
			if err != nil {
				return withCode(2, err)
			}
			st, cleared, err := mon.Clear(ctx, dest)
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
			werr := mon.Close(wctx)
			cancel()
			if err != nil {
				return withCode(2, err)
			}
			if !cleared {
				fmt.Fprintf(cmd.OutOrStdout(), "%s has no quarantine: nothing to clear\n", shown(dest))
				return withCode(1, nil)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cleared the quarantine of %s (since %s, tripped by exchange %s)\n",
				shown(dest), textTime(st.Since), shown(st.Exchange))
			if werr != nil {
				fmt.Fprintf(errOut, "aishield: the webhook of %s was not delivered within %s; the quarantine is cleared\n", shown(dest), wait)
			}
			if appendErr != nil {
				return withCode(2, fmt.Errorf("the quarantine is cleared, but its event could not be appended to --audit %s: %w", auditPath, appendErr))
			}
			return nil
		},
	}
	fl.register(cmd)
	cmd.Flags().StringVar(&auditPath, "audit", "", "append the quarantine.cleared event to this audit trail, continuing its chain")
	cmd.Flags().DurationVar(&wait, "webhook-wait", 30*time.Second, "how long to wait for the policy's webhook to be delivered")
	return cmd
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and query the guard's hash-chained audit trail",
	}
	cmd.AddCommand(newAuditVerifyCmd(), newAuditQueryCmd())
	return cmd
}

func newAuditVerifyCmd() *cobra.Command {
	var cont, asJSON bool
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check the hash chain of an audit trail (exit 1 when broken)",
		Long: `verify recomputes the SHA-256 chain of an audit trail: every line must carry
the digest of the line before it, and the first line the genesis hash (unless
--continuation). It prints the number of lines and the head hash; keep the head
elsewhere to detect truncation at the end, which a chain alone cannot show.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return withCode(2, err)
			}
			defer f.Close()
			n, head, err := sdk.ReadAudit(f, cont, nil)
			var ce *sdk.ChainError
			out := cmd.OutOrStdout()
			if asJSON {
				res := map[string]any{"file": args[0], "lines": n, "ok": err == nil, "head": head}
				if err != nil {
					res["error"] = err.Error()
					if errors.As(err, &ce) {
						res["line"] = ce.Line
					}
				}
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if e := enc.Encode(res); e != nil {
					return withCode(2, e)
				}
				if err != nil {
					return withCode(1, nil)
				}
				return nil
			}
			if err != nil {
				if errors.As(err, &ce) {
					fmt.Fprintf(out, "BROKEN %s: %v\n", args[0], err)
					return withCode(1, nil)
				}
				return withCode(2, err)
			}
			fmt.Fprintf(out, "OK %s: %d lines, chain intact, head sha256:%s\n", args[0], n, head)
			return nil
		},
	}
	cmd.Flags().BoolVar(&cont, "continuation", false, "accept a first line that chains to an earlier (rotated) file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

type auditQuery struct {
	destination, model, since, until, level, policy string
	minTokens                                       int
	asJSON, cont                                    bool
}

// parseTime accepts RFC 3339 or a date (YYYY-MM-DD, UTC midnight).
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-03-01T12:00:00Z) or a date (2026-03-01)", s)
}

func newAuditQueryCmd() *cobra.Command {
	q := &auditQuery{}
	cmd := &cobra.Command{
		Use:   "query FILE",
		Short: "List the exchanges of an audit trail that match filters",
		Long: `query answers the incident question: which of our requests went to a model
between two dates, how big were they and what did they carry? Filters combine
(AND). --model is a glob. --level keeps exchanges whose highest level is at
least the given one, in the order of --policy's levels (default preset:
default). --until is exclusive; a date means midnight UTC. The chain is
verified while reading; a broken chain exits 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runAuditQuery(cmd, q, args[0]) },
	}
	f := cmd.Flags()
	f.StringVar(&q.destination, "destination", "", "policy destination name")
	f.StringVar(&q.model, "model", "", "model name or glob (gpt-4*)")
	f.StringVar(&q.since, "since", "", "first time included (RFC 3339 or YYYY-MM-DD)")
	f.StringVar(&q.until, "until", "", "time excluded from here on (RFC 3339 or YYYY-MM-DD)")
	f.IntVar(&q.minTokens, "min-tokens", 0, "only exchanges of at least this many tokens")
	f.StringVar(&q.level, "level", "", "only exchanges that carried this level or higher")
	f.StringVar(&q.policy, "policy", "default", "policy file or preset giving the order of levels")
	f.BoolVar(&q.asJSON, "json", false, "print JSON")
	f.BoolVar(&q.cont, "continuation", false, "accept a first line that chains to an earlier (rotated) file")
	return cmd
}

func runAuditQuery(cmd *cobra.Command, q *auditQuery, file string) error {
	var since, until time.Time
	var err error
	if q.since != "" {
		if since, err = parseTime(q.since); err != nil {
			return withCode(2, err)
		}
	}
	if q.until != "" {
		if until, err = parseTime(q.until); err != nil {
			return withCode(2, err)
		}
	}
	if q.model != "" {
		if _, err := path.Match(q.model, ""); err != nil {
			return withCode(2, fmt.Errorf("--model %q: %w", q.model, err))
		}
	}
	minRank := -1
	var pol *policies.Policy
	if q.level != "" {
		if pol, err = policies.LoadRef(q.policy); err != nil {
			return withCode(2, err)
		}
		if minRank = pol.Rank(q.level); minRank < 0 {
			return withCode(2, fmt.Errorf("--level %q is not a level of policy %s (%s)", q.level, pol.Name, strings.Join(pol.Levels, ", ")))
		}
	}
	fh, err := os.Open(file)
	if err != nil {
		return withCode(2, err)
	}
	defer fh.Close()
	var matches []*sdk.AuditRecord
	total := 0
	_, _, err = sdk.ReadAudit(fh, q.cont, func(_ int, r *sdk.AuditRecord) error {
		switch {
		case q.destination != "" && r.Destination != q.destination:
		case q.model != "" && !globMatch(q.model, r.Model):
		case !since.IsZero() && r.Time.Before(since):
		case !until.IsZero() && !r.Time.Before(until):
		case r.Tokens < q.minTokens:
		case minRank >= 0 && (r.Level == "" || pol.Rank(r.Level) < minRank):
		default:
			matches = append(matches, r)
			total += r.Tokens
		}
		return nil
	})
	var ce *sdk.ChainError
	if errors.As(err, &ce) {
		return withCode(1, fmt.Errorf("%s: %w (results would not be trustworthy)", file, err))
	}
	if err != nil {
		return withCode(2, err)
	}
	out := cmd.OutOrStdout()
	if q.asJSON {
		if matches == nil {
			matches = []*sdk.AuditRecord{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"count": len(matches), "tokens": total, "exchanges": matches}); err != nil {
			return withCode(2, err)
		}
		return nil
	}
	return writeAuditTable(out, matches, total)
}

func globMatch(pattern, s string) bool {
	ok, _ := path.Match(pattern, s)
	return ok
}

func writeAuditTable(out io.Writer, rs []*sdk.AuditRecord, total int) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEXCHANGE\tDESTINATION\tMODEL\tTOKENS\tDECISION\tLEVEL\tVERDICT\tCARRIED")
	for _, r := range rs {
		dets := make([]string, 0, len(r.Detectors))
		for d, n := range r.Detectors {
			dets = append(dets, fmt.Sprintf("%s=%d", d, n))
		}
		sort.Strings(dets)
		sigs := make([]string, 0, len(r.Signals))
		for s, n := range r.Signals {
			sigs = append(sigs, fmt.Sprintf("%s=%d", s, n))
		}
		sort.Strings(sigs)
		carried := strings.Join(append(dets, sigs...), ",")
		if carried == "" {
			carried = "-"
		}
		level := r.Level
		if level == "" {
			level = "-"
		}
		tok := fmt.Sprint(r.Tokens)
		if !r.TokensExact {
			tok = "≥" + tok
		}
		if r.OverCapacity {
			tok += "!"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format(time.RFC3339), r.Exchange,
			r.Destination, r.Model, tok, r.Decision, level, r.Verdict, carried)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(out, "%d exchanges, %d tokens\n", len(rs), total)
	return err
}

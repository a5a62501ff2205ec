package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/internal/inputfile"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check and query the guard's hash-chained audit trail",
	}
	cmd.AddCommand(newAuditVerifyCmd(), newAuditQueryCmd(), newAuditExposureCmd(), newAuditReportCmd())
	return cmd
}

// auditKeyEnv names the environment variable holding the key of keyed
// audit trails (HMAC-SHA256), hex or base64, at least 16 bytes.
const auditKeyEnv = "AISHIELD_AUDIT_KEY"

// auditKey returns the audit trail key from the environment, nil when the
// variable is unset or empty. The key itself never appears in an error.
func auditKey() ([]byte, error) {
	v := strings.TrimSpace(os.Getenv(auditKeyEnv))
	if v == "" {
		return nil, nil
	}
	var key []byte
	if b, err := hex.DecodeString(v); err == nil {
		key = b
	} else {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(v); err == nil {
				key = b
				break
			}
		}
	}
	if key == nil {
		return nil, fmt.Errorf("%s is neither hex nor base64", auditKeyEnv)
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("%s holds %d bytes; an audit key needs at least 16 (32 random bytes: openssl rand -hex 32)", auditKeyEnv, len(key))
	}
	return key, nil
}

// openAuditTrail opens the audit trail a command appends to: a regular
// file or a new path (openAppendOutput creates it 0600 and refuses
// anything else), keyed with the key of AISHIELD_AUDIT_KEY when it is set.
// closeTrail seals the trail (the signed head of a keyed one) and closes
// the file.
func openAuditTrail(path string) (log *sdk.AuditLog, closeTrail func() error, err error) {
	key, err := auditKey()
	if err != nil {
		return nil, nil, err
	}
	f, err := openAppendOutput(path)
	if err != nil {
		return nil, nil, err
	}
	f.Close()
	log, lf, err := sdk.OpenAuditLog(path, sdk.WithAuditKey(key))
	if err != nil {
		return nil, nil, err
	}
	return log, func() error { return errors.Join(log.Close(), lf.Close()) }, nil
}

// auditVerifyHelp states the exit codes of audit verify.
const auditVerifyHelp = `Exit status: 0 the trail is intact, 1 it is broken (a line changed, removed,
inserted or re-chained, a keyed trail without its signed head at the end, a
wrong key), 2 input error (not a file, unreadable, not an audit trail, a keyed
trail without AISHIELD_AUDIT_KEY, a malformed key).`

func newAuditVerifyCmd() *cobra.Command {
	var cont, open bool
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check the hash chain of an audit trail (exit 0 intact, 1 broken, 2 input error)",
		Long: `verify recomputes the chain of an audit trail: every line must carry the hash
of the line before it, and the first line the genesis hash (unless
--continuation). Blank lines at the end of the file are ignored; a blank line
before another line is a break.

With AISHIELD_AUDIT_KEY set (hex or base64, at least 16 bytes; the key the
trail was written with), the links are HMAC-SHA256 under that key and the
trail must end with the signed head its writer adds when it closes (or
rotates), so that a trail re-chained by someone without the key, or cut off at
its end, is broken. --open accepts a keyed trail still being written: the
records after its last signed head are counted, and could have been cut off
unseen. Without a key the chain is plain SHA-256: it shows accidental damage,
not a writer who recomputes it; keep the printed head hash elsewhere.

` + auditVerifyHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return of.run(cmd, func(out io.Writer) error { return runAuditVerify(cmd, args[0], cont, open, of.format, out) })
		},
	}
	cmd.Flags().BoolVar(&cont, "continuation", false, "accept a first line that chains to an earlier (rotated) file")
	cmd.Flags().BoolVar(&open, "open", false, "accept a keyed trail still being written (no signed head after its last records)")
	of = addOutputFlags(cmd, "text", "text", "json")
	of.addJSONAlias(cmd)
	return cmd
}

// runAuditVerify checks the chain of the trail in file and writes the
// result to out in format.
func runAuditVerify(cmd *cobra.Command, file string, cont, open bool, format string, out io.Writer) error {
	key, err := auditKey()
	if err != nil {
		return withCode(2, err)
	}
	f, err := inputfile.Open(cmd.Context(), file)
	if err != nil {
		return withCode(2, &inputError{Path: file, Err: err})
	}
	defer f.Close()
	sum, err := sdk.VerifyAudit(f, sdk.AuditVerifyOptions{Key: key, Continuation: cont, Open: open}, nil)
	var ce *sdk.ChainError
	if err != nil && !errors.As(err, &ce) {
		return trailError(file, err)
	}
	algo, keyed := "sha256", sum.KeyID != ""
	if keyed {
		algo = "hmac-sha256"
	}
	if format == "json" {
		res := map[string]any{"file": file, "lines": sum.Lines, "records": sum.Records, "ok": err == nil,
			"head": sum.Head, "keyed": keyed, "sealed": keyed && err == nil && sum.Unsealed == 0}
		if keyed {
			res["key_id"] = sum.KeyID
			res["heads"] = sum.Heads
			res["unsealed"] = sum.Unsealed
		}
		if err != nil {
			res["error"] = err.Error()
			res["line"] = ce.Line
		}
		if e := writeJSON(out, res); e != nil {
			return withCode(2, e)
		}
		if err != nil {
			return withCode(1, nil)
		}
		return nil
	}
	if err != nil {
		fmt.Fprintf(out, "BROKEN %s: %v\n", file, err)
		return withCode(1, nil)
	}
	if !keyed {
		fmt.Fprintf(out, "OK %s: %d lines, chain intact, head %s:%s\n", file, sum.Lines, algo, sum.Head)
		fmt.Fprintf(out, "unkeyed: integrity only against accidental damage, not against a writer (write and verify with %s)\n", auditKeyEnv)
		return nil
	}
	fmt.Fprintf(out, "OK %s: %d records, chain intact, keyed (HMAC-SHA256, key id %s)", file, sum.Records, sum.KeyID)
	if sum.LastHead != nil {
		fmt.Fprintf(out, ", signed head at line %d (%d records, %s)", sum.LastHeadLine, sum.LastHead.Records, sum.LastHead.Time.Format(time.RFC3339))
	}
	if sum.Unsealed > 0 {
		fmt.Fprintf(out, ", %d record(s) after it not sealed (--open)", sum.Unsealed)
	}
	_, err = fmt.Fprintf(out, ", head %s:%s\n", algo, sum.Head)
	if err != nil {
		return withCode(2, err)
	}
	return nil
}

type auditQuery struct {
	destination, model, since, until, level, policy string
	minTokens                                       int
	cont                                            bool
	out                                             *outputFlags
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
verified while reading; a broken chain exits 1. The quarantine's events (a
destination quarantined or cleared) show as rows of their own among the
exchanges, and under "events" with --format json; filters on the model, the
tokens or the level leave them out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return q.out.run(cmd, func(out io.Writer) error { return runAuditQuery(cmd, q, args[0], out) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.destination, "destination", "", "policy destination name")
	f.StringVar(&q.model, "model", "", "model name or glob (gpt-4*)")
	f.StringVar(&q.since, "since", "", "first time included (RFC 3339 or YYYY-MM-DD)")
	f.StringVar(&q.until, "until", "", "time excluded from here on (RFC 3339 or YYYY-MM-DD)")
	f.IntVar(&q.minTokens, "min-tokens", 0, "only exchanges of at least this many tokens")
	f.StringVar(&q.level, "level", "", "only exchanges that carried this level or higher")
	addPolicyFlag(f, &q.policy, "giving the order of levels")
	f.BoolVar(&q.cont, "continuation", false, "accept a first line that chains to an earlier (rotated) file")
	q.out = addOutputFlags(cmd, "text", "text", "json")
	q.out.addJSONAlias(cmd)
	return cmd
}

func runAuditQuery(cmd *cobra.Command, q *auditQuery, file string, out io.Writer) error {
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
		if pol, err = loadPolicy(cmd); err != nil {
			return err
		}
		if minRank = pol.Rank(q.level); minRank < 0 {
			return withCode(2, fmt.Errorf("--level %q is not a level of policy %s (%s)", q.level, pol.Name, strings.Join(pol.Levels, ", ")))
		}
	}
	var matches []*sdk.AuditRecord
	total := 0
	err = readTrail(cmd.Context(), file, q.cont, "results", func(r *sdk.AuditRecord) {
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
	})
	if err != nil {
		return err
	}
	if q.out.format == "json" {
		// Exchange records and quarantine events (records with an event)
		// apart, each in the trail's order.
		exchanges, events := []*sdk.AuditRecord{}, []*sdk.AuditRecord{}
		for _, r := range matches {
			if r.Event != "" {
				events = append(events, r)
			} else {
				exchanges = append(exchanges, r)
			}
		}
		if err := writeJSON(out, map[string]any{"count": len(exchanges), "tokens": total, "exchanges": exchanges, "events": events}); err != nil {
			return withCode(2, err)
		}
		return nil
	}
	if err := writeAuditTable(out, matches, total); err != nil {
		return withCode(2, err)
	}
	return nil
}

// readTrail reads the trail at file as it stands (a trail still being
// written too), checking its chain with AISHIELD_AUDIT_KEY, and calls fn
// for every record. Its errors carry the exit code: 1 for a broken chain
// (what would then not be trustworthy), 2 for any other.
func readTrail(ctx context.Context, file string, continuation bool, what string, fn func(*sdk.AuditRecord)) error {
	key, err := auditKey()
	if err != nil {
		return withCode(2, err)
	}
	fh, err := inputfile.Open(ctx, file)
	if err != nil {
		return withCode(2, &inputError{Path: file, Err: err})
	}
	defer fh.Close()
	_, err = sdk.VerifyAudit(fh, sdk.AuditVerifyOptions{Key: key, Continuation: continuation, Open: true}, func(_ int, r *sdk.AuditRecord) error {
		fn(r)
		return nil
	})
	var ce *sdk.ChainError
	switch {
	case errors.As(err, &ce):
		return withCode(1, fmt.Errorf("%s: %w (%s would not be trustworthy)", file, err, what))
	case err != nil:
		return trailError(file, err)
	}
	return nil
}

// trailError is the exit-2 error of a trail that could not be read at
// all: a keyed trail without its key (which says to set it), or any
// other failure, named with the file.
func trailError(file string, err error) error {
	var ke *sdk.AuditKeyError
	if errors.As(err, &ke) {
		return withCode(2, fmt.Errorf("%s: %w: set %s", file, err, auditKeyEnv))
	}
	return withCode(2, &inputError{Path: file, Err: err})
}

func globMatch(pattern, s string) bool {
	ok, _ := path.Match(pattern, s)
	return ok
}

func writeAuditTable(out io.Writer, rs []*sdk.AuditRecord, total int) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tEXCHANGE\tDESTINATION\tMODEL\tTOKENS\tDECISION\tLEVEL\tVERDICT\tCARRIED")
	exchanges, events := 0, 0
	for _, r := range rs {
		if r.Event != "" {
			// A quarantine change: the event where the decision goes, what
			// it was in the last column.
			events++
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\t-\t-\t%s\n", r.Time.UTC().Format(time.RFC3339), shown(r.Exchange),
				shown(r.Destination), shown(r.Event), eventSummary(r))
			continue
		}
		exchanges++
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
	summary := fmt.Sprintf("%d exchanges, %d tokens", exchanges, total)
	if events > 0 {
		summary += fmt.Sprintf(", %d quarantine events", events)
	}
	_, err := fmt.Fprintln(out, summary)
	return err
}

// eventSummary describes a quarantine event record in one cell: how it
// changed, the quarantine's action, when it ends, and the signs of the
// answer that tripped it.
func eventSummary(r *sdk.AuditRecord) string {
	var parts []string
	if q := r.Quarantine; q != nil {
		parts = append(parts, "reason="+shown(q.Reason))
		if q.Action != "" {
			parts = append(parts, "action="+shown(q.Action))
		}
		if r.Event == quarantine.EventTripped {
			until := "cleared"
			if !q.Until.IsZero() {
				until = q.Until.UTC().Format(time.RFC3339)
			}
			parts = append(parts, "until="+until)
			if q.Count > 0 {
				parts = append(parts, fmt.Sprintf("count=%d", q.Count))
			}
		} else if !q.Since.IsZero() {
			parts = append(parts, "since="+q.Since.UTC().Format(time.RFC3339))
		}
	}
	for _, s := range slices.Sorted(maps.Keys(r.Signs)) {
		parts = append(parts, fmt.Sprintf("%s=%d", shown(s), r.Signs[s]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

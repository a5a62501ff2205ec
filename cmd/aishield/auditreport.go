package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/internal/inputfile"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// auditTimelineCap caps the rows of a report's timeline (exchanges and
// events, in the trail's order); the figures count every record.
const auditTimelineCap = 5000

// auditReport is what audit report shows, the same in text, JSON and HTML.
type auditReport struct {
	Title     string         `json:"-"`
	Version   string         `json:"-"`
	Generated time.Time      `json:"generated"`
	File      string         `json:"file"`
	Integrity auditIntegrity `json:"integrity"`
	Filter    auditFilter    `json:"filter"`
	Totals    auditTotals    `json:"totals"`
	// Destinations says what each destination was sent, by name.
	Destinations []*auditDestination `json:"destinations"`
	// Quarantines are the quarantine events of the trail.
	Quarantines []auditQuarantine `json:"quarantines"`
	// Timeline lists the first auditTimelineCap exchanges and events;
	// TimelineOmitted counts those after them.
	Timeline        []auditRow `json:"timeline"`
	TimelineOmitted int        `json:"timeline_omitted"`
}

// auditIntegrity is the state of the trail's chain, as audit verify
// checks it (a trail still being written is accepted, its unsealed records
// counted).
type auditIntegrity struct {
	OK bool `json:"ok"`
	// Keyed: an HMAC-SHA256 chain under AISHIELD_AUDIT_KEY; a plain
	// SHA-256 chain shows accidental damage only.
	Keyed    bool   `json:"keyed"`
	KeyID    string `json:"key_id,omitempty"`
	Lines    int    `json:"lines"`
	Records  int    `json:"records"`
	Heads    int    `json:"heads,omitempty"`
	Unsealed int    `json:"unsealed,omitempty"`
	Head     string `json:"head"`
	// Error and Line say where a broken chain breaks; the report holds
	// the records before it.
	Error string `json:"error,omitempty"`
	Line  int    `json:"line,omitempty"`
}

// auditFilter is what the report was restricted to.
type auditFilter struct {
	Destination string     `json:"destination,omitempty"`
	Since       *time.Time `json:"since,omitempty"`
	Until       *time.Time `json:"until,omitempty"`
}

// auditTotals are the figures over every exchange reported.
type auditTotals struct {
	Exchanges int `json:"exchanges"`
	// Sent counts the requests sent (verdict not not_sent), TokensSent
	// their tokens.
	Sent       int `json:"sent"`
	TokensSent int `json:"tokens_sent"`
	// Blocked counts the requests the policy blocked, Refused the answers
	// refused (verdict contaminated), Flagged those delivered flagged.
	Blocked int `json:"blocked"`
	Refused int `json:"refused"`
	Flagged int `json:"flagged"`
	// Redactions counts the values redacted from requests.
	Redactions       int            `json:"redactions"`
	Decisions        map[string]int `json:"decisions"`
	Verdicts         map[string]int `json:"verdicts"`
	QuarantineEvents int            `json:"quarantine_events"`
}

// auditDestination is what one destination was sent.
type auditDestination struct {
	Name       string         `json:"name"`
	Exchanges  int            `json:"exchanges"`
	Sent       int            `json:"sent"`
	TokensSent int            `json:"tokens_sent"`
	Decisions  map[string]int `json:"decisions"`
	// Detectors counts the findings of its requests, outbound, per
	// detector; RedactedBy those redacted; Redactions their sum.
	Detectors  map[string]int `json:"detectors"`
	RedactedBy map[string]int `json:"redacted_by"`
	Redactions int            `json:"redactions"`
	Blocked    int            `json:"blocked"`
	Refused    int            `json:"refused"`
	Models     []string       `json:"models"`
}

// auditQuarantine is one quarantine event.
type auditQuarantine struct {
	Time        time.Time      `json:"time"`
	Destination string         `json:"destination"`
	Event       string         `json:"event"`
	Exchange    string         `json:"exchange,omitempty"`
	Reason      string         `json:"reason,omitempty"`
	Action      string         `json:"action,omitempty"`
	Since       time.Time      `json:"since,omitzero"`
	Until       time.Time      `json:"until,omitzero"`
	Count       int            `json:"count,omitempty"`
	Signs       map[string]int `json:"signs,omitempty"`
}

// auditRow is one row of the timeline: an exchange, or a quarantine
// event (Event set).
type auditRow struct {
	Time        time.Time      `json:"time"`
	Exchange    string         `json:"exchange"`
	Destination string         `json:"destination"`
	Principal   string         `json:"principal,omitempty"`
	Model       string         `json:"model,omitempty"`
	Tokens      int            `json:"tokens"`
	TokensExact bool           `json:"tokens_exact,omitempty"`
	Decision    string         `json:"decision,omitempty"`
	Level       string         `json:"level,omitempty"`
	Verdict     string         `json:"verdict,omitempty"`
	Detectors   map[string]int `json:"detectors,omitempty"`
	Redacted    int            `json:"redacted,omitempty"`
	Signals     map[string]int `json:"signals,omitempty"`
	Sources     []string       `json:"sources,omitempty"`
	Quarantined string         `json:"quarantined,omitempty"`
	// Refused: the answer was refused (contaminated); Blocked: the
	// request was.
	Refused bool   `json:"refused,omitempty"`
	Blocked bool   `json:"blocked,omitempty"`
	Event   string `json:"event,omitempty"`
	// Summary describes an event (eventSummary).
	Summary string `json:"summary,omitempty"`
}

// countsText formats a map of counts as "a=1, b=2", sorted; "-" when empty.
func countsText(m map[string]int) string {
	if len(m) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", shown(k), m[k]))
	}
	return strings.Join(parts, ", ")
}

// auditReportBuilder adds records to a report.
type auditReportBuilder struct {
	rep   *auditReport
	dests map[string]*auditDestination
	since time.Time
	until time.Time
}

func newAuditReportBuilder(file string, f auditFilter, now time.Time) *auditReportBuilder {
	b := &auditReportBuilder{dests: map[string]*auditDestination{}, rep: &auditReport{Title: "aishield audit report", Version: buildVersion(),
		Generated: now.UTC(), File: file, Filter: f, Totals: auditTotals{Decisions: map[string]int{}, Verdicts: map[string]int{}},
		Destinations: []*auditDestination{}, Quarantines: []auditQuarantine{}, Timeline: []auditRow{}}}
	if f.Since != nil {
		b.since = *f.Since
	}
	if f.Until != nil {
		b.until = *f.Until
	}
	return b
}

func addCount(m map[string]int, k string, n int) {
	if n != 0 {
		m[k] += n
	}
}

func (b *auditReportBuilder) add(r *sdk.AuditRecord) {
	rep := b.rep
	switch {
	case rep.Filter.Destination != "" && r.Destination != rep.Filter.Destination:
		return
	case !b.since.IsZero() && r.Time.Before(b.since):
		return
	case !b.until.IsZero() && !r.Time.Before(b.until):
		return
	}
	row := auditRow{Time: r.Time.UTC(), Exchange: r.Exchange, Destination: r.Destination}
	if r.Event != "" {
		rep.Totals.QuarantineEvents++
		q := auditQuarantine{Time: r.Time.UTC(), Destination: r.Destination, Event: r.Event, Exchange: r.Exchange, Signs: r.Signs}
		if r.Quarantine != nil {
			q.Reason, q.Action, q.Since, q.Until, q.Count = r.Quarantine.Reason, r.Quarantine.Action, r.Quarantine.Since.UTC(), r.Quarantine.Until.UTC(), r.Quarantine.Count
			if r.Quarantine.Since.IsZero() {
				q.Since = time.Time{}
			}
			if r.Quarantine.Until.IsZero() {
				q.Until = time.Time{}
			}
		}
		rep.Quarantines = append(rep.Quarantines, q)
		row.Event, row.Summary = r.Event, eventSummary(r)
		b.row(row)
		return
	}
	t := &rep.Totals
	t.Exchanges++
	sent := r.Verdict != sdk.VerdictNotSent
	refused := r.Verdict == sdk.VerdictContaminated
	blocked := r.Decision == "block"
	d := b.dests[r.Destination]
	if d == nil {
		d = &auditDestination{Name: r.Destination, Decisions: map[string]int{}, Detectors: map[string]int{}, RedactedBy: map[string]int{}, Models: []string{}}
		b.dests[r.Destination] = d
		rep.Destinations = append(rep.Destinations, d)
	}
	d.Exchanges++
	if sent {
		t.Sent++
		t.TokensSent += r.Tokens
		d.Sent++
		d.TokensSent += r.Tokens
	}
	if blocked {
		t.Blocked++
		d.Blocked++
	}
	if refused {
		t.Refused++
		d.Refused++
	}
	if r.Verdict == sdk.VerdictFlagged {
		t.Flagged++
	}
	t.Redactions += r.Redacted
	d.Redactions += r.Redacted
	addCount(t.Decisions, r.Decision, 1)
	addCount(d.Decisions, r.Decision, 1)
	addCount(t.Verdicts, string(r.Verdict), 1)
	for k, n := range r.Detectors {
		addCount(d.Detectors, k, n)
	}
	for k, n := range r.RedactedBy {
		addCount(d.RedactedBy, k, n)
	}
	if r.Model != "" && !slices.Contains(d.Models, r.Model) && len(d.Models) < 20 {
		d.Models = append(d.Models, r.Model)
	}
	row.Principal, row.Model, row.Tokens, row.TokensExact = r.Principal, r.Model, r.Tokens, r.TokensExact
	row.Decision, row.Level, row.Verdict = r.Decision, r.Level, string(r.Verdict)
	row.Detectors, row.Redacted, row.Signals, row.Sources, row.Quarantined = r.Detectors, r.Redacted, r.Signals, r.Sources, r.Quarantined
	row.Refused, row.Blocked = refused, blocked
	b.row(row)
}

func (b *auditReportBuilder) row(r auditRow) {
	if len(b.rep.Timeline) >= auditTimelineCap {
		b.rep.TimelineOmitted++
		return
	}
	b.rep.Timeline = append(b.rep.Timeline, r)
}

// buildAuditReport reads the trail r, verifying its chain with key, and
// builds its report. A broken chain is not an error: the report says
// where it breaks (Integrity) and holds the records before. The errors
// are those of a trail that cannot be read at all: not an audit trail, a
// keyed trail without its key (*sdk.AuditKeyError), a read error.
func buildAuditReport(r io.Reader, file string, key []byte, cont bool, f auditFilter, now time.Time) (*auditReport, error) {
	b := newAuditReportBuilder(file, f, now)
	// A record is added once the line after it is read: a break at line
	// L can be line L-1 changed (its hash no longer what line L holds),
	// so the record of line L-1 is not reported.
	var pending *sdk.AuditRecord
	pendingLine := 0
	sum, err := sdk.VerifyAudit(r, sdk.AuditVerifyOptions{Key: key, Continuation: cont, Open: true}, func(line int, rec *sdk.AuditRecord) error {
		if pending != nil {
			b.add(pending)
		}
		pending, pendingLine = rec, line
		return nil
	})
	var ce *sdk.ChainError
	if err != nil && !errors.As(err, &ce) {
		return nil, err
	}
	if pending != nil && (ce == nil || pendingLine < ce.Line-1) {
		b.add(pending)
	}
	in := &b.rep.Integrity
	in.OK, in.Keyed, in.KeyID = err == nil, sum.KeyID != "", sum.KeyID
	in.Lines, in.Records, in.Heads, in.Unsealed, in.Head = sum.Lines, sum.Records, sum.Heads, sum.Unsealed, sum.Head
	if ce != nil {
		in.Error, in.Line = ce.Msg, ce.Line
	}
	slices.SortStableFunc(b.rep.Destinations, func(a, b *auditDestination) int { return strings.Compare(a.Name, b.Name) })
	return b.rep, nil
}

func newAuditReportCmd() *cobra.Command {
	var destination, since, until string
	var of *outputFlags
	var cont bool
	cmd := &cobra.Command{
		Use:   "report FILE",
		Short: "Report on an audit trail: a timeline of exchanges, what each destination was sent, refusals and quarantines",
		Long: `report reads an audit trail and shows what happened, for a reviewer: the state
of its chain, a timeline of exchanges (time, destination, model, decision,
verdict, signals and the exchanges foreign material came from) with refused
answers and blocked requests marked, what each destination was sent (exchanges,
tokens, decisions, the detectors found in its requests, redactions), and the
quarantine events. --format text, json or html (one self-contained page, no
script); the three give the same figures. The timeline lists the first 5,000
rows; the figures count every record.

The chain is checked as audit verify checks it, with AISHIELD_AUDIT_KEY for a
keyed trail (a trail still being written is accepted; its unsealed records are
counted). A broken chain is reported first and prominently, with the records
read before the break, and exits 1.

Exit status: 0 reported, 1 the chain is broken, 2 input error (not a file,
not an audit trail, a keyed trail without AISHIELD_AUDIT_KEY, a bad filter).`,
		Example: `  aishield audit report audit.jsonl --format html -o audit.html
  aishield audit report audit.jsonl --destination shared-llm --since 2026-03-01 --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := of.check(); err != nil {
				return err
			}
			f := auditFilter{Destination: destination}
			for _, x := range []struct {
				s string
				t **time.Time
			}{{since, &f.Since}, {until, &f.Until}} {
				if x.s == "" {
					continue
				}
				t, err := parseTime(x.s)
				if err != nil {
					return withCode(2, err)
				}
				*x.t = &t
			}
			key, err := auditKey()
			if err != nil {
				return withCode(2, err)
			}
			rep, err := readAuditReport(cmd.Context(), args[0], key, cont, f)
			if err != nil {
				return err
			}
			return of.run(cmd, func(w io.Writer) error {
				out := bufio.NewWriterSize(w, 64<<10)
				switch of.format {
				case "json":
					err = writeJSON(out, rep)
				case "html":
					err = renderHTMLReport(out, "audit.html", rep)
				default:
					err = writeAuditReportText(out, rep)
				}
				if err == nil {
					err = out.Flush()
				}
				if err != nil {
					return withCode(2, err)
				}
				if !rep.Integrity.OK {
					return withCode(1, fmt.Errorf("%s: the chain is broken at line %d: the report holds the records before the break, which cannot be trusted", args[0], rep.Integrity.Line))
				}
				return nil
			})
		},
	}
	of = addOutputFlags(cmd, "text", "text", "json", "html")
	fl := cmd.Flags()
	fl.StringVar(&destination, "destination", "", "only this policy destination")
	fl.StringVar(&since, "since", "", "first time included (RFC 3339 or YYYY-MM-DD)")
	fl.StringVar(&until, "until", "", "time excluded from here on (RFC 3339 or YYYY-MM-DD)")
	fl.BoolVar(&cont, "continuation", false, "accept a first line that chains to an earlier (rotated) file")
	return cmd
}

// readAuditReport opens the trail at file and builds its report; its
// errors carry exit code 2.
func readAuditReport(ctx context.Context, file string, key []byte, cont bool, f auditFilter) (*auditReport, error) {
	fh, err := inputfile.Open(ctx, file)
	if err != nil {
		return nil, withCode(2, &inputError{Path: file, Err: err})
	}
	defer fh.Close()
	rep, err := buildAuditReport(fh, file, key, cont, f, time.Now())
	if err != nil {
		return nil, trailError(file, err)
	}
	return rep, nil
}

// Sentence states the chain's state, as the report's first line.
func (in auditIntegrity) Sentence() string {
	switch {
	case !in.OK:
		return fmt.Sprintf("BROKEN at line %d: %s. Shown below: only the records of the lines before line %d (the line before a break may be the one changed), and they cannot be trusted either", in.Line, in.Error, max(in.Line-1, 1))
	case in.Keyed && in.Unsealed > 0:
		return fmt.Sprintf("chain intact, keyed (HMAC-SHA256, key id %s), %d records; the last %d are not covered by a signed head (a trail still being written, or cut off at its end)", in.KeyID, in.Records, in.Unsealed)
	case in.Keyed:
		return fmt.Sprintf("chain intact, keyed (HMAC-SHA256, key id %s), %d records, sealed by a signed head", in.KeyID, in.Records)
	}
	return fmt.Sprintf("chain intact, unkeyed (SHA-256), %d records: integrity only against accidental damage, not against a writer (write and read with %s)", in.Records, auditKeyEnv)
}

func writeAuditReportText(w io.Writer, rep *auditReport) error {
	in := &rep.Integrity
	fmt.Fprintf(w, "audit report of %s\n", shown(rep.File))
	if in.OK {
		fmt.Fprintf(w, "OK: %s\n", in.Sentence())
	} else {
		fmt.Fprintln(w, in.Sentence())
	}
	if f := rep.Filter; f.Destination != "" || f.Since != nil || f.Until != nil {
		fmt.Fprintf(w, "filter: destination %s, since %s, until %s\n", shown(f.Destination), optTime(f.Since), optTime(f.Until))
	}
	t := &rep.Totals
	fmt.Fprintf(w, "\n%d exchanges: %d sent (%d tokens), %d blocked, %d answers refused, %d flagged, %d values redacted, %d quarantine events\n",
		t.Exchanges, t.Sent, t.TokensSent, t.Blocked, t.Refused, t.Flagged, t.Redactions, t.QuarantineEvents)
	fmt.Fprintf(w, "decisions: %s\nverdicts: %s\n\n", countsText(t.Decisions), countsText(t.Verdicts))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DESTINATION\tEXCHANGES\tSENT\tTOKENS SENT\tDECISIONS\tBLOCKED\tREFUSED\tREDACTIONS\tDETECTORS (OUTBOUND)\tREDACTED")
	for _, d := range rep.Destinations {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%s\t%s\n", shown(d.Name), d.Exchanges, d.Sent, d.TokensSent, countsText(d.Decisions),
			d.Blocked, d.Refused, d.Redactions, countsText(d.Detectors), countsText(d.RedactedBy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rep.Quarantines) > 0 {
		fmt.Fprintln(w, "\nquarantines:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tDESTINATION\tEVENT\tREASON\tACTION\tUNTIL\tEXCHANGE\tSIGNS")
		for _, q := range rep.Quarantines {
			until := textTime(q.Until)
			if q.Until.IsZero() && q.Event == quarantine.EventTripped {
				until = "until cleared"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", textTime(q.Time), shown(q.Destination), shown(q.Event), shown(q.Reason),
				shown(q.Action), until, shown(q.Exchange), countsText(q.Signs))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\ntimeline (! refused answer, x blocked request):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tTIME\tEXCHANGE\tDESTINATION\tMODEL\tTOKENS\tDECISION\tVERDICT\tSIGNALS\tSOURCES")
	for _, r := range rep.Timeline {
		if r.Event != "" {
			fmt.Fprintf(tw, "q\t%s\t%s\t%s\t-\t-\t%s\t-\t%s\t-\n", textTime(r.Time), shown(r.Exchange), shown(r.Destination), shown(r.Event), r.Summary)
			continue
		}
		mark := ""
		switch {
		case r.Refused:
			mark = "!"
		case r.Blocked:
			mark = "x"
		}
		sources := "-"
		if len(r.Sources) > 0 {
			sources = strings.Join(r.Sources, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", mark, textTime(r.Time), shown(r.Exchange), shown(r.Destination), shown(r.Model),
			r.Tokens, shown(r.Decision), shown(r.Verdict), countsText(r.Signals), sources)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.TimelineOmitted > 0 {
		fmt.Fprintf(w, "and %d more rows, not listed (the timeline lists the first %d)\n", rep.TimelineOmitted, auditTimelineCap)
	}
	if !in.OK {
		_, err := fmt.Fprintf(w, "BROKEN: the chain breaks at line %d; nothing above can be trusted\n", in.Line)
		return err
	}
	return nil
}

func optTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return textTime(*t)
}

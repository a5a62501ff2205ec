package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk"
	"github.com/aishield/aishield/sdk/quarantine"
)

// The periods of an exposure report, in order.
const (
	periodBeforeSign  = "before_sign"
	periodSignToTrip  = "sign_to_quarantine"
	periodQuarantined = "quarantined"
	periodAfterClear  = "after_clear"
)

// exposureReport answers, for one destination and a window of an audit
// trail, what was sent to it and when. It holds counts, detector IDs,
// principals, exchange IDs and times: the trail holds no value, and
// neither does the report. Its JSON field names are stable (docs/cli.md).
type exposureReport struct {
	Destination string    `json:"destination"`
	Policy      string    `json:"policy"`
	Since       time.Time `json:"since,omitzero"`
	Until       time.Time `json:"until,omitzero"`
	// Requests counts the destination's exchange records in the window,
	// and the requests its quarantine sent elsewhere.
	Requests   exposureRequests   `json:"requests"`
	Principals exposurePrincipals `json:"principals"`
	// Levels are every level of the policy, highest first, with the
	// values of its detectors.
	Levels []exposureLevel `json:"levels"`
	// FirstSign is the first answer of the destination that showed a sign
	// of a faulty service; nil when none did.
	FirstSign *exposureSign `json:"first_sign"`
	// Quarantine is the first quarantine of the destination at or after
	// the first sign (the first one in the window when no answer showed a
	// sign); nil when none tripped.
	Quarantine *exposureQuarantine `json:"quarantine"`
	// Delay is the time and the requests from the first sign to the
	// quarantine; nil unless both happened.
	Delay   *exposureDelay   `json:"delay"`
	Periods []exposurePeriod `json:"periods"`
	// Events are every quarantine change of the destination in the window.
	Events []exposureEvent `json:"events"`
}

type exposureRequests struct {
	// Total counts the destination's exchange records; Sent those whose
	// request was sent, NotSent the others (refused by the policy, by the
	// quarantine, or by a failure of the guard).
	Total   int `json:"total"`
	Sent    int `json:"sent"`
	NotSent int `json:"not_sent"`
	// Refused counts the requests not sent because of a quarantine.
	Refused int `json:"refused_by_quarantine"`
	// FailedOver counts the requests for the destination that its
	// quarantine sent to another destination (not in Total: their values
	// went there).
	FailedOver int `json:"failed_over_away"`
	// Unchecked counts the sent requests whose outbound check did not run
	// to its end (the guard failed open, or a passthrough path): their
	// values are not counted.
	Unchecked int `json:"sent_unchecked"`
}

type exposurePrincipals struct {
	// Count and Names are the distinct principals of the sent requests.
	Count int      `json:"count"`
	Names []string `json:"names"`
	// Unattributed counts the sent requests without a principal.
	Unattributed int `json:"unattributed_requests"`
}

// exposureValues counts findings: sent in clear, redacted in sent
// requests, and in requests that were not sent.
type exposureValues struct {
	Clear    int `json:"clear"`
	Redacted int `json:"redacted"`
	Blocked  int `json:"blocked"`
}

func (v *exposureValues) add(o exposureValues) {
	v.Clear += o.Clear
	v.Redacted += o.Redacted
	v.Blocked += o.Blocked
}

func (v exposureValues) zero() bool { return v == exposureValues{} }

type exposureLevel struct {
	Level string `json:"level"`
	exposureValues
	Detectors []exposureDetector `json:"detectors"`
}

type exposureDetector struct {
	Detector string `json:"detector"`
	exposureValues
}

type exposureSign struct {
	// Time is when the answer came back (its exchange's start plus its
	// duration).
	Time     time.Time      `json:"time"`
	Exchange string         `json:"exchange"`
	Signs    map[string]int `json:"signs"`
}

type exposureQuarantine struct {
	Tripped  time.Time `json:"tripped"`
	Exchange string    `json:"exchange,omitempty"`
	Action   string    `json:"action,omitempty"`
	Reason   string    `json:"reason"`
	// Until is when it was due to end by itself; absent: until cleared.
	Until time.Time `json:"until,omitzero"`
	// Ended is when it ended (its first quarantine.cleared event, or its
	// Until when that came first), EndReason how; absent while it lasts.
	Ended     time.Time `json:"ended,omitzero"`
	EndReason string    `json:"end_reason,omitempty"`
}

type exposureDelay struct {
	// Requests counts the exchange records of the destination from the
	// first sign to the quarantine, Sent those sent.
	Requests int     `json:"requests"`
	Sent     int     `json:"sent"`
	Seconds  float64 `json:"seconds"`
}

type exposurePeriod struct {
	Name string `json:"name"`
	// From and Until bound the period (Until excluded); absent: open.
	From       time.Time        `json:"from,omitzero"`
	Until      time.Time        `json:"until,omitzero"`
	Requests   exposureRequests `json:"requests"`
	Principals int              `json:"principals"`
	Values     exposureValues   `json:"values"`
	Levels     []exposureLevel  `json:"levels"`
}

type exposureEvent struct {
	Time     time.Time `json:"time"`
	Type     string    `json:"type"`
	Reason   string    `json:"reason,omitempty"`
	Exchange string    `json:"exchange,omitempty"`
	Action   string    `json:"action,omitempty"`
}

// exposureEntry is what the report keeps of one exchange record.
type exposureEntry struct {
	time       time.Time
	principal  string
	sent       bool
	refused    bool
	unchecked  bool
	failedOver bool // a request for the destination sent elsewhere
	detectors  map[string]int
	redactedBy map[string]int
}

// exposureBuilder reads a trail's records and builds the report of one
// destination.
type exposureBuilder struct {
	dest         string
	since, until time.Time
	now          time.Time // a quarantine due to end later has not ended
	pol          *policies.Policy
	entries      []exposureEntry
	signs        []exposureSign
	events       []exposureEvent
	trips        []exposureQuarantine
}

func newExposureBuilder(dest string, since, until, now time.Time, pol *policies.Policy) *exposureBuilder {
	return &exposureBuilder{dest: dest, since: since, until: until, now: now, pol: pol}
}

func (b *exposureBuilder) inWindow(t time.Time) bool {
	return (b.since.IsZero() || !t.Before(b.since)) && (b.until.IsZero() || t.Before(b.until))
}

// responseStages are the stages of the guard's work on an answer: a
// failure there leaves the request's check complete.
var responseStages = []sdk.Stage{sdk.StageVerify, sdk.StageResponse, sdk.StageStream}

// add files one record of the trail.
func (b *exposureBuilder) add(r *sdk.AuditRecord) {
	if !b.inWindow(r.Time) {
		return
	}
	if r.Event != "" {
		if r.Destination != b.dest {
			return
		}
		ev := exposureEvent{Time: r.Time, Type: r.Event, Exchange: r.Exchange}
		if r.Quarantine != nil {
			ev.Reason, ev.Action = r.Quarantine.Reason, r.Quarantine.Action
			if r.Event == quarantine.EventTripped {
				b.trips = append(b.trips, exposureQuarantine{Tripped: r.Time, Exchange: r.Exchange, Action: r.Quarantine.Action,
					Reason: r.Quarantine.Reason, Until: r.Quarantine.Until})
			}
		} else if r.Event == quarantine.EventTripped {
			b.trips = append(b.trips, exposureQuarantine{Tripped: r.Time, Exchange: r.Exchange})
		}
		b.events = append(b.events, ev)
		return
	}
	sent := r.Verdict != sdk.VerdictNotSent
	switch {
	case r.Destination == b.dest:
	case r.Quarantined == b.dest:
		b.entries = append(b.entries, exposureEntry{time: r.Time, failedOver: true})
		return
	default:
		return
	}
	e := exposureEntry{time: r.Time, principal: r.Principal, sent: sent, refused: !sent && r.Quarantined != "",
		unchecked: sent && (r.Passthrough || r.FailedOpen != "" && !slices.Contains(responseStages, r.FailedOpen))}
	if len(r.Detectors) > 0 {
		e.detectors = maps.Clone(r.Detectors)
	}
	if len(r.RedactedBy) > 0 {
		e.redactedBy = maps.Clone(r.RedactedBy)
	}
	b.entries = append(b.entries, e)
	if len(r.Signs) > 0 {
		at := r.Time
		if r.DurationMS > 0 {
			at = at.Add(time.Duration(r.DurationMS) * time.Millisecond)
		}
		b.signs = append(b.signs, exposureSign{Time: at, Exchange: r.Exchange, Signs: maps.Clone(r.Signs)})
	}
}

// report builds the report from the records filed.
func (b *exposureBuilder) report() *exposureReport {
	rep := &exposureReport{Destination: b.dest, Policy: b.pol.Name, Since: b.since, Until: b.until,
		Events: b.events, Periods: []exposurePeriod{}}
	if rep.Events == nil {
		rep.Events = []exposureEvent{}
	}
	sort.SliceStable(b.entries, func(i, j int) bool { return b.entries[i].time.Before(b.entries[j].time) })
	sort.SliceStable(b.signs, func(i, j int) bool { return b.signs[i].Time.Before(b.signs[j].Time) })
	sort.SliceStable(b.trips, func(i, j int) bool { return b.trips[i].Tripped.Before(b.trips[j].Tripped) })
	sort.SliceStable(rep.Events, func(i, j int) bool { return rep.Events[i].Time.Before(rep.Events[j].Time) })

	if len(b.signs) > 0 {
		s := b.signs[0]
		rep.FirstSign = &s
	}
	for _, q := range b.trips {
		if rep.FirstSign == nil || !q.Tripped.Before(rep.FirstSign.Time) {
			rep.Quarantine = &q
			break
		}
	}
	if q := rep.Quarantine; q != nil {
		for _, ev := range rep.Events {
			if ev.Type == quarantine.EventCleared && !ev.Time.Before(q.Tripped) {
				q.Ended, q.EndReason = ev.Time, ev.Reason
				break
			}
		}
		if !q.Until.IsZero() && (q.Ended.IsZero() || q.Until.Before(q.Ended)) && q.Until.Before(b.now) &&
			(b.until.IsZero() || q.Until.Before(b.until)) {
			q.Ended, q.EndReason = q.Until, "expired"
		}
	}

	// The marks that end each period; zero: the period never ends (or
	// never began).
	var signAt, tripAt, endAt time.Time
	if rep.FirstSign != nil {
		signAt = rep.FirstSign.Time
	}
	if rep.Quarantine != nil {
		tripAt, endAt = rep.Quarantine.Tripped, rep.Quarantine.Ended
	}
	type span struct {
		name     string
		from, to time.Time
	}
	spans := []span{{name: periodBeforeSign, from: b.since}}
	cur := &spans[0]
	if !signAt.IsZero() {
		cur.to = signAt
		spans = append(spans, span{name: periodSignToTrip, from: signAt})
		cur = &spans[len(spans)-1]
	}
	if !tripAt.IsZero() {
		cur.to = tripAt
		spans = append(spans, span{name: periodQuarantined, from: tripAt})
		cur = &spans[len(spans)-1]
		if !endAt.IsZero() {
			cur.to = endAt
			spans = append(spans, span{name: periodAfterClear, from: endAt})
			cur = &spans[len(spans)-1]
		}
	}
	cur.to = b.until

	all := newExposureTally(b.pol)
	for _, sp := range spans {
		t := newExposureTally(b.pol)
		for _, e := range b.entries {
			if (sp.from.IsZero() || !e.time.Before(sp.from)) && (sp.to.IsZero() || e.time.Before(sp.to)) {
				t.add(e)
			}
		}
		p := exposurePeriod{Name: sp.name, From: sp.from, Until: sp.to, Requests: t.requests, Principals: len(t.principals),
			Levels: t.levels()}
		for _, l := range p.Levels {
			p.Values.add(l.exposureValues)
		}
		rep.Periods = append(rep.Periods, p)
	}
	for _, e := range b.entries {
		all.add(e)
	}
	rep.Requests, rep.Levels = all.requests, all.levels()
	rep.Principals = exposurePrincipals{Count: len(all.principals), Names: slices.Sorted(maps.Keys(all.principals)),
		Unattributed: all.unattributed}
	if rep.Principals.Names == nil {
		rep.Principals.Names = []string{}
	}
	if rep.FirstSign != nil && rep.Quarantine != nil {
		for _, p := range rep.Periods {
			if p.Name == periodSignToTrip {
				rep.Delay = &exposureDelay{Requests: p.Requests.Total, Sent: p.Requests.Sent,
					Seconds: rep.Quarantine.Tripped.Sub(rep.FirstSign.Time).Seconds()}
			}
		}
	}
	return rep
}

// exposureTally adds up exchange entries.
type exposureTally struct {
	pol          *policies.Policy
	requests     exposureRequests
	principals   map[string]bool
	unattributed int
	byDetector   map[string]*exposureValues
}

func newExposureTally(pol *policies.Policy) *exposureTally {
	return &exposureTally{pol: pol, principals: map[string]bool{}, byDetector: map[string]*exposureValues{}}
}

func (t *exposureTally) add(e exposureEntry) {
	if e.failedOver {
		t.requests.FailedOver++
		return
	}
	t.requests.Total++
	if !e.sent {
		t.requests.NotSent++
		if e.refused {
			t.requests.Refused++
		}
	} else {
		t.requests.Sent++
		if e.unchecked {
			t.requests.Unchecked++
		}
		if e.principal == "" {
			t.unattributed++
		} else {
			t.principals[e.principal] = true
		}
	}
	for d, n := range e.detectors {
		if n <= 0 {
			continue
		}
		v := t.byDetector[d]
		if v == nil {
			v = &exposureValues{}
			t.byDetector[d] = v
		}
		if !e.sent {
			v.Blocked += n
			continue
		}
		red := min(max(e.redactedBy[d], 0), n)
		v.Redacted += red
		v.Clear += n - red
	}
}

// levels returns every level of the policy, highest first, with its
// detectors by ID.
func (t *exposureTally) levels() []exposureLevel {
	out := make([]exposureLevel, 0, len(t.pol.Levels))
	at := map[string]int{}
	for i := len(t.pol.Levels) - 1; i >= 0; i-- {
		at[t.pol.Levels[i]] = len(out)
		out = append(out, exposureLevel{Level: t.pol.Levels[i], Detectors: []exposureDetector{}})
	}
	for _, d := range slices.Sorted(maps.Keys(t.byDetector)) {
		lvl, _, _ := t.pol.LevelOf(d)
		i, ok := at[lvl]
		if !ok { // a level the policy does not order
			at[lvl] = len(out)
			i = len(out)
			out = append(out, exposureLevel{Level: lvl, Detectors: []exposureDetector{}})
		}
		v := *t.byDetector[d]
		out[i].Detectors = append(out[i].Detectors, exposureDetector{Detector: d, exposureValues: v})
		out[i].add(v)
	}
	return out
}

type exposureFlags struct {
	destination, since, until, policy string
	cont                              bool
	out                               *outputFlags
}

func newAuditExposureCmd() *cobra.Command {
	fl := &exposureFlags{}
	cmd := &cobra.Command{
		Use:   "exposure --destination NAME FILE",
		Short: "What was sent to a destination, and when: before its first sign of a fault, until its quarantine, during it",
		Long: `exposure answers the first question after an incident at a provider: what did we
send them, and when? (A GDPR breach notice is due within 72 hours.) It reads the
trail, verifying its chain as audit query does, and reports for the exchange records
of --destination in [--since, --until):

  requests     sent, not sent, refused by a quarantine, and failed over to another
               destination by the destination's quarantine
  principals   who sent the requests that were sent (count and sorted list)
  values       per level (the classify rules of --policy) and per detector: values
               sent in clear, redacted, and blocked (in requests not sent); the
               trail holds counts only, never a value
  periods      before the first sign of a faulty service (the first answer that
               showed one), from that sign to the quarantine (the first
               quarantine.tripped event at or after it: what a quicker quarantine
               would have kept back), during the quarantine, and after it ended
               (cleared, or its duration ran out); with the times of the sign and
               of the trip and the delay between them, in requests and seconds

Marks are looked for inside the window: start it before the incident. A sent request
whose check did not run to its end (the guard failed open, a passthrough path) is
counted as sent_unchecked: its values are unknown. --format json prints stable field
names (docs/cli.md).

Exit status: 0 report printed, 1 the chain is broken (the report would not be
trustworthy), 2 usage or input error.`,
		Example: `  aishield audit exposure --destination shared-llm --since 2026-03-01 audit.jsonl
  AISHIELD_AUDIT_KEY=... aishield audit exposure --destination openai --format json /var/log/aishield/audit.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return fl.out.run(cmd, func(out io.Writer) error { return runAuditExposure(cmd, fl, args[0], out) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.destination, "destination", "", "policy destination name (required)")
	f.StringVar(&fl.since, "since", "", "first time included (RFC 3339 or YYYY-MM-DD)")
	f.StringVar(&fl.until, "until", "", "time excluded from here on (RFC 3339 or YYYY-MM-DD)")
	addPolicyFlag(f, &fl.policy, "giving the levels of detectors")
	fl.out = addOutputFlags(cmd, "text", "text", "json")
	f.BoolVar(&fl.cont, "continuation", false, "accept a first line that chains to an earlier (rotated) file")
	return cmd
}

func runAuditExposure(cmd *cobra.Command, fl *exposureFlags, file string, out io.Writer) error {
	if fl.destination == "" {
		return withCode(2, errors.New("--destination is required: the destination whose exposure to report"))
	}
	var since, until time.Time
	var err error
	if fl.since != "" {
		if since, err = parseTime(fl.since); err != nil {
			return withCode(2, err)
		}
	}
	if fl.until != "" {
		if until, err = parseTime(fl.until); err != nil {
			return withCode(2, err)
		}
	}
	if !since.IsZero() && !until.IsZero() && !since.Before(until) {
		return withCode(2, fmt.Errorf("--since %s is not before --until %s", fl.since, fl.until))
	}
	pol, err := loadPolicy(cmd)
	if err != nil {
		return err
	}
	b := newExposureBuilder(fl.destination, since, until, time.Now(), pol)
	if err := readTrail(cmd.Context(), file, fl.cont, "the report", b.add); err != nil {
		return err
	}
	rep := b.report()
	if fl.out.format == "json" {
		if err := writeJSON(out, rep); err != nil {
			return withCode(2, err)
		}
		return nil
	}
	if err := writeExposureText(out, rep); err != nil {
		return withCode(2, err)
	}
	return nil
}

// periodTitles are the text report's names of the periods.
var periodTitles = map[string]string{
	periodBeforeSign:  "before the first sign",
	periodSignToTrip:  "first sign to quarantine",
	periodQuarantined: "quarantined",
	periodAfterClear:  "after the quarantine",
}

// shown returns s as the text report prints it: as it is when it is
// printable text, quoted otherwise (control characters, invalid UTF-8),
// so that a name in a trail cannot act on the terminal.
func shown(s string) string {
	if s == "" {
		return "-"
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) && r != ' ' }) {
		return strconv.QuoteToASCII(s)
	}
	return s
}

func textTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func writeExposureText(out io.Writer, rep *exposureReport) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	window := "the whole trail"
	switch {
	case !rep.Since.IsZero() && !rep.Until.IsZero():
		window = "from " + textTime(rep.Since) + " until " + textTime(rep.Until)
	case !rep.Since.IsZero():
		window = "from " + textTime(rep.Since)
	case !rep.Until.IsZero():
		window = "until " + textTime(rep.Until)
	}
	fmt.Fprintf(tw, "Exposure of %s, %s (levels of policy %s)\n\n", shown(rep.Destination), window, shown(rep.Policy))
	r := rep.Requests
	fmt.Fprintf(tw, "Requests\t%d: %d sent, %d not sent (%d refused by a quarantine), %d failed over to another destination\n",
		r.Total, r.Sent, r.NotSent, r.Refused, r.FailedOver)
	if r.Unchecked > 0 {
		fmt.Fprintf(tw, "\t%d sent without a complete check (failed open, passthrough): their values are unknown\n", r.Unchecked)
	}
	names := make([]string, len(rep.Principals.Names))
	for i, n := range rep.Principals.Names {
		names[i] = shown(n)
	}
	pl := fmt.Sprintf("%d", rep.Principals.Count)
	if len(names) > 0 {
		pl += ": " + strings.Join(names, ", ")
	}
	if rep.Principals.Unattributed > 0 {
		pl += fmt.Sprintf(" (and %d sent request(s) without a principal)", rep.Principals.Unattributed)
	}
	fmt.Fprintf(tw, "Principals\t%s\n", pl)
	if s := rep.FirstSign; s != nil {
		signs := make([]string, 0, len(s.Signs))
		for _, k := range slices.Sorted(maps.Keys(s.Signs)) {
			signs = append(signs, shown(k))
		}
		fmt.Fprintf(tw, "First sign\t%s, exchange %s: %s\n", textTime(s.Time), shown(s.Exchange), strings.Join(signs, ", "))
	} else {
		fmt.Fprintf(tw, "First sign\tnone in the window\n")
	}
	if q := rep.Quarantine; q != nil {
		line := fmt.Sprintf("%s, exchange %s (reason %s, action %s)", textTime(q.Tripped), shown(q.Exchange), shown(q.Reason), shown(q.Action))
		switch {
		case !q.Ended.IsZero():
			line += fmt.Sprintf(", ended %s (%s)", textTime(q.Ended), shown(q.EndReason))
		case !q.Until.IsZero():
			line += ", due to end " + textTime(q.Until)
		default:
			line += ", until cleared"
		}
		fmt.Fprintf(tw, "Quarantined\t%s\n", line)
	} else {
		fmt.Fprintf(tw, "Quarantined\tnot in the window\n")
	}
	if d := rep.Delay; d != nil {
		fmt.Fprintf(tw, "Delay\t%s and %d request(s) (%d sent) from the first sign to the quarantine\n",
			(time.Duration(d.Seconds * float64(time.Second))).Round(time.Millisecond), d.Requests, d.Sent)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERIOD\tFROM\tUNTIL\tREQUESTS\tSENT\tNOT SENT\tREFUSED\tFAILED OVER\tPRINCIPALS\tCLEAR\tREDACTED\tBLOCKED")
	for _, p := range rep.Periods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", periodTitles[p.Name], textTime(p.From), textTime(p.Until),
			p.Requests.Total, p.Requests.Sent, p.Requests.NotSent, p.Requests.Refused, p.Requests.FailedOver, p.Principals,
			p.Values.Clear, p.Values.Redacted, p.Values.Blocked)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tDETECTOR\tCLEAR\tREDACTED\tBLOCKED")
	rows := 0
	for _, l := range rep.Levels {
		if l.zero() {
			continue
		}
		for _, d := range l.Detectors {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\n", shown(l.Level), shown(d.Detector), d.Clear, d.Redacted, d.Blocked)
			rows++
		}
		if len(l.Detectors) > 1 {
			fmt.Fprintf(tw, "%s\t(all)\t%d\t%d\t%d\n", shown(l.Level), l.Clear, l.Redacted, l.Blocked)
		}
	}
	if rows == 0 {
		fmt.Fprintln(tw, "-\t(no finding)\t0\t0\t0")
	}
	return tw.Flush()
}

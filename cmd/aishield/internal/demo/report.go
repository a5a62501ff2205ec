package demo

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/aishield/aishield/internal/traffic"

	"github.com/aishield/aishield/pagedcache"
)

// The results of one request.
const (
	// ResultAnswered: delivered, and the answer read only the request's own
	// pages (ground truth).
	ResultAnswered = "answered"
	// ResultLeaked: delivered, and the answer read pages written by other
	// requests (ground truth): other customers' data reached the caller.
	ResultLeaked = "leaked"
	// ResultBlocked: refused by aishield before sending, for its content.
	ResultBlocked = "blocked"
	// ResultRefused: refused by aishield before sending, over the
	// destination's KV capacity.
	ResultRefused = "refused"
	// ResultCaught: the answer carried foreign material, or was decoded
	// over a prompt the server silently dropped or truncated (ground
	// truth), and aishield withheld it.
	ResultCaught = "caught"
	// ResultTruncated: delivered, and the server had silently dropped the
	// prompt or its start (ground truth): the answer is to another
	// question.
	ResultTruncated = "truncated"
	// ResultFalseAlarm: aishield withheld an answer that was clean.
	ResultFalseAlarm = "false-alarm"
	// ResultRejected: the server refused the request with an error status
	// (its own context check), which reached the caller as it was.
	ResultRejected = "rejected"
	// ResultError: any other failure.
	ResultError = "error"
	// ResultAborted: the client gave up during prefill (abort-reuse-race
	// mode) and the server aborted the request (ground truth).
	ResultAborted = "aborted"
	// ResultQuarantined: refused by aishield before sending because an
	// earlier answer showed the service faulty and the destination is
	// quarantined (only public data goes).
	ResultQuarantined = "quarantined"
)

// Report is the outcome of a demo. It holds no sensitive value: counts,
// detector IDs, tenants and signal IDs only.
type Report struct {
	Seed   uint64     `json:"seed"`
	Server ServerInfo `json:"server"`
	// Tenants are the customers of the shared service.
	Tenants []traffic.Tenant `json:"tenants"`
	// Requests describes the traffic (the same in every run).
	Requests []traffic.Request `json:"requests"`
	Runs     []*RunReport      `json:"runs"`
}

// ServerInfo describes the paged-cache server of every run.
type ServerInfo struct {
	Preset         string             `json:"preset,omitempty"`
	CapacityTokens int                `json:"capacity_tokens"`
	PageSize       int                `json:"page_size"`
	ContextLen     int                `json:"context_len"`
	Reuse          pagedcache.Reuse   `json:"reuse"`
	Faults         []pagedcache.Fault `json:"faults"`
	OversizeTokens int                `json:"oversize_tokens"`
}

// RunReport is one replay of the traffic.
type RunReport struct {
	// Name is RunWithout, RunGuarded or RunInboundOnly.
	Name  string `json:"name"`
	Title string `json:"title"`
	// Policy describes the aishield policy in force, "" without aishield.
	Policy   string    `json:"policy,omitempty"`
	Requests []Outcome `json:"requests"`
	Totals   Totals    `json:"totals"`
	// Seconds is the wall time of the run.
	Seconds float64 `json:"seconds"`
	// FirstSign is the request whose answer first showed the service
	// faulty: for a run through aishield, the first answer stopped for a
	// sign of a faulty service (see package quarantine); without
	// aishield, the first contaminated answer its caller received. 0 when
	// none did.
	FirstSign int `json:"first_sign,omitempty"`
	// AfterSign is, per tenant, what reached the faulty service after the
	// first sign: the data the people who were harmed kept handing it.
	AfterSign map[string]Exposure `json:"after_sign,omitempty"`
}

// Exposure is what a tenant sent to the shared service after its first
// sign: requests, the prompt tokens they wrote into its memory, and the
// sensitive values they carried (in clear, or as placeholders).
type Exposure struct {
	Requests int `json:"requests"`
	Tokens   int `json:"tokens"`
	InClear  int `json:"in_clear"`
	Redacted int `json:"redacted"`
}

// Outcome is what happened to one request in one run.
type Outcome struct {
	N        int    `json:"n"`
	Tenant   string `json:"tenant"`
	Label    string `json:"label"`
	Oversize bool   `json:"oversize,omitempty"`
	Stream   bool   `json:"stream,omitempty"`
	// Abort reports that the client gave up during prefill; Aborted that
	// the server aborted the request (ground truth).
	Abort   bool `json:"abort,omitempty"`
	Aborted bool `json:"aborted,omitempty"`
	// Result is one of the Result* constants.
	Result string `json:"result"`
	// Sent reports that the request reached the server; ServerID and
	// Status are the server's response ID and HTTP status.
	Sent     bool   `json:"sent"`
	ServerID string `json:"server_id,omitempty"`
	Status   int    `json:"status,omitempty"`
	// PromptTokens is the server's real count; ReportedPromptTokens what
	// its usage said.
	PromptTokens         int `json:"prompt_tokens,omitempty"`
	ReportedPromptTokens int `json:"reported_prompt_tokens,omitempty"`
	// Truncated reports that the server silently dropped the prompt
	// (decoded after an aborted prefill) or kept only its end (fault
	// auto-truncate), per its ground truth.
	Truncated bool `json:"truncated,omitempty"`
	// ForeignTokens counts, per other tenant, the answer tokens read from
	// pages that tenant wrote (server ground truth).
	ForeignTokens map[string]int `json:"foreign_tokens,omitempty"`
	// Sources are the requests whose pages the answer read, in order.
	Sources []Source `json:"sources,omitempty"`
	// ForeignValues counts, per detector, the other tenants' sensitive
	// values in the text the caller received; ValuesFrom names whose.
	ForeignValues map[string]int `json:"foreign_values,omitempty"`
	ValuesFrom    []string       `json:"values_from,omitempty"`
	// SentValues counts, per detector, the sensitive values the request
	// carried in clear to the shared service.
	SentValues map[string]int `json:"sent_values,omitempty"`
	// Redacted is how many of the request's values left as placeholders.
	Redacted int `json:"redacted,omitempty"`
	// Signals are the inbound signal IDs that stopped the answer; Reasons
	// the detectors or rules that stopped the request.
	Signals []string `json:"signals,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// Error is the error the caller got, for ResultError and ResultFalseAlarm.
	Error string `json:"error,omitempty"`
}

// Source is a request whose tokens another request's answer read.
type Source struct {
	N      int    `json:"n"`
	Tenant string `json:"tenant"`
	Label  string `json:"label"`
	Tokens int    `json:"tokens"`
}

// Totals sums a run.
type Totals struct {
	Requests int `json:"requests"`
	// Sent reached the shared service; SentValues is how many sensitive
	// values went with them in clear; Redacted how many left as
	// placeholders.
	Sent       int `json:"sent"`
	SentValues int `json:"sent_values"`
	Redacted   int `json:"redacted"`
	// Blocked and Refused were stopped before sending (content, capacity);
	// Rejected were refused by the server itself.
	Blocked  int `json:"blocked"`
	Refused  int `json:"refused"`
	Rejected int `json:"rejected,omitempty"`
	// Oversize is how many requests were over the KV capacity and
	// OversizeSent how many of them reached the server.
	Oversize     int `json:"oversize"`
	OversizeSent int `json:"oversize_sent"`
	// Aborted requests were given up by their client during prefill (the
	// abort-reuse-race fault's trigger); they have no answer.
	Aborted int `json:"aborted,omitempty"`
	// Contaminated answers read other requests' pages (ground truth);
	// Leaked of them reached the caller, Caught were withheld.
	Contaminated int `json:"contaminated"`
	Leaked       int `json:"leaked"`
	Caught       int `json:"caught"`
	// ForeignValues is how many other tenants' values callers received.
	ForeignValues int `json:"foreign_values"`
	// Truncated answers were decoded over a silently dropped or truncated
	// prompt, and read no other request's pages (ground truth); TruncatedDelivered of them reached the caller,
	// TruncatedCaught were withheld.
	Truncated          int `json:"truncated,omitempty"`
	TruncatedDelivered int `json:"truncated_delivered,omitempty"`
	TruncatedCaught    int `json:"truncated_caught,omitempty"`
	// Clean answers read only their own pages of a whole prompt; Delivered
	// of them reached the caller; FalseAlarms were withheld.
	Clean       int `json:"clean"`
	Delivered   int `json:"delivered"`
	FalseAlarms int `json:"false_alarms"`
	Errors      int `json:"errors"`
	// Quarantined requests were held back because the destination was
	// quarantined.
	Quarantined int `json:"quarantined,omitempty"`
	// Signals counts the inbound signal IDs that stopped answers.
	Signals map[string]int `json:"signals,omitempty"`
}

func totals(os []Outcome) Totals {
	var t Totals
	for _, o := range os {
		t.Requests++
		if o.Sent {
			t.Sent++
			t.SentValues += total(o.SentValues)
			t.Redacted += o.Redacted
		}
		if o.Oversize {
			t.Oversize++
			if o.Sent {
				t.OversizeSent++
			}
		}
		t.ForeignValues += total(o.ForeignValues)
		contaminated := len(o.ForeignTokens) > 0
		if o.Sent && o.Status == 200 {
			switch {
			case o.Aborted:
				t.Aborted++
			case contaminated:
				t.Contaminated++
			case o.Truncated:
				t.Truncated++
			default:
				t.Clean++
			}
		}
		switch o.Result {
		case ResultAnswered:
			t.Delivered++
		case ResultLeaked:
			t.Leaked++
		case ResultTruncated:
			t.TruncatedDelivered++
		case ResultBlocked:
			t.Blocked++
		case ResultRefused:
			t.Refused++
		case ResultRejected:
			t.Rejected++
		case ResultCaught:
			if contaminated {
				t.Caught++
			} else {
				t.TruncatedCaught++
			}
		case ResultFalseAlarm:
			t.FalseAlarms++
		case ResultError:
			t.Errors++
		case ResultQuarantined:
			t.Quarantined++
		}
		for _, s := range o.Signals {
			if t.Signals == nil {
				t.Signals = map[string]int{}
			}
			t.Signals[s]++
		}
	}
	return t
}

func (c *config) newReport() *Report {
	s := c.server
	return &Report{
		Seed: c.opts.Seed,
		Server: ServerInfo{Preset: c.preset, CapacityTokens: s.CapacityTokens, PageSize: s.PageSize, ContextLen: s.ContextLen,
			Reuse: s.Reuse, Faults: s.Faults, OversizeTokens: c.opts.OversizeTokens},
		Tenants:  c.scenario.Tenants,
		Requests: c.scenario.Requests,
	}
}

// Run returns the run called name.
func (r *Report) Run(name string) (*RunReport, bool) {
	for _, run := range r.Runs {
		if run.Name == name {
			return run, true
		}
	}
	return nil, false
}

// num prints n with thousands separators.
func num(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + num(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// counts renders a detector→count map in a stable order: "2 pii.email, 1 pii.iban".
func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", m[k], k)
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the human report: the setting, a side-by-side table of
// the runs, and the details of what leaked, what was stopped and why.
func (r *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	s := r.Server
	preset := ""
	if s.Preset != "" {
		preset = " (preset " + s.Preset + ")"
	}
	faults := []string{"none"}
	if len(s.Faults) > 0 {
		faults = make([]string, len(s.Faults))
		for i, f := range s.Faults {
			faults[i] = string(f)
		}
	}
	ew.printf("aishield demo: the 2026 shared-inference incident, replayed on this machine\n\n")
	ew.printf("server   paged KV cache of %s tokens in pages of %d, context length %s, %s reuse, fault %s%s\n",
		num(s.CapacityTokens), s.PageSize, num(s.ContextLen), s.Reuse, strings.Join(faults, ","), preset)
	over := 0
	streamed := 0
	for _, q := range r.Requests {
		if q.Oversize {
			over++
		}
		if q.Stream {
			streamed++
		}
	}
	ew.printf("traffic  %d tenants, %d chat requests (%d streamed) with go-openai over loopback HTTP, seed %d;\n", len(r.Tenants), len(r.Requests), streamed, r.Seed)
	ew.printf("         %d of them over the KV capacity (about %s tokens each, under the context length)\n\n", over, num(s.OversizeTokens))

	tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "\t"
	for _, run := range r.Runs {
		header += run.Title + "\t"
	}
	fmt.Fprintln(tw, header)
	row := func(label string, f func(t Totals) string) {
		line := label + "\t"
		for _, run := range r.Runs {
			line += f(run.Totals) + "\t"
		}
		fmt.Fprintln(tw, line)
	}
	row("requests sent to the shared service", func(t Totals) string { return fmt.Sprintf("%d of %d", t.Sent, t.Requests) })
	row("sensitive values sent in clear", func(t Totals) string { return fmt.Sprint(t.SentValues) })
	row("values redacted (restored in the answers)", func(t Totals) string { return fmt.Sprint(t.Redacted) })
	row("requests blocked for their content", func(t Totals) string { return fmt.Sprint(t.Blocked) })
	quarantined := false
	for _, run := range r.Runs {
		quarantined = quarantined || run.Totals.Quarantined > 0
	}
	if quarantined {
		row("requests held back by the quarantine", func(t Totals) string { return fmt.Sprint(t.Quarantined) })
	}
	row("over-capacity requests sent", func(t Totals) string { return fmt.Sprintf("%d of %d", t.OversizeSent, t.Oversize) })
	aborted := false
	for _, run := range r.Runs {
		aborted = aborted || run.Totals.Aborted > 0
	}
	if aborted {
		row("requests aborted by their client in prefill", func(t Totals) string { return fmt.Sprint(t.Aborted) })
	}
	rejected := false
	for _, run := range r.Runs {
		rejected = rejected || run.Totals.Rejected > 0
	}
	if rejected {
		row("  refused by the server (error status)", func(t Totals) string { return fmt.Sprint(t.Rejected) })
	}
	row("answers carrying other tenants' data", func(t Totals) string { return fmt.Sprint(t.Contaminated) })
	row("  delivered to the caller", func(t Totals) string { return fmt.Sprint(t.Leaked) })
	row("  caught by inbound verification", func(t Totals) string { return fmt.Sprint(t.Caught) })
	row("other tenants' values delivered", func(t Totals) string { return fmt.Sprint(t.ForeignValues) })
	truncated := false
	for _, run := range r.Runs {
		truncated = truncated || run.Totals.Truncated > 0
	}
	if truncated {
		row("answers over a dropped or truncated prompt", func(t Totals) string { return fmt.Sprint(t.Truncated) })
		row("  delivered to the caller", func(t Totals) string { return fmt.Sprint(t.TruncatedDelivered) })
		row("  caught by inbound verification", func(t Totals) string { return fmt.Sprint(t.TruncatedCaught) })
	}
	row("clean answers delivered", func(t Totals) string { return fmt.Sprintf("%d of %d", t.Delivered, t.Clean) })
	row("false alarms", func(t Totals) string { return fmt.Sprint(t.FalseAlarms) })
	row("errors", func(t Totals) string { return fmt.Sprint(t.Errors) })
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := r.writeAfterSign(ew); err != nil {
		return err
	}

	for _, run := range r.Runs {
		ew.printf("\n%s", run.Title)
		if run.Policy != "" {
			ew.printf(" (%s)", run.Policy)
		}
		ew.printf(":\n")
		any := false
		for _, o := range run.Requests {
			line := describe(o)
			if line == "" {
				continue
			}
			any = true
			ew.printf("  #%-3d %-16s %s\n", o.N, o.Tenant, line)
		}
		if !any {
			ew.printf("  every request answered, no answer read another request's pages\n")
		}
		if len(run.Totals.Signals) > 0 {
			ew.printf("  inbound signals that stopped answers: %s\n", counts(run.Totals.Signals))
		}
	}
	return ew.err
}

// writeAfterSign prints, per tenant and run, what reached the shared
// service after its first sign.
func (r *Report) writeAfterSign(w io.Writer) error {
	signs := false
	for _, run := range r.Runs {
		signs = signs || run.FirstSign > 0
	}
	if !signs {
		return nil
	}
	fmt.Fprintf(w, "\nsent to the shared service after its first sign (requests, prompt tokens, sensitive values in clear + as placeholders):\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := "\t"
	for _, run := range r.Runs {
		line += run.Title + "\t"
	}
	fmt.Fprintln(tw, line)
	line = "first sign\t"
	for _, run := range r.Runs {
		if run.FirstSign == 0 {
			line += "none\t"
		} else {
			line += fmt.Sprintf("#%d\t", run.FirstSign)
		}
	}
	fmt.Fprintln(tw, line)
	for _, t := range r.Tenants {
		line := t.Name + "\t"
		for _, run := range r.Runs {
			e := run.AfterSign[t.Name]
			if run.FirstSign == 0 {
				line += "-\t"
				continue
			}
			line += fmt.Sprintf("%d, %s tok, %d+%d\t", e.Requests, num(e.Tokens), e.InClear, e.Redacted)
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// describe is one line about a request worth mentioning, "" otherwise.
func describe(o Outcome) string {
	from := func() string {
		var parts []string
		for _, s := range o.Sources {
			parts = append(parts, fmt.Sprintf("%d tokens of %s's %s (#%d)", s.Tokens, s.Tenant, s.Label, s.N))
		}
		if len(parts) == 0 {
			keys := make([]string, 0, len(o.ForeignTokens))
			for k := range o.ForeignTokens {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%d tokens of %s", o.ForeignTokens[k], k))
			}
		}
		return strings.Join(parts, ", ")
	}
	switch o.Result {
	case ResultLeaked:
		s := fmt.Sprintf("LEAKED  %s: HTTP %d, %s prompt tokens reported as %d; the answer quoted %s",
			o.Label, o.Status, num(o.PromptTokens), o.ReportedPromptTokens, from())
		if len(o.ForeignValues) > 0 {
			s += fmt.Sprintf("; carried %s of %s", counts(o.ForeignValues), strings.Join(o.ValuesFrom, ", "))
		}
		return s
	case ResultCaught:
		if len(o.ForeignTokens) == 0 && o.Truncated {
			return fmt.Sprintf("caught  %s: the server counted %s of %s prompt tokens and answered 200; stopped by %s",
				o.Label, num(o.ReportedPromptTokens), num(o.PromptTokens), strings.Join(o.Signals, ", "))
		}
		return fmt.Sprintf("caught  %s: the answer quoted %s; stopped by %s", o.Label, from(), strings.Join(o.Signals, ", "))
	case ResultTruncated:
		return fmt.Sprintf("TRUNCATED %s: HTTP %d, the server counted %s of %s prompt tokens; the answer ignores (part of) the prompt",
			o.Label, o.Status, num(o.ReportedPromptTokens), num(o.PromptTokens))
	case ResultRefused:
		return fmt.Sprintf("refused %s: over the destination's KV capacity, never sent", o.Label)
	case ResultRejected:
		return fmt.Sprintf("rejected %s: the server answered HTTP %d, passed to the caller", o.Label, o.Status)
	case ResultBlocked:
		return fmt.Sprintf("blocked %s: %s", o.Label, strings.Join(o.Reasons, ", "))
	case ResultFalseAlarm:
		return fmt.Sprintf("FALSE ALARM %s: %s", o.Label, o.Error)
	case ResultError:
		return fmt.Sprintf("ERROR   %s: %s", o.Label, o.Error)
	case ResultQuarantined:
		return fmt.Sprintf("held    %s: the destination is quarantined, not sent", o.Label)
	case ResultAborted:
		s := fmt.Sprintf("aborted %s: its client gave up during prefill; the server freed its pages at once", o.Label)
		if o.Redacted > 0 {
			s += fmt.Sprintf(" (%d values had left as placeholders)", o.Redacted)
		}
		return s
	case ResultAnswered:
		if o.Redacted > 0 {
			return fmt.Sprintf("redacted %s: %d values left as placeholders, answer restored", o.Label, o.Redacted)
		}
	}
	return ""
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }

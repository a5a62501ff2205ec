package policies

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aishield/aishield/classifiers"
)

// Severity says how bad a diagnostic is.
type Severity string

// Diagnostic severities. Errors fail `aishield policy lint`; warnings do not.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is one problem Lint found, naming the file, the place in it,
// the field and the rule code.
type Diagnostic struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	File     string   `json:"file"`
	// Line and Column locate the field in the file (1-based; see
	// [Position]); 1, 1 for the whole file and where the format gives no
	// position (TOML); 0 when the policy was not read from a file
	// ([Lint] of a policy built in memory).
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// String renders the diagnostic as "file:line:column: severity[code]:
// field: message" (the field left out when empty, the position when
// unknown).
func (d Diagnostic) String() string {
	loc := d.File
	if d.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", d.File, d.Line, d.Column)
	}
	msg := d.Message
	if d.Field != "" {
		msg = d.Field + ": " + msg
	}
	return fmt.Sprintf("%s: %s[%s]: %s", loc, d.Severity, d.Code, msg)
}

// LintRule documents one lint rule.
type LintRule struct {
	Code        string
	Severity    Severity
	Description string
}

// LintRules lists the rules Lint checks beyond the loader's own checks
// (whose codes are reported with severity error), in a stable order.
func LintRules() []LintRule {
	return []LintRule{
		{"shared-without-contract", SeverityError, `a destination on shared infrastructure may not receive data above the "internal" level (the lowest level when there is none) unless a contract covers it`},
		{"unknown-detector", SeverityError, "a detector ID or glob in classify or scan.detectors matches no built-in detector and no custom rule"},
		{"pattern-timeout", SeverityError, "a custom regexp2 pattern exceeds the probe timeout on a pathological input (long runs of one character followed by a mismatch): catastrophic backtracking"},
		{"shadowed-destination", SeverityWarning, "an earlier destination matches everything this one matches, so Match never selects it"},
		{"conflicting-mapping", SeverityWarning, "the same detector ID or glob is mapped to two different levels; the earlier rule wins"},
		{"capacity-unset", SeverityWarning, "a shared destination has no max_input_tokens: over-long requests are not refused before they reach it"},
		{"tokenizer-mismatch", SeverityWarning, "a destination declares a tiktoken tokenizer but its provider is anthropic, whose models count tokens otherwise: the tight usage check would refuse clean answers"},
		{"quarantine-off", SeverityWarning, "a shared destination's quarantine is off: a provider whose answers show a faulty service keeps receiving confidential data"},
		{"quarantine-failover-shared", SeverityError, "a quarantine fails over to a destination on shared infrastructure without a contract: the data leaves for another stranger's machine"},
		{"quarantine-limit-open", SeverityWarning, "a quarantine with action limit lets through the destination's own max_level or more: it changes nothing"},
		{"open-default", SeverityWarning, "the default destination accepts the highest level: unknown destinations receive anything"},
	}
}

// LintOptions configures Lint.
type LintOptions struct {
	// ProbeTimeout bounds each probe match of a custom pattern; default
	// 200ms. A pattern that exceeds it on a probe is reported.
	ProbeTimeout time.Duration
}

// DefaultProbeTimeout is LintOptions.ProbeTimeout's default.
const DefaultProbeTimeout = 200 * time.Millisecond

// LintFile loads the policy file at path and lints it, each diagnostic
// with the line and column of its field. A file that does not load yields
// every load problem as an error diagnostic (code "io", with no position,
// when the file cannot be read).
func LintFile(ctx context.Context, path string, opts LintOptions) []Diagnostic {
	format, err := formatOf(path)
	if err != nil {
		return loadDiagnostics(path, err)
	}
	data, err := readPolicyFile(ctx, path)
	if err != nil {
		return []Diagnostic{{Code: "io", Severity: SeverityError, File: path, Message: fmt.Sprintf("policy %s: %v", path, err)}}
	}
	return lintData(ctx, data, format, path, opts)
}

// LintPreset lints the embedded preset name, with positions in its YAML.
func LintPreset(ctx context.Context, name string, opts LintOptions) []Diagnostic {
	src, err := PresetSource(name)
	if err != nil {
		return []Diagnostic{{Code: "io", Severity: SeverityError, File: "preset:" + name, Message: err.Error()}}
	}
	p, err := Preset(name)
	if err != nil {
		return loadDiagnostics("preset:"+name, err)
	}
	return placeDiagnostics(Lint(ctx, p, opts), src, "yaml")
}

// lintData parses data (a policy file in format called name) and lints
// it, placing every diagnostic in data.
func lintData(ctx context.Context, data []byte, format, name string, opts LintOptions) []Diagnostic {
	var ds []Diagnostic
	if p, err := Parse(data, format, name); err != nil {
		ds = loadDiagnostics(name, err)
	} else {
		ds = Lint(ctx, p, opts)
	}
	return placeDiagnostics(ds, data, format)
}

// placeDiagnostics sets the line and column of each diagnostic from the
// positions of the fields of data, a policy file in format.
func placeDiagnostics(ds []Diagnostic, data []byte, format string) []Diagnostic {
	if len(ds) == 0 {
		return ds
	}
	ps := positionsOf(data, format)
	for i := range ds {
		var pos Position
		if ds[i].Field == "" {
			pos = errorPosition(ds[i].Message)
		} else {
			pos = ps.lookup(ds[i].Field)
		}
		ds[i].Line, ds[i].Column = pos.Line, pos.Column
	}
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return ds
}

// loadDiagnostics turns a load error into diagnostics.
func loadDiagnostics(file string, err error) []Diagnostic {
	var le *LoadError
	if errors.As(err, &le) {
		out := make([]Diagnostic, 0, len(le.Problems))
		for _, p := range le.Problems {
			out = append(out, Diagnostic{Code: p.Code, Severity: SeverityError, File: p.File, Field: p.Field, Message: p.Message})
		}
		return out
	}
	return []Diagnostic{{Code: "io", Severity: SeverityError, File: file, Message: err.Error()}}
}

// Lint checks a loaded policy against [LintRules] and returns the
// diagnostics sorted by field. ctx bounds the pattern probes.
func Lint(ctx context.Context, p *Policy, opts LintOptions) []Diagnostic {
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = DefaultProbeTimeout
	}
	var out []Diagnostic
	add := func(code, field, format string, args ...any) {
		sev := SeverityError
		for _, r := range LintRules() {
			if r.Code == code {
				sev = r.Severity
			}
		}
		out = append(out, Diagnostic{Code: code, Severity: sev, File: p.Source, Field: field, Message: fmt.Sprintf(format, args...)})
	}

	// shared-without-contract
	limit, limitName := 0, ""
	if i := p.Rank("internal"); i >= 0 {
		limit, limitName = i, "internal"
	} else if len(p.Levels) > 0 {
		limitName = p.Levels[0]
	}
	for _, d := range append(slices.Clone(p.Destinations), p.Default) {
		if d.Shared && !d.Contract && p.Rank(d.MaxLevel) > limit {
			add("shared-without-contract", d.Field+".max_level",
				"destination %s is on shared infrastructure without a contract but may receive %s data (above %s)", d.Name, d.MaxLevel, limitName)
		}
	}

	// unknown-detector
	ids := make([]string, 0, 64)
	for _, b := range classifiers.Builtins() {
		ids = append(ids, b.ID)
	}
	builtinIDs := slices.Clone(ids)
	for _, c := range p.Custom {
		ids = append(ids, c.ID)
	}
	matchesAny := func(pat string, in []string) bool {
		return slices.ContainsFunc(in, func(id string) bool { return globMatch(pat, id) })
	}
	for _, r := range p.Classify {
		for j, pat := range r.Detectors {
			if !matchesAny(pat, ids) {
				add("unknown-detector", fmt.Sprintf("%s.detectors[%d]", r.Field, j), "%q matches no built-in detector and no custom rule", pat)
			}
		}
	}
	for j, pat := range p.Detectors {
		if !matchesAny(pat, builtinIDs) {
			add("unknown-detector", fmt.Sprintf("scan.detectors[%d]", j), "%q matches no built-in detector", pat)
		}
	}

	// conflicting-mapping
	firstLevel := map[string]LevelRule{}
	for _, r := range p.Classify {
		for j, pat := range r.Detectors {
			if prev, ok := firstLevel[pat]; ok && prev.Level != r.Level {
				add("conflicting-mapping", fmt.Sprintf("%s.detectors[%d]", r.Field, j),
					"%q is already mapped to %s by %s; this mapping to %s never applies", pat, prev.Level, prev.Field, r.Level)
			} else if !ok {
				firstLevel[pat] = r
			}
		}
	}

	// pattern-timeout
	for i, c := range p.Custom {
		if c.Pattern == "" {
			continue
		}
		if probe, ok := patternTimesOut(ctx, c.CustomRule, opts.ProbeTimeout); ok {
			field := fmt.Sprintf("custom[%d].pattern", i)
			if i < len(p.fields.custom) {
				field = p.fields.custom[i] + ".pattern"
			}
			add("pattern-timeout", field, "rule %s: pattern exceeds %v on %s: it backtracks catastrophically", c.ID, opts.ProbeTimeout, probe)
		}
	}

	// shadowed-destination
	for j, d := range p.Destinations {
		if !d.matchable() {
			continue
		}
		for _, e := range p.Destinations[:j] {
			if e.matchable() && covers(e, d) {
				add("shadowed-destination", d.Field, "destination %s is never matched: %s (%s) comes first and matches everything it matches", d.Name, e.Name, e.Field)
				break
			}
		}
	}

	// quarantine-off, quarantine-failover-shared, quarantine-limit-open
	for _, d := range append(slices.Clone(p.Destinations), p.Default) {
		q := p.Quarantine(d)
		switch {
		case q.Off && d.Shared:
			add("quarantine-off", q.Field+".enabled", "destination %s is shared and its quarantine is off", d.Name)
		case q.Off:
		case q.Action == QuarantineFailover:
			if fd, ok := p.Destination(q.Failover); ok && fd.Shared && !fd.Contract {
				add("quarantine-failover-shared", q.Field+".failover", "destination %s fails over to %s, shared without a contract", d.Name, fd.Name)
			}
		case q.Action == QuarantineLimit && p.Rank(d.MaxLevel) > 0 && p.Rank(q.MaxLevel) >= p.Rank(d.MaxLevel):
			add("quarantine-limit-open", q.Field+".max_level", "destination %s: the quarantine lets through %s, and the destination already receives at most %s", d.Name, q.MaxLevel, d.MaxLevel)
		}
	}

	// capacity-unset
	for _, d := range p.Destinations {
		if d.Shared && d.MaxInputTokens == 0 {
			add("capacity-unset", d.Field+".max_input_tokens",
				"destination %s is shared but declares no max_input_tokens: set it to the real capacity, not the advertised context", d.Name)
		}
	}

	// tokenizer-mismatch
	for _, d := range p.Destinations {
		if d.Tokenizer != "" && d.Provider == "anthropic" {
			add("tokenizer-mismatch", d.Field+".tokenizer",
				"destination %s is an anthropic one but declares tokenizer %s: remove it (anthropic models do not count with tiktoken encodings)", d.Name, d.Tokenizer)
		}
	}

	// open-default
	if len(p.Levels) > 0 && p.Default.MaxLevel == p.Levels[len(p.Levels)-1] {
		add("open-default", "default.max_level", "the default destination accepts %s, the highest level", p.Default.MaxLevel)
	}

	sortDiagnostics(out)
	return out
}

func sortDiagnostics(ds []Diagnostic) {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(strings.Compare(a.File, b.File), compareFieldPaths(a.Field, b.Field), strings.Compare(a.Code, b.Code))
	})
}

// covers reports whether every request d matches is also matched by e.
func covers(e, d *Destination) bool {
	if e.BaseURL != "" && (d.BaseURL == "" || !urlHasPrefix(d.BaseURL, e.BaseURL)) {
		return false
	}
	if e.Provider != "" && !strings.EqualFold(e.Provider, d.Provider) {
		return false
	}
	return globCovers(e.Model, d.Model)
}

// probeRuns are the characters of the pathological probes: long runs of
// each, followed by a character that makes the match fail, force a
// backtracking engine through every way a nested or overlapping quantifier
// can split the run.
var probeRuns = []string{"a", "0", " ", "A", "_", "-", ".", "a0", "\t"}

// probeLengths are the run lengths probed: a short run catches exponential
// backtracking, a long one polynomial blow-ups.
var probeLengths = []int{48, 4096}

// patternTimesOut runs rule's pattern on the probes through a real scanner
// with timeout as match timeout and reports the first probe that times out,
// described without its content.
func patternTimesOut(ctx context.Context, rule classifiers.CustomRule, timeout time.Duration) (string, bool) {
	rule.Validator = "" // time the pattern, not the validator
	opts := classifiers.Options{Custom: []classifiers.CustomRule{rule}, MatchTimeout: timeout, HashKey: []byte("lint-probe")}
	if b := classifiers.Builtins(); len(b) > 0 {
		opts.Detectors = []string{b[0].ID}
	}
	s, err := classifiers.New(opts)
	if err != nil {
		return "", false // compile errors are the loader's to report
	}
	prefix := ""
	if len(rule.Keywords) > 0 {
		prefix = rule.Keywords[0] + " "
	}
	for _, n := range probeLengths {
		for _, run := range probeRuns {
			for _, end := range []string{"!", "\x01"} {
				if ctx.Err() != nil {
					return "", false
				}
				probe := prefix + strings.Repeat(run, n/len(run)) + end
				_, err := s.ScanString(ctx, probe)
				var te *classifiers.TimeoutError
				if errors.As(err, &te) {
					return fmt.Sprintf("%d×%q followed by %q", n/len(run), run, end), true
				}
			}
		}
	}
	return "", false
}

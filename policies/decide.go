package policies

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/aishield/aishield/classifiers"
)

// NewScanner builds a scanner that runs the policy's built-in detectors and
// custom rules, keyed with hashKey (nil: a random key per scanner).
func (p *Policy) NewScanner(hashKey []byte) (*classifiers.Scanner, error) {
	custom := make([]classifiers.CustomRule, len(p.Custom))
	for i, c := range p.Custom {
		custom[i] = c.CustomRule
	}
	return classifiers.New(classifiers.Options{
		HashKey:         hashKey,
		Custom:          custom,
		Detectors:       p.Detectors,
		IncludeReserved: p.IncludeReserved,
		MatchTimeout:    p.MatchTimeout,
		Allow:           p.Allow,
	})
}

// Rank returns the position of level in the policy's levels (0 for the
// lowest), or -1 when the policy does not declare it.
func (p *Policy) Rank(level string) int { return slices.Index(p.Levels, level) }

// LevelOf returns the level the policy gives a detector and its rank.
//
// A custom rule's own level applies to its ID; otherwise the most specific
// classify rule wins: an exact ID beats any glob, a glob with more literal
// characters beats one with fewer, and between equals the earlier rule wins.
// ok is false when no rule matched; level and rank are then the policy's
// DefaultLevel.
func (p *Policy) LevelOf(detectorID string) (level string, rank int, ok bool) {
	level, _, ok = p.levelRule(detectorID)
	return level, p.Rank(level), ok
}

// levelRule is LevelOf that also names the rule that applied.
func (p *Policy) levelRule(id string) (level, rule string, ok bool) {
	for i, c := range p.Custom {
		if c.ID == id {
			f := fmt.Sprintf("custom[%d]", i)
			if i < len(p.fields.custom) {
				f = p.fields.custom[i]
			}
			return c.Level, f, true
		}
	}
	best := -1
	for _, r := range p.Classify {
		for _, pat := range r.Detectors {
			if s := specificity(pat); s > best && globMatch(pat, id) {
				best, level, rule = s, r.Level, r.Field
			}
		}
	}
	if best >= 0 {
		return level, rule, true
	}
	return p.DefaultLevel, "default_level", false
}

// Destination returns the destination named name; "default" names the
// default destination.
func (p *Policy) Destination(name string) (*Destination, bool) {
	if name == "default" || name == "" {
		return p.Default, p.Default != nil
	}
	for _, d := range p.Destinations {
		if d.Name == name {
			return d, true
		}
	}
	return nil, false
}

// DestinationNames returns the names of the declared destinations in order,
// then "default".
func (p *Policy) DestinationNames() []string {
	out := make([]string, 0, len(p.Destinations)+1)
	for _, d := range p.Destinations {
		out = append(out, d.Name)
	}
	return append(out, "default")
}

// Lookup is Destination with an error naming the known destinations.
func (p *Policy) Lookup(name string) (*Destination, error) {
	if d, ok := p.Destination(name); ok {
		return d, nil
	}
	return nil, &UnknownDestinationError{Policy: p.Name, Name: name, Known: p.DestinationNames()}
}

// Match returns the first destination whose base URL, provider and model
// criteria all match (an empty criterion matches anything; a destination
// without any criterion is reachable only by name), else the default
// destination.
func (p *Policy) Match(baseURL, provider, model string) *Destination {
	var u *url.URL // parsed once, when a destination needs it
	for _, d := range p.Destinations {
		if !d.matchable() {
			continue
		}
		if d.BaseURL != "" && u == nil {
			var err error
			if u, err = url.Parse(baseURL); err != nil {
				u = &url.URL{Scheme: "invalid:"}
			}
		}
		if d.matches(u, provider, model) {
			return d
		}
	}
	return p.Default
}

func (d *Destination) matches(u *url.URL, provider, model string) bool {
	if d.BaseURL != "" && !urlPrefix(u, d.BaseURL) {
		return false
	}
	if d.Provider != "" && !strings.EqualFold(d.Provider, provider) {
		return false
	}
	if d.Model != "" && !globMatch(d.Model, model) {
		return false
	}
	return true
}

// urlHasPrefix reports whether u starts with prefix: same scheme and host
// (case-insensitive, default ports ignored) and a path that continues the
// prefix's path at a segment boundary.
func urlHasPrefix(u, prefix string) bool {
	a, err := url.Parse(u)
	return err == nil && urlPrefix(a, prefix)
}

// urlPrefix is urlHasPrefix for a parsed URL.
func urlPrefix(a *url.URL, prefix string) bool {
	b, err := url.Parse(prefix)
	if err != nil {
		return false
	}
	if !strings.EqualFold(a.Scheme, b.Scheme) || hostPort(a) != hostPort(b) {
		return false
	}
	bp := strings.TrimSuffix(b.EscapedPath(), "/")
	ap := a.EscapedPath()
	return ap == bp || strings.HasPrefix(ap, bp+"/") || (bp == "" && (ap == "" || ap[0] == '/'))
}

func hostPort(u *url.URL) string {
	h, port := strings.ToLower(u.Hostname()), u.Port()
	if (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		port = ""
	}
	if port == "" {
		return h
	}
	return h + ":" + port
}

// Decide decides what to do with a request of tokens tokens carrying
// findings, sent to d (nil: the default destination).
//
// The level of the request is the highest level among the findings. A
// request larger than d.MaxInputTokens is blocked whatever it carries.
// Findings above d.MaxLevel get d.Action (ActionBlock from d.BlockAt up):
// with ActionRedact their indices are listed in Decision.Redact; with
// ActionBlock the request is blocked, and Redact is empty.
// Reasons come one per (rule, detector), most sensitive first, then by
// detector ID, each with the masked preview of its first finding; the
// result depends only on the arguments.
func (p *Policy) Decide(d *Destination, findings []classifiers.Finding, tokens int) Decision {
	if d == nil {
		d = p.Default
	}
	dec := Decision{Action: ActionAllow, Destination: d.Name, Reasons: []Reason{}}
	if d.MaxInputTokens > 0 && tokens > d.MaxInputTokens {
		dec.OverCapacity = true
		dec.Action = ActionBlock
		dec.Reasons = append(dec.Reasons, Reason{
			Rule:   d.Field + ".max_input_tokens",
			Action: ActionBlock,
			Count:  1,
			Message: fmt.Sprintf("request of %d tokens exceeds the real capacity of destination %s (max_input_tokens %d): blocked before sending",
				tokens, d.Name, d.MaxInputTokens),
		})
	}

	type key struct{ rule, detector string }
	type mapped struct {
		level, rule string
		rank        int
	}
	memo := map[string]mapped{} // detector → level, once per call
	groups := map[key]*Reason{}
	var order []key
	highest := -1
	for i, f := range findings {
		m, ok := memo[f.Detector]
		if !ok {
			m.level, m.rule, _ = p.levelRule(f.Detector)
			m.rank = p.Rank(m.level)
			memo[f.Detector] = m
		}
		level, rule, rank := m.level, m.rule, m.rank
		if rank > highest {
			highest, dec.Level = rank, level
		}
		act := p.actionAt(d, rank)
		if act != ActionAllow {
			if act == ActionRedact {
				dec.Redact = append(dec.Redact, i)
			}
			if act.rank() > dec.Action.rank() {
				dec.Action = act
			}
		}
		k := key{rule, f.Detector}
		r := groups[k]
		if r == nil {
			r = &Reason{Rule: rule, Detector: f.Detector, Level: level, Preview: f.Preview, Action: act}
			groups[k] = r
			order = append(order, k)
		}
		r.Count++
	}
	if dec.Action == ActionBlock {
		// A blocked request is not redacted: nothing is sent.
		dec.Redact = nil
	}
	reasons := make([]Reason, 0, len(order))
	for _, k := range order {
		r := *groups[k]
		r.Message = reasonMessage(r, d)
		reasons = append(reasons, r)
	}
	slices.SortStableFunc(reasons, func(a, b Reason) int {
		return cmp.Or(
			cmp.Compare(p.Rank(b.Level), p.Rank(a.Level)),
			strings.Compare(a.Detector, b.Detector),
			strings.Compare(a.Rule, b.Rule),
		)
	})
	dec.Reasons = append(dec.Reasons, reasons...)
	return dec
}

// ActionFor returns what d does with a finding of detectorID: ActionAllow
// at or below d.MaxLevel, else d.Action, or ActionBlock from d.BlockAt up.
// It ignores capacity; see Decide.
func (p *Policy) ActionFor(d *Destination, detectorID string) Action {
	if d == nil {
		d = p.Default
	}
	level, _, _ := p.levelRule(detectorID)
	return p.actionAt(d, p.Rank(level))
}

// actionAt is ActionFor for a level rank. An undeclared max level admits
// nothing.
func (p *Policy) actionAt(d *Destination, rank int) Action {
	if rank <= p.Rank(d.MaxLevel) && d.MaxLevel != "" {
		return ActionAllow
	}
	if d.BlockAt != "" && rank >= p.Rank(d.BlockAt) {
		return ActionBlock
	}
	if d.Action == ActionRedact {
		return ActionRedact
	}
	return ActionBlock
}

func reasonMessage(r Reason, d *Destination) string {
	n := "1 finding"
	if r.Count != 1 {
		n = fmt.Sprintf("%d findings", r.Count)
	}
	switch r.Action {
	case ActionAllow:
		return fmt.Sprintf("%s of %s (%s, by %s) within max_level %s of %s: allowed", n, r.Detector, r.Level, r.Rule, d.MaxLevel, d.Name)
	case ActionRedact:
		return fmt.Sprintf("%s of %s (%s, by %s) above max_level %s of %s: redacted", n, r.Detector, r.Level, r.Rule, d.MaxLevel, d.Name)
	default:
		return fmt.Sprintf("%s of %s (%s, by %s) above max_level %s of %s: blocked", n, r.Detector, r.Level, r.Rule, d.MaxLevel, d.Name)
	}
}

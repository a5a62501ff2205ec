package policies

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/aishield/aishield/classifiers"
)

// Explanation says what a policy lets go to one destination, and why. It is
// a plain value: its methods only read it and may run concurrently.
type Explanation struct {
	Policy      string             `json:"policy"`
	Source      string             `json:"source"`
	Destination ExplainDestination `json:"destination"`
	// Levels gives the action for each level, lowest first.
	Levels []ExplainLevel `json:"levels"`
	// Detectors gives every enabled built-in detector and custom rule
	// with its level, the action at this destination and the rule that
	// set the level; most restrictive first.
	Detectors []ExplainDetector `json:"detectors"`
}

// ExplainDestination describes the destination explained.
type ExplainDestination struct {
	Name            string `json:"name"`
	Field           string `json:"field"`
	BaseURL         string `json:"base_url,omitempty"`
	Provider        string `json:"provider,omitempty"`
	Model           string `json:"model,omitempty"`
	MaxLevel        string `json:"max_level"`
	Action          Action `json:"action"`
	BlockAt         string `json:"block_at,omitempty"`
	MaxInputTokens  int    `json:"max_input_tokens"`
	Tokenizer       string `json:"tokenizer,omitempty"`
	Shared          bool   `json:"shared"`
	Contract        bool   `json:"contract"`
	IncidentContact string `json:"incident_contact,omitempty"`
}

// ExplainLevel is the action a destination takes for one level.
type ExplainLevel struct {
	Level  string `json:"level"`
	Action Action `json:"action"`
}

// ExplainDetector is one detector's fate at a destination.
type ExplainDetector struct {
	Detector string `json:"detector"`
	Level    string `json:"level"`
	Action   Action `json:"action"`
	Rule     string `json:"rule"`
}

// Explain explains what the policy sends to the destination named name
// ("default" for the default destination).
func (p *Policy) Explain(name string) (*Explanation, error) {
	d, err := p.Lookup(name)
	if err != nil {
		return nil, err
	}
	e := &Explanation{
		Policy: p.Name, Source: p.Source,
		Destination: ExplainDestination{
			Name: d.Name, Field: d.Field, BaseURL: d.BaseURL, Provider: d.Provider, Model: d.Model,
			MaxLevel: d.MaxLevel, Action: d.Action, BlockAt: d.BlockAt, MaxInputTokens: d.MaxInputTokens,
			Tokenizer: d.Tokenizer,
			Shared:    d.Shared, Contract: d.Contract, IncidentContact: d.IncidentContact,
		},
		Levels:    []ExplainLevel{},
		Detectors: []ExplainDetector{},
	}
	for i, l := range p.Levels {
		e.Levels = append(e.Levels, ExplainLevel{Level: l, Action: p.actionAt(d, i)})
	}
	for _, b := range classifiers.Builtins() {
		if !p.enabled(b.ID) {
			continue
		}
		level, rule, _ := p.levelRule(b.ID)
		e.Detectors = append(e.Detectors, ExplainDetector{Detector: b.ID, Level: level, Action: p.actionAt(d, p.Rank(level)), Rule: rule})
	}
	for _, c := range p.Custom {
		level, rule, _ := p.levelRule(c.ID)
		e.Detectors = append(e.Detectors, ExplainDetector{Detector: c.ID, Level: level, Action: p.actionAt(d, p.Rank(level)), Rule: rule})
	}
	slices.SortStableFunc(e.Detectors, func(a, b ExplainDetector) int {
		return cmp.Or(
			cmp.Compare(b.Action.rank(), a.Action.rank()),
			cmp.Compare(p.Rank(b.Level), p.Rank(a.Level)),
			strings.Compare(a.Detector, b.Detector),
		)
	})
	return e, nil
}

// enabled reports whether the policy runs built-in detector id (the
// classifiers package matches Options.Detectors with path.Match).
func (p *Policy) enabled(id string) bool {
	if len(p.Detectors) == 0 {
		return true
	}
	for _, sel := range p.Detectors {
		if ok, _ := path.Match(sel, id); ok {
			return true
		}
	}
	return false
}

// WriteJSON writes the explanation as one indented JSON document.
func (e *Explanation) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(e)
}

// WriteText writes the explanation for people.
func (e *Explanation) WriteText(w io.Writer) error {
	var b bytes.Buffer
	d := e.Destination
	fmt.Fprintf(&b, "policy %s (%s)\n", e.Policy, e.Source)
	fmt.Fprintf(&b, "destination %s (%s)\n", d.Name, d.Field)
	var match []string
	if d.BaseURL != "" {
		match = append(match, "base URL prefix "+d.BaseURL)
	}
	if d.Provider != "" {
		match = append(match, "provider "+d.Provider)
	}
	if d.Model != "" {
		match = append(match, "model "+d.Model)
	}
	switch {
	case d.Name == "default":
		fmt.Fprintf(&b, "  matches:   anything no other destination matches\n")
	case len(match) == 0:
		fmt.Fprintf(&b, "  matches:   only when named explicitly\n")
	default:
		fmt.Fprintf(&b, "  matches:   %s\n", strings.Join(match, ", "))
	}
	above := string(d.Action)
	if d.BlockAt != "" && d.Action != ActionBlock {
		above += ", block from " + d.BlockAt
	}
	fmt.Fprintf(&b, "  receives:  up to %s; above it: %s\n", d.MaxLevel, above)
	if d.MaxInputTokens > 0 {
		fmt.Fprintf(&b, "  capacity:  %d tokens; larger requests are blocked before sending\n", d.MaxInputTokens)
	} else {
		fmt.Fprintf(&b, "  capacity:  unlimited (max_input_tokens not set)\n")
	}
	if d.Tokenizer != "" {
		fmt.Fprintf(&b, "  tokenizer: %s; a reported prompt under 97%% of the exact count is a usage mismatch\n", d.Tokenizer)
	}
	infra := "dedicated infrastructure"
	if d.Shared {
		infra = "shared infrastructure"
	}
	contract := "no contract"
	if d.Contract {
		contract = "covered by a contract"
	}
	fmt.Fprintf(&b, "  infra:     %s, %s\n", infra, contract)
	if d.IncidentContact != "" {
		fmt.Fprintf(&b, "  incidents: %s\n", d.IncidentContact)
	}
	b.WriteString("\nlevels:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, l := range e.Levels {
		fmt.Fprintf(tw, "  %s\t%s\n", l.Level, l.Action)
	}
	tw.Flush()
	b.WriteString("\ndetectors:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  ACTION\tLEVEL\tDETECTOR\tRULE\n")
	for _, x := range e.Detectors {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", x.Action, x.Level, x.Detector, x.Rule)
	}
	tw.Flush()
	_, err := w.Write(b.Bytes())
	return err
}

package policies

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Signs of a faulty service: what an answer can show about the service
// that produced it rather than about the answer alone. Each feeds the
// health record of its destination, and the policy's quarantine trips on
// the ones it names.
const (
	// SignDroppedPrompt: the provider counted far fewer prompt tokens than
	// were sent (usage.prompt_tokens of 1 for a 700,000-token prompt), the
	// incident's own signature: the engine dropped the prompt and decoded
	// over memory it did not write.
	SignDroppedPrompt = "dropped_prompt"
	// SignIdentityChange: the response or model ID changed inside one
	// response; pieces of another response were spliced in.
	SignIdentityChange = "identity_change"
	// SignForeignPlaceholder: a redaction placeholder another exchange
	// minted came back; only another request's text can hold it.
	SignForeignPlaceholder = "foreign_placeholder"
	// SignForeignCanary: another exchange's canary came back; only its
	// request held it.
	SignForeignCanary = "foreign_canary"
	// SignForeignText: text of another exchange's request, or its answer
	// to an unrelated request (inbound.cross_exchange).
	SignForeignText = "foreign_text"
	// SignTemplateFragment: chat-template control tokens or role headers
	// in the output, which a model decoding its own context does not
	// write.
	SignTemplateFragment = "template_fragment"
	// SignProbe: a synthetic probe, whose whole prompt aishield chose,
	// came back with material it did not hold; foreign by construction.
	SignProbe = "probe"
	// SignForeignEntity: a sensitive value in an answer that its request
	// did not carry. A model can write one of its own (an invented
	// address), so it says more about the answer than the service: it is
	// not in the default list.
	SignForeignEntity = "foreign_entity"
)

// Signs returns every sign a quarantine may name, in a fixed order.
func Signs() []string {
	return []string{SignDroppedPrompt, SignIdentityChange, SignForeignPlaceholder, SignForeignCanary,
		SignForeignText, SignTemplateFragment, SignProbe, SignForeignEntity}
}

// DefaultSigns are the signs a quarantine trips on when the policy names
// none: every sign of a faulty service except foreign_entity.
func DefaultSigns() []string {
	return []string{SignDroppedPrompt, SignIdentityChange, SignForeignPlaceholder, SignForeignCanary,
		SignForeignText, SignTemplateFragment, SignProbe}
}

// QuarantineAction is what a quarantine does to requests for its
// destination while it lasts.
type QuarantineAction string

const (
	// QuarantineBlock refuses every request.
	QuarantineBlock QuarantineAction = "block"
	// QuarantineLimit lets through only requests whose highest level is at
	// most Quarantine.MaxLevel (nothing is redacted to fit: a request above
	// it is refused).
	QuarantineLimit QuarantineAction = "limit"
	// QuarantineFailover sends requests to Quarantine.Failover instead,
	// decided under that destination's rules.
	QuarantineFailover QuarantineAction = "failover"
)

// Quarantine configures when a destination is quarantined and what
// happens while it is. A policy without a quarantine section gets
// DefaultQuarantine: on, tripping at the first sign, until a person
// clears it, letting through only the lowest level.
type Quarantine struct {
	// Off turns quarantine off for the destination (enabled: false).
	Off bool
	// Signs are the signs that count (see Signs).
	Signs []string
	// Threshold is how many signs within Window trip the quarantine.
	Threshold int
	// Window is the span over which signs are counted.
	Window time.Duration
	// Duration is how long a quarantine lasts; 0 means until cleared
	// ("aishield quarantine clear").
	Duration time.Duration
	// Action is what happens to requests while it lasts.
	Action QuarantineAction
	// MaxLevel is the highest level let through under QuarantineLimit.
	MaxLevel string
	// Failover names the destination requests go to under
	// QuarantineFailover.
	Failover string
	// Webhook, when set, receives a POST of a JSON event when the
	// quarantine trips and when it clears.
	Webhook string
	// Probe configures synthetic probes of the destination; nil sends
	// none.
	Probe *Probe
	// Field is the section's place in the file ("quarantine" or
	// "destinations[2].quarantine").
	Field string
}

// Probe configures synthetic probes: requests whose whole prompt aishield
// chose, so that any other material in their answers is foreign by
// construction.
type Probe struct {
	// Every is the interval between two probes of the destination
	// (across every process sharing the quarantine store).
	Every time.Duration
	// Model is the model the probe asks for.
	Model string
	// Words is how many random words the prompt holds.
	Words int
	// MaxTokens bounds the answer.
	MaxTokens int
	// MaxForeignWords is how many words of the answer may be absent
	// from the prompt before the probe counts as contaminated (a model's
	// own preamble, "Sure, here are the words:").
	MaxForeignWords int
	// KeyEnv names the environment variable holding the API key the
	// probe sends (read by the CLI, never by the library).
	KeyEnv string
}

// Quarantine defaults.
const (
	DefaultQuarantineThreshold = 1
	DefaultQuarantineWindow    = time.Hour
	DefaultProbeWords          = 24
	DefaultProbeMaxTokens      = 64
	DefaultProbeForeignWords   = 8
	DefaultProbeEvery          = 5 * time.Minute
)

// Quarantine returns the quarantine settings of d (its own section merged
// over the policy's), never nil.
func (p *Policy) Quarantine(d *Destination) *Quarantine {
	if d != nil && d.Quarantine != nil {
		return d.Quarantine
	}
	if p.quarantine != nil {
		return p.quarantine
	}
	return p.defaultQuarantine()
}

// defaultQuarantine is the quarantine of a policy without a section.
func (p *Policy) defaultQuarantine() *Quarantine {
	low := ""
	if len(p.Levels) > 0 {
		low = p.Levels[0]
	}
	return &Quarantine{Signs: DefaultSigns(), Threshold: DefaultQuarantineThreshold, Window: DefaultQuarantineWindow,
		Action: QuarantineLimit, MaxLevel: low, Field: "quarantine"}
}

// Trips reports whether sign counts toward q.
func (q *Quarantine) Trips(sign string) bool { return !q.Off && slices.Contains(q.Signs, sign) }

// Limited returns the destination requests for d are decided against while
// d is quarantined under QuarantineLimit: d with MaxLevel lowered to the
// quarantine's and everything above it blocked.
func (p *Policy) Limited(d *Destination) *Destination {
	q := p.Quarantine(d)
	l := *d
	l.MaxLevel, l.Action, l.BlockAt = q.MaxLevel, ActionBlock, ""
	if p.Rank(d.MaxLevel) < p.Rank(q.MaxLevel) {
		l.MaxLevel = d.MaxLevel
	}
	return &l
}

// WhileQuarantined returns what a request for d is decided against while d
// is quarantined: d itself with refuse set (action block: the request is
// evaluated, then refused), d limited to the quarantine's level (limit:
// anything above it is blocked), or the destination it fails over to
// (failover; refuse is set when that destination is not declared). The
// guard and "aishield policy test" (a case with quarantined: true) both
// decide through it.
func (p *Policy) WhileQuarantined(d *Destination) (to *Destination, refuse bool) {
	q := p.Quarantine(d)
	switch q.Action {
	case QuarantineLimit:
		return p.Limited(d), false
	case QuarantineFailover:
		if fd, ok := p.Destination(q.Failover); ok && fd != d {
			return fd, false
		}
	}
	return d, true
}

type rawQuarantine struct {
	Enabled   *bool     `mapstructure:"enabled"`
	Signs     []string  `mapstructure:"signs"`
	Threshold *int      `mapstructure:"threshold"`
	Window    *string   `mapstructure:"window"`
	Duration  *string   `mapstructure:"duration"`
	Action    *string   `mapstructure:"action"`
	MaxLevel  *string   `mapstructure:"max_level"`
	Failover  *string   `mapstructure:"failover"`
	Webhook   *string   `mapstructure:"webhook"`
	Probe     *rawProbe `mapstructure:"probe"`
}

type rawProbe struct {
	Every           string `mapstructure:"every"`
	Model           string `mapstructure:"model"`
	Words           int    `mapstructure:"words"`
	MaxTokens       int    `mapstructure:"max_tokens"`
	MaxForeignWords *int   `mapstructure:"max_foreign_words"`
	KeyEnv          string `mapstructure:"key_env"`
}

// quarantine translates a quarantine section merged over base (the
// policy's section, or the default).
func (t *translator) quarantine(f string, r *rawQuarantine, base *Quarantine) *Quarantine {
	q := *base
	q.Field = f
	q.Signs = slices.Clone(base.Signs)
	if r.Enabled != nil {
		q.Off = !*r.Enabled
	}
	if r.Signs != nil {
		q.Signs = nil
		for i, s := range r.Signs {
			if !slices.Contains(Signs(), s) {
				t.add(fmt.Sprintf("%s.signs[%d]", f, i), "unknown-sign", "unknown sign %q (signs: %s)", s, strings.Join(Signs(), ", "))
				continue
			}
			q.Signs = append(q.Signs, s)
		}
		if len(r.Signs) == 0 {
			t.add(f+".signs", "invalid-value", "a quarantine needs at least one sign (turn it off with enabled: false)")
		}
	}
	if r.Threshold != nil {
		q.Threshold = *r.Threshold
		if q.Threshold < 1 {
			t.add(f+".threshold", "invalid-value", "threshold is how many signs trip the quarantine: at least 1")
		}
	}
	if r.Window != nil {
		q.Window = t.duration(f+".window", *r.Window)
		if q.Window <= 0 {
			t.add(f+".window", "invalid-value", "window must be a positive duration (for example 1h)")
		}
	}
	if r.Duration != nil {
		switch *r.Duration {
		case "", "until_cleared":
			q.Duration = 0
		default:
			q.Duration = t.duration(f+".duration", *r.Duration)
			if q.Duration < 0 {
				t.add(f+".duration", "invalid-value", "duration may not be negative (until_cleared lasts until a person clears it)")
			}
		}
	}
	if r.Action != nil {
		switch a := QuarantineAction(*r.Action); a {
		case QuarantineBlock, QuarantineLimit, QuarantineFailover:
			q.Action = a
		default:
			t.add(f+".action", "unknown-action", "the quarantine action is block, limit or failover, not %q", *r.Action)
		}
	}
	if r.MaxLevel != nil {
		q.MaxLevel = t.level(f+".max_level", *r.MaxLevel, true)
	}
	if r.Failover != nil {
		q.Failover = *r.Failover
	}
	if q.Action == QuarantineFailover && q.Failover == "" {
		t.add(f+".failover", "required", "action failover needs the name of the destination to fail over to")
	}
	if r.Webhook != nil {
		q.Webhook = *r.Webhook
		if u, err := url.Parse(q.Webhook); q.Webhook != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
			t.add(f+".webhook", "invalid-value", "webhook must be an absolute http or https URL")
		}
	}
	if r.Probe != nil {
		pr := &Probe{Model: r.Probe.Model, Words: r.Probe.Words, MaxTokens: r.Probe.MaxTokens, KeyEnv: r.Probe.KeyEnv,
			Every: DefaultProbeEvery, MaxForeignWords: DefaultProbeForeignWords}
		if r.Probe.Every != "" {
			pr.Every = t.duration(f+".probe.every", r.Probe.Every)
			if pr.Every < time.Second {
				t.add(f+".probe.every", "invalid-value", "probes are at least a second apart")
			}
		}
		if pr.Words == 0 {
			pr.Words = DefaultProbeWords
		}
		if pr.Words < 8 || pr.Words > 512 {
			t.add(f+".probe.words", "invalid-value", "a probe holds 8 to 512 words")
		}
		if pr.MaxTokens == 0 {
			pr.MaxTokens = DefaultProbeMaxTokens
		}
		if pr.MaxTokens < 1 {
			t.add(f+".probe.max_tokens", "invalid-value", "max_tokens must be positive")
		}
		if r.Probe.MaxForeignWords != nil {
			pr.MaxForeignWords = *r.Probe.MaxForeignWords
			if pr.MaxForeignWords < 0 {
				t.add(f+".probe.max_foreign_words", "invalid-value", "max_foreign_words may not be negative")
			}
		}
		q.Probe = pr
	}
	return &q
}

// checkQuarantines checks what needs every destination declared: failover
// targets.
func (t *translator) checkQuarantines(p *Policy) {
	for _, d := range append(slices.Clone(p.Destinations), p.Default) {
		q := p.Quarantine(d)
		if q.Off || q.Action != QuarantineFailover {
			continue
		}
		fd, ok := p.Destination(q.Failover)
		switch {
		case !ok:
			t.add(q.Field+".failover", "unknown-destination", "no destination is named %q", q.Failover)
		case fd == d:
			t.add(q.Field+".failover", "invalid-value", "%s cannot fail over to itself", d.Name)
		case fd.BaseURL == "":
			t.add(q.Field+".failover", "invalid-value", "the failover destination %s needs a base_url to send requests to", fd.Name)
		}
	}
}

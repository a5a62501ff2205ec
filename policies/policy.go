package policies

import (
	"strings"
	"time"

	"github.com/aishield/aishield/classifiers"
)

// Action is what a destination does with a request.
type Action string

// The actions a decision can take.
const (
	ActionAllow  Action = "allow"
	ActionRedact Action = "redact"
	ActionBlock  Action = "block"
)

// rank orders actions from least to most restrictive.
func (a Action) rank() int {
	switch a {
	case ActionAllow:
		return 0
	case ActionRedact:
		return 1
	default:
		return 2
	}
}

// SignalAction is what the inbound verifier does when a signal fires.
type SignalAction string

// The actions an inbound signal can take.
const (
	SignalBlock SignalAction = "block"
	SignalFlag  SignalAction = "flag"
	SignalOff   SignalAction = "off"
)

// The inbound signals a policy can configure.
const (
	SignalForeignEntity    = "inbound.foreign_entity"
	SignalCanary           = "inbound.canary"
	SignalCrossExchange    = "inbound.cross_exchange"
	SignalTemplateFragment = "inbound.template_fragment"
	SignalUsageMismatch    = "inbound.usage_mismatch"
	// SignalForeignPlaceholder is raised by the guard itself: a redaction
	// placeholder in a response that this exchange did not mint.
	SignalForeignPlaceholder = "inbound.foreign_placeholder"
)

// Signals returns the inbound signal IDs in a fixed order.
func Signals() []string {
	return []string{SignalForeignEntity, SignalCanary, SignalCrossExchange, SignalTemplateFragment, SignalUsageMismatch, SignalForeignPlaceholder}
}

// The redaction styles a policy can choose.
const (
	// RedactPlaceholder replaces each value with a keyed placeholder unique
	// to the request; the guard restores it in the response (reversible).
	RedactPlaceholder = "placeholder"
	// RedactMask replaces each value with its masked preview (irreversible).
	RedactMask = "mask"
	// RedactRemove replaces each value with the detector ID in brackets,
	// such as "[pii.email]" (irreversible).
	RedactRemove = "remove"
)

// RedactionStyles returns the redaction styles a policy may name.
func RedactionStyles() []string { return []string{RedactPlaceholder, RedactMask, RedactRemove} }

// Policy is a checked policy. Build one with [Load], [Parse], [Preset] or
// [LoadRef]; the zero value is not usable.
//
// A Policy is immutable after loading and safe for concurrent use by
// multiple goroutines.
type Policy struct {
	// Name is the policy's name (the preset name for presets).
	Name string
	// Description says what the policy is for.
	Description string
	// Source is the file the policy was loaded from ("preset:NAME" for
	// presets); errors and diagnostics refer to it.
	Source string
	// Levels are the sensitivity levels, ordered lowest first.
	Levels []string
	// Classify maps detector IDs and globs to levels. The most specific
	// rule that matches a detector wins (see [Policy.LevelOf]).
	Classify []LevelRule
	// DefaultLevel is the level of a detector no rule maps; when the file
	// does not say, it is the highest level (unknown data is treated as
	// the most sensitive).
	DefaultLevel string
	// Custom are the policy's own classifiers.
	Custom []CustomRule
	// Detectors lists the built-in detector IDs or globs to run; empty
	// runs every built-in.
	Detectors []string
	// IncludeReserved reports reserved example values (RFC 2606 domains,
	// documented test numbers) too.
	IncludeReserved bool
	// Allow lists values never reported by the policy's scanners, outbound
	// or inbound (scan.allow; classifiers.Options.Allow): addresses and
	// names the organisation publishes, products named after people.
	Allow []string
	// MatchTimeout bounds each regexp2 match of a custom pattern; 0 leaves
	// the classifiers default.
	MatchTimeout time.Duration
	// Destinations are matched in order; the first match wins.
	Destinations []*Destination
	// Default applies to anything no destination matches. It is never nil
	// in a loaded policy.
	Default *Destination
	// FailOpen lets requests through when the guard itself fails
	// (failure_mode: open). The default, false, fails closed.
	FailOpen bool
	// Inbound configures response verification.
	Inbound Inbound
	// Redaction configures how values are redacted.
	Redaction Redaction
	// Audit configures the audit trail.
	Audit Audit

	// quarantine is the policy's quarantine section; nil means the
	// default (see [Policy.Quarantine]).
	quarantine *Quarantine
	// fields keeps where each part came from, for diagnostics.
	fields fieldMap
}

// fieldMap records the field path of parts of a policy, for diagnostics.
type fieldMap struct {
	custom       []string // field path of Custom[i]
	destinations []string // field path of Destinations[i]
}

// LevelRule maps detector IDs or globs to a level.
type LevelRule struct {
	// Detectors are detector IDs or globs ("*" matches any run of
	// characters, "?" one character).
	Detectors []string
	// Level is one of the policy's levels.
	Level string
	// Field is the rule's place in the file, such as "classify[2]".
	Field string
}

// CustomRule is a custom classifier with the level of what it finds.
type CustomRule struct {
	classifiers.CustomRule
	// Level is one of the policy's levels.
	Level string
}

// Destination is where requests go: an AI provider endpoint, a model or a
// family of models. Destinations of a loaded policy are never modified and
// are safe for concurrent use.
type Destination struct {
	// Name identifies the destination in the policy and on the command line.
	Name string
	// BaseURL matches request URLs that start with it (scheme and host
	// compared case-insensitively, path on segment boundaries); empty
	// matches any URL.
	BaseURL string
	// Provider matches the provider name case-insensitively ("openai",
	// "anthropic", ...); empty matches any provider.
	Provider string
	// Model is a glob over model names; empty matches any model.
	Model string
	// MaxLevel is the highest level this destination may receive.
	MaxLevel string
	// Action applies to findings above MaxLevel: ActionRedact or
	// ActionBlock.
	Action Action
	// BlockAt, when set, blocks findings at or above this level even when
	// Action is ActionRedact (for example: redact personal data, block
	// secrets and documents marked restricted).
	BlockAt string
	// MaxInputTokens is the destination's real input capacity (its KV
	// cache, not its advertised context); larger requests are blocked.
	// 0 means unlimited.
	MaxInputTokens int
	// Tokenizer, when set, declares that the destination counts tokens
	// with this tiktoken encoding (one of [Tokenizers]): the guard then
	// counts the request exactly with it, and a usage.prompt_tokens below
	// 97% of that count (a silently truncated prompt) is an
	// inbound.usage_mismatch. "" (unknown tokenizer) keeps the verifier's
	// loose check (prompt tokens far below a lower bound).
	Tokenizer string
	// Shared says the destination's infrastructure serves other customers.
	Shared bool
	// Contract says a contract (data processing agreement) covers it.
	Contract bool
	// IncidentContact is whom to tell when something goes wrong.
	IncidentContact string
	// Passthrough lists URL path globs ("/v1/audio/*") whose bodies the
	// guard may let through without reading them: a request or response
	// body of a type it cannot read (audio, images, binary files) on such a
	// path is sent or delivered unchecked and recorded as unverified.
	// Elsewhere such a body is refused (failing closed). Empty by default.
	Passthrough []string
	// Quarantine is the destination's own quarantine section merged over
	// the policy's; nil uses the policy's (see [Policy.Quarantine]).
	Quarantine *Quarantine
	// Field is the destination's place in the file.
	Field string
}

// PassesThrough reports whether d lets bodies the guard cannot read through
// unchecked on path (see Destination.Passthrough).
func (d *Destination) PassesThrough(path string) bool {
	for _, pat := range d.Passthrough {
		if globMatch(pat, path) {
			return true
		}
	}
	return false
}

// Tokenizers are the values a destination's tokenizer may take.
func Tokenizers() []string { return []string{"o200k_base", "cl100k_base"} }

// matchable reports whether Match can select the destination: a destination
// without any criterion is only reachable by name.
func (d *Destination) matchable() bool {
	return d.BaseURL != "" || d.Provider != "" || d.Model != ""
}

// Inbound configures the verification of responses.
type Inbound struct {
	// Signals maps each signal ID ("inbound.canary", ...) to its action.
	// Signals absent from the map block.
	Signals map[string]SignalAction
	// AllowList holds values and domains never counted as foreign.
	AllowList []string
	// Sourced lists the detector IDs whose foreign values are signals only
	// when another exchange's request carried them (inbound.sourced); empty
	// leaves the verifier's default (pii.person_name).
	Sourced []string
	// Canary places a per-request canary in requests.
	Canary bool
	// PrivateInstructions says that the instructions of requests (system
	// and developer messages) are their principals' own, as in a service
	// whose every customer writes its own system prompt: another
	// principal's instruction text in an answer then counts as foreign
	// unless the instructions of two or more principals hold it. By default
	// (false) instructions are the organisation's: text that another
	// principal's instructions hold is never foreign material (values in
	// them still are foreign entities; canaries are never instructions).
	PrivateInstructions bool
	// FingerprintTTL is how long exchanges are remembered for the
	// cross-exchange signal; 0 leaves the verifier's default.
	FingerprintTTL time.Duration
	// MaxExchanges bounds how many exchanges are remembered; 0 leaves the
	// verifier's default.
	MaxExchanges int
	// MaxMemory bounds the memory, in bytes, of the verifier's in-process
	// store of exchanges (policy: max_memory, a size such as "512MiB");
	// once reached, the oldest exchanges are forgotten first, as with
	// MaxExchanges. 0 means no bound but MaxExchanges.
	MaxMemory int64
}

// Action returns the action for signal, which may be given with or without
// its "inbound." prefix. Signals the policy does not mention block.
func (in Inbound) Action(signal string) SignalAction {
	if !strings.HasPrefix(signal, "inbound.") {
		signal = "inbound." + signal
	}
	if a, ok := in.Signals[signal]; ok {
		return a
	}
	return SignalBlock
}

// Redaction configures how redacted values are replaced.
type Redaction struct {
	// Style is one of [RedactionStyles]; "placeholder" (reversible) by
	// default.
	Style string
}

// Audit configures the audit trail.
type Audit struct {
	// Path is the JSON-lines file the audit trail is appended to.
	Path string
	// Enabled turns the audit trail on.
	Enabled bool
}

// Decision is the outcome of [Policy.Decide]: a plain value owned by the
// caller.
type Decision struct {
	// Action is what to do with the request.
	Action Action `json:"action"`
	// Level is the highest level found, "" when nothing was found.
	Level string `json:"level"`
	// Destination is the name of the destination decided for.
	Destination string `json:"destination"`
	// OverCapacity says the request exceeds the destination's
	// MaxInputTokens.
	OverCapacity bool `json:"over_capacity,omitempty"`
	// Reasons explain the decision rule by rule, in a deterministic
	// order, with masked previews only.
	Reasons []Reason `json:"reasons"`
	// Redact holds the indices, in ascending order, of the findings to
	// redact when Action is ActionRedact.
	Redact []int `json:"redact,omitempty"`
}

// Reason explains one part of a decision.
type Reason struct {
	// Rule is the policy rule that applied: a field path such as
	// "classify[1]", a custom rule ID, "default_level" or
	// "max_input_tokens".
	Rule string `json:"rule"`
	// Detector is the detector ID, empty for capacity reasons.
	Detector string `json:"detector,omitempty"`
	// Level is the level the rule gives the detector.
	Level string `json:"level,omitempty"`
	// Preview is the masked preview of the first finding; never a raw
	// value.
	Preview string `json:"preview,omitempty"`
	// Message says what happened in a sentence.
	Message string `json:"message"`
	// Count is how many findings the reason covers.
	Count int `json:"count"`
	// Action is what the reason asks for.
	Action Action `json:"action"`
}

package sdk

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// BlockedError reports a request the policy refused; nothing was sent. Its
// reasons carry masked previews only. Find it with errors.As.
type BlockedError struct {
	// Exchange is the ID of the refused exchange (see the audit trail).
	Exchange string
	// Destination is the policy destination the request was meant for.
	Destination string
	// Level is the highest sensitivity level found.
	Level string
	// OverCapacity reports a request above the destination's
	// max_input_tokens; Tokens is its local count.
	OverCapacity bool
	Tokens       int
	// Reasons explain the decision, rule by rule.
	Reasons []policies.Reason
}

func (e *BlockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aishield: request to %s blocked", e.Destination)
	if e.OverCapacity {
		fmt.Fprintf(&b, " (%d tokens over capacity)", e.Tokens)
	}
	for i, r := range e.Reasons {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if r.Message != "" {
			b.WriteString(r.Message)
		} else {
			fmt.Fprintf(&b, "%s x%d (%s) %s", r.Detector, r.Count, r.Level, r.Preview)
		}
	}
	return b.String()
}

// ContaminationError reports a response that carried foreign material: it
// was not delivered (or, for a stream, was cut before the unverified text).
// Signals carry masked previews only. Find it with errors.As.
type ContaminationError struct {
	// Exchange is the ID of the exchange whose response was contaminated.
	Exchange string
	// Destination is the policy destination that answered.
	Destination string
	// Signals are the blocking signals found.
	Signals []inbound.Signal
	// Sources are the IDs of the exchanges the material came from, when
	// known.
	Sources []string
}

func (e *ContaminationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "aishield: response from %s to exchange %s contains foreign material", e.Destination, e.Exchange)
	for i, s := range e.Signals {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(s.ID)
		if s.Detector != "" {
			b.WriteString(" " + s.Detector)
		}
		if s.Preview != "" {
			b.WriteString(" " + s.Preview)
		}
		if s.Message != "" {
			b.WriteString(" (" + s.Message + ")")
		}
	}
	if len(e.Sources) > 0 {
		b.WriteString("; from exchanges " + strings.Join(e.Sources, ", "))
	}
	return b.String()
}

// Stage names where the guard failed (GuardError.Stage, the audit
// record's failure and failed_open fields).
type Stage string

// The stages of the guard.
const (
	// StageRandom: Options.Rand failed; the request is not sent, whatever
	// the failure mode, since it has no ID nor secret.
	StageRandom Stage = "random"
	// StageParse: the request could not be read or parsed.
	StageParse Stage = "parse"
	// StageTokens: the token count failed.
	StageTokens Stage = "tokens"
	// StageClassify: a classifier timed out, panicked or misbehaved.
	StageClassify Stage = "classify"
	// StageRewrite: the redacted body could not be re-encoded.
	StageRewrite Stage = "rewrite"
	// StageVerify: the verifier failed or panicked.
	StageVerify Stage = "verify"
	// StageResponse: a whole response could not be read or parsed.
	StageResponse Stage = "response"
	// StageStream: a streamed response could not be parsed.
	StageStream Stage = "stream"
	// StageQuarantine: the quarantine store could not be read (and the
	// destination was not known to be quarantined).
	StageQuarantine Stage = "quarantine"
	// StageAudit: the audit trail cannot be written.
	StageAudit Stage = "audit"
	// StageGuard: any other failure of the guard.
	StageGuard Stage = "guard_error"
)

// Verdict is the inbound outcome of an exchange, as the audit trail
// records it.
type Verdict string

// The verdicts.
const (
	// VerdictClean: the response was verified and delivered.
	VerdictClean Verdict = "clean"
	// VerdictFlagged: signals the policy only flags; delivered.
	VerdictFlagged Verdict = "flagged"
	// VerdictContaminated: a blocking signal; not delivered (a stream is
	// cut before the unverified text).
	VerdictContaminated Verdict = "contaminated"
	// VerdictUnverified: delivered without verification (the guard failed
	// open, a body it cannot read as text, a response that did not come
	// back through the guard).
	VerdictUnverified Verdict = "unverified"
	// VerdictError: the upstream or the guard failed; nothing delivered
	// but the provider's own error.
	VerdictError Verdict = "error"
	// VerdictNotSent: the request was refused; nothing was sent.
	VerdictNotSent Verdict = "not_sent"
)

// ErrTooLarge is wrapped by the errors of bodies larger than the limit
// of the door that reads them (Transport.MaxBody): find it with errors.Is.
var ErrTooLarge = errors.New("body larger than the limit")

// GuardError reports a failure of the guard itself (a classifier timeout or
// panic, an unparsable body or stream, a verifier failure). With the default
// failure mode (closed) the request is not sent, or the response not
// delivered; a policy with failure_mode: open lets it through instead and
// only records the failure in the audit trail.
type GuardError struct {
	// Stage is where it failed.
	Stage Stage
	// Exchange is the exchange ID, when one was started.
	Exchange string
	Err      error
}

func (e *GuardError) Error() string {
	return fmt.Sprintf("aishield: guard failure (%s), failing closed: %v", e.Stage, e.Err)
}

func (e *GuardError) Unwrap() error { return e.Err }

// Package inbound holds the plain types of the seam between the guard (package
// sdk) and the inbound verifiers (package sdk/verify and any other
// implementation).
//
// The guard owns the exchange: it extracts and classifies the request,
// redacts it, sends it, and on the way back hands the response text to a
// [Verifier], whole or delta by delta when the response is streamed. The
// verifier reports [Signal]s ("inbound.*" IDs); the guard applies the
// policy's action to each (block, flag, off), restores this exchange's
// placeholders, and records the verdict in the audit trail.
//
// This package imports only classifiers so that both sdk and sdk/verify can
// import it without a cycle: sdk/verify implements [Verifier] without
// importing sdk, and sdk re-exports the interface as sdk.ResponseVerifier.
package inbound

import (
	"context"

	"github.com/aishield/aishield/classifiers"
)

// Exchange describes one request as the guard saw and sent it. The guard
// builds it once per exchange; a verifier must treat it as read-only.
type Exchange struct {
	// ID is the exchange ID, unique and unguessable (random hex).
	ID string
	// Destination is the name of the policy destination the request went to.
	Destination string
	// Provider is "openai", "anthropic" or "" when unknown.
	Provider string
	// Model is the model the request named.
	Model string
	// Texts are the request's texts as the caller wrote them, in document
	// order (messages, tool arguments and results, prompts, inputs).
	Texts []string
	// Roles are the speakers of the texts as the request format names them:
	// Roles[i] is the role of Texts[i] ("system", "developer", "user",
	// "assistant", "tool"; Anthropic's top-level system and the responses
	// API's instructions are "system"), "" when the format does not say.
	// nil when unknown. A verifier treats "system" and "developer" texts
	// as instructions (see [Instruction]).
	Roles []string
	// Sent are the same texts as they left (placeholders in place of
	// redacted values, the canary appended when there is one). Sent[i]
	// corresponds to Texts[i]; a canary text, when inserted, comes last and
	// has no counterpart in Texts.
	Sent []string
	// Findings are the outbound findings per text: Findings[i] refers to
	// Texts[i] (spans are byte offsets in Texts[i]).
	Findings [][]classifiers.Finding
	// FindingsKey identifies the key of the Findings' hashes
	// (classifiers.Scanner.KeyID); "" when unknown. A verifier whose
	// scanner has another key cannot compare them with the response's, and
	// scans Texts itself instead.
	FindingsKey string
	// Placeholders are the placeholders minted for this exchange.
	Placeholders []string
	// Tokens is the local token count of the request (exact when it was near
	// a limit, a conservative upper bound otherwise; see TokensExact).
	Tokens      int
	TokensExact bool
	// Canary is the canary text placed in the request, "" when none.
	Canary string
	// Streamed reports whether the response is a stream.
	Streamed bool
	// Principal names who sent the request (an API key's hash, a
	// configured header, Options of the SDK), "" when unknown. Material
	// that only exchanges of the same principal hold is that principal's
	// own, not foreign.
	Principal string
}

// Instruction reports whether role is an instruction role: "system" or
// "developer". Instructions are what an application sends with every
// request (a system prompt, a policy), as opposed to what its users write.
func Instruction(role string) bool { return role == "system" || role == "developer" }

// Delta is one piece of response text handed to a [Session]: the whole text
// of a non-streamed response, or the text of one stream event.
type Delta struct {
	// Text is response text after this exchange's placeholders have been
	// restored, i.e. what the caller would receive.
	Text string
	// ID and Model are the response or chunk ID and model as the provider
	// reported them for this piece ("" when absent).
	ID    string
	Model string
	// PromptTokens is the provider's count of prompt tokens when a piece
	// reports it before the end (Anthropic's message_start), 0 otherwise:
	// a prompt the provider did not process is then refused before any
	// text is released.
	PromptTokens int
}

// End is what the guard knows about a response once it is complete.
type End struct {
	// IDs are the distinct response IDs seen, in order of appearance.
	IDs []string
	// Model is the model the provider reported last.
	Model string
	// FinishReason is the provider's finish or stop reason.
	FinishReason string
	// HasUsage reports whether the provider reported usage; PromptTokens and
	// CompletionTokens are meaningful only then.
	HasUsage         bool
	PromptTokens     int
	CompletionTokens int
	// Truncated reports that the response ended without being complete: a
	// stream without its terminal event, an upstream that failed, a caller
	// that gave up.
	Truncated bool
	// Refused reports that the guard refused the response (a blocking
	// signal, its own or the session's): nothing of it reached the
	// caller, and nothing of it may become anyone's source.
	Refused bool
}

// Signal is one inbound finding. It never carries a raw value.
type Signal struct {
	// ID is one of the policies.Signal* constants (or another "inbound."
	// ID).
	ID string `json:"id"`
	// Detector is the classifier detector behind the signal when there is
	// one (e.g. "pii.email" for a foreign entity).
	Detector string `json:"detector,omitempty"`
	// Start and End are byte offsets in the response text fed so far
	// (concatenated Delta texts); both are 0 when the signal is not about a
	// span (e.g. a usage mismatch).
	Start int `json:"start,omitempty"`
	End   int `json:"end,omitempty"`
	// Preview is a masked rendering safe to print.
	Preview string `json:"preview,omitempty"`
	// Sources are the IDs of the exchanges the material came from, when
	// known.
	Sources []string `json:"sources,omitempty"`
	// Message explains the signal without revealing the value.
	Message string `json:"message,omitempty"`
	// Confidence is in (0, 1].
	Confidence float64 `json:"confidence,omitempty"`
	// Sign, when set, names the sign of a faulty service the signal is
	// (policies.SignDroppedPrompt, SignIdentityChange, ...) where its ID
	// alone does not tell (an inbound.usage_mismatch).
	Sign string `json:"sign,omitempty"`
}

// Verifier checks responses for foreign material. Implementations must be
// safe for concurrent use: the guard calls Begin from many goroutines.
type Verifier interface {
	// Begin starts the verification of the response to ex. The guard calls
	// it after the request was sent and before reading the response.
	Begin(ctx context.Context, ex *Exchange) (Session, error)
}

// Session verifies the response of one exchange. The guard uses a Session
// from one goroutine at a time: Write zero or more times, then Close exactly
// once (also when the stream fails or is cut).
type Session interface {
	// Write feeds the next piece of response text and returns the signals
	// found so far that were not returned before. Text the session may still
	// need to decide about (the last HoldBack bytes of everything written)
	// is not released to the caller by the guard until a later Write or
	// Close.
	Write(ctx context.Context, d Delta) ([]Signal, error)
	// HoldBack is the number of trailing bytes of the text written so far
	// that the session cannot yet vouch for (the longest thing that can
	// straddle two pieces). It must not grow without bound.
	HoldBack() int
	// Close ends the response: it checks the remaining text and the
	// response metadata, records what the verifier remembers of the
	// exchange (if anything) and returns the remaining signals.
	Close(ctx context.Context, end End) ([]Signal, error)
}

// CanaryMinter is an optional capability of a [Verifier]: when the policy
// asks for canaries (policies.Inbound.Canary) and the verifier implements
// it, the guard asks for a canary per exchange and places it in the request
// (as an extra system text). The returned text is sent to the provider
// verbatim.
type CanaryMinter interface {
	MintCanary(ctx context.Context, ex *Exchange) (string, error)
}

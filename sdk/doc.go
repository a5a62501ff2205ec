// Package sdk is the aishield guard: one code path that every door goes
// through. The doors are thin: the go-openai wrapper [NewClient], the
// [Transport] for any HTTP client, the proxy (package sdk/proxy), the CLI
// filter ([Guard.CheckText], behind "aishield redact") and the capture
// checker ([Guard.Replay], behind "aishield verify").
//
// # Building a guard
//
// [New] needs only a policy:
//
//	g, err := sdk.New(ctx, sdk.Options{Policy: pol})
//
// builds the policy's scanner and the standard response verifier (package
// sdk/verify, from the policy's inbound section, sharing the guard's scanner
// so the request's own findings serve as its own values): every response is
// verified by default. [Options.NoVerify] turns verification off explicitly
// (responses are then checked only for placeholders the exchange did not
// mint, and the audit record's checks say so); [Options.Verifier] replaces
// the verifier; [Options.Store] is where it remembers recent exchanges (in
// memory by default; a fingerprint.RedisStore shares them between
// processes, which must then share [Options.Key] and [Options.CanaryKey]).
//
// # Outbound
//
// [Guard.Check] extracts every text of a request (OpenAI chat messages of
// every role with multi-part content, tool calls' arguments and tool
// results, legacy function calls; completions prompts; responses-API
// instructions and input items; embeddings inputs; Anthropic system prompts,
// content blocks, tool_use inputs and tool_results; every string of an
// unknown JSON body) and evaluates them with the policy's
// policies.Evaluator, the same evaluation "aishield policy test" and
// "aishield scan --destination" run:
//
//   - capacity first: a request above the destination's max_input_tokens is
//     refused before anything else, unclassified (the token count brackets
//     the real count in one linear pass and tokenizes exactly only when the
//     limit falls in the bracket);
//   - then classification and the decision: block returns *[BlockedError]
//     with masked reasons, and nothing is sent;
//   - redact replaces each value by a placeholder such as
//     "[[PII_EMAIL_3f9a1c2b]]", derived with HMAC-SHA256 from a secret drawn
//     for this exchange alone: unguessable, the same value always the same
//     placeholder within the request, never the same across requests. The
//     exchange's [Vault] maps them back.
//
// When the policy asks for canaries, the verifier's canary is placed after
// the last part of the request a provider can cache, so that prefix caching
// keeps working: a trailing system message for chat, a trailing user turn
// for Anthropic messages, the end of the input for the responses API.
//
// # Inbound
//
// [Exchange.Response] (whole bodies) and [Exchange.Stream] (SSE streams of
// both providers) restore this exchange's placeholders and only those: a
// placeholder-shaped token minted for another request is left in place and
// reported as the signal "inbound.foreign_placeholder" (blocking by default),
// because a response carrying another request's placeholder is by
// definition foreign material. The keyed tag (the hex digits) is a
// placeholder's identity: a placeholder of this exchange whose label the
// model mangled ("[[PIPII_EMAIL_3f9a1c2b]]") is restored, one whose tag the
// model spliced from two of this exchange's tags is left in place without
// a signal, and only a tag this exchange never minted is foreign. A
// placeholder cut by max_tokens or by the end of a stream is never
// delivered half, and the exchange's own canary line is stripped from the
// answer.
//
// Error responses (any non-2xx status) are the provider's, not model
// output: they are delivered as they came, without restoring placeholders
// and without the verifier (nothing of them is remembered, so the same
// error text answered twice is not cross-exchange material); only the
// exact foreign-placeholder check applies to them.
//
// A streamed OpenAI chat or completions request that does not ask for
// usage is sent with stream_options.include_usage (unless
// Options.NoStreamUsage), so that the provider's prompt count reaches the
// verifier, and the usage chunk is removed from what the caller reads. When
// the destination declares its tokenizer (policies.Destination.Tokenizer),
// a prompt count under [TightUsageRatio] of the exact local count of the
// prompt as sent is inbound.usage_mismatch: a silently truncated prompt.
//
// Streams are restored with a hold-back window (a placeholder split across
// events is completed before release), and each event is released only
// once the verifier vouches for its text; on a blocking signal the stream
// is cut and reading it returns *[ContaminationError]. Each exchange ends
// with a [Verdict] (clean, flagged, contaminated, unverified, error,
// not_sent).
//
// # Failing closed
//
// A failure of the guard itself (a classifier timeout or panic, an
// unparsable body or stream, a verifier error) returns *[GuardError], whose
// [Stage] says where, and nothing is sent or delivered, unless the policy
// says failure_mode: open, in which case the exchange goes through
// unchecked and the audit trail says so. A body over a door's limit wraps
// [ErrTooLarge].
//
// # Inbound seam
//
// Response verification is pluggable. The guard calls a [ResponseVerifier]
// (an alias of inbound.Verifier) on every response, streamed or not: Begin
// once the request is decided, Write with each piece of restored response
// text, HoldBack to know how much of the tail is not yet vouched for, Close
// at the end with the response metadata (IDs, usage, finish reason). The
// seam's plain types (inbound.Exchange, inbound.Delta, inbound.End,
// inbound.Signal) live in package sdk/inbound, which imports only
// classifiers, so that sdk/verify implements the interface without
// importing sdk. When the verifier also implements inbound.CanaryMinter and
// the policy asks for canaries, the guard places the minted canary in the
// request. Signals are acted on by the guard per the policy
// (policies.Inbound.Action): block refuses the response with a
// *[ContaminationError], flag records the signal in the audit trail, off
// ignores it.
//
// # Audit
//
// Every exchange leaves one [AuditRecord] (time, exchange ID, destination,
// model, token count, decision, counts per detector, verdict, the inbound
// checks that ran and signal counts; never a value), handed to
// [Options.OnRecord] and appended, when there is a trail, as one JSON line
// carrying the SHA-256 of the line before, or with [Options.AuditKey] its
// HMAC-SHA256 under that key, closed by a signed [AuditHead] when the log is
// closed ([VerifyAudit] checks the chain and the head; "aishield audit
// verify|query" use it). The trail is [Options.Audit] (a new chain),
// [Options.AuditLog], or the file of the policy's audit section, which [New]
// opens continuing its chain and [Guard.Close] closes.
//
// Guard, Transport, Client and AuditLog are safe for concurrent use; an
// Exchange belongs to one request and is used from one goroutine at a time,
// and so is a Vault.
package sdk

import "github.com/aishield/aishield/sdk/inbound"

// ResponseVerifier checks responses for foreign material; see
// inbound.Verifier. sdk/verify provides the standard implementation.
type ResponseVerifier = inbound.Verifier

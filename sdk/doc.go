// Package sdk is the aishield guard: one code path that every door (the
// go-openai wrapper [NewClient], the [Transport] for any HTTP client, the
// proxy and the CLI) goes through.
//
// # Inbound seam
//
// Response verification is pluggable. The guard calls a [ResponseVerifier]
// (an alias of inbound.Verifier) on every response, streamed or not. The
// seam's plain types (inbound.Exchange, inbound.Delta, inbound.End,
// inbound.Signal) live in package sdk/inbound, which imports only
// classifiers, so that sdk/verify can implement the interface without
// importing sdk. Signals found are acted on by the guard per the policy
// (policies.Inbound.Action): block cuts the response with a
// [*ContaminationError], flag records the signal in the audit trail.
package sdk

import "github.com/aishield/aishield/sdk/inbound"

// ResponseVerifier checks responses for foreign material; see
// inbound.Verifier. sdk/verify provides the standard implementation.
type ResponseVerifier = inbound.Verifier

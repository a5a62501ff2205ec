package sdk

import (
	"context"
	"sort"
	"strings"

	"github.com/aishield/aishield/internal/wire"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// foreignSignals turns foreign placeholder tokens into signals; base is the
// offset of the text in the response text fed so far.
func foreignSignals(fs []foreignToken, base int) []inbound.Signal {
	out := make([]inbound.Signal, 0, len(fs))
	for _, f := range fs {
		out = append(out, inbound.Signal{
			ID: policies.SignalForeignPlaceholder, Start: base + f.start, End: base + f.end,
			Preview:    "[[" + f.label + "_…]]",
			Message:    "a redaction placeholder this exchange did not mint (another request's), not restored",
			Confidence: 1,
		})
	}
	return out
}

// apply files signals per the policy's actions and returns the blocking
// ones.
func (x *Exchange) apply(sigs []inbound.Signal) []inbound.Signal {
	var blocking []inbound.Signal
	for _, s := range sigs {
		switch x.g.policy.Inbound.Action(s.ID) {
		case policies.SignalOff:
			continue
		case policies.SignalFlag:
			x.signals = append(x.signals, Signal{Signal: s, Action: policies.SignalFlag})
		default:
			x.signals = append(x.signals, Signal{Signal: s, Action: policies.SignalBlock})
			blocking = append(blocking, s)
		}
	}
	return blocking
}

func (x *Exchange) contamination(blocking []inbound.Signal) *ContaminationError {
	e := &ContaminationError{Exchange: x.ID, Destination: x.Destination, Signals: blocking}
	seen := map[string]bool{}
	for _, s := range blocking {
		for _, src := range s.Sources {
			if !seen[src] {
				seen[src] = true
				e.Sources = append(e.Sources, src)
			}
		}
	}
	sort.Strings(e.Sources)
	return e
}

// verdict sets the exchange's verdict from what was filed.
func (x *Exchange) settle(blocked bool) {
	switch {
	case blocked:
		x.verdict = VerdictContaminated
	case len(x.signals) > 0:
		x.verdict = VerdictFlagged
	case x.session == nil && x.g.verifier != nil, x.FailedOpen:
		x.verdict = VerdictUnverified
	case x.session == nil:
		x.verdict = VerdictClean // placeholders checked; no verifier configured
	default:
		x.verdict = VerdictClean
	}
}

// Restore replaces this exchange's placeholders in text by their values and
// reports placeholder-shaped tokens of other exchanges as signals (they are
// left in place).
func (x *Exchange) Restore(text string) (string, []inbound.Signal) {
	res := x.vault.restore(text, false)
	return res.text, foreignSignals(res.foreign, 0)
}

// Fail records an exchange whose response never came (the upstream failed
// or the caller gave up).
func (x *Exchange) Fail(status int) {
	x.status = status
	if x.session != nil {
		_, _ = safeCall(func() ([]inbound.Signal, error) {
			return x.session.Close(context.Background(), inbound.End{Truncated: true})
		})
	}
	x.verdict = VerdictError
	x.g.record(x)
}

// Response verifies a whole (non-streamed) response body and restores this
// exchange's placeholders in it. It returns the body to deliver, or
// *ContaminationError when a blocking signal fired (the body must not be
// delivered), or *GuardError when the body cannot be checked and the
// policy fails closed. Every status below 400 is verified (the official
// clients take them all for success): its body must be JSON (a JSON media
// type, or none and a body that parses as JSON) or UTF-8 plain text, any
// other type fails with *GuardError wrapping ErrUnreadableResponse. Bodies
// of statuses from 400 up are the provider's errors (see errorResponse).
func (x *Exchange) Response(ctx context.Context, status int, contentType string, body []byte) (out []byte, err error) {
	x.status = status
	defer x.g.record(x)
	if x.FailedOpen {
		x.verdict = VerdictUnverified
		return body, nil
	}
	fail := func(stage Stage, e error) ([]byte, error) {
		if x.session != nil {
			_, _ = safeCall(func() ([]inbound.Signal, error) {
				return x.session.Close(ctx, inbound.End{Refused: true})
			})
		}
		if x.g.policy.FailOpen {
			x.FailedOpen, x.failNote, x.verdict = true, stage, VerdictUnverified
			return body, nil
		}
		x.verdict, x.failNote = VerdictError, stage
		return nil, &GuardError{Stage: stage, Exchange: x.ID, Err: e}
	}
	if status >= 400 {
		return x.errorResponse(ctx, status, contentType, body)
	}
	var resp *wire.Response
	switch {
	case len(strings.TrimSpace(string(body))) == 0:
		resp = &wire.Response{Kind: x.kind}
	case bodyKind(contentType, body) == bodyJSON:
		resp, err = wire.ParseResponse(x.kind, body)
		if err != nil {
			return fail(StageResponse, err)
		}
	case bodyKind(contentType, body) == bodyText:
		resp = &wire.Response{Kind: x.kind, Segments: []wire.Segment{{Field: "body", Text: string(body)}}}
	default:
		// An SSE stream (see Stream), audio, images, HTML, binary files:
		// nothing the guard reads, so nothing it could vouch for.
		return fail(StageResponse, unreadableError(x, contentType))
	}
	var sigs []inbound.Signal
	var all strings.Builder
	restored := make([]string, len(resp.Segments))
	changed := false
	for i, seg := range resp.Segments {
		if i > 0 {
			all.WriteByte('\n')
		}
		res := x.vault.restore(x.vault.trimCut(seg.Text), seg.JSON)
		sigs = append(sigs, foreignSignals(res.foreign, all.Len())...)
		restored[i] = res.text
		changed = changed || res.text != seg.Text
		all.WriteString(res.text)
	}
	end := endOf(resp.Summary(), false)
	if x.session != nil {
		s1, err := safeCall(func() ([]inbound.Signal, error) {
			return x.session.Write(ctx, inbound.Delta{Text: all.String(), ID: resp.ID, Model: resp.Model})
		})
		if err != nil {
			return fail(StageVerify, err)
		}
		sigs = append(sigs, s1...)
	}
	sigs, err = x.closeSession(ctx, end, sigs)
	if err != nil {
		return fail(StageVerify, err)
	}
	if blocking := x.apply(sigs); len(blocking) > 0 {
		x.settle(true)
		return nil, x.contamination(blocking)
	}
	x.settle(false)
	if !changed {
		return body, nil
	}
	if resp.Segments[0].Field == "body" && len(resp.Segments) == 1 && bodyKind(contentType, body) == bodyText {
		return []byte(restored[0]), nil
	}
	for i, t := range restored {
		if t != resp.Segments[i].Text {
			if err := resp.Set(i, t); err != nil {
				return fail(StageResponse, err)
			}
		}
	}
	out, err = resp.Encode()
	if err != nil {
		return fail(StageResponse, err)
	}
	return out, nil
}

// errorResponse handles a non-2xx response: the provider's own error (a 400
// context_length_exceeded, a 429, a 5xx), written by its front end and not
// by the model. It is delivered as it is, in the API's own format:
//
//   - it is not restored: an error that quotes the request quotes what was
//     sent, placeholders included, and stays that way;
//   - it is not handed to the verifier, so nothing of it is fingerprinted
//     or remembered: the same error text answered to many requests (the
//     normal case) is not cross-exchange contamination, and its entities
//     are not the model's. The verifier session is closed without text,
//     which records nothing of the response;
//   - it is still searched for placeholders that this exchange did not
//     mint (an exact check, with no false alarms): an error body carrying
//     another request's placeholder is refused like any response.
func (x *Exchange) errorResponse(ctx context.Context, status int, contentType string, body []byte) ([]byte, error) {
	if x.session != nil {
		_, _ = safeCall(func() ([]inbound.Signal, error) {
			return x.session.Close(ctx, inbound.End{Truncated: true})
		})
	}
	var sigs []inbound.Signal
	if len(body) > 0 && (isJSON(contentType) || strings.HasPrefix(strings.ToLower(contentType), "text/")) {
		sigs = foreignSignals(x.vault.restore(string(body), false).foreign, 0)
	}
	if blocking := x.apply(sigs); len(blocking) > 0 {
		x.settle(true)
		return nil, x.contamination(blocking)
	}
	x.verdict = VerdictError
	if len(x.signals) > 0 {
		x.verdict = VerdictFlagged
	}
	return body, nil
}

// endOf turns what a response said about itself into what the verifier
// gets at its end; truncated reports a stream without its terminal event.
func endOf(sum wire.Summary, truncated bool) inbound.End {
	return inbound.End{IDs: sum.IDs, Model: sum.Model, FinishReason: sum.FinishReason, HasUsage: sum.Usage.Present,
		PromptTokens: sum.Usage.PromptTokens, CompletionTokens: sum.Usage.CompletionTokens, Truncated: truncated}
}

// closeSession ends the verification of a complete response whose signals
// so far are sigs, and returns them with the rest: the guard's exact usage
// check and the session's last signals. The session is told whether the
// guard refuses the response already, so that a refused answer is never
// remembered as anyone's source.
func (x *Exchange) closeSession(ctx context.Context, end inbound.End, sigs []inbound.Signal) ([]inbound.Signal, error) {
	tight, err := x.tightUsage(end, sigs)
	if err != nil {
		return sigs, err
	}
	if x.session == nil {
		return append(sigs, tight...), nil
	}
	end.Refused = x.blocks(sigs) || x.blocks(tight)
	last, err := safeCall(func() ([]inbound.Signal, error) { return x.session.Close(ctx, end) })
	for _, s := range last {
		if s.ID == policies.SignalUsageMismatch {
			if x.usageFlagged {
				continue // reported on the stream event that counted the prompt
			}
			tight = nil // reported once
		}
		sigs = append(sigs, s)
	}
	return append(sigs, tight...), err
}

// blocks reports whether any of sigs blocks under the policy.
func (x *Exchange) blocks(sigs []inbound.Signal) bool {
	for _, s := range sigs {
		if x.g.policy.Inbound.Action(s.ID) == policies.SignalBlock {
			return true
		}
	}
	return false
}

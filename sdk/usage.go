package sdk

import (
	"fmt"

	"github.com/aishield/aishield/internal/tokens"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// TightUsageRatio is the share of the exact local token count of the
// prompt below which a provider's usage.prompt_tokens is a usage mismatch,
// for a destination whose policy declares its tokenizer
// (policies.Destination.Tokenizer). The provider counts the same texts with
// the same encoding plus its chat template's role and separator tokens, so
// an honest count is at or above the local one; it may fall short only where
// a text boundary merges two tokens, which the check allows one token per
// prompt text for. A prompt silently truncated to fit (an engine keeping
// only its last tokens) falls far below. Destinations with an unknown
// tokenizer keep the verifier's loose check (sdk/verify's UsageRatio of a
// lower bound), which catches a dropped prompt but not a truncated one.
const TightUsageRatio = 0.97

// usageChecked reports whether the provider's prompt count is checked
// against the exact local count (tightUsage).
func (x *Exchange) usageChecked() bool {
	return x.tokenizer && len(x.prompt) > 0 &&
		x.g.policy.Inbound.Action(policies.SignalUsageMismatch) != policies.SignalOff
}

// promptCount is the exact token count of an exchange's prompt, counted
// once; done is closed when n and err are set.
type promptCount struct {
	done chan struct{}
	n    int
	err  error
}

// countAhead starts the exact count of the prompt in the background when
// the usage check may need it: called as the request leaves, it counts
// while the provider works, off the time the client waits for the answer.
// The prompt must not change after.
func (x *Exchange) countAhead() {
	if x.count != nil || !x.usageChecked() {
		return
	}
	c := &promptCount{done: make(chan struct{})}
	x.count = c
	eval, dest, prompt := x.g.eval, x.dest, x.prompt
	go func() {
		defer close(c.done)
		c.n, c.err = safeCall(func() (int, error) { return exactCount(eval, dest, prompt) })
	}()
}

// exactPrompt returns the exact token count of the prompt: the one
// counted ahead, once done, or counted now.
func (x *Exchange) exactPrompt() (int, error) {
	if x.count == nil {
		return exactCount(x.g.eval, x.dest, x.prompt)
	}
	<-x.count.done
	return x.count.n, x.count.err
}

// exactCount is the exact token count of texts in d's tokenizer.
func exactCount(eval *policies.Evaluator, d *policies.Destination, texts []string) (int, error) {
	n := 0
	for _, t := range texts {
		k, err := eval.Exact(d, t)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// tightUsage checks the provider's prompt token count against the exact
// local count of the prompt as sent, when the destination declared its
// tokenizer. prior are the signals already found (a usage mismatch the
// verifier reported is not reported twice).
func (x *Exchange) tightUsage(end inbound.End, prior []inbound.Signal) ([]inbound.Signal, error) {
	if !x.usageChecked() || !end.HasUsage || x.usageFlagged ||
		x.usagePassed > 0 && end.PromptTokens == x.usagePassed {
		return nil, nil
	}
	for _, s := range prior {
		if s.ID == policies.SignalUsageMismatch {
			return nil, nil
		}
	}
	reported := float64(end.PromptTokens)
	slack := float64(len(x.prompt))
	// The bounds decide most cases without tokenizing: an honest count at
	// or above the ratio of the upper bound, or a count short of the ratio
	// of the lower bound.
	lower, upper := 0, 0
	for _, t := range x.prompt {
		l, u := tokens.Bounds(t)
		lower += l
		upper += u
	}
	if reported+slack >= TightUsageRatio*float64(upper) {
		x.usagePassed = end.PromptTokens
		return nil, nil
	}
	n, exact := lower, false
	if reported+slack >= TightUsageRatio*float64(lower) {
		var err error
		if n, err = x.exactPrompt(); err != nil {
			return nil, err
		}
		exact = true
		if reported+slack >= TightUsageRatio*float64(n) {
			x.usagePassed = end.PromptTokens
			return nil, nil
		}
	}
	what := "exactly"
	if !exact {
		what = "at least"
	}
	enc := x.dest.Tokenizer
	return []inbound.Signal{{ID: policies.SignalUsageMismatch, Confidence: 0.95,
		Message: fmt.Sprintf("the provider counted %d prompt tokens for a prompt of %s %d %s tokens (the destination's tokenizer): it did not process the whole prompt (truncated or dropped)",
			end.PromptTokens, what, n, enc)}}, nil
}

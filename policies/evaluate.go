package policies

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/tokens"
)

// Classifier finds sensitive values in a text. *classifiers.Scanner
// implements it. Implementations must be safe for concurrent use.
type Classifier interface {
	ScanString(ctx context.Context, text string) ([]classifiers.Finding, error)
}

var _ Classifier = (*classifiers.Scanner)(nil)

// DefaultTimeout bounds the classification of one request when
// EvaluatorOptions.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// EvaluatorOptions configure an [Evaluator].
type EvaluatorOptions struct {
	// Classifier classifies texts; nil builds the policy's scanner with
	// Key (see [Policy.NewScanner]).
	Classifier Classifier
	// Key keys the finding hashes of the scanner built when Classifier is
	// nil; nil draws a random key.
	Key []byte
	// Timeout bounds the classification of one request; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Encoding is the tiktoken encoding of exact token counts for
	// destinations that declare no tokenizer; "" means o200k_base.
	Encoding string
}

// Evaluator is the one evaluation of a request against a policy, shared by
// every door (the guard, "aishield scan --destination", "aishield policy
// test"): capacity first, then classification, then the decision. A
// request over its destination's real capacity is refused without being
// classified, so its decision carries the capacity reason alone, whoever
// evaluates it.
//
// An Evaluator is safe for concurrent use.
type Evaluator struct {
	policy     *Policy
	classifier Classifier
	timeout    time.Duration
	counter    *tokens.Counter
	counters   map[string]*tokens.Counter // per declared destination tokenizer
}

// NewEvaluator returns an Evaluator of p. It fails when p's scanner does
// not build (a custom rule that does not compile).
func NewEvaluator(p *Policy, opts EvaluatorOptions) (*Evaluator, error) {
	if p == nil {
		return nil, errors.New("policies: NewEvaluator without a policy")
	}
	e := &Evaluator{policy: p, classifier: opts.Classifier, timeout: opts.Timeout,
		counter: &tokens.Counter{Encoding: opts.Encoding}, counters: map[string]*tokens.Counter{}}
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	for _, d := range append(append([]*Destination(nil), p.Destinations...), p.Default) {
		if d != nil && d.Tokenizer != "" && e.counters[d.Tokenizer] == nil {
			e.counters[d.Tokenizer] = &tokens.Counter{Encoding: d.Tokenizer}
		}
	}
	if e.classifier == nil {
		sc, err := p.NewScanner(opts.Key)
		if err != nil {
			return nil, fmt.Errorf("policy %q: %w", p.Name, err)
		}
		e.classifier = sc
	}
	return e, nil
}

// Policy returns the evaluator's policy.
func (e *Evaluator) Policy() *Policy { return e.policy }

// Classifier returns the classifier the evaluator uses.
func (e *Evaluator) Classifier() Classifier { return e.classifier }

// Exact returns the exact token count of text with the tokenizer d
// declares; it fails when d declares none.
func (e *Evaluator) Exact(d *Destination, text string) (int, error) {
	c := e.counters[d.Tokenizer]
	if c == nil {
		return 0, fmt.Errorf("destination %s declares no tokenizer", d.Name)
	}
	return c.Exact(text)
}

// Input is what is evaluated: the texts of one request.
type Input struct {
	// Texts are the request's texts (messages, tool results, a document).
	Texts []string
	// Findings, when not nil, are the texts' findings already found
	// (Findings[i] for Texts[i], a scanned document's for instance); the
	// evaluator then does not classify again.
	Findings [][]classifiers.Finding
	// Tokens, when positive, is the request's token count as the caller
	// states it (a policy test case's tokens:); otherwise the texts are
	// counted.
	Tokens int
}

// Evaluation is the outcome of [Evaluator.Evaluate].
type Evaluation struct {
	// Destination is the destination evaluated for.
	Destination *Destination
	// Tokens is the token count: exact when TokensExact, else a
	// conservative estimate (exact counts run only near a limit).
	Tokens      int
	TokensExact bool
	// Tokenizer is the destination's declared tokenizer ("" when it
	// declares none): [Evaluator.Exact] counts like the provider then.
	Tokenizer string
	// Findings are the findings per text; nil when the request is over
	// capacity (it is not classified).
	Findings [][]classifiers.Finding
	// Decision is the policy's decision.
	Decision Decision
}

// Flat returns the findings of every text in order, with the index of the
// text each came from: Decision.Redact indexes this list.
func (ev *Evaluation) Flat() (flat []classifiers.Finding, text []int) {
	for i, fs := range ev.Findings {
		for _, f := range fs {
			flat = append(flat, f)
			text = append(text, i)
		}
	}
	return flat, text
}

// Evaluation stages, reported by *EvaluationError.
const (
	StageTokens   = "tokens"
	StageClassify = "classify"
)

// EvaluationError reports an evaluation that could not be completed (a
// classifier that timed out, panicked or returned spans outside its text;
// a tokenizer that failed). It never holds a raw value.
type EvaluationError struct {
	// Stage is StageTokens or StageClassify.
	Stage string
	Err   error
}

func (e *EvaluationError) Error() string { return e.Stage + ": " + e.Err.Error() }
func (e *EvaluationError) Unwrap() error { return e.Err }

// Evaluate evaluates in for d (nil: the policy's default destination):
// the capacity check first, and for a request within capacity the
// classification of every text (within the evaluator's timeout; a panic in
// a classifier is an error naming no value) and the decision.
func (e *Evaluator) Evaluate(ctx context.Context, d *Destination, in Input) (*Evaluation, error) {
	if d == nil {
		d = e.policy.Default
	}
	ev := &Evaluation{Destination: d, Tokens: in.Tokens}
	counter := e.counter
	if c := e.counters[d.Tokenizer]; c != nil {
		counter, ev.Tokenizer = c, d.Tokenizer
	}
	over := false
	if in.Tokens > 0 {
		over = d.MaxInputTokens > 0 && in.Tokens > d.MaxInputTokens
	} else {
		count, err := counter.Check(in.Texts, d.MaxInputTokens)
		if err != nil {
			return nil, &EvaluationError{Stage: StageTokens, Err: err}
		}
		ev.Tokens, ev.TokensExact, over = count.Tokens, count.Exact, count.Over
	}
	if over {
		ev.Decision = e.policy.Decide(d, nil, max(ev.Tokens, d.MaxInputTokens+1))
		return ev, nil
	}
	if in.Findings != nil {
		if len(in.Findings) != len(in.Texts) {
			return nil, &EvaluationError{Stage: StageClassify, Err: fmt.Errorf("%d findings lists for %d texts", len(in.Findings), len(in.Texts))}
		}
		ev.Findings = in.Findings
	} else {
		fs, err := e.classify(ctx, in.Texts)
		if err != nil {
			return nil, &EvaluationError{Stage: StageClassify, Err: err}
		}
		ev.Findings = fs
	}
	flat, _ := ev.Flat()
	ev.Decision = e.policy.Decide(d, flat, ev.Tokens)
	return ev, nil
}

// classify scans every text within the evaluator's timeout.
func (e *Evaluator) classify(ctx context.Context, texts []string) ([][]classifiers.Finding, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	out := make([][]classifiers.Finding, len(texts))
	for i, t := range texts {
		if t == "" {
			continue
		}
		fs, err := scanSafely(ctx, e.classifier, t)
		if err != nil {
			return nil, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, fmt.Errorf("classification: %w", cerr)
		}
		for _, f := range fs {
			if f.Start < 0 || f.End > len(t) || f.Start > f.End {
				return nil, fmt.Errorf("classifier returned span [%d,%d) outside a text of %d bytes", f.Start, f.End, len(t))
			}
		}
		out[i] = fs
	}
	return out, nil
}

// scanSafely runs the classifier, turning a panic into an error that names
// no value.
func scanSafely(ctx context.Context, c Classifier, text string) (fs []classifiers.Finding, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Stack: string(debug.Stack())}
		}
	}()
	return c.ScanString(ctx, text)
}

// PanicError reports a recovered panic in a classifier or verifier. It
// keeps the stack (code locations) but not the panic value, which could
// hold input.
type PanicError struct{ Stack string }

func (e *PanicError) Error() string { return "panic in a detector or verifier (value withheld)" }

package sdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/tokens"
	"github.com/aishield/aishield/internal/wire"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/inbound"
)

// Classifier finds sensitive values in a text. *classifiers.Scanner
// implements it; the guard builds one from the policy unless
// Options.Classifier is set. Implementations must be safe for concurrent
// use.
type Classifier interface {
	ScanString(ctx context.Context, text string) ([]classifiers.Finding, error)
}

var _ Classifier = (*classifiers.Scanner)(nil)

// DefaultTimeout bounds the guard's own work on one request (classification)
// when Options.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Options configures a Guard.
type Options struct {
	// Policy is the policy to enforce. Required.
	Policy *policies.Policy
	// Destination forces the policy destination by name; "" matches each
	// request's URL, provider and model against the policy's destinations
	// (falling back to its default).
	Destination string
	// Key keys the classifier's finding hashes. Nil draws a random key per
	// Guard. Placeholder secrets are drawn per exchange regardless.
	Key []byte
	// Classifier replaces the scanner built from the policy.
	Classifier Classifier
	// Verifier checks every response (streamed ones incrementally). Nil
	// checks only for foreign placeholders.
	Verifier ResponseVerifier
	// Audit receives the audit trail. Nil writes none, unless AuditLog is
	// set.
	Audit io.Writer
	// AuditLog, when set, is used instead of Audit (for example one opened
	// with OpenAuditLog, which continues an existing file's chain).
	AuditLog *AuditLog
	// Timeout bounds the classification of one request; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Encoding is the tiktoken encoding of exact token counts; "" means
	// o200k_base.
	Encoding string
	// Now returns the current time for the audit trail; nil means time.Now.
	Now func() time.Time
	// NoStreamUsage leaves streamed OpenAI chat and completions requests
	// as they are. By default the guard adds stream_options.include_usage
	// to those that do not ask for usage, so that the provider reports the
	// prompt tokens it counted (inbound.usage_mismatch needs them), and
	// removes the usage chunk from what the caller receives: the caller
	// sees exactly the stream it asked for. Set it only for a provider
	// that refuses stream_options.
	NoStreamUsage bool
	// Rand is where exchange IDs and the per-exchange secrets of
	// placeholders come from; nil means crypto/rand. Set it only to make a
	// run reproducible (the demo, tests): whoever knows what it yields can
	// recompute an exchange's placeholders and canary. The guard
	// serialises its reads.
	Rand io.Reader
}

// Guard enforces a policy on requests and verifies responses. Every door
// (Client, Transport, the proxy, the CLI) calls the same Guard methods. A
// Guard is safe for concurrent use by multiple goroutines.
type Guard struct {
	policy      *policies.Policy
	dest        *policies.Destination
	classifier  Classifier
	verifier    ResponseVerifier
	findingsKey string // the classifier's KeyID, "" when it has none
	audit       *AuditLog
	timeout     time.Duration
	counter     *tokens.Counter
	counters    map[string]*tokens.Counter // per declared destination tokenizer
	now         func() time.Time
	noUsage     bool
	randMu      sync.Mutex
	rand        io.Reader // nil: crypto/rand
}

// New builds a Guard. It fails when the policy is missing, the forced
// destination is unknown, or the policy's classifier does not compile.
func New(ctx context.Context, opts Options) (*Guard, error) {
	if opts.Policy == nil {
		return nil, errors.New("sdk: Options.Policy is required")
	}
	g := &Guard{
		policy:     opts.Policy,
		classifier: opts.Classifier,
		verifier:   opts.Verifier,
		audit:      opts.AuditLog,
		timeout:    opts.Timeout,
		counter:    &tokens.Counter{Encoding: opts.Encoding},
		now:        opts.Now,
		noUsage:    opts.NoStreamUsage,
		rand:       opts.Rand,
	}
	g.counters = map[string]*tokens.Counter{}
	for _, d := range append(append([]*policies.Destination(nil), opts.Policy.Destinations...), opts.Policy.Default) {
		if d != nil && d.Tokenizer != "" && g.counters[d.Tokenizer] == nil {
			g.counters[d.Tokenizer] = &tokens.Counter{Encoding: d.Tokenizer}
		}
	}
	if opts.Destination != "" {
		d, ok := opts.Policy.Destination(opts.Destination)
		if !ok {
			return nil, fmt.Errorf("sdk: policy %q has no destination %q", opts.Policy.Name, opts.Destination)
		}
		g.dest = d
	}
	if g.classifier == nil {
		sc, err := opts.Policy.NewScanner(opts.Key)
		if err != nil {
			return nil, fmt.Errorf("sdk: policy %q: %w", opts.Policy.Name, err)
		}
		g.classifier = sc
	}
	if k, ok := g.classifier.(interface{ KeyID() string }); ok {
		// Lets a verifier tell whether it can compare the findings' hashes
		// with its own (see inbound.Exchange.FindingsKey).
		g.findingsKey = k.KeyID()
	}
	if g.audit == nil && opts.Audit != nil {
		g.audit = NewAuditLog(opts.Audit, "")
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if g.now == nil {
		g.now = time.Now
	}
	return g, nil
}

// Policy returns the guard's policy.
func (g *Guard) Policy() *policies.Policy { return g.policy }

// Request is an outbound request as the guard sees it.
type Request struct {
	// URL is the request URL (a path alone is accepted); its path tells
	// the body kind and the whole URL matches destinations.
	URL string
	// Provider is "openai" or "anthropic" when the caller knows; "" infers
	// it from the body kind.
	Provider string
	// Body is the request body. It is not modified.
	Body []byte
	// ContentType is the body's media type; "" is taken as JSON.
	ContentType string
}

// Exchange is one request going through the guard, and then its response.
// Methods must be called from one goroutine at a time.
type Exchange struct {
	// ID identifies the exchange in the audit trail and in contamination
	// reports.
	ID string
	// Destination is the policy destination decided for.
	Destination string
	// Model and Kind are the model named and the body format.
	Model string
	Kind  string
	// Decision is the policy decision (Action allow or redact: a blocked
	// request never yields an Exchange).
	Decision policies.Decision
	// Tokens is the local token count (exact only when near a limit).
	Tokens      int
	TokensExact bool
	// Findings counts the outbound findings per detector.
	Findings map[string]int
	// Redacted is the number of values replaced.
	Redacted int
	// Body is the body to send: the original bytes when nothing changed.
	Body []byte
	// Streamed reports that the request asks for a streamed response.
	Streamed bool
	// FailedOpen reports that the guard failed and the policy let the
	// request through unchecked.
	FailedOpen bool

	g        *Guard
	kind     wire.Kind
	vault    *vault
	info     *inbound.Exchange
	session  inbound.Session
	start    time.Time
	once     sync.Once
	signals  []inbound.Signal
	verdict  string
	status   int
	failNote string
	// stripUsage: the guard asked for stream usage the caller did not ask
	// for; its chunk is removed from the stream.
	stripUsage bool
	// tokenizer counts like the destination (declared by its policy
	// tokenizer), nil when unknown; prompt are the prompt texts as sent
	// (what the provider counts in usage.prompt_tokens).
	tokenizer *tokens.Counter
	prompt    []string
}

// random fills b from Options.Rand, else crypto/rand.
func (g *Guard) random(b []byte) error {
	if g.rand == nil {
		_, err := rand.Read(b)
		return err
	}
	g.randMu.Lock()
	defer g.randMu.Unlock()
	_, err := io.ReadFull(g.rand, b)
	return err
}

// Check runs the outbound side of the guard: it extracts every text of the
// request, classifies them, decides, and returns the Exchange with the body
// to send. A refused request returns *BlockedError (nothing may be sent); a
// failure of the guard returns *GuardError unless the policy fails open, in
// which case the Exchange carries the original body and FailedOpen.
func (g *Guard) Check(ctx context.Context, req Request) (*Exchange, error) {
	// 8 bytes of exchange ID (16 hex digits), 32 of placeholder secret.
	var rnd [40]byte
	if err := g.random(rnd[:]); err != nil {
		return nil, &GuardError{Stage: "random", Err: fmt.Errorf("drawing the exchange's ID and secret: %w", err)}
	}
	x := &Exchange{ID: hex.EncodeToString(rnd[:8]), g: g, start: g.now(), Body: req.Body, Findings: map[string]int{}}
	x.vault = newVault(rnd[8:])
	err := g.check(ctx, req, x)
	if err == nil {
		return x, nil
	}
	var be *BlockedError
	if errors.As(err, &be) {
		x.verdict = "not_sent"
		g.record(x)
		return nil, err
	}
	var ge *GuardError
	if errors.As(err, &ge) && g.policy.FailOpen {
		x.FailedOpen, x.Body, x.failNote = true, req.Body, ge.Stage
		x.Decision.Action = policies.ActionAllow
		return x, nil
	}
	x.verdict, x.failNote = "not_sent", "guard_error"
	if ge != nil {
		x.failNote = ge.Stage
	}
	g.record(x)
	return nil, err
}

func (g *Guard) check(ctx context.Context, req Request, x *Exchange) (err error) {
	fail := func(stage string, e error) error { return &GuardError{Stage: stage, Exchange: x.ID, Err: e} }
	if g.audit != nil {
		if err := g.audit.Err(); err != nil {
			return fail("audit", err)
		}
	}
	urlPath, baseURL := req.URL, req.URL
	if u, perr := url.Parse(req.URL); perr == nil {
		urlPath = u.Path
	}
	var wr *wire.Request
	if isJSON(req.ContentType) || len(bytes.TrimSpace(req.Body)) == 0 {
		if len(bytes.TrimSpace(req.Body)) == 0 {
			wr = &wire.Request{Kind: wire.KindGeneric}
		} else {
			wr, err = wire.ParseRequest(urlPath, req.Body)
			if err != nil {
				return fail("parse", err)
			}
		}
	} else {
		// Not JSON (a file upload, form data): classify the raw body as
		// one text; it can be allowed or blocked, not redacted.
		wr = &wire.Request{Kind: wire.KindGeneric, Segments: []wire.Segment{{Field: "body", Text: string(req.Body)}}}
	}
	x.kind, x.Kind, x.Model, x.Streamed = wr.Kind, string(wr.Kind), wr.Model, wr.Stream
	provider := req.Provider
	if provider == "" {
		provider = wr.Kind.Provider()
	}
	d := g.dest
	if d == nil {
		d = g.policy.Match(baseURL, provider, wr.Model)
	}
	x.Destination = d.Name

	texts := make([]string, len(wr.Segments))
	for i, s := range wr.Segments {
		texts[i] = s.Text
	}
	// Capacity first: a request over the destination's real capacity is
	// refused without paying for its classification.
	counter := g.counter
	if c := g.counters[d.Tokenizer]; c != nil {
		counter = c
		x.tokenizer = c
	}
	count, err := counter.Check(texts, d.MaxInputTokens)
	if err != nil {
		return fail("tokens", err)
	}
	x.Tokens, x.TokensExact = count.Tokens, count.Exact
	if count.Over {
		dec := g.policy.Decide(d, nil, max(count.Tokens, d.MaxInputTokens+1))
		x.Decision = dec
		return &BlockedError{Exchange: x.ID, Destination: d.Name, OverCapacity: true, Tokens: count.Tokens, Reasons: dec.Reasons}
	}

	// Classify every text, with the guard's own time budget and a panic in
	// a classifier turned into a guard failure.
	perSeg, err := g.classify(ctx, texts)
	if err != nil {
		return fail("classify", err)
	}
	var flat []classifiers.Finding
	type ref struct{ seg, idx int }
	var refs []ref
	for si, fs := range perSeg {
		for fi, f := range fs {
			flat = append(flat, f)
			refs = append(refs, ref{si, fi})
			x.Findings[f.Detector]++
		}
	}

	dec := g.policy.Decide(d, flat, count.Tokens)
	x.Decision = dec
	if dec.Action == policies.ActionBlock {
		return &BlockedError{Exchange: x.ID, Destination: d.Name, Level: dec.Level,
			OverCapacity: dec.OverCapacity, Tokens: count.Tokens, Reasons: dec.Reasons}
	}
	sent := texts
	if dec.Action == policies.ActionRedact && len(dec.Redact) > 0 {
		if wr.Kind == wire.KindGeneric && len(wr.Segments) == 1 && wr.Segments[0].Field == "body" && !isJSON(req.ContentType) {
			return &BlockedError{Exchange: x.ID, Destination: d.Name, Level: dec.Level, Tokens: count.Tokens,
				Reasons: append(dec.Reasons, policies.Reason{Rule: "redaction", Action: policies.ActionBlock,
					Message: "a non-JSON body cannot be redacted"})}
		}
		bySeg := map[int][]classifiers.Finding{}
		for _, fi := range dec.Redact {
			r := refs[fi]
			bySeg[r.seg] = append(bySeg[r.seg], perSeg[r.seg][r.idx])
		}
		sent = append([]string(nil), texts...)
		for si, fs := range bySeg {
			s, n := g.redact(x.vault, texts[si], fs)
			if err := wr.Set(si, s); err != nil {
				return fail("rewrite", err)
			}
			sent[si] = s
			x.Redacted += n
		}
	}
	info := &inbound.Exchange{ID: x.ID, Destination: d.Name, Provider: provider, Model: wr.Model,
		Texts: texts, Sent: sent, Findings: perSeg, FindingsKey: g.findingsKey, Placeholders: x.vault.order,
		Tokens: count.Tokens, TokensExact: count.Exact, Streamed: wr.Stream}
	x.info = info
	changed := x.Redacted > 0
	if g.verifier != nil {
		if cm, ok := g.verifier.(inbound.CanaryMinter); ok && g.policy.Inbound.Canary && g.policy.Inbound.Action(policies.SignalCanary) != policies.SignalOff {
			canary, err := safeCall(func() (string, error) { return cm.MintCanary(ctx, info) })
			if err != nil {
				return fail("verify", err)
			}
			if canary != "" && wr.AddSystemText(canary) {
				info.Canary = canary
				info.Sent = append(info.Sent, canary)
				changed = true
			}
		}
		sess, err := safeCall(func() (inbound.Session, error) { return g.verifier.Begin(ctx, info) })
		if err != nil {
			return fail("verify", err)
		}
		x.session = sess
	}
	if !g.noUsage && wr.AskStreamUsage() {
		x.stripUsage, changed = true, true
	}
	if x.tokenizer != nil {
		for _, s := range wr.Segments {
			if s.Role != "" {
				x.prompt = append(x.prompt, s.Text)
			}
		}
	}
	if changed {
		body, err := wr.Encode()
		if err != nil {
			return fail("rewrite", err)
		}
		x.Body = body
	}
	return nil
}

func isJSON(ct string) bool {
	if ct == "" {
		return true
	}
	ct = strings.ToLower(ct)
	return strings.Contains(ct, "json")
}

// safeCall runs f, turning a panic into an error that names no value.
func safeCall[T any](f func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{stack: string(debug.Stack())}
		}
	}()
	return f()
}

// panicError reports a recovered panic. It keeps the stack (code locations)
// but not the panic value, which could hold input.
type panicError struct{ stack string }

func (e *panicError) Error() string { return "panic in a detector or verifier (value withheld)" }

// classify scans every text within the guard's timeout.
func (g *Guard) classify(ctx context.Context, texts []string) ([][]classifiers.Finding, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	out := make([][]classifiers.Finding, len(texts))
	for i, t := range texts {
		if t == "" {
			continue
		}
		fs, err := safeCall(func() ([]classifiers.Finding, error) { return g.classifier.ScanString(ctx, t) })
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

// redact replaces the findings in s per the policy's redaction style and
// returns the new text and the number of values replaced. Overlapping
// findings are merged into the first.
func (g *Guard) redact(v *vault, s string, fs []classifiers.Finding) (string, int) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	var b strings.Builder
	b.Grow(len(s) + 16*len(fs))
	last, n := 0, 0
	for _, f := range fs {
		if f.Start < last {
			continue
		}
		b.WriteString(s[last:f.Start])
		switch g.policy.Redaction.Style {
		case policies.RedactMask:
			b.WriteString(f.Preview)
		case policies.RedactRemove:
			b.WriteString("[" + f.Detector + "]")
		default:
			b.WriteString(v.placeholder(f.Detector, s[f.Start:f.End]))
		}
		last = f.End
		n++
	}
	b.WriteString(s[last:])
	return b.String(), n
}

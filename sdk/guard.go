package sdk

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/wire"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
	"github.com/aishield/aishield/sdk/quarantine"
	"github.com/aishield/aishield/sdk/verify"
)

// Classifier finds sensitive values in a text; see policies.Classifier.
// *classifiers.Scanner implements it.
type Classifier = policies.Classifier

// DefaultTimeout bounds the guard's own work on one request (classification)
// when Options.Timeout is zero.
const DefaultTimeout = policies.DefaultTimeout

// Options configures a Guard. Only Policy is required: the guard builds the
// policy's scanner and the standard response verifier itself, so that a
// guard built with the policy alone checks both directions.
type Options struct {
	// Policy is the policy to enforce. Required.
	Policy *policies.Policy
	// Destination forces the policy destination by name; "" matches each
	// request's URL, provider and model against the policy's destinations
	// (falling back to its default). Request.Destination overrides it.
	Destination string
	// Principal names who sends this guard's requests (a user, a tenant, a
	// service) when Request.Principal does not; see inbound.Exchange.
	Principal string
	// Key keys the classifier's finding hashes. Nil draws a random key per
	// Guard. Placeholder secrets are drawn per exchange regardless.
	Key []byte
	// Classifier replaces the scanner built from the policy.
	Classifier Classifier
	// Verifier replaces the standard verifier (package sdk/verify, built
	// from the policy's inbound settings with the guard's scanner, Store
	// and CanaryKey). Every response is verified unless NoVerify is set or
	// the policy turns every inbound signal off.
	Verifier ResponseVerifier
	// NoVerify turns response verification off: responses are then checked
	// only for placeholders this exchange did not mint, and the audit
	// trail says so (its checks list only inbound.foreign_placeholder).
	NoVerify bool
	// Store is where the standard verifier remembers exchanges (their
	// fingerprints, canaries and entities); nil keeps them in memory.
	// Processes that share a fingerprint.RedisStore see each other's
	// exchanges; they must then share Key and CanaryKey too.
	Store fingerprint.Store
	// CanaryKey keys the standard verifier's canaries; nil draws a random
	// key.
	CanaryKey []byte
	// Audit receives the audit trail as a new chain. Nil writes none,
	// unless AuditLog is set or the policy's audit section enables a file.
	Audit io.Writer
	// AuditLog, when set, is used instead of Audit (for example one opened
	// with OpenAuditLog, which continues an existing file's chain). With
	// neither, a policy whose audit section is enabled has its file opened
	// with OpenAuditLog, and Guard.Close closes it.
	AuditLog *AuditLog
	// AuditKey keys the chain of the trail the guard opens (Audit, or the
	// policy's audit section) with HMAC-SHA256, and makes Close write its
	// signed head (see WithAuditKey); nil keeps plain SHA-256. An AuditLog
	// set by the caller keeps its own key. The library never reads it
	// from the environment: the CLI takes it from AISHIELD_AUDIT_KEY.
	AuditKey []byte
	// OnRecord, when set, is called with every exchange's audit record
	// (whether or not a trail is written), after it is appended; it must
	// be safe for concurrent use and must not keep the record's maps.
	OnRecord func(AuditRecord)
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
	// Quarantine is where destinations' health and quarantines are kept
	// (see package quarantine): the signs of a faulty service that
	// answers show, counted per destination, and the quarantines the
	// policy's quarantine rules trip. Nil keeps them in this process;
	// processes sharing a quarantine.RedisStore share their quarantines,
	// which then survive restarts.
	Quarantine quarantine.Store
	// OnQuarantine, when set, is called with every quarantine change the
	// guard makes or learns of, after its audit record was written; it
	// must be safe for concurrent use.
	OnQuarantine func(quarantine.Event)
	// WebhookClient posts the policy's quarantine webhooks; nil uses a
	// client with a 10-second timeout.
	WebhookClient *http.Client
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
	principal   string
	eval        *policies.Evaluator
	verifier    ResponseVerifier
	checks      []string // the inbound checks every response gets
	findingsKey string   // the classifier's KeyID, "" when it has none
	audit       *AuditLog
	ownAudit    bool      // the guard made audit, and seals it on Close
	auditFile   io.Closer // opened from the policy's audit section
	onRecord    func(AuditRecord)
	now         func() time.Time
	noUsage     bool
	timeout     time.Duration // bounds a document's scan for its label
	randMu      sync.Mutex
	rand        io.Reader // nil: crypto/rand
	monitor     *quarantine.Monitor
	onQuar      func(quarantine.Event)
}

// New builds a Guard. It fails when the policy is missing, the forced
// destination is unknown, the policy's classifier does not compile, or the
// policy's audit file cannot be opened.
func New(ctx context.Context, opts Options) (*Guard, error) {
	if opts.Policy == nil {
		return nil, errors.New("sdk: Options.Policy is required")
	}
	g := &Guard{
		policy:    opts.Policy,
		principal: opts.Principal,
		verifier:  opts.Verifier,
		audit:     opts.AuditLog,
		onRecord:  opts.OnRecord,
		now:       opts.Now,
		noUsage:   opts.NoStreamUsage,
		rand:      opts.Rand,
		timeout:   opts.Timeout,
	}
	if g.timeout <= 0 {
		g.timeout = DefaultTimeout
	}
	if opts.Destination != "" {
		d, ok := opts.Policy.Destination(opts.Destination)
		if !ok {
			return nil, fmt.Errorf("sdk: policy %q has no destination %q", opts.Policy.Name, opts.Destination)
		}
		g.dest = d
	}
	ev, err := policies.NewEvaluator(opts.Policy, policies.EvaluatorOptions{Classifier: opts.Classifier, Key: opts.Key,
		Timeout: opts.Timeout, Encoding: opts.Encoding})
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	g.eval = ev
	if k, ok := ev.Classifier().(interface{ KeyID() string }); ok {
		// Lets a verifier tell whether it can compare the findings' hashes
		// with its own (see inbound.Exchange.FindingsKey).
		g.findingsKey = k.KeyID()
	}
	if opts.NoVerify {
		g.verifier = nil
	} else if g.verifier == nil {
		sc, _ := ev.Classifier().(*classifiers.Scanner)
		v, err := verify.New(verify.Options{Inbound: opts.Policy.Inbound, Scanner: sc, HashKey: opts.Key,
			Store: opts.Store, CanaryKey: opts.CanaryKey})
		if err != nil {
			return nil, fmt.Errorf("sdk: %w", err)
		}
		g.verifier = v
	}
	g.checks = []string{}
	for _, id := range policies.Signals() {
		if opts.Policy.Inbound.Action(id) == policies.SignalOff {
			continue
		}
		if g.verifier != nil || id == policies.SignalForeignPlaceholder {
			g.checks = append(g.checks, id)
		}
	}
	auditOpts := []AuditOption{WithAuditKey(opts.AuditKey), WithAuditClock(opts.Now)}
	if g.audit == nil && opts.Audit != nil {
		g.audit, g.ownAudit = NewAuditLog(opts.Audit, "", auditOpts...), true
	}
	if g.audit == nil && opts.Policy.Audit.Enabled {
		log, f, err := OpenAuditLog(opts.Policy.Audit.Path, auditOpts...)
		if err != nil {
			return nil, fmt.Errorf("sdk: policy %q: audit: %w", opts.Policy.Name, err)
		}
		g.audit, g.ownAudit, g.auditFile = log, true, f
	}
	if g.now == nil {
		g.now = time.Now
	}
	g.onQuar = opts.OnQuarantine
	g.monitor, err = quarantine.New(quarantine.Options{Policy: opts.Policy, Store: opts.Quarantine, Now: g.now,
		OnEvent: g.quarantineEvent, Client: opts.WebhookClient})
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	return g, nil
}

// Quarantine returns the guard's quarantine monitor: the health and
// quarantine of each destination, shared through Options.Quarantine.
func (g *Guard) Quarantine() *quarantine.Monitor { return g.monitor }

// Policy returns the guard's policy.
func (g *Guard) Policy() *policies.Policy { return g.policy }

// Verifier returns the verifier every response goes through, nil when
// verification is off (Options.NoVerify).
func (g *Guard) Verifier() ResponseVerifier { return g.verifier }

// Checks returns the inbound checks every response gets: the IDs of the
// signals the policy does not turn off, or only
// inbound.foreign_placeholder when verification is off.
func (g *Guard) Checks() []string { return slices.Clone(g.checks) }

// Close closes the audit log the guard made (from Options.Audit or the
// policy's audit section), which writes the signed head of a keyed trail,
// and the audit file it opened, if any. The guard must not be used
// afterwards.
func (g *Guard) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := g.monitor.Close(ctx) // webhooks under way
	cancel()
	if err != nil {
		err = fmt.Errorf("sdk: quarantine webhooks still being posted: %w", err)
	}
	if g.ownAudit {
		err = errors.Join(err, g.audit.Close())
	}
	if g.auditFile != nil {
		err = errors.Join(err, g.auditFile.Close())
	}
	return err
}

// Request is an outbound request as the guard sees it.
type Request struct {
	// URL is the request URL (a path alone is accepted); its path tells
	// the body kind and the whole URL matches destinations.
	URL string
	// Provider is "openai" or "anthropic" when the caller knows; "" infers
	// it from the body kind.
	Provider string
	// Destination forces the policy destination by name; "" uses the
	// guard's (Options.Destination) or matches the URL.
	Destination string
	// Principal names who sends the request; "" uses Options.Principal.
	Principal string
	// Body is the request body. It is not modified.
	Body []byte
	// ContentType is the body's media type; "" is taken as JSON. JSON
	// (application/json, any +json type, and any body that is valid JSON
	// whatever its label) is parsed strictly; text/* (UTF-8), urlencoded
	// forms and multipart/form-data are read field by field and file by
	// file; a body of any other type, or holding a document the guard
	// cannot read (a PDF, a binary file), is refused unless the
	// destination's passthrough paths match the URL's path.
	ContentType string
	// ContentEncoding is the body's Content-Encoding, a list of codings
	// in the order they were applied (RFC 9110): gzip (x-gzip), deflate
	// (zlib or raw), br and identity are undone, at most 4 of them; any
	// other is refused (ErrUnsupportedMedia). The Exchange's Body is
	// always plain: send it without Content-Encoding.
	ContentEncoding string
	// MaxBody bounds the body once decoded (ErrTooLarge beyond it); 0
	// means DefaultMaxBody.
	MaxBody int64
}

// Exchange is one request going through the guard, and then its response.
// Methods must be called from one goroutine at a time.
type Exchange struct {
	// ID identifies the exchange in the audit trail and in contamination
	// reports.
	ID string
	// Destination is the policy destination decided for.
	Destination string
	// Principal is who sent the request ("" when unknown).
	Principal string
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
	// Body is the body to send: the original bytes when nothing changed
	// in a JSON body; a body of another type is always re-encoded from
	// what the guard parsed.
	Body []byte
	// ContentType, when not "", is the Content-Type to send Body with (a
	// multipart body re-encoded under a fresh boundary).
	ContentType string
	// Passthrough reports that the body held what the guard could not read
	// and the destination's passthrough paths let it through unchecked;
	// the audit trail records the exchange as unverified.
	Passthrough bool
	// Streamed reports that the request asks for a streamed response.
	Streamed bool
	// FailedOpen reports that the guard failed and the policy let the
	// request through unchecked.
	FailedOpen bool
	// Quarantined names the quarantined destination whose quarantine
	// decided this exchange: it was let through at the quarantine's level,
	// or failed over from it (Destination is then the failover).
	Quarantined string
	// URL, when not "", is where the request goes instead of its own URL:
	// its destination is quarantined and the policy fails over to
	// Destination. Send it without the caller's credentials for the
	// quarantined provider (Transport drops them).
	URL string

	g        *Guard
	dest     *policies.Destination
	kind     wire.Kind
	vault    *Vault
	info     *inbound.Exchange
	session  inbound.Session
	start    time.Time
	once     sync.Once
	signals  []Signal
	verdict  Verdict
	status   int
	failNote Stage
	// limit is the refusal of a quarantine (action limit) for a request
	// above its level; refuse the refusal of one (action block). Both are
	// returned once the request was evaluated, so that its record counts
	// what it held.
	limit  *quarantine.Error
	refuse *quarantine.Error
	// redactedBy counts the findings redacted, per detector.
	redactedBy map[string]int
	// stripUsage: the guard asked for stream usage the caller did not ask
	// for; its chunk is removed from the stream.
	stripUsage bool
	// tokenizer: the destination declares its tokenizer, so the provider's
	// prompt count can be checked exactly; prompt are the prompt texts as
	// sent (what the provider counts in usage.prompt_tokens).
	tokenizer bool
	prompt    []string
	// count is the exact count of prompt started as the request left
	// (countAhead), nil until then.
	count *promptCount
	// usageFlagged: a prompt count reported before the end of a stream
	// was already found too low (reported once); usagePassed is the last
	// count found plausible, not counted again at the end.
	usageFlagged bool
	usagePassed  int
	// replay: a captured stream is judged whole (Guard.Replay), every
	// signal collected, instead of being cut at the first blocking one;
	// blocked holds the blocking signals seen before its end.
	replay  bool
	blocked []inbound.Signal
}

// Signal is an inbound signal with the action the policy gave it.
type Signal struct {
	inbound.Signal
	Action policies.SignalAction `json:"action"`
}

// Verdict returns the exchange's inbound verdict so far ("" until the
// response was handled).
func (x *Exchange) Verdict() Verdict { return x.verdict }

// Signals returns the signals filed on the response (blocking and flagged),
// in order of discovery.
func (x *Exchange) Signals() []Signal { return slices.Clone(x.signals) }

// Vault returns the exchange's redaction vault: its placeholders and the
// values they replace.
func (x *Exchange) Vault() *Vault { return x.vault }

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
// request, evaluates them (capacity, classification, decision), redacts,
// and returns the Exchange with the body to send. A refused request returns
// *BlockedError (nothing may be sent); a failure of the guard returns
// *GuardError unless the policy fails open, in which case the Exchange
// carries the original body and FailedOpen.
func (g *Guard) Check(ctx context.Context, req Request) (*Exchange, error) {
	x, err := g.newExchange(req.Principal, req.Body)
	if err != nil {
		return nil, err
	}
	err = g.check(ctx, req, x)
	// Failing open sends the body as read: decoded from its
	// Content-Encoding, otherwise as it came.
	return g.outcome(x, err, x.Body)
}

// CheckText runs the outbound side on a plain text, as the CLI filter
// does: the text is evaluated for the guard's destination (Options
// Destination, else the policy's default) and redacted like a request's
// text. The Exchange's Body is the text to send; its Vault restores the
// answer (Vault.Restore). There is no response to verify in-process: the
// audit trail records the exchange as unverified.
func (g *Guard) CheckText(ctx context.Context, text string) (*Exchange, error) {
	x, err := g.newExchange("", []byte(text))
	if err != nil {
		return nil, err
	}
	err = g.checkText(ctx, text, x)
	if err == nil {
		x.verdict = VerdictUnverified
		g.record(x)
	}
	return g.outcome(x, err, []byte(text))
}

// newExchange starts an exchange: its ID and placeholder secret.
func (g *Guard) newExchange(principal string, body []byte) (*Exchange, error) {
	// 8 bytes of exchange ID (16 hex digits), 32 of placeholder secret.
	var rnd [40]byte
	if err := g.random(rnd[:]); err != nil {
		return nil, &GuardError{Stage: StageRandom, Err: fmt.Errorf("drawing the exchange's ID and secret: %w", err)}
	}
	if principal == "" {
		principal = g.principal
	}
	x := &Exchange{ID: hex.EncodeToString(rnd[:8]), Principal: principal, g: g, start: g.now(), Body: body, Findings: map[string]int{}}
	x.vault = newVault(rnd[8:])
	x.vault.Policy = g.policy.Name
	return x, nil
}

// outcome turns the result of an outbound check into Check's.
func (g *Guard) outcome(x *Exchange, err error, body []byte) (*Exchange, error) {
	x.vault.Destination = x.Destination
	if err == nil {
		return x, nil
	}
	var be *BlockedError
	var qe *quarantine.Error
	if errors.As(err, &be) || errors.As(err, &qe) {
		x.verdict = VerdictNotSent
		g.record(x)
		return nil, err
	}
	var ge *GuardError
	// A request the guard cannot read (stage parse) is refused whatever
	// the failure mode: failing open would send bytes it did not
	// interpret.
	if errors.As(err, &ge) && g.policy.FailOpen && ge.Stage != StageParse {
		x.FailedOpen, x.Body, x.failNote = true, body, ge.Stage
		x.Decision.Action = policies.ActionAllow
		return x, nil
	}
	x.verdict, x.failNote = VerdictNotSent, StageGuard
	if ge != nil {
		x.failNote = ge.Stage
	}
	g.record(x)
	return nil, err
}

// destination picks the policy destination of a request.
func (g *Guard) destination(name, url, provider, model string) (*policies.Destination, error) {
	if name != "" {
		d, ok := g.policy.Destination(name)
		if !ok {
			return nil, fmt.Errorf("policy %q has no destination %q", g.policy.Name, name)
		}
		return d, nil
	}
	if g.dest != nil {
		return g.dest, nil
	}
	return g.policy.Match(url, provider, model), nil
}

// evaluate runs the policy's evaluation of texts for x's destination and
// files its outcome on x; a request the policy refuses returns
// *BlockedError.
// extra holds findings to add to texts' own (by text index), found
// elsewhere (an Office document's sensitivity label); the decision is
// then taken on both.
func (g *Guard) evaluate(ctx context.Context, x *Exchange, texts []string, extra map[int][]classifiers.Finding) (ev *policies.Evaluation, err error) {
	defer func() {
		// A quarantine refuses what it does not let through, once the
		// request was evaluated.
		var be *BlockedError
		switch {
		case x.refuse != nil && (err == nil || errors.As(err, &be) && !be.OverCapacity):
			err = x.refuse
		case x.limit != nil && errors.As(err, &be) && !be.OverCapacity:
			e := *x.limit
			e.RequestLevel = be.Level
			err = &e
		}
	}()
	ev, err = g.eval.Evaluate(ctx, x.dest, policies.Input{Texts: texts})
	if err != nil {
		var ee *policies.EvaluationError
		stage := StageClassify
		if errors.As(err, &ee) && ee.Stage == policies.StageTokens {
			stage = StageTokens
		}
		return nil, &GuardError{Stage: stage, Exchange: x.ID, Err: err}
	}
	if len(extra) > 0 && ev.Findings != nil {
		for i, fs := range extra {
			all := append(slices.Clone(ev.Findings[i]), fs...)
			sort.SliceStable(all, func(a, b int) bool { return all[a].Start < all[b].Start })
			ev.Findings[i] = all
		}
		flat, _ := ev.Flat()
		ev.Decision = g.policy.Decide(ev.Destination, flat, ev.Tokens)
	}
	x.Tokens, x.TokensExact, x.Decision = ev.Tokens, ev.TokensExact, ev.Decision
	x.tokenizer = ev.Tokenizer != ""
	for _, fs := range ev.Findings {
		for _, f := range fs {
			x.Findings[f.Detector]++
		}
	}
	dec := ev.Decision
	if dec.Action == policies.ActionBlock {
		return ev, &BlockedError{Exchange: x.ID, Destination: x.Destination, Level: dec.Level,
			OverCapacity: dec.OverCapacity, Tokens: ev.Tokens, Reasons: dec.Reasons}
	}
	return ev, nil
}

// gate applies the quarantine of d, the destination decided for x: it
// returns the destination to decide for (d; d limited to the quarantine's
// level; or the destination it fails over to, with x.URL set from reqURL)
// or refuses the request with *quarantine.Error. A quarantine store that
// cannot be read refuses every request for a destination this guard last
// knew quarantined, and fails closed for the others (*GuardError).
func (g *Guard) gate(ctx context.Context, x *Exchange, d *policies.Destination, reqURL string) (*policies.Destination, error) {
	st, err := g.monitor.Check(ctx, d.Name)
	if err != nil {
		return nil, &GuardError{Stage: StageQuarantine, Exchange: x.ID, Err: err}
	}
	if !st.Quarantined {
		return d, nil
	}
	x.Quarantined = d.Name
	qerr := &quarantine.Error{Destination: d.Name, Since: st.State.Since, Action: st.Quarantine.Action, Unreachable: st.Unreachable,
		Local: g.monitor.Local()}
	if st.Unreachable != nil {
		qerr.Action = policies.QuarantineBlock
		return nil, qerr
	}
	to, refuse := g.policy.WhileQuarantined(d)
	switch {
	case refuse:
		x.refuse = qerr
		return d, nil
	case st.Quarantine.Action == policies.QuarantineLimit:
		qerr.Level = st.Quarantine.MaxLevel
		x.limit = qerr
		return to, nil
	}
	// Failover, unless the destination it fails over to is quarantined
	// too.
	if fs, err := g.monitor.Check(ctx, to.Name); err != nil || fs.Quarantined {
		return nil, qerr
	}
	if reqURL != "" {
		u, err := failoverURL(reqURL, d, to)
		if err != nil {
			return nil, &GuardError{Stage: StageParse, Exchange: x.ID, Err: err}
		}
		x.URL = u
	}
	x.Destination = to.Name
	return to, nil
}

// failoverURL is reqURL sent to to instead of from: to's base URL joined
// with reqURL's path below from's base path, and its query.
func failoverURL(reqURL string, from, to *policies.Destination) (string, error) {
	u, err := url.Parse(reqURL)
	if err != nil {
		return "", fmt.Errorf("%w: the URL does not parse", ErrInvalidPath)
	}
	base, err := url.Parse(to.BaseURL)
	if err != nil || base.Host == "" {
		return "", fmt.Errorf("failover destination %s has no usable base_url", to.Name)
	}
	p := u.Path
	if fb, err := url.Parse(from.BaseURL); err == nil && from.BaseURL != "" {
		if prefix := strings.TrimSuffix(fb.Path, "/"); prefix != "" {
			if rest, ok := strings.CutPrefix(p, prefix); ok && strings.HasPrefix(rest, "/") {
				p = rest
			}
		}
	}
	out := *base
	out.Path = strings.TrimSuffix(base.Path, "/") + p
	out.RawPath, out.RawQuery, out.Fragment = "", u.RawQuery, ""
	return out.String(), nil
}

// countRedacted counts the findings fs redacts, per detector.
func (x *Exchange) countRedacted(fs []classifiers.Finding) {
	if x.redactedBy == nil {
		x.redactedBy = map[string]int{}
	}
	for _, f := range fs {
		x.redactedBy[f.Detector]++
	}
}

// redactions returns, per text, the findings the decision redacts.
func redactions(ev *policies.Evaluation) map[int][]classifiers.Finding {
	if ev.Decision.Action != policies.ActionRedact || len(ev.Decision.Redact) == 0 {
		return nil
	}
	flat, text := ev.Flat()
	by := map[int][]classifiers.Finding{}
	for _, fi := range ev.Decision.Redact {
		by[text[fi]] = append(by[text[fi]], flat[fi])
	}
	return by
}

func (g *Guard) checkText(ctx context.Context, text string, x *Exchange) error {
	if g.audit != nil {
		if err := g.audit.Err(); err != nil {
			return &GuardError{Stage: StageAudit, Exchange: x.ID, Err: err}
		}
	}
	d, err := g.destination("", "", "", "")
	if err != nil {
		return &GuardError{Stage: StageParse, Exchange: x.ID, Err: err}
	}
	x.dest, x.Destination, x.Kind = d, d.Name, "text"
	if x.dest, err = g.gate(ctx, x, d, ""); err != nil {
		return err
	}
	ev, err := g.evaluate(ctx, x, []string{text}, nil)
	if err != nil {
		return err
	}
	if fs := redactions(ev)[0]; len(fs) > 0 {
		x.countRedacted(fs)
		s, n := g.redact(x.vault, text, fs)
		x.Body, x.Redacted = []byte(s), n
	}
	return nil
}

func (g *Guard) check(ctx context.Context, req Request, x *Exchange) (err error) {
	fail := func(stage Stage, e error) error { return &GuardError{Stage: stage, Exchange: x.ID, Err: e} }
	if g.audit != nil {
		if err := g.audit.Err(); err != nil {
			return fail(StageAudit, err)
		}
	}
	baseURL := req.URL
	u, perr := url.Parse(req.URL)
	if perr != nil {
		return fail(StageParse, fmt.Errorf("%w: the URL does not parse", ErrInvalidPath))
	}
	if err := ValidatePath(u); err != nil {
		return fail(StageParse, err)
	}
	urlPath := u.Path
	body := req.Body
	codings, err := contentCodings(http.Header{"Content-Encoding": {req.ContentEncoding}})
	if err != nil {
		return fail(StageParse, fmt.Errorf("%w: %w", ErrUnsupportedMedia, err))
	}
	if len(codings) > 0 && len(body) > 0 {
		limit := req.MaxBody
		if limit <= 0 {
			limit = DefaultMaxBody
		}
		if body, err = decodeContent(body, codings, limit); err != nil {
			return fail(StageParse, err)
		}
		x.Body = body
	}
	rb, err := readRequestBody(urlPath, req.ContentType, body)
	if err != nil {
		return fail(StageParse, err)
	}
	wr := rb.json
	if wr == nil {
		wr = &wire.Request{Kind: wire.KindGeneric}
	}
	x.kind, x.Kind, x.Model, x.Streamed = wr.Kind, string(wr.Kind), wr.Model, wr.Stream
	provider := req.Provider
	if provider == "" {
		provider = wr.Kind.Provider()
	}
	d, err := g.destination(req.Destination, baseURL, provider, wr.Model)
	if err != nil {
		return fail(StageParse, err)
	}
	x.dest, x.Destination = d, d.Name
	if d, err = g.gate(ctx, x, d, req.URL); err != nil {
		return err
	}
	x.dest = d
	if len(rb.unread) > 0 {
		if !passesThrough(d, urlPath) {
			return fail(StageParse, fmt.Errorf("%w: %s, on a path the destination %s does not let through unchecked (passthrough)",
				ErrUnsupportedMedia, rb.unread[0], d.Name))
		}
		x.Passthrough = true
	}

	segs := rb.segments()
	texts := make([]string, len(segs), len(segs)+len(rb.docs))
	roles := make([]string, len(segs), len(segs)+len(rb.docs))
	for i, s := range segs {
		texts[i], roles[i] = s.Text, s.Role
	}
	for _, dt := range rb.docs {
		texts, roles = append(texts, dt.text), append(roles, dt.role)
	}
	labels, err := g.labelFindings(ctx, rb.docs, len(segs))
	if err != nil {
		return fail(StageClassify, err)
	}
	ev, err := g.evaluate(ctx, x, texts, labels)
	if err != nil {
		return err
	}
	sent := texts
	if bySeg := redactions(ev); len(bySeg) > 0 {
		for si := range bySeg {
			if si >= len(segs) {
				dec := ev.Decision
				return &BlockedError{Exchange: x.ID, Destination: d.Name, Level: dec.Level, Tokens: ev.Tokens,
					Reasons: append(dec.Reasons, policies.Reason{Rule: "redaction", Action: policies.ActionBlock,
						Message: "a document in the request cannot be redacted in place"})}
			}
		}
		sent = append([]string(nil), texts...)
		for si, fs := range bySeg {
			x.countRedacted(fs)
			s, n := g.redact(x.vault, texts[si], fs)
			if rb.json != nil {
				if err := wr.Set(si, s); err != nil {
					return fail(StageRewrite, err)
				}
			} else {
				rb.set(si, s)
			}
			sent[si] = s
			x.Redacted += n
		}
	}
	info := &inbound.Exchange{ID: x.ID, Destination: d.Name, Provider: provider, Model: wr.Model,
		Texts: texts, Roles: roles, Sent: sent, Findings: ev.Findings, FindingsKey: g.findingsKey, Placeholders: x.vault.order,
		Tokens: ev.Tokens, TokensExact: ev.TokensExact, Streamed: wr.Stream, Principal: x.Principal}
	x.info = info
	changed := x.Redacted > 0
	if g.verifier != nil {
		if cm, ok := g.verifier.(inbound.CanaryMinter); ok && g.policy.Inbound.Canary && g.policy.Inbound.Action(policies.SignalCanary) != policies.SignalOff {
			canary, err := safeCall(func() (string, error) { return cm.MintCanary(ctx, info) })
			if err != nil {
				return fail(StageVerify, err)
			}
			if canary != "" && wr.AddCanary(canary) {
				info.Canary = canary
				info.Sent = append(info.Sent, canary)
				changed = true
				if i := strings.Index(canary, verify.CanaryPrefix); i >= 0 && len(canary) >= i+verify.CanaryLen {
					x.vault.setCanary(canary, canary[i:i+verify.CanaryLen])
				}
			}
		}
		sess, err := safeCall(func() (inbound.Session, error) { return g.verifier.Begin(ctx, info) })
		if err != nil {
			return fail(StageVerify, err)
		}
		x.session = sess
	}
	if !g.noUsage && wr.AskStreamUsage() {
		x.stripUsage, changed = true, true
	}
	if x.tokenizer {
		for _, s := range wr.Segments {
			if s.Role != "" {
				x.prompt = append(x.prompt, s.Text)
			}
		}
	}
	switch {
	case rb.encode != nil:
		// A body that is not JSON is always sent as the guard re-encodes
		// it from what it parsed.
		body, ct, err := rb.encode()
		if err != nil {
			return fail(StageRewrite, err)
		}
		x.Body, x.ContentType = body, ct
	case changed:
		body, err := wr.Encode()
		if err != nil {
			return fail(StageRewrite, err)
		}
		x.Body = body
	}
	return nil
}

// labelFindings returns, by text index (base+i for docs[i]), the
// marker.sensitivity_label findings of the Office documents among docs,
// as "aishield scan" reports them, when the guard classifies with a
// classifiers.Scanner; the label line of a document's text is otherwise
// only classified as text.
func (g *Guard) labelFindings(ctx context.Context, docs []docText, base int) (map[int][]classifiers.Finding, error) {
	sc, ok := g.eval.Classifier().(*classifiers.Scanner)
	if !ok {
		return nil, nil
	}
	var out map[int][]classifiers.Finding
	for i, d := range docs {
		if d.office == nil || !strings.Contains(d.text, "Sensitivity label: ") {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, g.timeout)
		doc, err := safeCall(func() (*classifiers.Document, error) { return sc.ScanDocument(ctx, "", d.office) })
		cancel()
		if err != nil {
			return nil, err
		}
		if doc.Text != d.text {
			continue
		}
		for _, f := range doc.Findings {
			if f.Detector == "marker.sensitivity_label" && f.Start >= 0 && f.End <= len(d.text) && f.Start <= f.End {
				if out == nil {
					out = map[int][]classifiers.Finding{}
				}
				out[base+i] = append(out[base+i], f)
			}
		}
	}
	return out, nil
}

// passesThrough reports whether d lets an unread body through on urlPath:
// one of its passthrough globs matches the path, or the path below its
// base_url's own path (a glob "/v1/audio/*" under base_url
// https://gw.example/openai matches /openai/v1/audio/speech).
func passesThrough(d *policies.Destination, urlPath string) bool {
	if d.PassesThrough(urlPath) {
		return true
	}
	if b, err := url.Parse(d.BaseURL); err == nil && d.BaseURL != "" {
		if prefix := strings.TrimSuffix(b.Path, "/"); prefix != "" {
			if rest, ok := strings.CutPrefix(urlPath, prefix); ok && strings.HasPrefix(rest, "/") {
				return d.PassesThrough(rest)
			}
		}
	}
	return false
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
			err = &policies.PanicError{Stack: string(debug.Stack())}
		}
	}()
	return f()
}

// redact replaces the findings in s per the policy's redaction style and
// returns the new text and the number of values replaced. Overlapping
// findings are merged into the first.
func (g *Guard) redact(v *Vault, s string, fs []classifiers.Finding) (string, int) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
	var b strings.Builder
	b.Grow(len(s) + 16*len(fs))
	// Overlapping findings (a custom rule over a built-in one, a value
	// found both as written and decoded) are redacted as one span, under
	// the first one's detector: no byte of either stays in clear.
	spans := make([]classifiers.Finding, 0, len(fs))
	for _, f := range fs {
		if k := len(spans) - 1; k >= 0 && f.Start < spans[k].End {
			spans[k].End = max(spans[k].End, f.End)
			continue
		}
		spans = append(spans, f)
	}
	last, n := 0, 0
	for _, f := range spans {
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

// Capture is an exchange captured elsewhere (a log, a proxy of another
// vendor): the request as it was sent and the response as it came back.
type Capture struct {
	// URL is the request URL or path ("" infers the kind from the body).
	URL string
	// Request is the request body as sent.
	Request []byte
	// Response is the response body: JSON, or a saved SSE stream.
	Response []byte
	// Principal is who sent it, when known.
	Principal string
}

// Replay judges a captured exchange exactly as the guard judges a live one:
// the request is taken as it was sent (nothing is redacted, no canary is
// added), and the response goes through the same restore-and-verify path
// as Exchange.Response or Exchange.Stream, which decides. A captured stream
// is read to its end rather than cut at the first blocking signal, so that
// every signal it holds is reported. The returned
// Exchange's Verdict and Signals tell the outcome; a response the guard
// cannot read returns *GuardError. The replayed request is remembered by the
// verifier like any other.
func (g *Guard) Replay(ctx context.Context, c Capture) (*Exchange, error) {
	x, err := g.newExchange(c.Principal, c.Request)
	if err != nil {
		return nil, err
	}
	urlPath := c.URL
	if u, perr := url.Parse(c.URL); perr == nil {
		urlPath = u.Path
	}
	wr, err := wire.ParseRequest(urlPath, c.Request)
	if err != nil {
		return nil, &GuardError{Stage: StageParse, Exchange: x.ID, Err: fmt.Errorf("request: %w", err)}
	}
	x.kind, x.Kind, x.Model, x.Streamed = wr.Kind, string(wr.Kind), wr.Model, wr.Stream
	provider := wr.Kind.Provider()
	d, err := g.destination("", c.URL, provider, wr.Model)
	if err != nil {
		return nil, &GuardError{Stage: StageParse, Exchange: x.ID, Err: err}
	}
	x.dest, x.Destination, x.replay = d, d.Name, true
	x.Decision = policies.Decision{Action: policies.ActionAllow, Destination: d.Name}
	texts := make([]string, len(wr.Segments))
	roles := make([]string, len(wr.Segments))
	for i, s := range wr.Segments {
		texts[i], roles[i] = s.Text, s.Role
		if s.Role != "" {
			x.prompt = append(x.prompt, s.Text)
		}
	}
	x.tokenizer = d.Tokenizer != ""
	x.info = &inbound.Exchange{ID: x.ID, Destination: d.Name, Provider: provider, Model: wr.Model,
		Texts: texts, Roles: roles, Sent: texts, Streamed: wr.Stream, Principal: x.Principal}
	if g.verifier != nil {
		sess, err := safeCall(func() (inbound.Session, error) { return g.verifier.Begin(ctx, x.info) })
		if err != nil {
			return nil, &GuardError{Stage: StageVerify, Exchange: x.ID, Err: err}
		}
		x.session = sess
	}
	trimmed := bytes.TrimLeft(c.Response, " \t\r\n\ufeff")
	switch {
	case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '['):
		_, err = x.Response(ctx, 200, "application/json", c.Response)
	case !bytes.Contains(c.Response, []byte("data:")):
		return nil, &GuardError{Stage: StageResponse, Exchange: x.ID, Err: errors.New("the response is neither a JSON body nor an SSE stream")}
	default:
		r := x.Stream(ctx, io.NopCloser(bytes.NewReader(c.Response)), StreamOptions{})
		_, err = io.Copy(io.Discard, r)
		r.Close()
	}
	var ce *ContaminationError
	if err != nil && !errors.As(err, &ce) {
		return x, err
	}
	return x, nil
}

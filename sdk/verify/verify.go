// Package verify checks AI responses for foreign material: data that did not
// come from the request it answers.
//
// # Signals
//
// Each check is a detector of its own with a stable ID and the policy's
// action (policies.Inbound.Action: block, flag or off; "off" signals are not
// even computed):
//
//   - inbound.foreign_entity: a sensitive entity (any classifier finding) in
//     the response whose keyed hash (classifiers.Finding.Hash) is not among
//     the request's, and whose value is not allow-listed. A response that
//     repeats the user's own data is never flagged; reserved example values
//     (RFC 2606 domains, documented test numbers) are not findings unless
//     the scanner was built to report them. It names the exchanges whose
//     requests carried the value, when the store remembers them. Values of
//     the sourced detectors (Options.Sourced, by default [DefaultSourced]:
//     pii.person_name), which answers contain legitimately (an assistant
//     mentions "Albert Einstein"), are signals only with a source: another
//     exchange whose request carried the same value, held by no more than
//     MaxDocFreq other exchanges. A name that no exchange sent, or that
//     many sent, is not a signal. A value that only requests of this
//     exchange's own principal carried (inbound.Exchange.Principal, when
//     known) is the principal's own: not a signal.
//   - inbound.canary: a canary token (see [Verifier.MintCanary]) in the
//     response that was not minted for this exchange. It names the
//     exchange it was minted for when the store still remembers it. A
//     canary of an exchange whose request held nothing this one does not
//     (every text of it is one of this request's: a response cache
//     repeating its answer) is not a signal (see provenance.go).
//   - inbound.cross_exchange: the response shares a run of consecutive
//     winnowed fingerprints (package sdk/fingerprint) covering at least
//     MinSpan bytes with what another exchange sent (its request), or
//     with another exchange's answer to an unrelated request, not counting
//     fingerprints of this exchange's own request, boilerplate held by
//     more than MaxDocFreq holders, material that only exchanges of this
//     exchange's own principal hold, shared instructions (held in the
//     system or developer texts of requests of two or more principals:
//     inbound.Exchange.Roles), the request of an exchange whose texts are
//     all this one's, nor this request's own text cut and joined (a model
//     reading its prompt back in pieces). An answer may repeat what the
//     model said to the same or a similar request: a retry, a regenerate,
//     one template over many inputs, the same FAQ from many callers, a
//     shared system prompt, the same retrieved document (see provenance.go
//     for what "related requests" means, in numbers). It names the source
//     exchange, and says whether the material was its request or its
//     answer. Against the request of an exchange that ended without a
//     complete answer (aborted, cut, failed) less than AbortWindow ago,
//     MinAbortSpan bytes are enough: its prompt may have been written late
//     into another request's cache pages, and come back in short
//     fragments.
//   - inbound.template_fragment: a chat-template control token or role
//     header ([TemplateTokens]) that the request did not contain.
//   - inbound.usage_mismatch: the provider's usage.prompt_tokens far below
//     a lower bound of the request's tokens (the engine dropped the
//     prompt), or response IDs or models that change inside a stream.
//
// # Seam with the guard
//
// [Verifier] implements inbound.Verifier (and inbound.CanaryMinter), the
// interface the guard in package sdk calls on every response; this package
// does not import sdk. The guard calls Begin with the exchange, Write with
// each piece of response text, releases all but the session's HoldBack()
// trailing bytes, and calls Close at the end; it turns signals into
// *sdk.ContaminationError per the policy. For other callers, [Verifier.Check]
// verifies a whole response; a streamed one is a session driven as the
// guard drives it (the guard's stream filter is the one that releases
// text).
//
// Begin records the request's fingerprints (and canary, and entities) in
// the store, so that concurrent and later exchanges see them; Close
// records the response's, only when the answer is clean and complete (not
// refused by the guard, not cut or aborted, and without any signal): a
// refused or suspicious answer is nobody's source. Nothing raw is stored
// or reported: the store holds 64-bit seeded hashes under holder names
// made of the exchange ID, the side (request, what only its instructions
// hold, or answer) and a keyed tag of the principal (see provenance.go),
// and signals carry masked previews.
package verify

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/internal/tokens"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// Default tuning of a Verifier.
const (
	DefaultMinRun          = 2
	DefaultMinSpan         = 48
	DefaultMaxDocFreq      = 8
	DefaultMinWordBytes    = 13
	DefaultUsageRatio      = 0.5
	DefaultMinPromptTokens = 64
	DefaultMaxEntityLen    = 256
	DefaultMinAbortSpan    = 32
	DefaultAbortWindow     = time.Minute
)

// Options configure a [Verifier]. The zero value works: every signal
// blocks, a random keyed scanner, an in-memory store.
type Options struct {
	// Inbound is the policy's inbound section: per-signal actions and the
	// allow-list. TTL, MaxExchanges and MaxMemory size the default memory
	// store.
	Inbound policies.Inbound
	// Scanner classifies response text. The exchanges' Findings are used
	// only when they were hashed under the same key (their FindingsKey is
	// this scanner's KeyID: pass the guard's own scanner); otherwise, or
	// when an exchange carries no Findings, the verifier scans the request
	// texts with this scanner. Nil builds a scanner with all built-ins and
	// HashKey.
	Scanner *classifiers.Scanner
	// HashKey keys the scanner built when Scanner is nil (nil: random).
	HashKey []byte
	// Store remembers fingerprints across exchanges; nil means a
	// fingerprint.MemoryStore of 3·Inbound.MaxExchanges holders (an
	// exchange's request, what only its instructions hold, and its answer
	// are three holders: see provenance.go) and of at most
	// Inbound.MaxMemory bytes (see [Verifier.Forgotten]). Share a
	// fingerprint.RedisStore between processes to see each other's
	// exchanges (they must then share Fingerprint and CanaryKey: CanaryKey
	// also keys the principal tags in holder names).
	Store fingerprint.Store
	// Fingerprint are the winnowing options.
	Fingerprint fingerprint.Options
	// TTL is how long exchanges are remembered; 0 means
	// Inbound.FingerprintTTL, else fingerprint.DefaultTTL.
	TTL time.Duration
	// MinRun and MinSpan: a run of at least MinRun consecutive
	// fingerprints shared with one other exchange, covering at least
	// MinSpan bytes of the response, is contamination. 0 means
	// DefaultMinRun and DefaultMinSpan. With the default fingerprint
	// options any shared fragment of 62 normalised bytes or more (64 bytes
	// of prose) covers at least 48 bytes (fingerprint.Options.Covered), so
	// it is always caught, while chance matches of common phrases, which
	// rarely reach 48 bytes, are not.
	MinRun  int
	MinSpan int
	// MinWordBytes: the run's fingerprints must also hold at least this
	// many bytes of informative words (neither common words nor the
	// user's own names and identifiers), so that shared stock wording
	// around one chance word ("…/v1/zugar with the header X-Request-Id:
	// 6…") is not taken for copied text. 0 means DefaultMinWordBytes.
	MinWordBytes int
	// MaxDocFreq: fingerprints held by more other exchanges than this are
	// boilerplate and ignored; 0 means DefaultMaxDocFreq.
	MaxDocFreq int
	// AbortWindow is how long an exchange that ended without a complete
	// answer (aborted, cut, failed: see [Verifier.MarkAborted]) stays a
	// suspect source, against which a shorter shared run is evidence
	// (MinAbortSpan). 0 means DefaultAbortWindow; negative turns the rule
	// off.
	AbortWindow time.Duration
	// MinAbortSpan: a run shared with an exchange that ended without a
	// complete answer less than AbortWindow ago is contamination once its
	// fingerprints held by at most MaxDocFreq/2 other exchanges cover this
	// many bytes (with MinWordBytes of informative words), instead of
	// MinSpan: with the default fingerprint options any such fragment of
	// 46 normalised bytes or more is caught. 0 means DefaultMinAbortSpan.
	MinAbortSpan int
	// Boilerplate are texts known to be shared (standard disclaimers,
	// shared system prompts): their k-grams never count. They add to the
	// built-in stock phrases ([BuiltinBoilerplate]).
	Boilerplate []string
	// NoBuiltinBoilerplate leaves out the built-in stock phrases.
	NoBuiltinBoilerplate bool
	// CanaryKey keys canaries and the principal tags of holder names; nil
	// means a random key per Verifier (then only this Verifier can confirm
	// the source of a canary, or tell a principal's own material in the
	// store).
	CanaryKey []byte
	// UsageRatio: a reported prompt token count below UsageRatio times the
	// local lower bound is a mismatch; 0 means DefaultUsageRatio.
	UsageRatio float64
	// MinPromptTokens: the usage check applies only when the local lower
	// bound is at least this; 0 means DefaultMinPromptTokens.
	MinPromptTokens int
	// MaxEntityLen bounds the streaming hold-back: a candidate entity
	// that is not a finding yet is held back at most this many bytes
	// (classifiers.PartialOptions.MaxHold), and the scan of each piece
	// looks back as far for context words; 0 means DefaultMaxEntityLen.
	// Longer entities (PEM keys) are still detected, but a stream may
	// release their first bytes.
	MaxEntityLen int
	// Sourced lists the detectors (IDs) whose findings occur in answers
	// legitimately (a person's name: "Albert Einstein"): a foreign value
	// of theirs is an inbound.foreign_entity signal only when the store
	// names another exchange whose request carried it, and no more than
	// MaxDocFreq others did (a value many exchanges sent is common
	// knowledge, not evidence). nil means the policy's inbound.sourced
	// (Inbound.Sourced) when it lists any, else [DefaultSourced]; an
	// empty non-nil slice makes every detector's foreign values signals.
	Sourced []string
	// PrivateInstructions makes the instructions of requests (system and
	// developer messages) their principals' own: another principal's
	// instruction text counts as foreign unless the instructions of two or
	// more principals hold it (see provenance.go, Shared instructions).
	// Inbound.PrivateInstructions (the policy's) sets it too.
	PrivateInstructions bool
}

// DefaultSourced returns the detectors whose foreign values need a source
// unless Options.Sourced says otherwise: pii.person_name.
func DefaultSourced() []string { return []string{"pii.person_name"} }

// Verifier checks responses. It is safe for concurrent use; its sessions
// are not (one goroutine at a time per session).
type Verifier struct {
	opts      Options
	scanner   *classifiers.Scanner
	store     fingerprint.Store
	ttl       time.Duration
	canaryKey []byte
	sourced   map[string]bool // detectors whose foreign values need a source
	// entityMessages: the messages of foreign-entity signals by detector
	// (built-in and sourced ones), made once.
	entityMessages map[string]string
	keyID          string // the scanner's KeyID
	templates      *templateMatcher
	boilerplate    hashSet
	refStore       refStore
	common         hashSet
	scratch        sync.Pool // *scratch
	tagMAC         sync.Pool // *keyedMAC: HMAC-SHA256 under canaryKey, for canaries and principal tags
	allow          allowList
	holdBack       int
	slackSpace     [utf8.RuneSelf]bool // the ASCII bytes that slack passes over (see slackSpaces)
	now            func() time.Time    // the clock of abort marks (tests set it)

	// ownStore: the store was made by New, so this Verifier records all
	// it holds; instrHeld: it has recorded what only a request's
	// instructions hold. Without both, no fingerprint can be shared
	// instructions, and holders need not be resolved to tell (see
	// provenance.go).
	ownStore  bool
	instrHeld atomic.Bool
}

var (
	_ inbound.Verifier     = (*Verifier)(nil)
	_ inbound.CanaryMinter = (*Verifier)(nil)
)

// New returns a Verifier.
func New(opts Options) (*Verifier, error) {
	v := &Verifier{opts: opts, scanner: opts.Scanner, store: opts.Store}
	v.opts.PrivateInstructions = opts.PrivateInstructions || opts.Inbound.PrivateInstructions
	if v.opts.MinRun <= 0 {
		v.opts.MinRun = DefaultMinRun
	}
	if v.opts.MinSpan <= 0 {
		v.opts.MinSpan = DefaultMinSpan
	}
	if v.opts.MinWordBytes <= 0 {
		v.opts.MinWordBytes = DefaultMinWordBytes
	}
	if v.opts.MaxDocFreq <= 0 {
		v.opts.MaxDocFreq = DefaultMaxDocFreq
	}
	if v.opts.AbortWindow == 0 {
		v.opts.AbortWindow = DefaultAbortWindow
	}
	if v.opts.MinAbortSpan <= 0 {
		v.opts.MinAbortSpan = DefaultMinAbortSpan
	}
	v.now = time.Now
	if v.opts.UsageRatio <= 0 {
		v.opts.UsageRatio = DefaultUsageRatio
	}
	if v.opts.MinPromptTokens <= 0 {
		v.opts.MinPromptTokens = DefaultMinPromptTokens
	}
	if v.opts.MaxEntityLen <= 0 {
		v.opts.MaxEntityLen = DefaultMaxEntityLen
	}
	if v.scanner == nil {
		s, err := classifiers.New(classifiers.Options{HashKey: opts.HashKey})
		if err != nil {
			return nil, fmt.Errorf("verify: scanner: %w", err)
		}
		v.scanner = s
	}
	v.keyID = v.scanner.KeyID()
	v.ttl = opts.TTL
	if v.ttl <= 0 {
		v.ttl = opts.Inbound.FingerprintTTL
	}
	if v.ttl <= 0 {
		v.ttl = fingerprint.DefaultTTL
	}
	if v.store == nil {
		// An exchange is up to three holders: its request, what only its
		// instructions hold, and its answer (see provenance.go).
		n := opts.Inbound.MaxExchanges
		if n <= 0 {
			n = fingerprint.DefaultMaxExchanges
		}
		v.store = fingerprint.NewMemoryStore(fingerprint.MemoryOptions{MaxExchanges: 3 * n, MaxBytes: opts.Inbound.MaxMemory})
		v.ownStore = true
	}
	v.refStore, _ = v.store.(refStore)
	v.canaryKey = opts.CanaryKey
	if len(v.canaryKey) == 0 {
		v.canaryKey = make([]byte, 32)
		if _, err := rand.Read(v.canaryKey); err != nil {
			return nil, fmt.Errorf("verify: canary key: %w", err)
		}
	}
	sourced := opts.Sourced
	if sourced == nil && len(opts.Inbound.Sourced) > 0 {
		sourced = opts.Inbound.Sourced
	}
	if sourced == nil {
		sourced = DefaultSourced()
	}
	v.sourced = make(map[string]bool, len(sourced))
	for _, d := range sourced {
		v.sourced[d] = true
	}
	v.entityMessages = newEntityMessages(v.sourced)
	v.templates = newTemplateMatcher()
	// Every k-gram of a boilerplate text (window 1), not only its
	// fingerprints: the fingerprints a response selects inside a phrase
	// depend on the text around it.
	v.boilerplate = newHashSet(0)
	all := v.opts.Fingerprint
	all.Window = 1
	bp := opts.Boilerplate
	if !opts.NoBuiltinBoilerplate {
		bp = append(append([]string(nil), builtinBoilerplate...), bp...)
	}
	for _, b := range bp {
		for _, f := range fingerprint.OfString(b, all) {
			v.boilerplate.add(f.Hash)
		}
	}
	v.common = commonSet()
	v.slackSpace = slackSpaces(v.opts.Fingerprint.StripPunctuation)
	v.allow = newAllowList(opts.Inbound.AllowList)
	// The bound of a session's hold-back (and the look-back of its
	// scans), not the hold-back itself: see hold.go.
	v.holdBack = max(v.opts.MaxEntityLen, maxTemplateLen(), CanaryLen,
		v.opts.MinSpan+2*v.opts.Fingerprint.Guarantee())
	return v, nil
}

// Forgotten returns how many holders (an exchange's request, its
// instructions, its answer) the Verifier's own memory store forgot before
// their TTL to keep within Inbound.MaxExchanges and Inbound.MaxMemory, and
// the bytes that store holds (fingerprint.MemoryStore.Bytes); 0, 0 with a
// store given in Options.
func (v *Verifier) Forgotten() (holders uint64, bytes int64) {
	if ms, ok := v.store.(*fingerprint.MemoryStore); ok && v.ownStore {
		return ms.Forgotten(), ms.Bytes()
	}
	return 0, 0
}

// HoldBack returns the longest hold-back of this Verifier's sessions for
// text that holds no finding: the longest thing that can straddle two
// pieces of a stream (an entity, a template token, a canary, the text a
// fingerprint run needs). A session holds back only what may still turn
// out to be foreign material, which in clean prose is some 25 to 40 bytes
// (see session.HoldBack); a value already found is held whole however
// long it is.
func (v *Verifier) HoldBack() int { return v.holdBack }

// Mint returns the canary token of an exchange ID: a keyed nonce rendered
// as "aishield-canary-" and 16 base32 characters.
func (v *Verifier) Mint(exchange string) string {
	m := v.getMAC()
	tok := m.mintCanary(exchange)
	v.tagMAC.Put(m)
	return tok
}

// keyedMAC is an HMAC-SHA256 under CanaryKey with a buffer for its input,
// pooled per Verifier: canaries and principal tags are computed without
// allocating.
type keyedMAC struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

func (v *Verifier) getMAC() *keyedMAC {
	if m, ok := v.tagMAC.Get().(*keyedMAC); ok {
		return m
	}
	return &keyedMAC{h: hmac.New(sha256.New, v.canaryKey)}
}

// of returns the MAC of domain and s, valid until the next call.
func (m *keyedMAC) of(domain, s string) []byte {
	m.h.Reset()
	m.buf = append(append(m.buf[:0], domain...), s...)
	m.h.Write(m.buf)
	return m.h.Sum(m.sum[:0])
}

// MintCanary implements inbound.CanaryMinter: it returns the canary line to
// place in the request of ex (see [CanaryLine]).
func (v *Verifier) MintCanary(ctx context.Context, ex *inbound.Exchange) (string, error) {
	if ex == nil || ex.ID == "" {
		return "", errors.New("verify: canary for an exchange without ID")
	}
	return CanaryLine(v.Mint(ex.ID)), nil
}

func (v *Verifier) on(signal string) bool {
	return v.opts.Inbound.Action(signal) != policies.SignalOff
}

// Signal is one signal with the action the policy gives it.
type Signal struct {
	inbound.Signal
	Action policies.SignalAction `json:"action"`
}

// Verdict is the outcome of verifying one response.
type Verdict struct {
	// Exchange is the exchange ID.
	Exchange string `json:"exchange"`
	// Blocked reports that at least one signal's action is block.
	Blocked bool `json:"blocked"`
	// Signals are the signals found, in order of discovery.
	Signals []Signal `json:"signals"`
}

// Contaminated reports whether the verdict holds any signal (block or
// flag).
func (vd *Verdict) Contaminated() bool { return vd != nil && len(vd.Signals) > 0 }

func (v *Verifier) verdict(id string, sigs []inbound.Signal) *Verdict {
	vd := &Verdict{Exchange: id, Signals: []Signal{}}
	v.add(vd, sigs)
	return vd
}

func (v *Verifier) add(vd *Verdict, sigs []inbound.Signal) {
	for _, s := range sigs {
		a := v.opts.Inbound.Action(s.ID)
		if a == policies.SignalOff {
			continue
		}
		if a == policies.SignalBlock {
			vd.Blocked = true
		}
		vd.Signals = append(vd.Signals, Signal{Signal: s, Action: a})
	}
}

// Check verifies a whole (non-streamed) response to ex: Begin, one Write,
// Close.
func (v *Verifier) Check(ctx context.Context, ex *inbound.Exchange, response string, end inbound.End) (*Verdict, error) {
	s, err := v.begin(ctx, ex)
	if err != nil {
		return nil, err
	}
	var sigs []inbound.Signal
	d := inbound.Delta{Text: response}
	if len(end.IDs) > 0 {
		d.ID = end.IDs[0]
	}
	d.Model = end.Model
	got, err := s.Write(ctx, d)
	sigs = append(sigs, got...)
	if err != nil {
		return v.verdict(ex.ID, sigs), err
	}
	got, err = s.Close(ctx, end)
	sigs = append(sigs, got...)
	return v.verdict(ex.ID, sigs), err
}

// maskText renders a piece of foreign text without revealing it: its first
// two characters and its length.
func maskText(b []byte) string {
	s := string(b)
	n := 0
	var pre strings.Builder
	for _, r := range s {
		if n == 2 {
			break
		}
		pre.WriteRune(r)
		n++
	}
	return fmt.Sprintf("%s… (%d bytes)", pre.String(), len(b))
}

// lowerBound returns a lower bound of the request's prompt tokens.
func lowerBound(ex *inbound.Exchange) int {
	if ex.TokensExact && ex.Tokens > 0 {
		return ex.Tokens
	}
	texts := ex.Sent
	if len(texts) == 0 {
		texts = ex.Texts
	}
	n := 0
	for _, t := range texts {
		lo, _ := tokens.Bounds(t)
		n += lo
	}
	return n
}

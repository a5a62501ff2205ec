package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// session verifies the response of one exchange; see inbound.Session.
type session struct {
	v  *Verifier
	ex *inbound.Exchange

	own       map[string]bool // entity hashes of the request
	ownFP     map[uint64]bool // fingerprints of the request
	templates map[int]bool    // template tokens present in the request
	canary    string          // this exchange's canary token, "" none

	buf      []byte // response text so far
	verified int    // bytes of buf checked for span signals
	win      *fingerprint.Winnower
	respFP   []uint64
	pending  []fingerprint.Fingerprint // cross: fingerprints to look up
	hashes   []uint64                  // cross: their hashes
	runs     map[string]*run
	reported map[string]bool // dedupe key of reported signals

	firstID, firstModel string
	idChanged           bool
	closed              bool
}

type run struct {
	n          int
	start, end int
	covered    int
}

// Begin implements inbound.Verifier. It records the request's fingerprints
// and canary in the store.
func (v *Verifier) Begin(ctx context.Context, ex *inbound.Exchange) (inbound.Session, error) {
	return v.begin(ctx, ex)
}

func (v *Verifier) begin(ctx context.Context, ex *inbound.Exchange) (*session, error) {
	if ex == nil || ex.ID == "" {
		return nil, errors.New("verify: exchange without ID")
	}
	s := &session{
		v: v, ex: ex,
		own:      map[string]bool{},
		ownFP:    map[uint64]bool{},
		runs:     map[string]*run{},
		reported: map[string]bool{},
		win:      fingerprint.NewWinnower(v.opts.Fingerprint),
	}
	texts := append(append([]string(nil), ex.Texts...), ex.Sent...)
	if v.on(inbound.SignalForeignEntity) {
		if len(ex.Findings) > 0 {
			for _, fs := range ex.Findings {
				for _, f := range fs {
					s.own[f.Hash] = true
				}
			}
		} else {
			for _, t := range texts {
				fs, err := v.scanner.ScanString(ctx, t)
				if err != nil {
					return nil, fmt.Errorf("verify: scanning the request: %w", err)
				}
				for _, f := range fs {
					s.own[f.Hash] = true
				}
			}
		}
	}
	if v.on(inbound.SignalTemplateFragment) {
		s.templates = v.templates.present(texts)
	}
	var record []uint64
	sent := ex.Sent
	if len(sent) == 0 {
		sent = ex.Texts
	}
	for i, t := range sent {
		for _, f := range fingerprint.OfString(t, v.opts.Fingerprint) {
			if !s.ownFP[f.Hash] {
				s.ownFP[f.Hash] = true
				record = append(record, f.Hash)
			}
		}
		if i < len(ex.Texts) && ex.Texts[i] != t {
			for _, f := range fingerprint.OfString(ex.Texts[i], v.opts.Fingerprint) {
				s.ownFP[f.Hash] = true
			}
		}
	}
	for _, t := range texts {
		findCanaries([]byte(t), func(h canaryHit) {
			if h.token == v.Mint(ex.ID) {
				s.canary = h.token
			}
		})
	}
	if ex.Canary != "" {
		findCanaries([]byte(ex.Canary), func(h canaryHit) { s.canary = h.token })
	}
	if s.canary != "" {
		record = append(record, canaryKey(s.canary))
	}
	for h := range s.own {
		record = append(record, entityKey(h))
	}
	if v.on(inbound.SignalCrossExchange) || v.on(inbound.SignalCanary) {
		if err := v.store.Record(ctx, ex.ID, record, v.ttl); err != nil {
			return nil, fmt.Errorf("verify: recording the request: %w", err)
		}
	}
	return s, nil
}

// HoldBack implements inbound.Session.
func (s *session) HoldBack() int { return len(s.buf) - s.verified }

// Write implements inbound.Session.
func (s *session) Write(ctx context.Context, d inbound.Delta) ([]inbound.Signal, error) {
	if s.closed {
		return nil, errors.New("verify: write after close")
	}
	var sigs []inbound.Signal
	if s.v.on(inbound.SignalUsageMismatch) && !s.idChanged {
		if d.ID != "" {
			if s.firstID == "" {
				s.firstID = d.ID
			} else if d.ID != s.firstID {
				s.idChanged = true
				sigs = append(sigs, inbound.Signal{ID: inbound.SignalUsageMismatch, Confidence: 0.9,
					Message: "the response ID changed inside the stream: pieces of another response were spliced in"})
			}
		}
		if d.Model != "" && !s.idChanged {
			if s.firstModel == "" {
				s.firstModel = d.Model
			} else if d.Model != s.firstModel {
				s.idChanged = true
				sigs = append(sigs, inbound.Signal{ID: inbound.SignalUsageMismatch, Confidence: 0.8,
					Message: "the model changed inside the stream (" + s.firstModel + " then " + d.Model + ")"})
			}
		}
	}
	s.buf = append(s.buf, d.Text...)
	_, _ = s.win.WriteString(d.Text)
	got, err := s.check(ctx, false)
	return append(sigs, got...), err
}

// Close implements inbound.Session.
func (s *session) Close(ctx context.Context, end inbound.End) ([]inbound.Signal, error) {
	if s.closed {
		return nil, errors.New("verify: session closed twice")
	}
	s.closed = true
	sigs, err := s.check(ctx, true)
	if err != nil {
		return sigs, err
	}
	if s.v.on(inbound.SignalUsageMismatch) {
		sigs = append(sigs, s.usage(end)...)
	}
	if s.v.on(inbound.SignalCrossExchange) && len(s.respFP) > 0 {
		if err := s.v.store.Record(ctx, s.ex.ID, s.respFP, s.v.ttl); err != nil {
			return sigs, fmt.Errorf("verify: recording the response: %w", err)
		}
	}
	return sigs, nil
}

func (s *session) usage(end inbound.End) []inbound.Signal {
	var sigs []inbound.Signal
	if !s.idChanged && len(end.IDs) > 1 {
		s.idChanged = true
		sigs = append(sigs, inbound.Signal{ID: inbound.SignalUsageMismatch, Confidence: 0.9,
			Message: fmt.Sprintf("the response carried %d different IDs: pieces of other responses were spliced in", len(end.IDs))})
	}
	if !end.HasUsage {
		return sigs
	}
	lower := lowerBound(s.ex)
	if lower < s.v.opts.MinPromptTokens || float64(end.PromptTokens) >= float64(lower)*s.v.opts.UsageRatio {
		return sigs
	}
	msg := fmt.Sprintf("the provider counted %d prompt tokens for a request of at least %d: it did not process the prompt", end.PromptTokens, lower)
	if aborted(end.FinishReason) {
		msg += fmt.Sprintf(", and finished with %q", end.FinishReason)
	}
	return append(sigs, inbound.Signal{ID: inbound.SignalUsageMismatch, Confidence: 0.95, Message: msg})
}

// aborted reports finish reasons that say the engine gave up.
func aborted(reason string) bool {
	switch strings.ToLower(reason) {
	case "abort", "aborted", "error", "cancelled", "canceled", "":
		return true
	}
	return false
}

// check verifies buf[verified:] up to the hold-back point (all of it when
// final). Spans that end inside the held-back tail are decided later, when
// more text shows they are complete.
func (s *session) check(ctx context.Context, final bool) ([]inbound.Signal, error) {
	v := s.v
	var sigs []inbound.Signal
	end := len(s.buf)
	safe := end - v.holdBack
	if final {
		safe = end
	}
	// Fingerprints are exact as soon as their k-gram is complete.
	if v.on(inbound.SignalCrossExchange) {
		got, err := s.cross(ctx, s.win.Take())
		sigs = append(sigs, got...)
		if err != nil {
			return sigs, err
		}
	}
	if safe <= s.verified {
		return sigs, nil
	}
	lo := max(0, s.verified-v.holdBack)
	region := s.buf[lo:end]
	release := safe
	accept := func(start, stop int) bool {
		start += lo
		stop += lo
		if stop <= s.verified {
			return false // decided before
		}
		if stop > safe {
			if start < release {
				release = start // do not release half of it
			}
			return false
		}
		return true
	}
	var canaries []canaryHit
	if v.on(inbound.SignalCanary) || v.on(inbound.SignalForeignEntity) {
		findCanaries(region, func(h canaryHit) { canaries = append(canaries, h) })
	}
	if v.on(inbound.SignalCanary) {
		for _, h := range canaries {
			if !accept(h.start, h.end) || h.token == s.canary {
				continue
			}
			sig, err := s.foreignCanary(ctx, h, lo)
			if err != nil {
				return sigs, err
			}
			sigs = append(sigs, sig)
		}
	}
	if v.on(inbound.SignalTemplateFragment) {
		v.templates.find(region, func(h templateHit) {
			if !accept(h.start, h.end) || s.templates[h.token] {
				return
			}
			t := templateTokens[h.token]
			sigs = append(sigs, inbound.Signal{ID: inbound.SignalTemplateFragment, Start: lo + h.start, End: lo + h.end,
				Preview: t.text, Confidence: 0.9,
				Message: "chat-template control token of the " + t.family + " family: the engine decoded over a formatted prompt"})
		})
	}
	if v.on(inbound.SignalForeignEntity) {
		fs, err := v.scanner.Scan(ctx, region)
		if err != nil {
			var te *classifiers.TimeoutError
			if !errors.As(err, &te) {
				return sigs, fmt.Errorf("verify: scanning the response: %w", err)
			}
		}
		var foreign []inbound.Signal
		var keys []uint64
		for _, f := range fs {
			if !accept(f.Start, f.End) || s.own[f.Hash] || overlapsCanary(canaries, f) {
				continue
			}
			if v.allow.allowed(f.Detector, string(region[f.Start:f.End])) {
				continue
			}
			foreign = append(foreign, inbound.Signal{ID: inbound.SignalForeignEntity, Detector: f.Detector,
				Start: lo + f.Start, End: lo + f.End, Preview: f.Preview, Confidence: f.Confidence,
				Message: f.Detector + " value that the request did not contain"})
			keys = append(keys, entityKey(f.Hash))
		}
		if len(keys) > 0 {
			// Name the exchanges whose requests carried the value, when the
			// store remembers them.
			hs, err := v.store.Lookup(ctx, keys)
			if err != nil {
				return sigs, fmt.Errorf("verify: entity lookup: %w", err)
			}
			for i := range foreign {
				for _, id := range hs[i].Exchanges {
					if id != s.ex.ID {
						foreign[i].Sources = append(foreign[i].Sources, id)
					}
				}
			}
		}
		sigs = append(sigs, foreign...)
	}
	s.verified = max(s.verified, release)
	return sigs, nil
}

func overlapsCanary(cs []canaryHit, f classifiers.Finding) bool {
	for _, c := range cs {
		if f.Start < c.end && c.start < f.End {
			return true
		}
	}
	return false
}

func (s *session) foreignCanary(ctx context.Context, h canaryHit, lo int) (inbound.Signal, error) {
	sig := inbound.Signal{ID: inbound.SignalCanary, Start: lo + h.start, End: lo + h.end,
		Preview: maskCanary(h.token), Confidence: 1}
	hs, err := s.v.store.Lookup(ctx, []uint64{canaryKey(h.token)})
	if err != nil {
		return sig, fmt.Errorf("verify: canary lookup: %w", err)
	}
	for _, id := range hs[0].Exchanges {
		if id != s.ex.ID && s.v.Mint(id) == h.token {
			sig.Sources = append(sig.Sources, id)
		}
	}
	if len(sig.Sources) > 0 {
		sig.Message = "canary minted for exchange " + sig.Sources[0] + ", not this one"
	} else {
		sig.Message = "canary not minted for this exchange (its source is no longer remembered or used another key)"
	}
	return sig, nil
}

// cross looks fps up and extends the runs of fingerprints shared with other
// exchanges.
//
// A fingerprint is neutral (it neither counts as evidence nor breaks a run)
// when it is one of this exchange's own request, when it is boilerplate
// (built in, configured, or held by more than MaxDocFreq other exchanges),
// or when its k-gram is made only of common words. Only the remaining ones
// are looked up in the store, in one batch; among them, one that no other
// exchange holds breaks every run, and one held by exchange X extends the
// run with X and counts the bytes it covers as evidence.
func (s *session) cross(ctx context.Context, fps []fingerprint.Fingerprint) ([]inbound.Signal, error) {
	if len(fps) == 0 {
		return nil, nil
	}
	v := s.v
	s.pending = s.pending[:0]
	s.hashes = s.hashes[:0]
	for _, f := range fps {
		s.respFP = append(s.respFP, f.Hash)
		if s.ownFP[f.Hash] || v.boilerplate[f.Hash] {
			continue
		}
		s.pending = append(s.pending, f)
		s.hashes = append(s.hashes, f.Hash)
	}
	if len(s.hashes) == 0 {
		return nil, nil
	}
	holders, err := v.store.Lookup(ctx, s.hashes)
	if err != nil {
		return nil, fmt.Errorf("verify: fingerprint lookup: %w", err)
	}
	var sigs []inbound.Signal
	for i, f := range s.pending {
		h := holders[i]
		others := h.Count
		for _, id := range h.Exchanges {
			if id == s.ex.ID {
				others--
			}
		}
		if others <= 0 {
			clear(s.runs) // text nobody else wrote
			continue
		}
		if others > v.opts.MaxDocFreq || !v.informative(s.buf, f.Offset, min(f.End, len(s.buf))) {
			continue // common: neutral
		}
		// A run with exchange X goes on while X holds the fingerprints.
		for id := range s.runs {
			if !contains(h.Exchanges, id) {
				delete(s.runs, id)
			}
		}
		for _, id := range h.Exchanges {
			if id == s.ex.ID {
				continue
			}
			r := s.runs[id]
			if r == nil {
				r = &run{start: f.Offset, end: f.Offset}
				s.runs[id] = r
			}
			r.n++
			// Evidence is the bytes covered by the counted fingerprints
			// (their union), not the gaps neutral text left between them.
			if f.Offset >= r.end {
				r.covered += f.End - f.Offset
			} else if f.End > r.end {
				r.covered += f.End - r.end
			}
			r.end = max(r.end, f.End)
			if r.n >= v.opts.MinRun && r.covered >= v.opts.MinSpan && !s.reported["x:"+id] {
				s.reported["x:"+id] = true
				sigs = append(sigs, inbound.Signal{ID: inbound.SignalCrossExchange, Start: r.start, End: r.end,
					Preview: maskText(s.buf[r.start:min(r.end, len(s.buf))]), Sources: []string{id}, Confidence: 0.9,
					Message: fmt.Sprintf("%d bytes of text shared with exchange %s (%d fingerprints in a row)", r.covered, id, r.n)})
			}
		}
	}
	return sigs, nil
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// allowList holds the policy's allow-listed values and domains, normalised.
type allowList struct {
	values  map[string]bool
	digits  map[string]bool
	domains []string
}

func newAllowList(entries []string) allowList {
	a := allowList{values: map[string]bool{}, digits: map[string]bool{}}
	for _, e := range entries {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		a.values[e] = true
		if d := digitsOf(e); len(d) >= 6 {
			a.digits[d] = true
		}
		if !strings.Contains(e, "@") && strings.Contains(e, ".") && !strings.ContainsAny(e, " /:") {
			a.domains = append(a.domains, strings.TrimPrefix(e, "*."))
		}
	}
	return a
}

func digitsOf(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// allowed reports whether value (found by detector) is allow-listed: the
// same value (case-insensitive), the same digits for numbers, or a host
// within an allow-listed domain.
func (a allowList) allowed(detector, value string) bool {
	if len(a.values) == 0 {
		return false
	}
	v := strings.ToLower(strings.TrimSpace(value))
	if a.values[v] {
		return true
	}
	if d := digitsOf(v); len(d) >= 6 && len(d)*2 >= len(strings.TrimFunc(v, unicode.IsSpace)) && a.digits[d] {
		return true
	}
	host := v
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if i := strings.Index(host, "://"); i >= 0 {
		host = host[i+3:]
	}
	if i := strings.IndexAny(host, "/:?#"); i >= 0 {
		host = host[:i]
	}
	for _, d := range a.domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// entityKey is the store key under which an exchange records an entity of
// its request (by its keyed hash), so that a foreign entity names the
// exchanges it came from; the domain tag keeps it apart from text
// fingerprints.
func entityKey(hash string) uint64 {
	sum := sha256.Sum256([]byte("aishield-entity\x00" + hash))
	return binary.BigEndian.Uint64(sum[:8])
}

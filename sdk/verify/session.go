package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/sdk/fingerprint"
	"github.com/aishield/aishield/sdk/inbound"
)

// session verifies the response of one exchange; see inbound.Session.
type session struct {
	v  *Verifier
	ex *inbound.Exchange

	templates map[int]bool // template tokens present in the request
	canary    string       // this exchange's canary token, "" none
	ptag      string       // the principal's tag, "" unknown (see provenance.go)
	holder    string       // the holder name of the request in the store
	signalled bool         // a signal was returned: the answer is nobody's source

	buf      []byte // response text so far
	verified int    // bytes of buf vouched for (released): see hold.go
	decided  int    // bytes of buf in which entities, canaries and template tokens are decided
	*scratch        // returned to the Verifier's pool on Close

	names    []string          // holder names of stores without compact answers
	reported []fingerprint.Ref // sources reported, or never to be (own principal, related answer)
	named    []string          // exchanges named by a cross-exchange signal
	answers  []fingerprint.Ref // answer sources whose run is complete at the current fingerprint
	contains []containment     // exchanges whose requests this one does or does not contain

	firstID, firstModel string
	idChanged           bool
	closed              bool
	// eager: scan whenever scanStep bytes are undecided, even when the
	// scan could release nothing (TestScanSkipReleases' reference).
	eager bool
	// promptChecked: the provider's prompt count was checked when a piece
	// reported it (Delta.PromptTokens); promptFlagged: it was too low, and
	// Close does not report it again.
	promptChecked, promptFlagged bool
}

// scratch is the working memory of a session that nothing references after
// Close: it is reused by later sessions.
type scratch struct {
	own      map[string]bool // entity hashes of the request
	runs     []run           // runs of fingerprints shared with other exchanges
	win      *fingerprint.Winnower
	grams    hashSet  // every k-gram of the request
	gramBuf  []uint64 // the k-grams of one text, added to grams at once
	ownWords hashSet  // name-like words of the request, on first use
	hasWords bool     // ownWords computed
	respFP   []uint64 // the response's fingerprints, recorded on Close
	record   []uint64 // the request's, recorded by Begin
	written  []span   // the ranges of record that are fingerprints of texts as written
	instr    []span   // the ranges of record that are fingerprints of instruction texts
	rewrite  []int    // the texts whose sent form differs from the written one
	req      []byte   // the request's texts
	texts    []span   // its distinct texts in req (written and sent)
	sent     []span   // the texts that left

	// Cross-exchange state: fingerprints taken from the winnower, those to
	// look up, their hashes, the store's answer (sources are
	// fingerprint.Refs: the memory store's own, or indices+1 into names
	// for other stores), and the informative words of one fingerprint.
	fps     []fingerprint.Fingerprint
	pending []fingerprint.Fingerprint
	hashes  []uint64
	refs    fingerprint.Refs
	words   []span
	// The response's final words, read from tokStart up to tokEnd (see
	// tokenise).
	toks             []wordTok
	tokStart, tokEnd int
	// Entity keys of foreign values and their holders.
	ekeys      []uint64
	erefs      fingerprint.Refs
	foreign    []inbound.Signal // candidate foreign-entity signals of one check
	norm       []byte           // a value normalised (requestHolds)
	reqNorm    []byte           // the request's texts, case and spaces folded (requestHolds), on first use
	hasReqNorm bool

	// Provenance (see provenance.go): the holders met, resolved on first
	// use, and the request's sketch for related-request checks.
	holders    []holder
	hidx       []uint64 // index of holders by ref (see holderOf)
	hasSketch  bool
	hasDigests bool
	recorded   bool                      // the request was recorded by Begin
	reqFP      []uint64                  // distinct request fingerprints
	digest     uint64                    // digest of the request's texts
	textDig    []uint64                  // digests of its distinct texts (see Repeated requests)
	relKeys    []uint64                  // keys of a related-request lookup, or of the answer's record
	rwin       *fingerprint.Winnower     // fingerprints texts sent in another form, on first use
	rfps       []fingerprint.Fingerprint // its output
	kwin       *fingerprint.Winnower     // every k-gram of a run's text (see respliced), on first use
	kfps       []fingerprint.Fingerprint // its output

	// Shared instructions (see provenance.go): the k-grams of the texts
	// that are not instructions, and the request's record split.
	userGrams hashSet
	qrec      []uint64
	irec      []uint64

	// partial is the scanner's working memory for the scans of a stream.
	partial classifiers.PartialScratch
}

// maxPooledSlots bounds the hash tables kept for reuse (a huge request's
// are dropped).
const maxPooledSlots = 1 << 16

func (v *Verifier) getScratch() *scratch {
	if sc, ok := v.scratch.Get().(*scratch); ok {
		sc.win.Reset()
		sc.hasWords, sc.hasSketch, sc.hasDigests, sc.recorded, sc.hasReqNorm = false, false, false, false, false
		sc.respFP, sc.fps, sc.holders, sc.runs = sc.respFP[:0], sc.fps[:0], sc.holders[:0], sc.runs[:0]
		sc.toks, sc.tokStart, sc.tokEnd = sc.toks[:0], 0, 0
		clear(sc.own)
		clear(sc.hidx)
		return sc
	}
	return &scratch{win: fingerprint.NewWinnower(v.opts.Fingerprint), own: map[string]bool{}}
}

func (v *Verifier) putScratch(sc *scratch) {
	if len(sc.grams.slots) > maxPooledSlots || len(sc.ownWords.slots) > maxPooledSlots ||
		cap(sc.respFP) > maxPooledSlots || cap(sc.record) > maxPooledSlots || cap(sc.req) > 8*maxPooledSlots ||
		cap(sc.reqFP) > maxPooledSlots || cap(sc.relKeys) > maxPooledSlots || len(sc.hidx) > maxPooledSlots ||
		len(sc.userGrams.slots) > maxPooledSlots || cap(sc.qrec) > maxPooledSlots || cap(sc.irec) > maxPooledSlots ||
		cap(sc.kfps) > maxPooledSlots || cap(sc.reqNorm) > 8*maxPooledSlots || len(sc.own) > maxPooledSlots ||
		cap(sc.toks) > maxPooledSlots || cap(sc.gramBuf) > maxPooledSlots {
		return
	}
	v.scratch.Put(sc)
}

// release returns the scratch memory to the pool, once.
func (s *session) release() {
	if s.scratch != nil {
		s.v.putScratch(s.scratch)
		s.scratch = nil
	}
}

// run is a run of consecutive counted fingerprints shared with one source.
type run struct {
	src        fingerprint.Ref
	n          int  // counted fingerprints
	start, end int  // response bytes from the first one's start to the last one's end
	covered    int  // bytes covered by counted fingerprints (their union)
	words      int  // bytes of the informative words whole within the run
	wordEnd    int  // end of the last informative word counted
	rare       int  // of covered, the bytes of fingerprints held by at most MaxDocFreq/2 others
	aborted    int8 // the source is an aborted exchange (MarkAborted): 0 not asked yet, 1 yes, -1 no
	own        int  // respliced found the run's bytes before this the request's
}

type span struct{ start, end int }

// Begin implements inbound.Verifier. It records the request's fingerprints,
// canary and entities in the store, in one call, under the request's holder
// name (which carries the principal's tag, see provenance.go); nothing is
// looked up.
func (v *Verifier) Begin(ctx context.Context, ex *inbound.Exchange) (inbound.Session, error) {
	return v.begin(ctx, ex)
}

func (v *Verifier) begin(ctx context.Context, ex *inbound.Exchange) (*session, error) {
	if ex == nil || ex.ID == "" {
		return nil, errors.New("verify: exchange without ID")
	}
	s := &session{v: v, ex: ex, scratch: v.getScratch()}
	// The request's texts, as written and as sent, copied once into the
	// scratch buffer: texts are the distinct ones, sent those that left.
	s.req, s.texts, s.sent = s.req[:0], s.texts[:0], s.sent[:0]
	add := func(t string) span {
		sp := span{len(s.req), len(s.req) + len(t)}
		s.req = append(s.req, t...)
		s.texts = append(s.texts, sp)
		return sp
	}
	for _, t := range ex.Texts {
		add(t)
	}
	for i, t := range ex.Sent {
		if i < len(ex.Texts) && ex.Texts[i] == t {
			s.sent = append(s.sent, s.texts[i])
		} else {
			s.sent = append(s.sent, add(t))
		}
	}
	if len(ex.Sent) == 0 {
		s.sent = append(s.sent, s.texts...)
	}
	if v.on(policies.SignalForeignEntity) {
		// The guard's findings are used when their hashes are comparable
		// with this verifier's (same scanner key); otherwise the request's
		// own values would look foreign in the answer.
		if len(ex.Findings) > 0 && ex.FindingsKey != "" && ex.FindingsKey == v.keyID {
			for _, fs := range ex.Findings {
				for _, f := range fs {
					s.own[f.Hash] = true
				}
			}
		} else {
			for _, t := range s.texts {
				fs, err := v.scanner.Scan(ctx, s.req[t.start:t.end])
				if err != nil {
					s.release()
					return nil, fmt.Errorf("verify: scanning the request: %w", err)
				}
				for _, f := range fs {
					s.own[f.Hash] = true
				}
			}
		}
	}
	if v.on(policies.SignalTemplateFragment) {
		for _, t := range s.texts {
			v.templates.find(s.req[t.start:t.end], func(h templateHit) {
				if s.templates == nil {
					s.templates = map[int]bool{}
				}
				s.templates[h.token] = true
			})
		}
	}
	// The request's fingerprints are recorded; every k-gram of it (as sent
	// and as written) is the exchange's own material, never evidence. Both
	// come from one pass over each text that left (the fingerprints are
	// selected among the k-grams hashed for the set); a text written
	// otherwise than it left is read for its k-grams only.
	crossOn := v.on(policies.SignalCrossExchange)
	var addGrams func([]uint64)
	if crossOn {
		s.grams.reset(len(s.req))
		addGrams = s.grams.addAll
	}
	// The fingerprints of the texts that left as they were written are
	// also those of the request's sketch (see requestSketch).
	// Only the hashes are kept, appended in place, in a record sized for
	// the expected density: a large request costs one array of hashes,
	// not the winnower's fingerprints, a copy and their regrowth.
	sentBytes := 0
	for _, t := range s.sent {
		sentBytes += t.end - t.start
	}
	record := slices.Grow(s.record[:0], fingerprint.Density(sentBytes, v.opts.Fingerprint))
	s.written, s.rewrite, s.instr = s.written[:0], s.rewrite[:0], s.instr[:0]
	for i, t := range s.sent {
		start := len(record)
		record, s.gramBuf = s.win.HashesAndGrams(record, s.gramBuf, s.req[t.start:t.end], addGrams)
		switch {
		case len(ex.Texts) == 0 || i < len(ex.Texts) && t == s.texts[i]:
			s.written = append(s.written, span{start, len(record)})
		case i < len(ex.Texts):
			s.rewrite = append(s.rewrite, i)
		}
		if s.instruction(i) {
			s.instr = append(s.instr, span{start, len(record)})
		}
	}
	if crossOn {
		for _, t := range s.texts {
			if !slices.Contains(s.sent, t) {
				s.respFP, s.gramBuf = s.win.HashesAndGrams(s.respFP[:0], s.gramBuf, s.req[t.start:t.end], s.grams.addAll)
			}
		}
		s.respFP = s.respFP[:0]
	}
	s.win.Reset()
	s.fps = s.fps[:0]
	mine := v.Mint(ex.ID)
	for _, t := range s.texts {
		findCanaries(s.req[t.start:t.end], func(h canaryHit) {
			if h.token == mine {
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
	if crossOn || v.on(policies.SignalCanary) {
		// The keys of its texts are the request's, recorded with it: a
		// response cache may serve this exchange's answer to the same
		// question before this exchange's answer is verified (see
		// Repeated requests).
		record = s.appendTextKeys(record)
	}
	s.record = record
	s.holder, s.ptag = v.requestHolder(ex.ID, ex.Principal)
	if crossOn || v.on(policies.SignalCanary) || v.on(policies.SignalForeignEntity) {
		if err := s.recordRequest(ctx, record); err != nil {
			s.release()
			return nil, fmt.Errorf("verify: recording the request: %w", err)
		}
		s.recorded = true
	}
	return s, nil
}

// instruction reports whether the i-th text sent is an instruction (see
// inbound.Instruction): Sent[i] is Texts[i] as it left, and Roles[i] its
// role. The canary text the guard added has no role.
func (s *session) instruction(i int) bool {
	return i < len(s.ex.Texts) && i < len(s.ex.Roles) && inbound.Instruction(s.ex.Roles[i])
}

// batchRecorder is implemented by stores that record several holders in
// one round trip (fingerprint.RedisStore).
type batchRecorder interface {
	RecordAll(ctx context.Context, exchanges []string, hashes [][]uint64, ttl time.Duration) error
}

// recordRequest records the request's record (its fingerprints, canary and
// entities) under its holder. For a request with instruction texts (of a
// known principal, with PrivateInstructions), the fingerprints that only they hold (no k-gram of a
// text of another role has them) go under the instruction holder instead
// (see Shared instructions in provenance.go), in the same round trip when
// the store can.
func (s *session) recordRequest(ctx context.Context, record []uint64) error {
	v := s.v
	if (s.ptag == "" && v.opts.PrivateInstructions) || len(s.instr) == 0 || !v.on(policies.SignalCrossExchange) {
		return v.store.Record(ctx, s.holder, record, v.ttl)
	}
	// With private instructions, a fingerprint the user's texts also have
	// is the request's, not only its instructions' (a user who pasted the
	// policy); by default the instructions are the organisation's whoever
	// else holds them, and the extra pass over the other texts is not needed.
	private := v.opts.PrivateInstructions
	if private {
		s.userGrams.reset(len(s.req) / 2)
		addGram := func(h uint64) { s.userGrams.add(h) }
		for i, t := range s.sent {
			if !s.instruction(i) {
				fingerprint.KGrams(s.req[t.start:t.end], v.opts.Fingerprint, addGram)
			}
		}
		for i, t := range s.texts[:len(s.ex.Texts)] {
			if !s.instruction(i) && (i >= len(s.sent) || t != s.sent[i]) { // written otherwise than sent
				fingerprint.KGrams(s.req[t.start:t.end], v.opts.Fingerprint, addGram)
			}
		}
	}
	s.qrec, s.irec = s.qrec[:0], s.irec[:0]
	next := 0
	for _, sp := range s.instr {
		s.qrec = append(s.qrec, record[next:sp.start]...)
		for _, h := range record[sp.start:sp.end] {
			if private && s.userGrams.has(h) {
				s.qrec = append(s.qrec, h)
			} else {
				s.irec = append(s.irec, h)
			}
		}
		next = sp.end
	}
	s.qrec = append(s.qrec, record[next:]...)
	if len(s.irec) == 0 {
		return v.store.Record(ctx, s.holder, s.qrec, v.ttl)
	}
	iholder := instructionHolder(s.ex.ID, s.ptag)
	v.instrHeld.Store(true)
	if br, ok := v.store.(batchRecorder); ok {
		return br.RecordAll(ctx, []string{s.holder, iholder}, [][]uint64{s.qrec, s.irec}, v.ttl)
	}
	if err := v.store.Record(ctx, s.holder, s.qrec, v.ttl); err != nil {
		return err
	}
	return v.store.Record(ctx, iholder, s.irec, v.ttl)
}

// HoldBack implements inbound.Session: the bytes written that are not
// vouched for yet, which is only what may still turn out to be foreign
// material (see hold.go).
func (s *session) HoldBack() int { return len(s.buf) - s.verified }

// Write implements inbound.Session.
func (s *session) Write(ctx context.Context, d inbound.Delta) ([]inbound.Signal, error) {
	if s.closed {
		return nil, errors.New("verify: write after close")
	}
	var sigs []inbound.Signal
	if s.v.on(policies.SignalUsageMismatch) && !s.idChanged {
		if d.ID != "" {
			if s.firstID == "" {
				s.firstID = d.ID
			} else if d.ID != s.firstID {
				s.idChanged = true
				sigs = append(sigs, inbound.Signal{ID: policies.SignalUsageMismatch, Confidence: 0.9, Sign: policies.SignIdentityChange,
					Message: "the response ID changed inside the stream: pieces of another response were spliced in"})
			}
		}
		if d.Model != "" && !s.idChanged {
			if s.firstModel == "" {
				s.firstModel = d.Model
			} else if d.Model != s.firstModel {
				s.idChanged = true
				sigs = append(sigs, inbound.Signal{ID: policies.SignalUsageMismatch, Confidence: 0.8, Sign: policies.SignIdentityChange,
					Message: "the model changed inside the stream (" + s.firstModel + " then " + d.Model + ")"})
			}
		}
	}
	if d.PromptTokens > 0 && !s.promptChecked && s.v.on(policies.SignalUsageMismatch) {
		s.promptChecked = true
		if sig, ok := s.droppedPrompt(d.PromptTokens, "", false); ok {
			s.promptFlagged = true
			sigs = append(sigs, sig)
		}
	}
	s.buf = append(s.buf, d.Text...)
	_, _ = s.win.Write(s.buf[len(s.buf)-len(d.Text):])
	got, err := s.check(ctx, false)
	sigs = append(sigs, got...)
	s.signalled = s.signalled || len(sigs) > 0
	return sigs, err
}

// Close implements inbound.Session.
//
// The answer becomes a source (its fingerprints are recorded, under the
// exchange's answer holder, with its relation keys: see provenance.go)
// only when it is clean and complete: not refused by the guard
// (end.Refused), not cut (end.Truncated), not finished with an abort-like
// reason, and with no signal at all from this session, not even one the
// policy only flags. A refused or suspicious answer may carry another
// exchange's material, and would be blamed for it later. The request's
// fingerprints, recorded by Begin, stay: the request was sent.
//
// An exchange that ended without a complete answer (cut, or an abort-like
// finish reason) is marked aborted (see [Verifier.MarkAborted]), unless the
// guard refused the answer: then the end was the guard's doing, not the
// engine's.
func (s *session) Close(ctx context.Context, end inbound.End) ([]inbound.Signal, error) {
	if s.closed {
		return nil, errors.New("verify: session closed twice")
	}
	s.closed = true
	defer s.release()
	sigs, err := s.check(ctx, true)
	if err != nil {
		return sigs, err
	}
	if s.v.on(policies.SignalUsageMismatch) {
		sigs = append(sigs, s.usage(end)...)
	}
	s.signalled = s.signalled || len(sigs) > 0
	incomplete := end.Truncated || abortFinish(end.FinishReason)
	// A clean answer is recorded for its text (a source), and with a
	// canary for its request's texts (see Repeated requests).
	source := s.v.on(policies.SignalCrossExchange) && len(s.respFP) > 0 || s.v.on(policies.SignalCanary) && s.canary != ""
	switch {
	case source && !end.Refused && !incomplete && !s.signalled:
		keys, level, n := s.relationKeys(append(s.relKeys[:0], s.respFP...))
		s.relKeys = keys
		if err := s.v.store.Record(ctx, answerHolder(s.ex.ID, s.ptag, level, n), keys, s.v.ttl); err != nil {
			return sigs, fmt.Errorf("verify: recording the response: %w", err)
		}
	case s.recorded && (end.Refused || incomplete || s.signalled):
		// Its request's texts were recorded (see Repeated requests): say
		// that its answer is none a cache may hand on.
		if err := s.v.store.Record(ctx, s.holder, []uint64{relKey(relTag(s.ex.ID), unheldTag)}, s.v.ttl); err != nil {
			return sigs, fmt.Errorf("verify: recording the response: %w", err)
		}
	}
	if incomplete && !end.Refused {
		// Ended without a complete answer: its prompt may still be written
		// late into pages another request reads.
		if err := s.v.MarkAborted(ctx, s.ex.ID); err != nil {
			return sigs, err
		}
	}
	return sigs, nil
}

func (s *session) usage(end inbound.End) []inbound.Signal {
	var sigs []inbound.Signal
	if !s.idChanged && len(end.IDs) > 1 {
		s.idChanged = true
		sigs = append(sigs, inbound.Signal{ID: policies.SignalUsageMismatch, Confidence: 0.9, Sign: policies.SignIdentityChange,
			Message: fmt.Sprintf("the response carried %d different IDs: pieces of other responses were spliced in", len(end.IDs))})
	}
	if !end.HasUsage || s.promptFlagged {
		return sigs
	}
	if sig, ok := s.droppedPrompt(end.PromptTokens, end.FinishReason, true); ok {
		sigs = append(sigs, sig)
	}
	return sigs
}

// droppedPrompt is the signal of a provider counting prompt tokens
// (reported) far below the request's lower bound: it did not process the
// prompt. finish, when ended, is the stream's finish reason.
func (s *session) droppedPrompt(reported int, finish string, ended bool) (inbound.Signal, bool) {
	lower := lowerBound(s.ex)
	if lower < s.v.opts.MinPromptTokens || float64(reported) >= float64(lower)*s.v.opts.UsageRatio {
		return inbound.Signal{}, false
	}
	msg := fmt.Sprintf("the provider counted %d prompt tokens for a request of at least %d: it did not process the prompt", reported, lower)
	if ended && (finish == "" || abortFinish(finish)) {
		msg += fmt.Sprintf(", and finished with %q", finish)
	}
	return inbound.Signal{ID: policies.SignalUsageMismatch, Confidence: 0.95, Sign: policies.SignDroppedPrompt, Message: msg}, true
}

// abortFinish reports finish reasons that say the engine gave up. An empty
// one is not: many providers and bodies do not report any.
func abortFinish(reason string) bool {
	switch strings.ToLower(reason) {
	case "abort", "aborted", "error", "cancelled", "canceled":
		return true
	}
	return false
}

// scanStep is the undecided text (after what entities, canaries and
// template tokens are decided in) that a piece must leave for check to scan
// again: a stream of small pieces (a token or two each) is scanned every
// scanStep bytes or so, not once a piece, each scan reading the region
// again with its look-back. What is undecided is held back, so this bounds
// the hold-back it adds in clean prose.
const scanStep = 24

// check verifies the text received so far. Fingerprints are looked up
// as soon as they are selected and their last word has ended; entities,
// canaries and template tokens are decided up to where they are final
// (the scanner's settled point, and no canary or template token the text
// ends inside of), all of them when final. The text is then vouched for up
// to that point and to where no fragment of another exchange may still
// begin (crossHold): see hold.go.
func (s *session) check(ctx context.Context, final bool) ([]inbound.Signal, error) {
	v := s.v
	var sigs []inbound.Signal
	end := len(s.buf)
	// Fingerprints are exact as soon as their k-gram is complete, but the
	// words they touch are judged whole: one whose last word may go on in
	// the next piece waits (with those after it) until the word ends, the
	// response ends, or maxWordWait bytes have followed.
	if v.on(policies.SignalCrossExchange) {
		s.fps = s.win.TakeAppend(s.fps)
		n := 0
		for n < len(s.fps) && (final || !s.wordOpen(s.fps[n].End)) {
			n++
		}
		got, err := s.cross(ctx, s.fps[:n])
		s.fps = s.fps[:copy(s.fps, s.fps[n:])]
		sigs = append(sigs, got...)
		if err != nil {
			return sigs, err
		}
	}
	if end <= s.decided || !final && (end-s.decided < scanStep || !s.eager && s.decided >= s.crossLimit()) {
		// Nothing new, too little to be worth a scan, or nothing a scan
		// could release (the text after the decided point is held for
		// fragments of other exchanges anyway): what is decided is
		// decided by the next scan just the same, which sees this text
		// and more (whatever follows, the findings before the settled
		// point are final), and no text is released before it is.
		s.vouch(final)
		return sigs, nil
	}
	// The region scanned keeps holdBack bytes before what is decided, for
	// context words and labels.
	lo := max(0, s.decided-v.holdBack)
	region := s.buf[lo:end]
	settled := len(region)
	if !final {
		if v.on(policies.SignalTemplateFragment) {
			settled = v.templates.tail(region)
		}
		if v.on(policies.SignalCanary) || v.on(policies.SignalForeignEntity) {
			settled = min(settled, canaryTail(region))
		}
	}
	// What starts before the decided point was decided by an earlier
	// scan: the region before it is read for context only, and the
	// scanner neither hashes nor returns its findings.
	from := s.decided - lo
	var fs []classifiers.Finding
	if v.on(policies.SignalForeignEntity) {
		var err error
		if final {
			fs, err = v.scanner.ScanFrom(ctx, region, from)
		} else {
			// Findings that reach into a canary the text may end inside
			// of are not decided either (they may overlap it).
			var at int
			fs, at, err = v.scanner.ScanPartialFrom(ctx, region, from, classifiers.PartialOptions{MaxHold: v.holdBack, Hold: len(region) - settled, Scratch: &s.partial})
			settled = min(settled, at)
		}
		if err != nil {
			var te *classifiers.TimeoutError
			if !errors.As(err, &te) {
				return sigs, fmt.Errorf("verify: scanning the response: %w", err)
			}
		}
	}
	decide := lo + settled
	accept := func(start, _ int) bool {
		start += lo
		return start >= s.decided && start < decide // not decided before, final now
	}
	// The canaries that matter start after the decided point (a signal) or
	// overlap a finding that does (which they cancel): none starts more
	// than CanaryLen bytes before it. Canaries never overlap each other, so
	// the search finds the same ones from there as from the region's start.
	var canaries []canaryHit
	if v.on(policies.SignalCanary) || v.on(policies.SignalForeignEntity) {
		at := max(0, from-CanaryLen)
		findCanaries(region[at:], func(h canaryHit) {
			h.start, h.end = h.start+at, h.end+at
			canaries = append(canaries, h)
		})
	}
	if v.on(policies.SignalCanary) {
		for _, h := range canaries {
			if !accept(h.start, h.end) || h.token == s.canary {
				continue
			}
			got, err := s.foreignCanary(ctx, h, lo)
			if err != nil {
				return sigs, err
			}
			sigs = append(sigs, got...)
		}
	}
	if v.on(policies.SignalTemplateFragment) {
		// Tokens that matter start after the decided point; no token
		// starts inside another (TestTemplateTokensDoNotNest), so they are
		// found from there as from the region's start.
		v.templates.find(region[from:], func(h templateHit) {
			h.start, h.end = h.start+from, h.end+from
			if !accept(h.start, h.end) || s.templates[h.token] {
				return
			}
			t := templateTokens[h.token]
			sigs = append(sigs, inbound.Signal{ID: policies.SignalTemplateFragment, Start: lo + h.start, End: lo + h.end,
				Preview: t.text, Confidence: 0.9,
				Message: "chat-template control token of the " + t.family + " family: the engine decoded over a formatted prompt"})
		})
	}
	if v.on(policies.SignalForeignEntity) {
		foreign := s.foreign[:0]
		keys := s.ekeys[:0]
		for _, f := range fs {
			if !accept(f.Start, f.End) || s.own[f.Hash] || overlapsCanary(canaries, f) {
				continue
			}
			if len(v.allow.values) > 0 && v.allow.allowed(f.Detector, string(region[f.Start:f.End])) {
				continue
			}
			if s.requestHolds(region[f.Start:f.End]) || s.numbersOfRequest(region[f.Start:f.End]) {
				// The request holds these very characters, where the
				// detector did not take them for a value (a phrase that the
				// answer puts alone on its line becomes a banner), or the
				// value is numbers the request holds, joined: the user's
				// own text.
				continue
			}
			foreign = append(foreign, inbound.Signal{ID: policies.SignalForeignEntity, Detector: f.Detector,
				Start: lo + f.Start, End: lo + f.End, Preview: f.Preview, Confidence: f.Confidence})
			keys = append(keys, entityKey(f.Hash))
		}
		s.ekeys, s.foreign = keys, foreign
		if len(keys) > 0 {
			// Name the exchanges whose requests carried the value, when the
			// store remembers them (this exchange's own request left out).
			if err := s.lookupInto(ctx, keys, &s.erefs); err != nil {
				return sigs, fmt.Errorf("verify: entity lookup: %w", err)
			}
			// The signals' sources share one array (each signal's capped
			// to its own), sized for every holder listed.
			var sources []string
			sigs = slices.Grow(sigs, len(foreign))
			for i := range foreign {
				others, mine := int(s.erefs.Others[i]), 0
				listed := s.erefs.Of(i)
				first := len(sources)
				for _, ref := range listed {
					name, ok := s.name(ref)
					if !ok {
						continue // forgotten since the lookup
					}
					h := parseHolder(name)
					switch {
					case h.id == s.ex.ID:
						others--
					case s.ptag != "" && h.ptag == s.ptag:
						mine++ // this principal's own request: not a source
					default:
						if sources == nil {
							sources = make([]string, 0, len(s.erefs.Holders))
						}
						sources = append(sources, h.id)
					}
				}
				if len(sources) > first {
					foreign[i].Sources = sources[first:len(sources):len(sources)]
				}
				// A value that only requests of this principal carried
				// (all of its holders are known) is the principal's own
				// (a conversation continued server-side).
				if mine > 0 && len(foreign[i].Sources) == 0 && int(s.erefs.Others[i]) <= len(listed) {
					continue
				}
				// A sourced detector's value is a signal only when
				// another exchange's request carried it, and not so many
				// that it is common knowledge.
				if v.sourced[foreign[i].Detector] && (len(foreign[i].Sources) == 0 || others > v.opts.MaxDocFreq) {
					continue
				}
				foreign[i].Message = v.entityMessage(foreign[i].Detector)
				sigs = append(sigs, foreign[i])
			}
		}
	}
	s.decided = max(s.decided, decide)
	s.vouch(final)
	return sigs, nil
}

// entityMessage returns the message of a foreign-entity signal of
// detector: the built-in detectors' are made once (see newEntityMessages).
func (v *Verifier) entityMessage(detector string) string {
	if m, ok := v.entityMessages[detector]; ok {
		return m
	}
	return entityMessageOf(detector, v.sourced[detector])
}

func entityMessageOf(detector string, sourced bool) string {
	if sourced {
		return detector + " value that the request did not contain, from another exchange's request"
	}
	return detector + " value that the request did not contain"
}

// newEntityMessages returns the foreign-entity messages of the built-in
// detectors and of the sourced ones, by detector.
func newEntityMessages(sourced map[string]bool) map[string]string {
	m := map[string]string{}
	for _, d := range classifiers.Builtins() {
		m[d.ID] = entityMessageOf(d.ID, sourced[d.ID])
	}
	for d := range sourced {
		m[d] = entityMessageOf(d, true)
	}
	return m
}

func overlapsCanary(cs []canaryHit, f classifiers.Finding) bool {
	for _, c := range cs {
		if f.Start < c.end && c.start < f.End {
			return true
		}
	}
	return false
}

// foreignCanary returns the signal of canary h, not minted for this
// exchange, naming the exchange it was minted for when the store remembers
// it; none when that exchange's request held nothing this one does not (a
// repeated answer: see Repeated requests in provenance.go).
func (s *session) foreignCanary(ctx context.Context, h canaryHit, lo int) ([]inbound.Signal, error) {
	sig := inbound.Signal{ID: policies.SignalCanary, Start: lo + h.start, End: lo + h.end,
		Preview: maskCanary(h.token), Confidence: 1}
	hs, err := s.v.store.Lookup(ctx, []uint64{canaryKey(h.token)})
	if err != nil {
		return nil, fmt.Errorf("verify: canary lookup: %w", err)
	}
	for _, name := range hs[0].Exchanges {
		if id := parseHolder(name).id; id != s.ex.ID && s.v.Mint(id) == h.token && !slices.Contains(sig.Sources, id) {
			sig.Sources = append(sig.Sources, id)
		}
	}
	if len(sig.Sources) > 0 {
		repeated := true
		for _, id := range sig.Sources {
			yes, err := s.containsRequest(ctx, id)
			if err != nil {
				return nil, err
			}
			repeated = repeated && yes
		}
		if repeated {
			return nil, nil
		}
		sig.Message = "canary minted for exchange " + sig.Sources[0] + ", not this one"
	} else {
		sig.Message = "canary not minted for this exchange (its source is no longer remembered or used another key)"
	}
	return []inbound.Signal{sig}, nil
}

// cross looks fps up and extends the runs of fingerprints shared with other
// exchanges.
//
// A fingerprint is neutral (it neither counts as evidence nor breaks a run)
// when its k-gram occurs anywhere in this exchange's own request, when it
// is boilerplate (built in, configured, or held by more than MaxDocFreq
// other holders), when its words are all common words or the user's own
// name-like data (see informative), when all its holders are exchanges
// of this exchange's own (known) principal, or when it is shared
// instructions (see provenance.go). Only the fingerprints that are
// not own or built-in boilerplate are looked up in the store, in one
// batch; among them, one that no other exchange holds breaks every run,
// and one held by holder X (another exchange's request, or its answer: see
// provenance.go) extends the run with X. A run is contamination once it
// holds MinRun fingerprints covering MinSpan bytes whose informative words
// total MinWordBytes; against the request of an exchange marked aborted,
// the lower bar of aborted.go applies. A run with another exchange's
// answer counts only when that exchange's request is not related to this
// one (asked once per answer, lazily: see related), and never under the
// lower bar. A run with an exchange of the same principal never counts,
// nor one with the request of an exchange whose texts are all this one's
// (see Repeated requests).
// Each source exchange is reported once, its request before its answer.
func (s *session) cross(ctx context.Context, fps []fingerprint.Fingerprint) ([]inbound.Signal, error) {
	if len(fps) == 0 {
		return nil, nil
	}
	v := s.v
	s.pending = s.pending[:0]
	s.hashes = s.hashes[:0]
	for _, f := range fps {
		s.respFP = append(s.respFP, f.Hash)
		if s.grams.has(f.Hash) || v.boilerplate.has(f.Hash) {
			continue
		}
		s.pending = append(s.pending, f)
		s.hashes = append(s.hashes, f.Hash)
	}
	if len(s.hashes) == 0 {
		return nil, nil
	}
	if err := s.lookup(ctx); err != nil {
		return nil, fmt.Errorf("verify: fingerprint lookup: %w", err)
	}
	var sigs []inbound.Signal
	for i, f := range s.pending {
		others := int(s.refs.Others[i])
		if others <= 0 {
			s.runs = s.runs[:0] // text nobody else wrote
			continue
		}
		if others > v.opts.MaxDocFreq || !s.informative(f.Offset, min(f.End, len(s.buf))) {
			continue // common: neutral
		}
		holders := s.refs.Of(i)
		if s.ptag != "" && s.principalsOwn(holders, others) {
			continue // the principal's own material: neutral
		}
		if (!v.ownStore || v.instrHeld.Load()) && s.sharedInstructions(holders, others) {
			continue // an application's instructions: neutral
		}
		// A run with exchange X goes on while X holds the fingerprints.
		k := 0
		for _, r := range s.runs {
			if slices.Contains(holders, r.src) {
				s.runs[k] = r
				k++
			}
		}
		s.runs = s.runs[:k]
		s.answers = s.answers[:0]
		for _, src := range holders {
			j := 0
			for j < len(s.runs) && s.runs[j].src != src {
				j++
			}
			if j == len(s.runs) {
				s.runs = append(s.runs, run{src: src, start: f.Offset, end: f.Offset})
			}
			r := &s.runs[j]
			if f.Offset-r.end > v.opts.MinSpan {
				// A long stretch of neutral text (a quoted system prompt,
				// a disclaimer) separates this fingerprint from the run:
				// what two answers share on either side of shared
				// boilerplate is not one copied fragment.
				*r = run{src: src, start: f.Offset, end: f.Offset}
			}
			r.n++
			// Evidence is the bytes covered by the counted fingerprints
			// (their union), not the gaps neutral text left between them.
			c0 := r.covered
			if f.Offset >= r.end {
				r.covered += f.End - f.Offset
			} else if f.End > r.end {
				r.covered += f.End - r.end
			}
			if 2*others <= v.opts.MaxDocFreq {
				r.rare += r.covered - c0
			}
			r.end = max(r.end, f.End)
			for _, w := range s.words {
				// Informative words count once, and only whole within
				// the run: a word the run starts or ends inside ("…ase"
				// of two different words, "heade…") is not shared.
				if w.start >= max(r.start, r.wordEnd) && w.end <= r.end {
					r.words += w.end - w.start
					r.wordEnd = w.end
				}
			}
			if slices.Contains(s.reported, src) {
				continue
			}
			full := s.full(r)
			if !full && (r.rare < v.opts.MinAbortSpan || r.words < v.opts.MinWordBytes) {
				continue
			}
			if s.respliced(r) {
				continue // this request's own text, cut and joined
			}
			h := s.holderOf(src)
			switch {
			case !h.known:
				if full {
					s.reported = append(s.reported, src)
					sigs = append(sigs, s.crossSignal(r, nil,
						fmt.Sprintf("%d bytes of text shared with an exchange no longer remembered (%d fingerprints in a row)", r.covered, r.n)))
				}
				continue
			case s.ptag != "" && h.ptag == s.ptag, h.id == s.ex.ID:
				// The principal's own, or this exchange's own answer (an
				// exchange checked twice).
				s.reported = append(s.reported, src)
				continue
			case h.answer:
				if full {
					s.answers = append(s.answers, src) // decided below, after the requests
				}
				continue
			}
			// Against an exchange that ended without a complete answer the
			// bar is lower (see aborted.go).
			if !full {
				if ab, err := s.fromAborted(ctx, r, h.id); err != nil || !ab {
					if err != nil {
						return sigs, err
					}
					continue
				}
			}
			s.reported = append(s.reported, src)
			if full {
				// A request that held nothing this one does not is this
				// one's text, and the guard's canary line (see Repeated
				// requests in provenance.go).
				if yes, err := s.containsRequest(ctx, h.id); err != nil || yes {
					if err != nil {
						return sigs, err
					}
					continue
				}
			}
			if s.reportedExchange(h.id) {
				continue
			}
			msg := fmt.Sprintf("%d bytes of text shared with the request of exchange %s (%d fingerprints in a row)", r.covered, h.id, r.n)
			if h.instr {
				msg = fmt.Sprintf("%d bytes of text shared with the request of exchange %s, in instructions of its principal only (%d fingerprints in a row)", r.covered, h.id, r.n)
			}
			if !full {
				msg = fmt.Sprintf("%d bytes of text shared with the request of exchange %s, which ended without a complete answer (its prompt may have been written late into the cache pages of this request)", r.covered, h.id)
			}
			sigs = append(sigs, s.crossSignal(r, []string{h.id}, msg))
		}
		// Runs with answers, once the requests had their turn: another
		// exchange's answer is a source only when its request is not
		// related to this one.
		for _, src := range s.answers {
			h := s.holderOf(src)
			id := h.id
			rel, err := s.related(ctx, h)
			if err != nil {
				return sigs, err
			}
			s.reported = append(s.reported, src)
			if rel || s.reportedExchange(id) {
				continue
			}
			j := 0
			for j < len(s.runs) && s.runs[j].src != src {
				j++
			}
			r := &s.runs[j]
			sigs = append(sigs, s.crossSignal(r, []string{id},
				fmt.Sprintf("%d bytes of text shared with the answer of exchange %s, to an unrelated request (%d fingerprints in a row)", r.covered, id, r.n)))
		}
	}
	return sigs, nil
}

// respliced reports whether the run r is this exchange's own request (its
// texts as written and as sent, the canary line included) cut and joined:
// its bytes lie in k-grams of the request, and every stretch between them
// (a piece shorter than a k-gram, or one cut by the start or the end of
// the answer or of the run) is either free of words or, its ends trimmed
// to words, found as it is in the request. The answer quotes its request in
// pieces (a model repeating its prompt), and what it shares with another
// exchange is only where the pieces join, which the other exchange's
// answer joined alike from texts both requests have: no text of another
// exchange is in it. Computed only for a run about to count: every k-gram
// of the run's text and of 4·K bytes either side.
func (s *session) respliced(r *run) bool {
	o := s.v.opts.Fingerprint
	if s.kwin == nil {
		all := o
		all.Window = 1
		s.kwin = fingerprint.NewWinnower(all)
	}
	k := o.K
	if k <= 0 {
		k = fingerprint.DefaultK
	}
	// A run that grows is checked again from where the last check left.
	cur := max(r.start, r.own) // the run's bytes before cur are the request's
	lo, hi := max(0, cur-4*k), min(len(s.buf), r.end+4*k)
	s.kwin.Reset()
	_, _ = s.kwin.Write(s.buf[lo:hi])
	s.kfps = s.kwin.TakeAppend(s.kfps[:0])
	end := min(r.end, len(s.buf))
	defer func() { r.own = max(r.own, cur) }()
	for _, f := range s.kfps {
		if cur >= end {
			break
		}
		from, to := lo+f.Offset, lo+f.End
		if to <= cur || !s.grams.has(f.Hash) {
			continue
		}
		if from > cur && !s.inRequest(s.buf[cur:min(from, end)]) {
			return false
		}
		cur = to
	}
	return cur >= end || s.inRequest(s.buf[cur:end])
}

// inRequest reports whether b, its ends trimmed to words, is empty, in the
// request's texts as it is, or made of the request's words: every word of
// it is a whole word of the request, its first and last words possibly cut
// (a model saying one word of its prompt over and over, "documentation.\n
// documentation.\n", joins pieces shorter than a k-gram).
func (s *session) inRequest(b []byte) bool {
	b = trimToWords(b)
	if len(b) == 0 || bytes.Contains(s.req, b) {
		return true
	}
	words := 0
	for w := range bytes.FieldsSeq(b) {
		words++
		if w = trimToWords(w); len(w) == 0 {
			continue
		}
		// The first word, or the last (ending where b ends), may be cut.
		cut := words == 1 || &w[len(w)-1] == &b[len(b)-1]
		if !containsWord(s.req, w, cut) {
			return false
		}
	}
	return true
}

// trimToWords trims b's ends to word bytes.
func trimToWords(b []byte) []byte {
	for len(b) > 0 && !isWordByte(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && !isWordByte(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// containsWord reports whether text holds w as a whole word (not inside a
// longer one), or anywhere when part is true (w may be a cut word).
func containsWord(text, w []byte, part bool) bool {
	for i := 0; ; {
		j := bytes.Index(text[i:], w)
		if j < 0 {
			return false
		}
		at := i + j
		end := at + len(w)
		if part || (at == 0 || !isWordByte(text[at-1])) && (end == len(text) || !isWordByte(text[end])) {
			return true
		}
		i = at + 1
	}
}

// full reports whether r is contamination under the ordinary bar.
func (s *session) full(r *run) bool {
	o := &s.v.opts
	return r.n >= o.MinRun && r.covered >= o.MinSpan && r.words >= o.MinWordBytes
}

func (s *session) crossSignal(r *run, sources []string, msg string) inbound.Signal {
	return inbound.Signal{ID: policies.SignalCrossExchange, Start: r.start, End: r.end,
		Preview: maskText(s.buf[r.start:min(r.end, len(s.buf))]), Confidence: 0.9, Sources: sources, Message: msg}
}

// reportedExchange reports whether a signal already named exchange id (its
// request or its answer), and otherwise remembers that one now does.
func (s *session) reportedExchange(id string) bool {
	if slices.Contains(s.named, id) {
		return true
	}
	s.named = append(s.named, id)
	return false
}

// holderOf returns what the store's holder src is (see provenance.go),
// resolving its name on first use. The pointer is valid until the next
// call. A 4 KB answer meets a couple of hundred holders in a busy store:
// they are found through a small open-addressing index (hidx: ref<<32 |
// position+1, 0 empty; refs are never 0).
func (s *session) holderOf(src fingerprint.Ref) *holder {
	if 2*(len(s.holders)+1) > len(s.hidx) {
		s.hidx = slices.Grow(s.hidx[:0], max(16, 2*len(s.hidx)))[:max(16, 2*len(s.hidx))]
		clear(s.hidx)
		for i := range s.holders {
			s.indexHolder(s.holders[i].ref, i)
		}
	}
	mask := len(s.hidx) - 1
	for i := slotOf(uint64(src), mask); ; i = (i + 1) & mask {
		e := s.hidx[i]
		if e == 0 {
			break
		}
		if fingerprint.Ref(e>>32) == src {
			return &s.holders[uint32(e)-1]
		}
	}
	h := holder{n: -1}
	if name, ok := s.name(src); ok {
		h = parseHolder(name)
	}
	h.ref = src
	s.holders = append(s.holders, h)
	s.indexHolder(src, len(s.holders)-1)
	return &s.holders[len(s.holders)-1]
}

func (s *session) indexHolder(src fingerprint.Ref, pos int) {
	mask := len(s.hidx) - 1
	i := slotOf(uint64(src), mask)
	for s.hidx[i] != 0 {
		i = (i + 1) & mask
	}
	s.hidx[i] = uint64(src)<<32 | uint64(pos+1)
}

// principalsOwn reports whether all the holders of a fingerprint, others
// in all, are exchanges of this exchange's principal (its tag is not ""):
// material only they hold is the principal's own.
func (s *session) principalsOwn(holders []fingerprint.Ref, others int) bool {
	if others > len(holders) {
		return false // some holders are not listed
	}
	for _, src := range holders {
		if h := s.holderOf(src); !h.known || h.ptag != s.ptag {
			return false
		}
	}
	return len(holders) > 0
}

// maxWordWait bounds how long a fingerprint waits for its last word to
// end: a longer "word" (a blob of base64) is judged as it is.
const maxWordWait = 64

// wordOpen reports whether the word at s.buf[end-1] may continue past the
// text received so far.
func (s *session) wordOpen(end int) bool {
	if end <= 0 || end > len(s.buf) || !isWordByte(s.buf[end-1]) || len(s.buf)-end > maxWordWait {
		return false
	}
	for _, c := range s.buf[end:] {
		if !isWordByte(c) {
			return false
		}
	}
	return true
}

// refStore is implemented by stores that answer lookups in compact form
// (fingerprint.MemoryStore).
type refStore interface {
	LookupRefs(ctx context.Context, exclude string, hashes []uint64, dst *fingerprint.Refs) error
	ExchangeID(ref fingerprint.Ref) (string, bool)
}

// lookup fills s.refs for s.hashes, leaving this exchange's request out.
func (s *session) lookup(ctx context.Context) error { return s.lookupInto(ctx, s.hashes, &s.refs) }

// lookupInto fills refs for hashes, leaving this exchange's request out.
// Stores without a compact form answer with holder names, which the session
// numbers itself.
func (s *session) lookupInto(ctx context.Context, hashes []uint64, refs *fingerprint.Refs) error {
	if rs := s.v.refStore; rs != nil {
		return rs.LookupRefs(ctx, s.holder, hashes, refs)
	}
	hs, err := s.v.store.Lookup(ctx, hashes)
	if err != nil {
		return err
	}
	refs.Reset(len(hashes))
	for i, h := range hs {
		n := h.Count
		for _, id := range h.Exchanges {
			if id == s.holder {
				n--
				continue
			}
			j := slices.Index(s.names, id)
			if j < 0 {
				j = len(s.names)
				s.names = append(s.names, id)
			}
			refs.Holders = append(refs.Holders, fingerprint.Ref(j+1))
		}
		refs.Others[i] = int32(n)
		refs.Start = append(refs.Start, int32(len(refs.Holders)))
	}
	return nil
}

// name returns the holder name of a source (see provenance.go).
func (s *session) name(src fingerprint.Ref) (string, bool) {
	if rs := s.v.refStore; rs != nil {
		return rs.ExchangeID(src)
	}
	if i := int(src) - 1; i >= 0 && i < len(s.names) {
		return s.names[i], true
	}
	return "", false
}

// informative reports whether the words overlapping s.buf[start:end] hold
// an informative one (see Verifier.informativeWords) and leaves their spans
// in s.words. The response's words are read once, as the fingerprints
// that overlap them (three or four a word, in order) ask: see tokenise.
func (s *session) informative(start, end int) bool {
	text := s.buf
	for start > 0 && isWordByte(text[start-1]) {
		start--
	}
	for end < len(text) && isWordByte(text[end]) {
		end++
	}
	switch {
	case start < s.tokStart:
		// Before the words kept (fingerprints come in order: not
		// expected), read as they are.
		s.words = s.v.informativeWords(text, start, end, s.requestWords(), s.words[:0])
		return len(s.words) > 0
	case start > s.tokEnd:
		// Words no fingerprint asked for are not read: the words kept
		// start again here.
		s.toks, s.tokStart, s.tokEnd = s.toks[:0], start, start
	}
	s.tokenise(end)
	s.words = s.words[:0]
	// The first word at or after start (start is where no word goes on
	// from before: a word starts there, or none does).
	lo, hi := 0, len(s.toks)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); int(s.toks[m].start) < start {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for _, w := range s.toks[lo:] {
		if int(w.start) >= end {
			break
		}
		if w.info {
			s.words = append(s.words, span{int(w.start), int(w.end)})
		}
	}
	// The last word, which more text may still extend, is read each time.
	own := s.requestWords()
	for i := max(start, s.tokEnd); i < end; {
		ws, we, h, name := nextWord(text[:end], i)
		if ws == end {
			break
		}
		i = we
		if s.v.informativeWord(ws, we, h, name, own) {
			s.words = append(s.words, span{ws, we})
		}
	}
	return len(s.words) > 0
}

// tokenise reads the words of s.buf up to end (see nextWord) into s.toks,
// with whether each is informative (see Verifier.informativeWords), from
// where it stopped (s.tokEnd): a word is kept once it is final, that is
// once a byte that is not part of it follows it. Words are split at bytes
// that are neither letters, digits nor apostrophes, and at apostrophes,
// so the words found from a position no word goes on from (s.tokEnd, or
// the start of a run of word bytes: s.tokStart) are those found from the
// start of the text. s.toks holds the words of s.buf[s.tokStart:s.tokEnd].
func (s *session) tokenise(end int) {
	text := s.buf
	own := s.requestWords()
	for s.tokEnd < end {
		ws, we, h, name := nextWord(text, s.tokEnd)
		if ws == len(text) {
			s.tokEnd = ws
			return
		}
		if we == len(text) {
			s.tokEnd = ws // the word may go on
			return
		}
		s.toks = append(s.toks, wordTok{int32(ws), int32(we), s.v.informativeWord(ws, we, h, name, own)})
		s.tokEnd = we
	}
}

// wordTok is a word of the response (see nextWord) and whether it is
// informative.
type wordTok struct {
	start, end int32
	info       bool
}

// requestWords returns the name-like words of the exchange's request (see
// informative), computed on first use.
func (s *session) requestWords() *hashSet {
	if !s.hasWords {
		s.hasWords = true
		s.ownWords.reset(len(s.req) / 16)
		add := func(h uint64, name bool) {
			if name {
				s.ownWords.add(h)
			}
		}
		for _, t := range s.texts {
			forWords(s.req[t.start:t.end], add)
		}
	}
	return &s.ownWords
}

// requestHolds reports whether the request's texts hold value as it is,
// up to case and runs of white space.
func (s *session) requestHolds(value []byte) bool {
	s.norm = appendNormalizeSpace(s.norm[:0], value)
	if len(s.norm) == 0 {
		return false
	}
	if !s.hasReqNorm {
		s.hasReqNorm = true
		s.reqNorm = appendNormalizeSpace(s.reqNorm[:0], s.req)
	}
	return bytes.Contains(s.reqNorm, s.norm)
}

// numbersOfRequest reports whether value is made of numbers only, each a
// whole word of the request: a model that lists numbers of its prompt
// ("06", "12", "-0700") side by side writes something a detector takes
// for a phone number, which no other exchange sent.
func (s *session) numbersOfRequest(value []byte) bool {
	parts := 0
	for i := 0; i < len(value); {
		if !isWordByte(value[i]) {
			i++
			continue
		}
		j := i
		for j < len(value) && isWordByte(value[j]) {
			if value[j] < '0' || value[j] > '9' {
				return false
			}
			j++
		}
		if !containsWord(s.req, value[i:j], false) {
			return false
		}
		parts++
		i = j
	}
	return parts > 1
}

// appendNormalizeSpace appends to out b with its ASCII letters lower-cased
// and every run of white space collapsed into one space.
func appendNormalizeSpace(out, b []byte) []byte {
	space := false
	for _, c := range bytes.TrimSpace(b) {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
			continue
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, c)
	}
	return out
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
	var buf [128]byte
	sum := sha256.Sum256(append(append(buf[:0], "aishield-entity\x00"...), hash...))
	return binary.BigEndian.Uint64(sum[:8])
}

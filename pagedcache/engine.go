package pagedcache

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aishield/aishield/internal/tokens"
	"github.com/tiktoken-go/tokenizer"
)

// Server is the paged-cache inference server. It is an http.Handler; its
// methods are safe for concurrent use by multiple goroutines.
type Server struct {
	opts        Options
	codec       tokenizer.Codec // decodes token IDs
	tok         *tokens.Counter // encodes prompts, as codec would
	mux         *http.ServeMux
	capacity    int // whole pages only
	maxReqInput int // min(ContextLen-1, capacity-1), SGLang's max_req_input_len
	created     int64
	sepSpace    uint32 // the token " ", put between quotes
	sepNewline  uint32 // the token "\n", put between quotes

	mu          sync.Mutex
	pool        *pool
	running     int
	reserved    int
	waitQ       []*waiter
	seq         uint32
	tenantIDs   map[string]uint32
	tenantNames []string // index 0: never written
	records     recordRing
	m           counters
	classes     []uint8 // token class bits by ID (quote.go), filled on first use

	logMu sync.Mutex
}

type counters struct {
	promptTokens, generationTokens   uint64
	prefixQueries, prefixHits        uint64
	finished                         map[string]uint64
	rejected                         map[string]uint64
	staleReads, lateWrites           uint64
	oversizeDecoded, abortedRequests uint64
}

type waiter struct {
	need     int
	ready    chan struct{}
	admitted bool
}

// New returns a Server for opts (zero fields take their defaults).
func New(opts Options) (*Server, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		return nil, fmt.Errorf("pagedcache: tokenizer: %w", err)
	}
	// Warm the tokenizers (their vocabulary tables are built on first use)
	// so the first request does not pay for it.
	tok := &tokens.Counter{Encoding: string(tokenizer.Cl100kBase)}
	ids, err := tok.Encode(nil, "warm up")
	if err != nil {
		return nil, fmt.Errorf("pagedcache: tokenizer: %w", err)
	}
	_, _ = codec.Decode([]uint{uint(ids[0])})
	s := &Server{
		opts:        o,
		codec:       codec,
		tok:         tok,
		pool:        newPool(o.CapacityTokens, o.PageSize, o.Reuse),
		tenantIDs:   map[string]uint32{},
		tenantNames: []string{""},
		records:     recordRing{recs: make([]*RequestRecord, o.HistorySize)},
		created:     time.Now().Unix(),
		m:           counters{finished: map[string]uint64{}, rejected: map[string]uint64{}},
	}
	s.classes = make([]uint8, classTableSize)
	s.sepSpace, s.sepNewline = s.singleToken(" "), s.singleToken("\n")
	s.capacity = s.pool.numPages * o.PageSize
	s.maxReqInput = min(o.ContextLen-1, s.capacity-1)
	s.routes()
	return s, nil
}

// Options returns the options in force, defaults filled in.
func (s *Server) Options() Options {
	o := s.opts
	o.Faults = slices.Clone(o.Faults)
	return o
}

// MaxRequestInputTokens is the scheduler's limit on prompt length:
// min(ContextLen-1, capacity-1).
func (s *Server) MaxRequestInputTokens() int { return s.maxReqInput }

// Request returns the ground-truth record of the request with the given
// response ID ("chatcmpl-pc-17", "msg_pc-17"), or its sequence number ("17").
func (s *Server) Request(id string) (RequestRecord, bool) {
	seq, ok := parseRequestID(id)
	if !ok {
		return RequestRecord{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := s.records.get(seq)
	if !ok {
		return RequestRecord{}, false
	}
	rec.Faults = slices.Clone(rec.Faults)
	rec.PageTable = slices.Clone(rec.PageTable)
	rec.Reads = slices.Clone(rec.Reads)
	return rec, true
}

func parseRequestID(id string) (uint32, bool) {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		id = id[i+1:]
	}
	n, err := strconv.ParseUint(id, 10, 32)
	return uint32(n), err == nil && n > 0
}

// Pages returns the cache's occupancy.
func (s *Server) Pages() PagesSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pool
	sum := PagesSummary{
		PageSize:       p.pageSize,
		TotalPages:     p.numPages,
		FreePages:      p.free.n,
		CachedPages:    len(p.cache),
		EvictablePages: p.evictable,
		UsedPages:      p.used(),
		Usage:          float64(p.used()) / float64(p.numPages),
		Reuse:          p.reuse,
		Running:        s.running,
		Waiting:        len(s.waitQ),
		PendingLate:    len(p.pending),
		PagesByTenant:  map[string]int{},
	}
	for pg := 1; pg <= p.numPages; pg++ {
		if t := p.pages[pg].ownerTenant; t != 0 {
			sum.WrittenPages++
			sum.PagesByTenant[s.tenantNames[t]]++
		}
	}
	return sum
}

// faultSet is a set of faults as bits.
type faultSet uint8

func (f faultSet) has(x Fault) bool { return f&faultBit(x) != 0 }

func faultBit(x Fault) faultSet {
	for i, k := range Faults() {
		if k == x {
			return 1 << i
		}
	}
	return 0
}

func (f faultSet) list() []Fault {
	var out []Fault
	for _, k := range Faults() {
		if f.has(k) {
			out = append(out, k)
		}
	}
	return out
}

// job is one request going through the engine.
type job struct {
	seq          uint32
	id           string
	endpoint     string
	tenant       string
	faults       faultSet
	gen          generation
	prompt       []uint32
	atLeast      int // when > 0, prompt was not tokenized: it has at least this many tokens
	abortPrefill bool
	// prefilled is the outcome being built, set once the prompt is in its
	// pages and before the first token is generated: a stream's first event
	// reads the prompt's usage from it.
	prefilled *outcome
}

// outcome is what the engine answers.
type outcome struct {
	reportedPrompt int
	cached         int
	tokens         []uint32
	finish         string
	// stopSequence is the stop sequence that ended the answer ("" when
	// none did); the answer's text is then the first stopAt bytes of the
	// tokens' text, without the stop sequence.
	stopSequence string
	stopAt       int
}

// apiError is an error answer, rendered in the format of the endpoint
// (OpenAI's or Anthropic's, see writeError).
type apiError struct {
	status  int
	typ     string
	param   string
	code    string
	message string
	outcome string
	// tokens and limit, for context_length_exceeded: the prompt's tokens
	// (at least) and the limit it is over.
	tokens, limit int
}

func (e *apiError) Error() string { return e.message }

func contextLengthError(msg string, tokens, limit int) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", param: "messages",
		code: "context_length_exceeded", message: msg, outcome: "rejected", tokens: tokens, limit: limit}
}

// internTenant returns the tenant's index, adding it if new. Caller holds mu.
func (s *Server) internTenant(name string) uint32 {
	if id, ok := s.tenantIDs[name]; ok {
		return id
	}
	id := uint32(len(s.tenantNames))
	s.tenantIDs[name] = id
	s.tenantNames = append(s.tenantNames, name)
	return id
}

// newJob assigns the next sequence number.
func (s *Server) newJob(endpoint, tenant string, faults faultSet) *job {
	s.mu.Lock()
	s.seq++
	if s.seq == 0 { // wrapped after 2^32 requests; 0 means "never written"
		s.seq = 1
	}
	seq := s.seq
	s.mu.Unlock()
	prefix := "chatcmpl-pc-"
	switch endpoint {
	case "completion":
		prefix = "cmpl-pc-"
	case "messages":
		prefix = "msg_pc-"
	}
	return &job{seq: seq, id: prefix + strconv.FormatUint(uint64(seq), 10), endpoint: endpoint, tenant: tenant, faults: faults}
}

// hashTokens is FNV-1a over 32-bit words, chained from h.
func hashTokens(h uint64, toks []uint32) uint64 {
	const prime = 1099511628211
	for _, t := range toks {
		h ^= uint64(t)
		h *= prime
	}
	return h
}

func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// record stores a finished request's ground truth. Caller holds mu.
func (s *Server) recordLocked(rec *RequestRecord) {
	s.records.put(rec)
}

// process runs a tokenized job: checks, admission, prefill into pages,
// decode from pages, release. emit, when not nil, receives generated tokens
// batch by batch (streaming); it is called without the lock held.
func (s *Server) process(ctx context.Context, j *job, emit func([]uint32) error) (*outcome, *apiError) {
	rec := RequestRecord{ID: j.id, Seq: j.seq, Tenant: j.tenant, Endpoint: j.endpoint,
		Faults: j.faults.list(), PromptTokens: len(j.prompt)}
	out, aerr := s.run(ctx, j, &rec, emit)
	s.mu.Lock()
	if aerr != nil {
		rec.Status = aerr.status
		rec.Outcome = aerr.outcome
		s.m.rejected[aerr.outcome+"/"+aerr.code]++
	} else {
		rec.Status = http.StatusOK
		if rec.Outcome == "" {
			rec.Outcome = "completed"
		}
		rec.ReportedPromptTokens = out.reportedPrompt
		rec.CachedTokens = out.cached
		rec.CompletionTokens = len(out.tokens)
		rec.FinishReason = out.finish
		s.m.finished[out.finish]++
		s.m.generationTokens += uint64(len(out.tokens))
	}
	s.recordLocked(&rec)
	s.mu.Unlock()
	return out, aerr
}

func (s *Server) run(ctx context.Context, j *job, rec *RequestRecord, emit func([]uint32) error) (*outcome, *apiError) {
	P := s.opts.PageSize
	n := len(j.prompt)
	truncate := j.faults.has(FaultAutoTruncate)
	if j.atLeast > 0 {
		rec.PromptTokens = j.atLeast
		what := fmt.Sprintf("the maximum request input is %d tokens (min(context length %d, KV-cache capacity %d) - 1)", s.maxReqInput, s.opts.ContextLen, s.capacity)
		limit := s.maxReqInput
		if j.atLeast >= s.opts.ContextLen {
			what = fmt.Sprintf("this model's maximum context length is %d tokens", s.opts.ContextLen)
			limit = s.opts.ContextLen
		}
		return nil, contextLengthError(fmt.Sprintf(
			"The input has at least %d tokens, which is over the limit: %s. Please reduce the length of the input messages.", j.atLeast, what), j.atLeast, limit)
	}
	if n == 0 {
		return nil, &apiError{status: 400, typ: "invalid_request_error", param: "prompt", code: "invalid_prompt",
			message: "the prompt is empty", outcome: "rejected"}
	}
	// Front end: the model's context length.
	if !truncate {
		if n >= s.opts.ContextLen {
			return nil, contextLengthError(fmt.Sprintf(
				"This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages.",
				s.opts.ContextLen, n), n, s.opts.ContextLen)
		}
		if mt := j.gen.maxTokens; mt > 0 && mt > s.opts.ContextLen-n {
			return nil, contextLengthError(fmt.Sprintf(
				"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
				s.opts.ContextLen, n+mt, n, mt), n+mt, s.opts.ContextLen)
		}
	}
	promptHash := hashTokens(14695981039346656037, j.prompt)
	// Scheduler: max_req_input_len = min(context_len-1, capacity-1).
	oversize := false
	if n > s.maxReqInput {
		switch {
		case truncate:
			j.prompt = j.prompt[n-s.maxReqInput:]
			n = len(j.prompt)
			rec.Outcome = "truncated"
		case j.faults.has(FaultOversizeStalePages):
			oversize = true
		default:
			return nil, contextLengthError(fmt.Sprintf(
				"The input (%d tokens) is longer than the server can hold: the maximum request input is %d tokens (min(context length %d, KV-cache capacity %d) - 1).",
				n, s.maxReqInput, s.opts.ContextLen, s.capacity), n, s.maxReqInput)
		}
	}
	mt := j.gen.maxTokens
	if mt == 0 {
		mt = s.opts.DefaultMaxTokens
	}
	ctxTokens := n // tokens the request occupies before decoding
	if oversize {
		ctxTokens = 1 // the aborted prefill left a 1-token placeholder
	}
	mt = min(mt, s.capacity-ctxTokens)
	if !oversize {
		mt = min(mt, s.opts.ContextLen-n)
	}
	need := (ctxTokens + mt + P - 1) / P

	// Prefix hashes, outside the lock.
	var hashes []uint64
	if !oversize && !s.opts.DisablePrefixCache {
		salt := "tenant\x00" + j.tenant
		if j.faults.has(FaultSharedPrefixCache) {
			salt = "global"
		}
		h := hashString(salt)
		for i := 0; i < (n-1)/P; i++ {
			h = hashTokens(h, j.prompt[i*P:(i+1)*P])
			hashes = append(hashes, h)
		}
	}

	if aerr := s.admit(ctx, need); aerr != nil {
		return nil, aerr
	}

	g := &decodeState{s: s, j: j, rec: rec, oversize: oversize}
	s.mu.Lock()
	tIdx := s.internTenant(j.tenant)
	g.tIdx = tIdx
	pt := make([]int32, 0, need)
	shared := 0
	for i, h := range hashes {
		pg, ok := s.pool.lookup(h, j.prompt[i*P:(i+1)*P])
		if !ok {
			break
		}
		pt = append(pt, pg)
		shared++
	}
	cached := shared * P
	if !oversize && !s.opts.DisablePrefixCache {
		s.m.prefixQueries += uint64(n)
		s.m.prefixHits += uint64(cached)
	}
	for len(pt) < need {
		pt = append(pt, s.pool.take(tIdx, j.seq))
	}
	s.reserved -= need
	g.pt, g.shared = pt, shared
	rec.PageTable = make([]int, len(pt))
	for i, pg := range pt {
		rec.PageTable[i] = int(pg)
	}

	if oversize {
		// Prefill aborted; the request is decoded anyway over pages it
		// never wrote.
		s.m.oversizeDecoded++
		for _, pg := range pt {
			rec.LateWritesLanded += s.pool.landLateWrites(pg)
		}
		for _, pg := range pt {
			base := int(pg) * P
			for off := range P {
				if s.pool.writerReq[base+off] != 0 {
					g.ctxSlots = append(g.ctxSlots, int32(base+off))
				}
			}
		}
		rec.Outcome = "decoded-after-abort"
	} else {
		s.m.promptTokens += uint64(n)
		for pos := cached; pos < n; {
			end := min(pos+s.opts.ChunkTokens, n)
			if j.abortPrefill || ctx.Err() != nil {
				s.abortLocked(j, g, pos, end)
				s.mu.Unlock()
				return &outcome{reportedPrompt: n, cached: cached, finish: "abort"}, nil
			}
			g.writeRange(pos, j.prompt[pos:end])
			pos = end
		}
		for i := shared; i < len(hashes); i++ {
			s.pool.insert(hashes[i], pt[i])
		}
		for _, pg := range pt[shared:] {
			rec.LateWritesLanded += s.pool.landLateWrites(pg)
		}
	}
	s.mu.Unlock()

	if d := s.opts.PrefillTokenDelay; d > 0 && !oversize {
		sleepCtx(ctx, time.Duration(n-cached)*d)
	}

	out := &outcome{reportedPrompt: n, cached: cached}
	if oversize {
		out.reportedPrompt = 1
	}
	j.prefilled = out
	out.tokens, out.finish = g.decode(ctx, mt, promptHash, emit)
	out.stopSequence, out.stopAt = g.stopSequence, g.stopAt

	s.mu.Lock()
	for i := len(pt) - 1; i >= 0; i-- {
		s.pool.release(pt[i])
	}
	s.running--
	s.wakeLocked()
	s.mu.Unlock()
	return out, nil
}

// abortLocked handles an abort during prefill while the chunk [pos, end) is
// being written. Correct engines let the in-flight write land in the
// request's own pages before freeing them; under FaultAbortReuseRace the
// pages are freed at once and the write lands later, in whoever takes them.
func (s *Server) abortLocked(j *job, g *decodeState, pos, end int) {
	P := s.opts.PageSize
	s.m.abortedRequests++
	g.rec.Outcome = "aborted"
	if j.faults.has(FaultAbortReuseRace) {
		for p := pos; p < end; {
			pg := g.pt[p/P]
			off := p % P
			k := min(P-off, end-p)
			s.pool.pending[pg] = append(s.pool.pending[pg], lateWrite{
				off: off, toks: slices.Clone(j.prompt[p : p+k]), req: j.seq, tenant: g.tIdx})
			s.m.lateWrites += uint64(k)
			p += k
		}
	} else {
		g.writeRange(pos, j.prompt[pos:end])
	}
	// Freed in reverse so that a LIFO free list hands the pages out again in
	// the same order.
	for i := len(g.pt) - 1; i >= 0; i-- {
		s.pool.release(g.pt[i])
	}
	s.running--
	s.wakeLocked()
}

// admit waits for a request slot and need pages, reserving them.
func (s *Server) admit(ctx context.Context, need int) *apiError {
	s.mu.Lock()
	if len(s.waitQ) == 0 && s.fitsLocked(need) {
		s.running++
		s.reserved += need
		s.mu.Unlock()
		return nil
	}
	if len(s.waitQ) >= s.opts.MaxWaiting {
		s.mu.Unlock()
		return overloaded("the request queue is full")
	}
	w := &waiter{need: need, ready: make(chan struct{})}
	s.waitQ = append(s.waitQ, w)
	s.mu.Unlock()

	timer := time.NewTimer(s.opts.QueueTimeout)
	defer timer.Stop()
	var reason string
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		reason = "the request was cancelled while queued"
	case <-timer.C:
		reason = "timed out waiting for KV-cache pages"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.admitted {
		s.running--
		s.reserved -= need
		s.wakeLocked()
	} else if i := slices.Index(s.waitQ, w); i >= 0 {
		s.waitQ = slices.Delete(s.waitQ, i, i+1)
	}
	return overloaded(reason)
}

func overloaded(msg string) *apiError {
	return &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "server_overloaded",
		message: "The server is overloaded: " + msg + ". Retry later.", outcome: "queue-full"}
}

func (s *Server) fitsLocked(need int) bool {
	return s.running < s.opts.MaxRunning && s.pool.available()-s.reserved >= need
}

// wakeLocked admits queued requests in order while they fit.
func (s *Server) wakeLocked() {
	for len(s.waitQ) > 0 && s.fitsLocked(s.waitQ[0].need) {
		w := s.waitQ[0]
		s.waitQ = s.waitQ[1:]
		s.running++
		s.reserved += w.need
		w.admitted = true
		close(w.ready)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// decodeState is a running request's view of its pages.
type decodeState struct {
	s        *Server
	j        *job
	rec      *RequestRecord
	tIdx     uint32
	pt       []int32
	shared   int     // the first shared entries of pt came from the prefix cache
	oversize bool    // context = ctxSlots (stale pages), nothing written
	ctxSlots []int32 // slots of the context when oversize
	ctxLen   int     // context positions the model quotes from
	// stopSequence and stopAt: the stop sequence that ended the answer and
	// where it starts in the answer's text.
	stopSequence string
	stopAt       int
}

// writeRange writes toks at positions pos.. of the request. Caller holds mu.
func (g *decodeState) writeRange(pos int, toks []uint32) {
	P := g.s.opts.PageSize
	for len(toks) > 0 {
		off := pos % P
		k := min(P-off, len(toks))
		g.s.pool.write(g.pt[pos/P], off, toks[:k], g.tIdx, g.j.seq)
		toks, pos = toks[k:], pos+k
	}
}

// slot maps a context position to its slot. Caller holds mu.
func (g *decodeState) slot(pos int) int {
	if g.oversize {
		return int(g.ctxSlots[pos])
	}
	P := g.s.opts.PageSize
	return int(g.pt[pos/P])*P + pos%P
}

// decode generates up to maxTokens tokens by quoting whole words of the
// context read back from the pages, PRNG-driven; see the package
// documentation and quote.go.
func (g *decodeState) decode(ctx context.Context, maxTokens int, promptHash uint64, emit func([]uint32) error) ([]uint32, string) {
	s := g.s
	rng := rand.New(rand.NewPCG(s.opts.Seed^uint64(g.j.gen.seed)*0x9e3779b97f4a7c15, promptHash^uint64(maxTokens)<<1))
	g.ctxLen = len(g.j.prompt)
	budget, soft := maxTokens, false
	if g.oversize {
		g.ctxLen = len(g.ctxSlots)
	} else if target := 12 + rng.IntN(53); target < maxTokens {
		budget, soft = target, true
	}
	q := newQuoter(g, rng, budget, soft, maxTokens)
	out := make([]uint32, 0, min(budget, 1024))
	var stops *stopper
	if len(g.j.gen.stop) > 0 {
		stops = &stopper{seqs: g.j.gen.stop}
	}
	const batch = 16
	P := s.opts.PageSize
	for more := true; more; {
		start := len(out)
		s.mu.Lock()
		for range batch {
			tok, sl, ok := q.next(len(out))
			if !ok {
				more = false
				break
			}
			if sl >= 0 {
				g.noteRead(sl)
			}
			if !g.oversize {
				// The generated token's KV goes into the request's own pages.
				pos := len(g.j.prompt) + len(out)
				s.pool.write(g.pt[pos/P], pos%P, []uint32{tok}, g.tIdx|generatedBit, g.j.seq)
			}
			out = append(out, tok)
			if stops != nil {
				if at, seq, ok := stops.add(s.detok([]uint32{tok})); ok {
					g.stopSequence, g.stopAt = seq, at
					more = false
					break
				}
			}
		}
		s.mu.Unlock()
		k := len(out) - start
		if emit != nil && k > 0 {
			if err := emit(out[start:]); err != nil {
				return out, "abort"
			}
		}
		if d := s.opts.DecodeTokenDelay; d > 0 && k > 0 {
			sleepCtx(ctx, time.Duration(k)*d)
		}
		if ctx.Err() != nil {
			return out, "abort"
		}
	}
	// The incident's engine decodes an aborted request to its length
	// budget; otherwise "length" means max_tokens cut the answer.
	if g.stopSequence != "" {
		return out, "stop"
	}
	if g.oversize || len(out) >= maxTokens {
		return out, "length"
	}
	return out, "stop"
}

// noteRead adds a read of slot sl to the ground truth. Caller holds mu.
func (g *decodeState) noteRead(sl int) {
	p := g.s.pool
	pg := sl / p.pageSize
	req := p.writerReq[sl]
	ten := g.s.tenantNames[p.writerTenant[sl]&^generatedBit]
	if req != g.j.seq {
		if g.oversize || !slices.Contains(g.pt[:g.shared], int32(pg)) {
			g.s.m.staleReads++
		}
	}
	reads := g.rec.Reads
	if n := len(reads); n > 0 && reads[n-1].Page == pg && reads[n-1].Request == req {
		reads[n-1].Tokens++
		return
	}
	m := p.pages[pg]
	g.rec.Reads = append(reads, PageRead{
		Page: pg, Tenant: ten, Request: req, Owner: m.ownerReq, Generation: m.gen,
		Shared: slices.Contains(g.pt[:g.shared], int32(pg)), Tokens: 1,
	})
}

// stopper finds the first stop sequence in an answer as it grows, token by
// token: each token's bytes are searched only where a match can end in
// them, so the whole search is linear in the answer's length times the
// longest stop sequence.
type stopper struct {
	seqs []string
	text []byte
}

// add appends b to the answer and reports the earliest stop sequence that
// ends in it: where the sequence starts in the answer's text, and which.
func (st *stopper) add(b []byte) (at int, seq string, ok bool) {
	prev := len(st.text)
	st.text = append(st.text, b...)
	at = -1
	for _, q := range st.seqs {
		from := max(0, prev-len(q)+1)
		if i := bytes.Index(st.text[from:], []byte(q)); i >= 0 && (at < 0 || from+i < at) {
			at, seq = from+i, q
		}
	}
	return at, seq, at >= 0
}

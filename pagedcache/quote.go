package pagedcache

import "math/rand/v2"

// The model quotes whole words. A word is a run of tokens between ASCII
// whitespace: cl100k_base tokens carry their leading space (" Roe"), so a
// word starts at a token that begins with whitespace or follows one that
// ends with whitespace (a line break, a run of spaces), and ends before a
// token that begins with whitespace. Punctuation is not a boundary: in
// "jane.roe@example.com" the tokens ".ro" and "@example" begin with
// punctuation, and a quote starting there would forge an address that was
// never written. Two context positions are adjacent in some text only when
// the same request wrote them side by side (or both hold the request's own
// prompt); a boundary between unrelated writers (stale pages of different
// requests, a late write landing in the middle of a page) is a cut, across
// which no word is assumed to start, end or continue.

// Token class bits, from the token's bytes.
const (
	clsKnown   uint8 = 1 << iota // the entry is filled in
	clsStartWS                   // starts with ASCII whitespace
	clsEndWS                     // ends with ASCII whitespace
	clsAllWS                     // is whitespace only
	clsStartNL                   // starts with a line break
	clsHasNL                     // holds a line break
	clsColon                     // its last non-whitespace byte is ':'
)

// classTableSize covers cl100k_base's token IDs (100,277 with the special
// tokens); larger IDs are classified on every use.
const classTableSize = 100352

// Bounds that keep a quote's cost proportional to its length.
const (
	wordSearch = 64 // tokens searched for a word start past the PRNG's pick
	maxWord    = 64 // tokens scanned for a word's end
	quoteDraws = 16 // picks tried before the model has nothing left to say
)

func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// classify returns the class bits of a token's text.
func classify(text string) uint8 {
	c := clsKnown
	if text == "" {
		return c
	}
	if isSpace(text[0]) {
		c |= clsStartWS
	}
	if text[0] == '\n' || text[0] == '\r' {
		c |= clsStartNL
	}
	if isSpace(text[len(text)-1]) {
		c |= clsEndWS
	}
	all := true
	last := byte(0)
	for i := 0; i < len(text); i++ {
		b := text[i]
		if b == '\n' || b == '\r' {
			c |= clsHasNL
		}
		if !isSpace(b) {
			all = false
			last = b
		}
	}
	if all {
		c |= clsAllWS
	}
	if last == ':' {
		c |= clsColon
	}
	return c
}

// tokenClass returns the class bits of token id, computed on first use.
// Caller holds mu.
func (s *Server) tokenClass(id uint32) uint8 {
	if int(id) < len(s.classes) {
		if c := s.classes[id]; c != 0 {
			return c
		}
	}
	var c uint8
	if text, err := s.codec.Decode([]uint{uint(id)}); err == nil {
		c = classify(text)
	} else {
		c = clsKnown // unknown ID: an opaque, non-space token
	}
	if int(id) < len(s.classes) {
		s.classes[id] = c
	}
	return c
}

// cls returns the class bits of the token at context position p.
func (g *decodeState) cls(p int) uint8 {
	return g.s.tokenClass(g.s.pool.tokens[g.slot(p)])
}

// own reports whether context position p holds the request's own prompt
// token: written by the request itself, or on a prefix-cache page (whose
// tokens the cache checked equal to the prompt's).
func (g *decodeState) own(p int) bool {
	if g.oversize {
		return false
	}
	return p < g.shared*g.s.opts.PageSize || g.s.pool.writerReq[g.slot(p)] == g.j.seq
}

// joined reports whether context positions p and p+1 follow each other in
// the text of whoever wrote them (both in its prompt, or both in its
// answer).
func (g *decodeState) joined(p int) bool {
	if g.own(p) && g.own(p+1) {
		return true
	}
	a, b := g.slot(p), g.slot(p+1)
	w, wt := g.s.pool.writerReq, g.s.pool.writerTenant
	return b == a+1 && b%g.s.opts.PageSize != 0 && w[a] == w[b] && wt[a] == wt[b]
}

// answerStarts reports whether p is the last token of a request's prompt
// and p+1 the first of its answer: the end of one text, the start of the
// next, so a word boundary (and a cut).
func (g *decodeState) answerStarts(p int) bool {
	if p+1 >= g.ctxLen {
		return false
	}
	a, b := g.slot(p), g.slot(p+1)
	w, wt := g.s.pool.writerReq, g.s.pool.writerTenant
	return b == a+1 && b%g.s.opts.PageSize != 0 && w[a] == w[b] &&
		wt[a]&generatedBit == 0 && wt[b] == wt[a]|generatedBit
}

// wordStart reports whether a word starts at p.
func (g *decodeState) wordStart(p int) bool {
	c := g.cls(p)
	switch {
	case c&clsAllWS != 0:
		return false
	case c&clsStartWS != 0:
		return true
	case p == 0:
		return g.own(0)
	default:
		return g.joined(p-1) && g.cls(p-1)&clsEndWS != 0 || g.answerStarts(p-1)
	}
}

// lineStart reports whether p is the first token of a line.
func (g *decodeState) lineStart(p int) bool {
	if p == 0 {
		return g.own(0)
	}
	return g.joined(p-1) && g.cls(p-1)&clsHasNL != 0
}

// wordEnd reports whether a word ends with the token at p.
func (g *decodeState) wordEnd(p int) bool {
	if g.cls(p)&clsEndWS != 0 {
		return true
	}
	if p+1 == g.ctxLen {
		return g.own(p)
	}
	return g.joined(p) && g.cls(p+1)&clsStartWS != 0 || g.answerStarts(p)
}

// cutAfter reports whether a quote must stop after p: the context ends, the
// next position is not joined to p, or a line ends (a quote never runs into
// the next line, where a role header may sit).
func (g *decodeState) cutAfter(p int) bool {
	return p+1 == g.ctxLen || g.cls(p)&clsHasNL != 0 || !g.joined(p) || g.cls(p+1)&clsStartNL != 0
}

// quoteStart returns where a quote picked at pos starts: at the start of
// the word holding pos (searched back at most wordSearch tokens), else at
// the next word start (searched ahead as far). A line's first word ending
// in ':' is a role header of the rendered chat ("user:", "system:",
// "assistant:"): the quote starts at the content after it instead.
func (g *decodeState) quoteStart(pos int) (int, bool) {
	from := pos
	for b := pos; b >= 0 && b > pos-wordSearch; b-- {
		if g.wordStart(b) {
			from = b
			break
		}
	}
	end := min(g.ctxLen, from+wordSearch)
	for p := from; p < end; p++ {
		if !g.wordStart(p) {
			continue
		}
		if !g.lineStart(p) {
			return p, true
		}
		q, ok := g.quoteEnd(p, 1, maxWord) // the line's first word
		if !ok || g.cls(q)&clsColon == 0 {
			return p, true
		}
		p = q
	}
	return 0, false
}

// quoteEnd returns where a quote starting at word start s ends: at the first
// word end at least length tokens from s, at most limit tokens from s, or at
// the last word end before a cut. ok is false when no word ends in reach.
func (g *decodeState) quoteEnd(s, length, limit int) (end int, ok bool) {
	end = -1
	stop := min(g.ctxLen, s+min(limit, length+maxWord))
	for e := s; e < stop; e++ {
		// A whitespace-only token is never a quote's last: the word before
		// it already ended.
		if g.cls(e)&clsAllWS == 0 && g.wordEnd(e) {
			end = e
			if e-s+1 >= length {
				break
			}
		}
		if g.cutAfter(e) {
			break
		}
	}
	return end, end >= 0
}

// quoter plans the answer quote by quote. It is driven by decode with mu
// held.
type quoter struct {
	g        *decodeState
	rng      *rand.Rand
	budget   int  // tokens the answer may hold
	soft     bool // budget is the model's own target: stop at a word end within it
	maxTok   int  // max_tokens: the hard limit
	pos, end int  // the rest of the current quote, context positions pos..end
	sep      int  // a separator token to emit first, -1 for none
	lastEnd  int  // context position where the previous quote ended, -1 before the first
	done     bool
}

func newQuoter(g *decodeState, rng *rand.Rand, budget int, soft bool, maxTokens int) *quoter {
	return &quoter{g: g, rng: rng, budget: budget, soft: soft, maxTok: maxTokens, pos: 0, end: -1, sep: -1, lastEnd: -1}
}

// next returns the next answer token given n tokens emitted so far, and the
// slot it was read from (-1 for a separator, which is not read from the
// pages). ok is false when the answer is over.
func (q *quoter) next(n int) (tok uint32, slot int, ok bool) {
	if n >= q.budget {
		return 0, 0, false
	}
	if q.sep < 0 && q.pos > q.end && !q.plan(n) {
		return 0, 0, false
	}
	if q.sep >= 0 {
		tok, q.sep = uint32(q.sep), -1
		return tok, -1, true
	}
	sl := q.g.slot(q.pos)
	q.pos++
	return q.g.s.pool.tokens[sl], sl, true
}

// plan picks the next quote (and the separator before it) for an answer of
// n tokens so far. It returns false when the answer is over.
func (q *quoter) plan(n int) bool {
	g := q.g
	if q.done || g.ctxLen == 0 {
		return false
	}
	for range quoteDraws {
		pos, length := q.rng.IntN(g.ctxLen), 3+q.rng.IntN(10)
		s, ok := g.quoteStart(pos)
		if !ok {
			continue
		}
		e, ok := g.quoteEnd(s, length, length+maxWord)
		if !ok {
			continue
		}
		sep := -1
		if q.lastEnd >= 0 && g.cls(q.lastEnd)&clsEndWS == 0 && g.cls(s)&clsStartWS == 0 {
			sep = int(g.s.sepSpace)
			if le := q.lastEnd; le+1 < g.ctxLen && g.joined(le) && g.cls(le+1)&clsStartNL != 0 {
				sep = int(g.s.sepNewline)
			}
		}
		room := q.budget - n
		if sep >= 0 {
			room--
		}
		if q.soft && e-s+1 > room {
			// Keep to the target at a word end; a first word longer than
			// the target is said anyway, up to max_tokens.
			if t, ok := g.quoteEnd(s, length, room); ok && room > 0 {
				e = t
				q.done = true
			} else if n > 0 {
				q.done = true
				return false
			} else {
				q.soft, q.budget, q.done = false, q.maxTok, true
			}
		}
		q.pos, q.end, q.sep, q.lastEnd = s, e, sep, e
		return true
	}
	q.done = true
	return false
}

// singleToken returns the token that encodes text, a single space or line
// break (one token in cl100k_base).
func (s *Server) singleToken(text string) uint32 {
	return s.tokenize(text)[0]
}

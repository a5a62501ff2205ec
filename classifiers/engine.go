package classifiers

import (
	"cmp"
	"context"
	"encoding/binary"
	"iter"
	"math/bits"
	"slices"
)

// detector is one built-in detector. It is immutable after construction.
//
// A detector is triggered in one of three ways, all found by the single
// prefilter pass over a chunk: by its keywords (Aho-Corasick over lower-cased
// literals), by a numeric candidate (a run of digit groups), or by an anchor
// byte ('@' for e-mail, hex-colon-hex for IPv6). It then looks only at a
// small window around the trigger.
type detector struct {
	id   string
	idx  int // index in Scanner.dets
	cat  Category
	desc string
	// keywords trigger window; before/after bound the window around a hit
	// (before counts from the start of the keyword, after from its end).
	keywords      []string
	before, after int
	window        func(st *scanState, d *detector, lo, hi int)
	// hit, when set, is called for every keyword occurrence instead of
	// merging windows (detectors that need the keyword's position).
	hit func(st *scanState, d *detector, start, end int)
	// numeric is called for every numeric candidate.
	numeric func(st *scanState, d *detector, c *numCand)
	// glued: numeric also looks at candidates of one digit group glued to
	// a word byte on their left ("FR76", "AB123456C"). Other numeric
	// detectors need a boundary before the range they read, which such a
	// candidate cannot give, so anchors skips them there.
	glued bool
	// gate rules out candidates numeric can find nothing in (see
	// candShape.skips).
	gate numGate
	// context words raise confidence when they occur near a finding.
	context []string
	// mask renders the preview of a value.
	mask maskFunc
}

// maskFunc appends the masked preview of value v to dst and returns the
// extended slice. It must not retain v.
type maskFunc func(dst, v []byte) []byte

// scanState is the per-call state of one chunk scan.
type scanState struct {
	ctx      context.Context
	s        *Scanner
	text     []byte
	acceptLo int
	acceptHi int
	out      []rawFinding
	err      error
	// per detector: trigger windows and context word hit positions
	windows  [][]span
	ctxHits  [][]int
	ctxCur   []int // per detector: the last lower bound found in ctxHits
	custHits [][]span
	custCtx  [][]int
	// touched has bit i set when windows[i] or ctxHits[i] (ctxCur[i] is
	// only moved when ctxHits[i] is not empty) received something in this
	// chunk, custTouched bit i when custHits[i] or custCtx[i] did: the
	// loops over the detectors and putState visit those only, so a small
	// chunk (a streamed piece) does not pay for every detector.
	touched, custTouched []uint64
	hits                 []detHit
	num                  numCand // anchors' numeric candidate, its slices reused
	// genericLo, genericTo: the last value genericHit read; keyword hits
	// inside it are not keys.
	genericLo, genericTo int
	sortBuf              []rawFinding // scratch of sortRawByStart
	acPending            acScratch    // scratch of acMatcher.scan
	// Previews and hashes are appended to arena, which becomes one string
	// per chunk.
	arena  []byte
	mac    *keyedHash  // HMAC-SHA256 keyed with Scanner.key
	norms  []byte      // normalised values of out, hashed at the end
	norm   []byte      // emitString's copy of its string
	phones phoneTable  // this chunk's phone validations
	hcache []hashEntry // hashed values (hashNorm); a power of two long
	hgen   uint32      // hcache's entries of this chunk carry it
}

// rawFinding is a finding while its chunk is scanned: 40 bytes instead of a
// Finding's 140, so collecting, sorting and resolving them is cheap. who is
// the index of the built-in detector, or len(Scanner.dets) + the index of
// the custom rule.
type rawFinding struct {
	start, end int32
	who        int32
	pLo, pHi   int32 // preview in scanState.arena
	nLo, nHi   int32 // normalised value in scanState.norms
	hAt        int32 // the hex hash in scanState.arena, once hashed
	enc        uint8 // the changed places of a view it touches (encNone…)
	conf       float64
}

// idCat returns the detector ID and category of a rawFinding's who.
func (s *Scanner) idCat(who int32) (string, Category) {
	if int(who) < len(s.dets) {
		d := s.dets[who]
		return d.id, d.cat
	}
	return s.custom[int(who)-len(s.dets)].id, CategoryCustom
}

type detHit struct{ det, start, end int }

type span struct{ lo, hi int }

// scanChunk runs the prefilter and the triggered detectors over text (at
// stream offset base) and returns the findings whose Start lies in
// [acceptLo, acceptHi) (chunk-relative), sorted by Start, with stream
// offsets and the positions pos gives them.
func (s *Scanner) scanChunk(ctx context.Context, text []byte, acceptLo, acceptHi int, pos *posTracker, base int) ([]Finding, error) {
	return s.scanChunkRaw(ctx, text, acceptLo, acceptHi, pos, base, nil)
}

// scanChunkRaw is scanChunk that also records in part, when not nil, the
// keyword hits of the built-in detectors and the span and detector of
// every finding before overlaps are resolved (see ScanPartial).
//
// The detectors read the chunk's normalised view, and its decoded views
// (see normalise.go); findings are mapped back to the chunk before
// overlaps are resolved. part records the normalised view's offsets and
// the view itself.
func (s *Scanner) scanChunkRaw(ctx context.Context, text []byte, acceptLo, acceptHi int, pos *posTracker, base int, part *partialScan) ([]Finding, error) {
	// The views' texts are built in recycled buffers, except for
	// ScanPartial, which keeps the normalised view.
	var bufs *viewBufs
	if part == nil {
		bufs, _ = s.viewBufs.Get().(*viewBufs)
		if bufs == nil {
			bufs = new(viewBufs)
		}
		defer s.viewBufs.Put(bufs)
	}
	nv, cands := normaliseChunk(text, bufs.get(0), bufs.getSegs(0), bufs.getCands())
	bufs.keep(0, nv)
	bufs.keepCands(cands)
	vt := text
	if nv != nil {
		vt = nv.text
	}
	st := s.getState(ctx, vt, acceptLo, acceptHi)
	defer s.putState(st)
	s.detect(st, part)
	if part != nil {
		part.view = nv
		for _, r := range st.out {
			part.spans = append(part.spans, rawSpan{int(r.start), int(r.end), r.who})
		}
	}
	if nv != nil {
		for i := range st.out {
			r := &st.out[i]
			start, end, enc := nv.spanUp(int(r.start), int(r.end))
			r.start, r.end, r.enc = int32(start), int32(end), enc
		}
	}
	if cands != nil {
		s.scanDecoded(st, vt, nv, cands, part, bufs)
	}
	return s.finishChunk(st, text, acceptLo, acceptHi, pos, base)
}

// scanDecoded runs the detectors over the decoded views of vt (the
// normalised view nv's text, or the chunk) and adds to st the findings that
// touch a decoded run, mapped back to the chunk (and to nv's offsets in
// part).
func (s *Scanner) scanDecoded(st *scanState, vt []byte, nv *view, cands []cand, part *partialScan, bufs *viewBufs) {
	parent := nv
	for pass := 1; pass <= maxDecodePasses; pass++ {
		var dv *view
		if pass == 1 {
			dv = decodeCands(vt, parent, cands, bufs.get(pass), bufs.getSegs(pass))
		} else {
			dv = redecode(parent, bufs.get(pass), bufs.getSegs(pass))
		}
		bufs.keep(pass, dv)
		if dv == nil || !dv.decoded {
			return
		}
		// The detectors read the decoded runs with decodedReach bytes
		// around each (the context words before a value, a Secret's
		// key names), not the whole chunk again.
		var ws []span
		for _, g := range dv.segs {
			if g.enc < encPercent {
				continue
			}
			w := span{max(0, g.vLo-decodedReach), min(len(dv.text), g.vHi+decodedReach)}
			if k := len(ws); k > 0 && w.lo <= ws[k-1].hi {
				ws[k-1].hi = max(ws[k-1].hi, w.hi)
			} else {
				ws = append(ws, w)
			}
		}
		for _, w := range ws {
			ds := s.getState(st.ctx, dv.text[w.lo:w.hi], 0, w.hi-w.lo)
			s.detect(ds, nil)
			if st.err == nil {
				st.err = ds.err
			}
			for _, r := range ds.out {
				a, b := int(r.start)+w.lo, int(r.end)+w.lo
				if !dv.touchesDecoded(a, b) {
					continue // found in the view before
				}
				if part != nil {
					// Up to the normalised view, where ScanPartial
					// settles.
					pa, pb := a, b
					for v := dv; v != nv; v = v.parent {
						pa, pb, _ = v.spanUp(pa, pb)
					}
					part.spans = append(part.spans, rawSpan{pa, pb, r.who})
				}
				start, end, enc := dv.toRoot(a, b)
				c := r
				c.start, c.end, c.enc = int32(start), int32(end), enc
				c.pLo = int32(len(st.arena))
				st.arena = append(st.arena, ds.arena[r.pLo:r.pHi]...)
				c.pHi = int32(len(st.arena))
				c.nLo = int32(len(st.norms))
				st.norms = append(st.norms, ds.norms[r.nLo:r.nHi]...)
				c.nHi = int32(len(st.norms))
				st.out = append(st.out, c)
			}
			s.putState(ds)
		}
		parent, vt = dv, dv.text
	}
}

// viewBufs holds the text buffers of a chunk's views (the normalised one,
// then each decoded one) for the next chunk, through Scanner.viewBufs: a
// view of a 1 MiB chunk is a 1 MiB copy, which most chunks of real text
// need (one character NFKC changes is enough).
type viewBufs struct {
	b     [1 + maxDecodePasses][]byte
	segs  [1 + maxDecodePasses][]vseg
	cands []cand // normaliseChunk's places to decode
}

// get returns view k's recycled buffer, or nil (bufs nil).
func (bufs *viewBufs) get(k int) []byte {
	if bufs == nil {
		return nil
	}
	return bufs.b[k]
}

// getSegs returns view k's recycled changed places, or nil (bufs nil).
func (bufs *viewBufs) getSegs(k int) []vseg {
	if bufs == nil {
		return nil
	}
	return bufs.segs[k]
}

// getCands returns normaliseChunk's recycled places, or nil (bufs nil).
func (bufs *viewBufs) getCands() []cand {
	if bufs == nil {
		return nil
	}
	return bufs.cands
}

// keepCands records the array of cands for the next chunk (bufs nil:
// nothing is recycled).
func (bufs *viewBufs) keepCands(cands []cand) {
	if bufs != nil && cap(cands) > cap(bufs.cands) {
		bufs.cands = cands[:0]
	}
}

// keep records v's text and changed places as view k's buffers for the
// next chunk, when v was built (bufs nil: nothing is recycled).
func (bufs *viewBufs) keep(k int, v *view) {
	if bufs == nil || v == nil {
		return
	}
	if cap(v.text) > cap(bufs.b[k]) {
		bufs.b[k] = v.text[:0]
	}
	if cap(v.segs) > cap(bufs.segs[k]) {
		bufs.segs[k] = v.segs[:0]
	}
}

// decodedReach is how far around a decoded run the detectors read a
// decoded view: more than the longest context a detector reads before or
// after a value (a service account's 3000 bytes).
const decodedReach = 4096

// detect runs the prefilter and every triggered detector over st.text and
// leaves their findings in st.out (in st.text's offsets, overlaps not
// resolved); part, when not nil, gets the built-in detectors' keyword hits.
func (s *Scanner) detect(st *scanState, part *partialScan) {
	text := st.text
	// Pass 1: keywords and context words.
	s.ac.scan(text, &st.acPending, func(p, end int) {
		ref := s.acRefs[p]
		start := end - ref.length
		if ref.det >= 0 {
			if ref.context {
				st.ctxHits[ref.det] = append(st.ctxHits[ref.det], start)
				st.touched[ref.det>>6] |= 1 << (ref.det & 63)
				return
			}
			d := s.dets[ref.det]
			if part != nil {
				part.hits = append(part.hits, detHit{ref.det, start, end})
			}
			if d.hit != nil {
				st.hits = append(st.hits, detHit{ref.det, start, end})
				return
			}
			w := span{max(0, start-d.before), min(len(text), end+d.after)}
			st.touched[ref.det>>6] |= 1 << (ref.det & 63)
			ws := st.windows[ref.det]
			if n := len(ws); n > 0 && w.lo <= ws[n-1].hi {
				ws[n-1].hi = max(ws[n-1].hi, w.hi)
			} else {
				st.windows[ref.det] = append(ws, w)
			}
			return
		}
		st.custTouched[ref.custom>>6] |= 1 << (ref.custom & 63)
		if ref.context {
			st.custCtx[ref.custom] = append(st.custCtx[ref.custom], start)
		} else {
			st.custHits[ref.custom] = append(st.custHits[ref.custom], span{start, end})
		}
	})
	// Hits are appended in order of their end; a longer word can start
	// before a shorter one found earlier. nearHit searches them by start.
	for i := range setBits(st.touched) {
		if hs := st.ctxHits[i]; !slices.IsSorted(hs) {
			slices.Sort(hs)
		}
	}
	for i := range setBits(st.custTouched) {
		if hs := st.custCtx[i]; !slices.IsSorted(hs) {
			slices.Sort(hs)
		}
	}
	// Pass 2 (same chunk, anchors): numeric candidates, '@', IPv6.
	st.anchors()
	// Keyword-triggered detectors over their merged windows, in the
	// order of s.dets (only those with a window can have one).
	for i := range setBits(st.touched) {
		d := s.dets[i]
		if d.window == nil {
			continue
		}
		for _, w := range st.windows[i] {
			d.window(st, d, w.lo, w.hi)
		}
	}
	for _, h := range st.hits {
		d := s.dets[h.det]
		d.hit(st, d, h.start, h.end)
	}
	st.runCustom()
}

// finishChunk resolves the overlaps of st.out (in the chunk's offsets),
// keeps those whose Start lies in [acceptLo, acceptHi), hashes their
// values and returns them as Findings placed by pos.
func (s *Scanner) finishChunk(st *scanState, text []byte, acceptLo, acceptHi int, pos *posTracker, base int) ([]Finding, error) {
	raw := s.resolveOverlaps(st, st.out)
	// A finding that won an overlap took its loser's place, which can
	// come before a finding that starts earlier; positions are counted
	// in order of start, so such rare cases are sorted again (stably, as
	// a stable sort of the Findings would).
	for i := 1; i < len(raw); i++ {
		if raw[i-1].start > raw[i].start {
			raw, st.sortBuf = sortRawByStart(raw, st.sortBuf)
			break
		}
	}
	st.out = raw // the array sorting left the findings in (the other is st.sortBuf)
	n := 0
	for _, r := range raw {
		if int(r.start) >= acceptLo && int(r.start) < acceptHi {
			n++
		}
	}
	if n == 0 {
		return nil, st.err
	}
	st.arena = slices.Grow(st.arena, n*2*hashBytes)
	st.growHashCache(n)
	for i := range raw {
		if r := &raw[i]; int(r.start) >= acceptLo && int(r.start) < acceptHi {
			r.hAt = st.hashNorm(r)
			if s.allowed != nil && s.allowed[allowKey{r.who, string(st.arena[r.hAt : r.hAt+2*hashBytes])}] {
				r.hAt = -1 // an allowed value: not reported
				n--
			}
		}
	}
	if n == 0 {
		return nil, st.err
	}
	arena := string(st.arena)
	// Fields are set in place: building a Finding and copying it in
	// would move all 112 bytes through a bulk write barrier whenever the
	// GC is marking.
	out := make([]Finding, n)
	k := 0
	for _, r := range raw {
		if int(r.start) < acceptLo || int(r.start) >= acceptHi || r.hAt < 0 {
			continue
		}
		f := &out[k]
		f.Detector, f.Category = s.idCat(r.who)
		f.Confidence = r.conf
		pos.place(f, text, base, int(r.start), int(r.end))
		f.Preview = arena[r.pLo:r.pHi]
		f.Hash = arena[r.hAt : r.hAt+2*hashBytes]
		if r.enc > encNormalised {
			f.Encoding = encodingName(r.enc)
		}
		k++
	}
	return out, st.err
}

// getState returns a scan state for one chunk. States are recycled through
// the Scanner's pool (sync.Pool is safe for concurrent use): the buffers a
// dense chunk needs (findings, previews, normalised values, trigger lists)
// are allocated once, not per scan. Nothing in a state outlives the
// scanChunk call that uses it: the phone memo and the hash cache are
// emptied when the chunk is done.
func (s *Scanner) getState(ctx context.Context, text []byte, acceptLo, acceptHi int) *scanState {
	st, _ := s.states.Get().(*scanState)
	if st == nil {
		st = &scanState{s: s, windows: make([][]span, len(s.dets)), ctxHits: make([][]int, len(s.dets)), ctxCur: make([]int, len(s.dets)),
			custHits: make([][]span, len(s.custom)), custCtx: make([][]int, len(s.custom)),
			touched: make([]uint64, (len(s.dets)+63)/64), custTouched: make([]uint64, (len(s.custom)+63)/64),
			mac: newKeyedHash(s.key), hgen: 1}
	}
	st.ctx, st.text, st.acceptLo, st.acceptHi = ctx, text, acceptLo, acceptHi
	return st
}

// putState clears st's per-chunk contents (keeping its buffers) and returns
// it to the pool.
func (s *Scanner) putState(st *scanState) {
	st.ctx, st.text, st.err = nil, nil, nil
	for i := range setBits(st.touched) {
		st.windows[i] = st.windows[i][:0]
		st.ctxHits[i] = st.ctxHits[i][:0]
		st.ctxCur[i] = 0
	}
	for i := range setBits(st.custTouched) {
		st.custHits[i] = st.custHits[i][:0]
		st.custCtx[i] = st.custCtx[i][:0]
	}
	clear(st.touched)
	clear(st.custTouched)
	st.hits = st.hits[:0]
	st.genericLo, st.genericTo = 0, 0
	st.out, st.arena, st.norms = st.out[:0], st.arena[:0], st.norms[:0]
	// The hash cache is emptied by moving to the next generation (its
	// entries are not cleared: a small input does not pay for the table).
	if st.hgen++; st.hgen == 0 {
		clear(st.hcache)
		st.hgen = 1
	}
	st.phones.reset()
	s.states.Put(st)
}

// setBits yields the indices of the bits set in set, in increasing order.
func setBits(set []uint64) iter.Seq[int] {
	return func(yield func(int) bool) {
		for k, w := range set {
			for ; w != 0; w &= w - 1 {
				if !yield(k<<6 | bits.TrailingZeros64(w)) {
					return
				}
			}
		}
	}
}

// anchors walks the chunk once for anchor bytes, and for the capitals
// that may start a person name (nameAt).
func (st *scanState) anchors() {
	text := st.text
	n := len(text)
	c := &st.num
	names := st.s.names != nil
	for i := 0; i < n; {
		// Eight bytes at a time to the next byte that may be an anchor
		// (past most prose at once).
		for i+8 <= n {
			x := binary.LittleEndian.Uint64(text[i : i+8 : i+8])
			m, caps := anchorCapsMask(x)
			if names && caps != 0 {
				// Capitals that may start a person name (nameAt).
				var prev uint64
				if i > 0 && isAlnum(text[i-1]) {
					prev = 0x80
				}
				m |= nameStartMask(x, prev)
			}
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= n {
			break
		}
		b := text[i]
		switch {
		case b >= '0' && b <= '9':
			j := c.parse(text, i)
			sh := c.shape(text)
			if g := st.s.gates; g != nil {
				for m := g.runs(&sh); m != 0; m &= m - 1 {
					d := st.s.numeric[bits.TrailingZeros64(m)]
					d.numeric(st, d, c)
				}
			} else {
				for _, d := range st.s.numeric {
					if !sh.skips(d) {
						d.numeric(st, d, c)
					}
				}
			}
			if st.s.scanIPv6 && j < n && text[j] == ':' {
				j = st.ipv6At(i)
			}
			i = j
			continue
		case b == '@':
			if st.s.email != nil {
				st.emailAt(i)
			}
		case b == ':':
			if st.s.scanIPv6 && i+1 < n && (isHex(text[i+1]) || text[i+1] == ':') && (i == 0 || isHex(text[i-1]) || text[i-1] == ':') {
				i = st.ipv6At(i)
				continue
			}
		case names && (isUpper(b) || b >= 0xC3 && b <= 0xC5):
			i = st.nameAt(i)
			continue
		}
		i++
	}
}

// anchorCapsMask returns two masks of x (little-endian: byte 0 is the
// lowest). anchors has the high bit of each byte that lies in '0'..'@'
// (digits, ':', '@' and a few punctuation bytes anchors ignores) set, and
// no other bit. caps is zero when x has no byte in 'A'..'Z' nor
// 0xC3..0xFF (no capital that may start a name: nameStartMask need not
// be computed). The low seven bits of each byte are compared with SWAR
// additions that cannot carry into the next byte; for anchors, bytes with
// the high bit set are excluded. The two masks share their first sum.
func anchorCapsMask(x uint64) (anchors, caps uint64) {
	const low7, high = 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	y := x & low7
	s := y + 0x3f3f3f3f3f3f3f3f                         // high bit: y >= 0x41
	anchors = (y + 0x5050505050505050) &^ s &^ x & high // y >= 0x30, y < 0x41
	caps = (s&^(y+0x2525252525252525)&^x | (y+0x3d3d3d3d3d3d3d3d)&x) & high
	return anchors, caps
}

// candShape is what anchors knows of a numeric candidate before calling
// the numeric detectors: each is skipped when the shape rules it out.
type candShape struct {
	digits     int  // digits in all groups
	groups     int  // number of digit groups
	firstLen   int  // digits in the first group
	glued      bool // the first digit follows a word byte: user42, ghp_…9k…
	gluedOne   bool // glued, and one group only
	upper      bool // glued to an upper-case ASCII letter
	alphaAfter bool // the first group is followed by an ASCII letter: 0x…, 1BvB…
	lead12     bool // not glued, not led by '+' or '(', first digit 1 or 2
}

// numGate is what a numeric detector needs of a candidate's shape; the
// zero value needs nothing.
type numGate struct {
	minDigits   int    // at least this many digits …
	orLead12    bool   // … unless lead12 (a Corsican NIR breaks at 2A/2B)
	minGroups   int    // at least this many groups
	firstLens   uint32 // bit n set: a first group of n digits is possible (0: any)
	upperBefore bool   // glued to an upper-case letter (IBAN, codice fiscale)
	alphaAfter  bool   // first group followed by a letter (wallets)
	notGlued    bool   // never glued
}

func (c *numCand) shape(text []byte) candShape {
	g := c.groups[0]
	glued := g.lo > 0 && c.start == g.lo && isWordByte(text[g.lo-1])
	return candShape{digits: c.cum[len(c.groups)], groups: len(c.groups), firstLen: g.hi - g.lo,
		glued: glued, gluedOne: glued && len(c.groups) == 1, upper: glued && isUpper(text[g.lo-1]),
		alphaAfter: g.hi < len(text) && isAlpha(text[g.hi]),
		lead12:     !glued && c.start == g.lo && (text[g.lo] == '1' || text[g.lo] == '2')}
}

// skips reports whether d can find nothing in a candidate of this shape.
func (sh candShape) skips(d *detector) bool {
	g := &d.gate
	return (sh.digits < g.minDigits && !(g.orLead12 && sh.lead12)) || sh.groups < g.minGroups ||
		(g.firstLens != 0 && (sh.firstLen > 31 || g.firstLens&(1<<sh.firstLen) == 0)) ||
		(g.upperBefore && !sh.upper) || (g.alphaAfter && !sh.alphaAfter) || (g.notGlued && sh.glued) ||
		(sh.gluedOne && !d.glued)
}

// gateMasks holds the numeric detectors' gates as bit masks over
// Scanner.numeric (bit i: numeric[i]), so that runs finds the detectors a
// candidate shape does not rule out with a few table loads instead of
// testing every gate. Built by New, read only afterwards.
type gateMasks struct {
	all        uint64
	fewDigits  [gateCap + 1]uint64 // [k]: minDigits > k (k capped)
	orLead12   uint64
	fewGroups  [gateCap + 1]uint64 // [k]: minGroups > k (k capped)
	firstLen   [33]uint64          // [n]: firstLens rules out a first group of n digits ([32]: more than 31)
	upper      uint64              // upperBefore
	alphaAfter uint64
	notGlued   uint64
	unglued    uint64 // detectors without glued: skipped for gluedOne
}

// gateCap bounds the digit and group counts gateMasks tables; a gate
// needing more leaves the Scanner on the per-detector test.
const gateCap = 63

// newGateMasks returns the masks of dets, or nil when they do not fit.
func newGateMasks(dets []*detector) *gateMasks {
	if len(dets) > 64 {
		return nil
	}
	g := &gateMasks{}
	for i, d := range dets {
		bit := uint64(1) << i
		gt := &d.gate
		if gt.minDigits > gateCap || gt.minGroups > gateCap {
			return nil
		}
		g.all |= bit
		for k := 0; k < gt.minDigits; k++ {
			g.fewDigits[k] |= bit
		}
		if gt.orLead12 {
			g.orLead12 |= bit
		}
		for k := 0; k < gt.minGroups; k++ {
			g.fewGroups[k] |= bit
		}
		if gt.firstLens != 0 {
			for n := range g.firstLen {
				if n > 31 || gt.firstLens&(1<<n) == 0 {
					g.firstLen[n] |= bit
				}
			}
		}
		if gt.upperBefore {
			g.upper |= bit
		}
		if gt.alphaAfter {
			g.alphaAfter |= bit
		}
		if gt.notGlued {
			g.notGlued |= bit
		}
		if !d.glued {
			g.unglued |= bit
		}
	}
	return g
}

// runs returns the detectors sh.skips does not rule out, as a mask.
func (g *gateMasks) runs(sh *candShape) uint64 {
	few := g.fewDigits[min(sh.digits, gateCap)]
	if sh.lead12 {
		few &^= g.orLead12
	}
	skip := few | g.fewGroups[min(sh.groups, gateCap)] | g.firstLen[min(sh.firstLen, 32)]
	if !sh.upper {
		skip |= g.upper
	}
	if !sh.alphaAfter {
		skip |= g.alphaAfter
	}
	if sh.glued {
		skip |= g.notGlued
	}
	if sh.gluedOne {
		skip |= g.unglued
	}
	return g.all &^ skip
}

// emit records a finding of who (a detector's idx, or len(dets) + a custom
// rule's index) over text[start:end]; norm is the normalised value that is
// hashed (emit does not retain it). Findings outside the chunk's accepted
// range are dropped by scanChunk.
func (st *scanState) emit(who int, start, end int, conf float64, norm []byte, mask maskFunc) {
	if end <= start {
		return
	}
	if mask == nil {
		mask = maskGeneric
	}
	if conf > 1 {
		conf = 1
	}
	if cap(st.out) == 0 {
		est := len(st.text)/128 + 16
		st.out = make([]rawFinding, 0, est)
		st.arena = make([]byte, 0, est*48)
		st.norms = make([]byte, 0, est*24)
	}
	r := rawFinding{start: int32(start), end: int32(end), who: int32(who), conf: round2(conf)}
	r.pLo = int32(len(st.arena))
	st.arena = mask(st.arena, st.text[start:end])
	r.pHi = int32(len(st.arena))
	// The value is hashed once overlaps are resolved, for the findings
	// that are kept.
	r.nLo = int32(len(st.norms))
	st.norms = append(st.norms, norm...)
	r.nHi = int32(len(st.norms))
	st.out = append(st.out, r)
}

// hashNorm appends the hex HMAC of r's normalised value to the arena and
// returns where it starts. Values repeat (the same address, label or number
// many times in one text): a small cache of recent values, compared byte
// for byte, reuses their hash.
func (st *scanState) hashNorm(r *rawFinding) int32 {
	v := st.norms[r.nLo:r.nHi]
	e := &st.hcache[slotKey(v)&uint32(len(st.hcache)-1)]
	if e.gen == st.hgen && string(st.norms[e.nLo:e.nHi]) == string(v) {
		return e.at
	}
	at := int32(len(st.arena))
	sum := st.mac.Sum(v)
	st.arena = appendHex(st.arena, sum[:hashBytes])
	*e = hashEntry{nLo: r.nLo, nHi: r.nHi, at: at, gen: st.hgen}
	return at
}

// appendHex is hex.AppendEncode for short inputs, without its generic
// growth path. Four bytes at a time become eight lower-case hex digits in
// one 64-bit word (hexWord); the tail goes byte by byte.
func appendHex(dst, src []byte) []byte {
	const digits = "0123456789abcdef"
	n := len(dst)
	dst = slices.Grow(dst, 2*len(src))[:n+2*len(src)]
	out := dst[n:]
	for len(src) >= 4 {
		binary.LittleEndian.PutUint64(out, hexWord(binary.LittleEndian.Uint32(src)))
		src, out = src[4:], out[8:]
	}
	for i, b := range src {
		out[2*i] = digits[b>>4]
		out[2*i+1] = digits[b&15]
	}
	return dst
}

// hexWord returns the hex digits of the four bytes of y (byte 0 the
// lowest) as eight ASCII bytes, first digit in the lowest byte: each byte
// is spread to a 16-bit lane, its high nibble to the lane's low byte and
// its low nibble to the high byte, then each nibble n becomes '0'+n, plus
// 'a'-'0'-10 when n > 9 (n+6 carries into bit 4). No lane carries into the
// next.
func hexWord(y uint32) uint64 {
	x := uint64(y)
	x = (x | x<<16) & 0x0000ffff0000ffff
	x = (x | x<<8) & 0x00ff00ff00ff00ff
	v := (x>>4)&0x000f000f000f000f | (x&0x000f000f000f000f)<<8
	over9 := ((v + 0x0606060606060606) >> 4) & 0x0101010101010101
	return v + 0x3030303030303030 + over9*('a'-'0'-10)
}

// slotKey picks a cache slot for v from its length and its first and last
// eight bytes (a collision only costs a cache miss: entries are compared
// byte for byte).
func slotKey(v []byte) uint32 {
	h := uint64(len(v)) * 0x9E3779B97F4A7C15
	if len(v) >= 8 {
		h ^= binary.LittleEndian.Uint64(v)
		h *= 0xff51afd7ed558ccd
		h ^= binary.LittleEndian.Uint64(v[len(v)-8:])
	} else {
		for _, c := range v {
			h = (h ^ uint64(c)) * 0x100000001b3
		}
	}
	h *= 0xc4ceb9fe1a85ec53
	return uint32(h >> 32)
}

// hashEntry caches the hash of norms[nLo:nHi] at arena offset at, for the
// chunk whose generation is gen (scanState.hgen; 0 is never one).
type hashEntry struct {
	nLo, nHi, at int32
	gen          uint32
}

// growHashCache makes the hash cache at least twice as long as the n
// values about to be hashed (within bounds), so that a value met again in
// the chunk finds its hash (a collision only costs a hash): small inputs
// get a small table, a dense 1 MiB chunk one of 4,096 slots. The bound
// keeps the table (64 KiB) in the cache next to the chunk: a table of
// 16,384 slots spared a dense MiB 14 hashes of its 24,600 and a MiB of
// names about 650 of 6,000, and missed the cache on most lookups.
func (st *scanState) growHashCache(n int) {
	const lo, hi = 64, 1 << 12
	want := lo
	for want < 2*n && want < hi {
		want *= 2
	}
	if len(st.hcache) < want {
		st.hcache = make([]hashEntry, want) // generation 0: empty
	}
}

// emitString is emit with a normalised value held in a string.
func (st *scanState) emitString(who int, start, end int, conf float64, norm string, mask maskFunc) {
	st.norm = append(st.norm[:0], norm...)
	st.emit(who, start, end, conf, st.norm, mask)
}

// hashBytes is how much of the HMAC-SHA256 a Finding.Hash keeps (hex
// encoded, 32 characters).
const hashBytes = 16

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// hasContext reports whether one of d's context words occurs within dist
// bytes before start or right after end.
func (st *scanState) hasContext(d *detector, start, end, dist int) bool {
	hits := st.ctxHits[d.idx]
	if len(hits) == 0 {
		return false
	}
	// Queries mostly come in increasing order: resume the lower-bound
	// search from the last answer when it is still a valid start.
	x := start - dist
	k := st.ctxCur[d.idx]
	if k > 0 && k <= len(hits) && hits[k-1] < x {
		for n := 0; k < len(hits) && hits[k] < x; n++ {
			if n == 8 { // far ahead: search the rest
				k += lowerBound(hits[k:], x)
				break
			}
			k++
		}
	} else {
		k = lowerBound(hits, x)
	}
	st.ctxCur[d.idx] = k
	return k < len(hits) && hits[k] <= end+dist/2
}

// nearHit reports whether a hit (sorted start offsets) lies in
// [start-dist, end+dist/2].
func nearHit(hits []int, start, end, dist int) bool {
	k := lowerBound(hits, start-dist)
	return k < len(hits) && hits[k] <= end+dist/2
}

// lowerBound is sort.SearchInts without the closure: the index of the first
// hit >= x.
func lowerBound(hits []int, x int) int {
	lo, hi := 0, len(hits)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if hits[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// resolveOverlaps keeps, among overlapping PII and secret findings, the most
// specific one: secrets win over PII, then the longer span, then the higher
// confidence. Overlapping markers keep the first; custom findings are kept
// as they are.
func (s *Scanner) resolveOverlaps(st *scanState, fs []rawFinding) []rawFinding {
	if len(fs) < 2 {
		return fs
	}
	fs, st.sortBuf = sortRawByStart(fs, st.sortBuf)
	// class: 0 kept as is, 1 PII and secrets, 2 markers; rank: secrets
	// first (precomputed per detector in s.ovClass).
	class := func(f *rawFinding) (int, int) {
		k := s.ovClass[f.who]
		return int(k >> 1), int(k & 1)
	}
	better := func(a, b *rawFinding) bool {
		_, ra := class(a)
		_, rb := class(b)
		if ra != rb {
			return ra > rb
		}
		if la, lb := a.end-a.start, b.end-b.start; la != lb {
			return la > lb
		}
		return a.conf > b.conf
	}
	// In place: out never grows past the finding being read.
	out := fs[:0]
	last := [3]int{-1, -1, -1} // overlap class → index in out of its last finding
	for i := range fs {
		f := &fs[i]
		k, _ := class(f)
		if k == 0 {
			out = append(out, *f)
			continue
		}
		if li := last[k]; li >= 0 && f.start < out[li].end {
			if better(f, &out[li]) {
				out[li] = *f
			}
			continue
		}
		out = append(out, *f)
		last[k] = len(out) - 1
	}
	return out
}

// overlapClass is resolveOverlaps' class of a category (shifted left by
// one) and its rank (bit 0): 0 kept as is, 1 PII and secrets, 2 markers;
// secrets rank first.
func overlapClass(c Category) uint8 {
	switch c {
	case CategoryPII:
		return 1 << 1
	case CategorySecret:
		return 1<<1 | 1
	case CategoryMarker:
		return 2 << 1
	}
	return 0
}

// sortStable sorts xs stably by c. It sorts a permutation of indices and
// moves each element once (findings arrive nearly sorted or grouped by
// detector); when xs is already sorted it is returned as is.
func sortStable[T any](xs []T, c func(a, b *T) int) []T {
	sorted := true
	for i := 1; i < len(xs); i++ {
		if c(&xs[i-1], &xs[i]) > 0 {
			sorted = false
			break
		}
	}
	if sorted {
		return xs
	}
	idx := make([]int32, len(xs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortFunc(idx, func(a, b int32) int {
		if r := c(&xs[a], &xs[b]); r != 0 {
			return r
		}
		return cmp.Compare(a, b)
	})
	out := make([]T, len(xs))
	for k, i := range idx {
		out[k] = xs[i]
	}
	return out
}

// sortRawByStart sorts raw findings stably by start. They arrive as a few
// sorted runs (one per pass or detector), with local disorder inside the
// anchor pass's run (detectors of one candidate emit in detector order: a
// card inside an IBAN's digits comes before the IBAN, which starts at its
// letters). A finding at most insertionReach places behind its spot in the
// current run is moved there; one farther back starts a new run. The runs
// are then merged, so each finding moves about log2(runs) times. Both
// steps keep equal starts in their original order, so the result is the
// stable sort. buf is scratch space (grown when too small); the sorted
// findings are in fs's array or in buf's, and the other array is returned
// as the next scratch space.
func sortRawByStart(fs, buf []rawFinding) ([]rawFinding, []rawFinding) {
	const insertionReach = 8
	var runs []int // run starts, then len(fs)
	for i := range fs {
		if i == 0 {
			runs = append(runs, 0)
			continue
		}
		if fs[i].start >= fs[i-1].start {
			continue
		}
		r0, x, j := runs[len(runs)-1], fs[i], i
		for j > r0 && j > i-insertionReach && x.start < fs[j-1].start {
			j--
		}
		if j == r0 || x.start >= fs[j-1].start {
			copy(fs[j+1:i+1], fs[j:i])
			fs[j] = x
			continue
		}
		runs = append(runs, i)
	}
	if len(runs) <= 1 {
		return fs, buf
	}
	runs = append(runs, len(fs))
	if cap(buf) < len(fs) {
		buf = make([]rawFinding, len(fs), cap(fs))
	}
	src, dst := fs, buf[:len(fs)]
	if k := len(runs) - 1; k <= 8 {
		// Few runs (the usual case): one k-way pass, taking the first
		// run's head on ties, so the sort stays stable.
		var head, end [8]int
		for r := 0; r < k; r++ {
			head[r], end[r] = runs[r], runs[r+1]
		}
		for o := range dst {
			best := -1
			for r := 0; r < k; r++ {
				if head[r] < end[r] && (best < 0 || src[head[r]].start < src[head[best]].start) {
					best = r
				}
			}
			dst[o] = src[head[best]]
			head[best]++
		}
		return dst, src[:0]
	}
	for len(runs) > 2 {
		next := runs[:0:0]
		for k := 0; k+1 < len(runs); k += 2 {
			lo, mid := runs[k], runs[k+1]
			hi := mid
			if k+2 < len(runs) {
				hi = runs[k+2]
			}
			next = append(next, lo)
			i, j, o := lo, mid, lo
			for i < mid && j < hi {
				if src[j].start < src[i].start {
					dst[o] = src[j]
					j++
				} else {
					dst[o] = src[i]
					i++
				}
				o++
			}
			o += copy(dst[o:], src[i:mid])
			copy(dst[o:], src[j:hi])
		}
		next = append(next, len(fs))
		runs = next
		src, dst = dst, src
	}
	return src, dst[:0]
}

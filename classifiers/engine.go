package classifiers

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"sort"
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
	out      []Finding
	err      error
	// per detector: trigger windows and context word hit positions
	windows  [][]span
	ctxHits  [][]int
	custHits [][]span
	custCtx  [][]int
	hits     []detHit
	// Finding output: previews and hashes are appended to arena and turned
	// into strings once per chunk (refs[i] locates out[i]'s).
	arena   []byte
	refs    []arenaRef
	mac     hash.Hash // HMAC-SHA256 keyed with Scanner.key, Reset per value
	sum     [sha256.Size]byte
	scratch []byte
	phones  map[string]phoneResult // per-scan memo of phone validation
}

// arenaRef locates a finding's preview and hash in scanState.arena.
type arenaRef struct{ pLo, pHi, hLo int32 }

type detHit struct{ det, start, end int }

type span struct{ lo, hi int }

// scanChunk runs the prefilter and the triggered detectors over text and
// returns findings (chunk-relative offsets, no positions yet) whose Start
// lies in [acceptLo, acceptHi).
func (s *Scanner) scanChunk(ctx context.Context, text []byte, acceptLo, acceptHi int) ([]Finding, error) {
	st := &scanState{ctx: ctx, s: s, text: text, acceptLo: acceptLo, acceptHi: acceptHi,
		windows: make([][]span, len(s.dets)), ctxHits: make([][]int, len(s.dets)),
		custHits: make([][]span, len(s.custom)), custCtx: make([][]int, len(s.custom)),
		mac: hmac.New(sha256.New, s.key)}
	// Pass 1: keywords and context words.
	s.ac.scan(text, func(p, end int) {
		ref := s.acRefs[p]
		start := end - ref.length
		if ref.det >= 0 {
			if ref.context {
				st.ctxHits[ref.det] = append(st.ctxHits[ref.det], start)
				return
			}
			d := s.dets[ref.det]
			if d.hit != nil {
				st.hits = append(st.hits, detHit{ref.det, start, end})
				return
			}
			w := span{max(0, start-d.before), min(len(text), end+d.after)}
			ws := st.windows[ref.det]
			if n := len(ws); n > 0 && w.lo <= ws[n-1].hi {
				ws[n-1].hi = max(ws[n-1].hi, w.hi)
			} else {
				st.windows[ref.det] = append(ws, w)
			}
			return
		}
		if ref.context {
			st.custCtx[ref.custom] = append(st.custCtx[ref.custom], start)
		} else {
			st.custHits[ref.custom] = append(st.custHits[ref.custom], span{start, end})
		}
	})
	// Pass 2 (same chunk, anchors): numeric candidates, '@', IPv6.
	st.anchors()
	// Keyword-triggered detectors over their merged windows.
	for i, d := range s.dets {
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
	st.finishStrings()
	fs := resolveOverlaps(st.out)
	kept := fs[:0]
	for _, f := range fs {
		if f.Start >= acceptLo && f.Start < acceptHi {
			kept = append(kept, f)
		}
	}
	return kept, st.err
}

// anchors walks the chunk once for anchor bytes.
func (st *scanState) anchors() {
	text := st.text
	n := len(text)
	var c numCand
	for i := 0; i < n; {
		b := text[i]
		switch {
		case b >= '0' && b <= '9':
			j := c.parse(text, i)
			if len(st.s.numeric) > 0 {
				for _, d := range st.s.numeric {
					d.numeric(st, d, &c)
				}
			}
			if st.s.ipv6 != nil && j < n && text[j] == ':' {
				j = st.ipv6At(i)
			}
			i = j
			continue
		case b == '@':
			if st.s.email != nil {
				st.emailAt(i)
			}
		case b == ':':
			if st.s.ipv6 != nil && i+1 < n && (isHex(text[i+1]) || text[i+1] == ':') && (i == 0 || isHex(text[i-1]) || text[i-1] == ':') {
				i = st.ipv6At(i)
				continue
			}
		}
		i++
	}
}

// emit records a finding for detector id over text[start:end]; norm is the
// normalised value that is hashed (emit does not retain it). Findings outside
// the chunk's accepted range are dropped by scanChunk.
func (st *scanState) emit(id string, cat Category, start, end int, conf float64, norm []byte, mask maskFunc) {
	if end <= start {
		return
	}
	if mask == nil {
		mask = maskGeneric
	}
	if conf > 1 {
		conf = 1
	}
	if st.out == nil {
		// One finding per ~64 bytes is the densest realistic text; the
		// slices grow from there if needed.
		est := len(st.text)/256 + 16
		st.out = make([]Finding, 0, est)
		st.refs = make([]arenaRef, 0, est)
		st.arena = make([]byte, 0, est*56)
	}
	var r arenaRef
	r.pLo = int32(len(st.arena))
	st.arena = mask(st.arena, st.text[start:end])
	r.pHi = int32(len(st.arena))
	r.hLo = r.pHi
	st.mac.Reset()
	st.mac.Write(norm)
	sum := st.mac.Sum(st.sum[:0])
	st.arena = hex.AppendEncode(st.arena, sum[:hashBytes])
	st.refs = append(st.refs, r)
	st.out = append(st.out, Finding{
		Detector:   id,
		Category:   cat,
		Start:      start,
		End:        end,
		Confidence: round2(conf),
	})
}

// emitString is emit with a normalised value held in a string.
func (st *scanState) emitString(id string, cat Category, start, end int, conf float64, norm string, mask maskFunc) {
	st.scratch = append(st.scratch[:0], norm...)
	st.emit(id, cat, start, end, conf, st.scratch, mask)
}

// hashBytes is how much of the HMAC-SHA256 a Finding.Hash keeps (hex
// encoded, 32 characters).
const hashBytes = 16

// finishStrings gives every finding its Preview and Hash, substrings of one
// string made from the arena (one allocation per chunk instead of two per
// finding).
func (st *scanState) finishStrings() {
	if len(st.out) == 0 {
		return
	}
	a := string(st.arena)
	for i, r := range st.refs {
		st.out[i].Preview = a[r.pLo:r.pHi]
		st.out[i].Hash = a[r.hLo : int(r.hLo)+2*hashBytes]
	}
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

// hasContext reports whether one of d's context words occurs within dist
// bytes before start or right after end.
func (st *scanState) hasContext(d *detector, start, end, dist int) bool {
	return nearHit(st.ctxHits[d.idx], start, end, dist)
}

func nearHit(hits []int, start, end, dist int) bool {
	k := sort.SearchInts(hits, start-dist)
	return k < len(hits) && hits[k] <= end+dist/2
}

// resolveOverlaps keeps, among overlapping PII and secret findings, the most
// specific one: secrets win over PII, then the longer span, then the higher
// confidence. Markers and custom findings are kept as they are.
func resolveOverlaps(fs []Finding) []Finding {
	if len(fs) < 2 {
		return fs
	}
	slices.SortStableFunc(fs, func(a, b Finding) int { return cmp.Compare(a.Start, b.Start) })
	class := func(f Finding) int {
		switch f.Category {
		case CategoryPII, CategorySecret:
			return 1
		case CategoryMarker:
			return 2
		}
		return 0
	}
	rank := func(f Finding) int {
		if f.Category == CategorySecret {
			return 1
		}
		return 0
	}
	better := func(a, b Finding) bool {
		if rank(a) != rank(b) {
			return rank(a) > rank(b)
		}
		if la, lb := a.End-a.Start, b.End-b.Start; la != lb {
			return la > lb
		}
		return a.Confidence > b.Confidence
	}
	out := make([]Finding, 0, len(fs))
	last := [3]int{-1, -1, -1} // overlap class → index in out of its last finding
	for _, f := range fs {
		k := class(f)
		if k == 0 {
			out = append(out, f)
			continue
		}
		if li := last[k]; li >= 0 && f.Start < out[li].End {
			if better(f, out[li]) {
				out[li] = f
			}
			continue
		}
		out = append(out, f)
		last[k] = len(out) - 1
	}
	return out
}

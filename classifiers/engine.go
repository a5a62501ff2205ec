package classifiers

import (
	"context"
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
	mask func(v string) string
}

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
}

type detHit struct{ det, start, end int }

type span struct{ lo, hi int }

// scanChunk runs the prefilter and the triggered detectors over text and
// returns findings (chunk-relative offsets, no positions yet) whose Start
// lies in [acceptLo, acceptHi).
func (s *Scanner) scanChunk(ctx context.Context, text []byte, acceptLo, acceptHi int) ([]Finding, error) {
	st := &scanState{ctx: ctx, s: s, text: text, acceptLo: acceptLo, acceptHi: acceptHi,
		windows: make([][]span, len(s.dets)), ctxHits: make([][]int, len(s.dets)),
		custHits: make([][]span, len(s.custom)), custCtx: make([][]int, len(s.custom))}
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

// emit records a finding for detector id over text[start:end] when it
// starts in the accepted range of the chunk.
func (st *scanState) emit(id string, cat Category, start, end int, conf float64, norm string, mask func(string) string) {
	if end <= start {
		return
	}
	v := string(st.text[start:end])
	if mask == nil {
		mask = maskGeneric
	}
	if conf > 1 {
		conf = 1
	}
	st.out = append(st.out, Finding{
		Detector:   id,
		Category:   cat,
		Start:      start,
		End:        end,
		Confidence: round2(conf),
		Preview:    mask(v),
		Hash:       st.s.hash(norm),
	})
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
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].Start < fs[j].Start })
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
	out := fs[:0:0]
	last := map[int]int{} // overlap class → index in out of its last finding
	for _, f := range fs {
		k := class(f)
		if k == 0 {
			out = append(out, f)
			continue
		}
		if li, ok := last[k]; ok && f.Start < out[li].End {
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

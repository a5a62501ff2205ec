package classifiers

import (
	"math/bits"
	"slices"
)

// acMatcher is a compact Aho-Corasick automaton over ASCII-case-folded bytes.
// It is built once in New and only read afterwards, so it is safe for
// concurrent use.
//
// The automaton is a full DFA: every state has a transition for every byte
// class, so the scan loop is one table load per input byte. Bytes that occur
// in no pattern share class 0, which keeps the table small (states × stride
// entries, stride being the number of classes rounded up to even).
//
// An entry is the next state premultiplied by half the stride: the row of
// entry e starts at 2e. Entries fit in 16 bits unless the automaton is
// large (a policy's many custom keywords), and then in 32: the table is one
// of delta16 and delta32, and the walk is compiled for each. States with
// output are numbered last, so an entry of at least outFrom means the
// state it leads to ends a pattern.
type acMatcher struct {
	class    [256]uint8 // byte → class (after ASCII case folding)
	nclass   int
	half     uint32   // half the stride: entries are state*half
	delta16  []uint16 // 2*entry + class → next entry, when every entry fits
	delta32  []uint32 // the same, when some does not
	outFrom  uint32   // the entry of the first state with output
	out      [][]int  // state → pattern indices ending here (including via suffix links)
	patterns []string // lower-cased patterns
	maxLen   int      // the longest pattern's length in bytes
	recip    uint64   // ceil(2^64 / half): see state
	// fail and depth are each state's failure link and trie depth (the
	// length of the pattern prefix it stands for), for ScanPartial's
	// question of which keywords a text ends inside of.
	fail  []uint32
	depth []int32
}

// newACMatcher builds the automaton for patterns, which must already be
// lower case. Duplicate patterns are allowed; each keeps its own index.
func newACMatcher(patterns []string) *acMatcher {
	return newACMatcherWidth(patterns, false)
}

// newACMatcherWidth is newACMatcher with a choice of 32-bit entries even
// when 16 would do (wide), for tests of both walks.
func newACMatcherWidth(patterns []string, wide bool) *acMatcher {
	m := &acMatcher{patterns: patterns}
	// byte classes
	var used [256]bool
	for _, p := range patterns {
		m.maxLen = max(m.maxLen, len(p))
		for i := 0; i < len(p); i++ {
			used[p[i]] = true
		}
	}
	n := 1
	for b := 0; b < 256; b++ {
		if used[b] {
			m.class[b] = uint8(n)
			n++
		}
	}
	for b := 'A'; b <= 'Z'; b++ {
		m.class[b] = m.class[b+'a'-'A']
	}
	m.nclass = n
	m.half = uint32(max(n+1, 4)) / 2 // state needs half >= 2
	m.recip = ^uint64(0)/uint64(m.half) + 1
	m.maxLen = max(m.maxLen, 1)
	// The trie is built in delta itself (0 means no child: no edge leads
	// back to the root), then completed in breadth-first order.
	total := 1 // an upper bound on the states: the root and a state per pattern byte
	for _, p := range patterns {
		total += len(p)
	}
	delta := make([]uint32, n, total*n)
	outs := make([][]int, 1, total)
	for pi, p := range patterns {
		s := uint32(0)
		for i := 0; i < len(p); i++ {
			c := uint32(m.class[p[i]])
			nx := delta[int(s)*n+int(c)]
			if nx == 0 {
				nx = uint32(len(outs))
				outs = append(outs, nil)
				delta = append(delta, make([]uint32, n)...)
				delta[int(s)*n+int(c)] = nx
			}
			s = nx
		}
		outs[s] = append(outs[s], pi)
	}
	states := len(outs)
	m.fail = make([]uint32, states)
	m.depth = make([]int32, states)
	// BFS to fill failure links and the full transition table. order
	// keeps the states in the order BFS met them.
	order := make([]uint32, 1, states)
	for c := 0; c < n; c++ {
		if nx := delta[c]; nx != 0 {
			order = append(order, nx)
			m.depth[nx] = 1
		}
	}
	for next := 1; next < len(order); next++ {
		s := order[next]
		f := m.fail[s]
		if len(outs[f]) > 0 {
			outs[s] = append(slices.Clip(outs[s]), outs[f]...)
		}
		row, frow := delta[int(s)*n:int(s+1)*n], delta[int(f)*n:int(f+1)*n]
		for c := 0; c < n; c++ {
			if nx := row[c]; nx != 0 {
				m.fail[nx] = frow[c]
				m.depth[nx] = m.depth[s] + 1
				order = append(order, nx)
			} else {
				row[c] = frow[c]
			}
		}
	}
	m.renumber(delta, outs, order, wide)
	return m
}

// renumber sets m's table, outputs, failure links and depths from those
// of the states numbered as built (delta, outs, m.fail, m.depth). The
// states without output come first, in the order breadth-first search met
// them (order), then those with output, in the same order: the states a
// text visits most, near the root, get the first rows of the table, which
// then share fewer cache lines than states numbered in the order patterns
// were inserted, and the walk tells a state with output by its number
// alone. With 16-bit entries, the states with output start at the first
// number whose entry is at least acOut16 (the numbers between are unused
// rows), so that the walk compares entries with a constant.
func (m *acMatcher) renumber(delta []uint32, outs [][]int, order []uint32, wide bool) {
	n, stride, half := m.nclass, 2*int(m.half), int(m.half)
	// The root (order[0]) stays first: patterns are not empty.
	byNew := make([]uint32, 0, len(order)) // new number → old (acNoState: unused)
	for _, s := range order {
		if s == 0 || len(outs[s]) == 0 {
			byNew = append(byNew, s)
		}
	}
	nonOut := len(byNew)
	nOut := len(order) - nonOut
	firstOut := nonOut
	g := (acOut16 + half - 1) / half
	narrow := !wide && nonOut*half <= acOut16 && (g+nOut-1)*half <= 0xFFFF
	if narrow {
		for len(byNew) < g {
			byNew = append(byNew, acNoState)
		}
		firstOut = g
	}
	for _, s := range order {
		if s != 0 && len(outs[s]) > 0 {
			byNew = append(byNew, s)
		}
	}
	newID := make([]uint32, len(order))
	for ns, s := range byNew {
		if s != acNoState {
			newID[s] = uint32(ns)
		}
	}
	out := make([][]int, len(byNew))
	fail := make([]uint32, len(byNew))
	depth := make([]int32, len(byNew))
	for ns, s := range byNew {
		if s != acNoState {
			out[ns] = outs[s]
			fail[ns] = newID[m.fail[s]]
			depth[ns] = m.depth[s]
		}
	}
	m.out, m.fail, m.depth = out, fail, depth
	m.outFrom = uint32(firstOut) * m.half
	if narrow {
		m.delta16 = fillACTable[uint16](delta, byNew, newID, n, stride, m.half, acTab16Len)
	} else {
		m.delta32 = fillACTable[uint32](delta, byNew, newID, n, stride, m.half, 0)
	}
}

// acNoState marks an unused number in renumber.
const acNoState = ^uint32(0)

// acOut16 is where the entries of the states with output start in a table
// of 16-bit entries.
const acOut16 = 0xC000

// fillACTable returns the table of the states renumbered (byNew[new] =
// old, or acNoState for a row left unused; newID its inverse) from delta
// (old numbers, n entries a row): rows of stride entries, each the next
// state's new number times half, in a slice at least minLen long (the rows
// past the states are never read).
func fillACTable[E uint16 | uint32](delta []uint32, byNew, newID []uint32, n, stride int, half uint32, minLen int) []E {
	table := make([]E, max(len(byNew)*stride, minLen))
	for ns, s := range byNew {
		if s == acNoState {
			continue
		}
		row := delta[int(s)*n : int(s+1)*n]
		nrow := table[ns*stride : ns*stride+n]
		for c, nx := range row {
			nrow[c] = E(newID[nx] * half)
		}
	}
	return table
}

// acLanes is the number of lanes scan walks a long text in.
const acLanes = 4

// scan calls hit(pattern, end) for every occurrence of every pattern in text,
// where end is the exclusive end offset of the occurrence, in order of end
// (and, for one end, in the order of out). scratch holds the steps of a
// walk in lanes (see below) and keeps its buffers for the next call.
//
// One automaton step is a load that depends on the previous one, so a
// single walk waits on the cache for every byte. Long texts are walked as
// acLanes independent lanes in one loop: lane k covers the k-th part,
// starting maxLen-1 bytes before it (k > 0), so every occurrence ending in
// the part lies inside what the lane reads; a lane reports only those.
// The loop only records, without a branch per lane, the steps that reach
// a state with output (a rare event that no predictor foresees); the
// occurrences are reported once the loop is done, lane after lane, which
// keeps the order of a single walk.
func (m *acMatcher) scan(text []byte, scratch *acScratch, hit func(pattern, end int)) {
	if m == nil || len(m.patterns) == 0 {
		return
	}
	if m.delta16 != nil {
		acWalk(m, m.delta16, text, scratch, hit)
	} else {
		acWalk(m, m.delta32, text, scratch, hit)
	}
}

// acScratch is scan's scratch space: the steps of each lane that reach a
// state with output, each its offset in the lane's loop << 32 | the
// state's entry. Only the first n[k] of ev[k] are steps of the current
// walk; the buffers are all as long, which lets one comparison tell that
// every lane has room for one more.
type acScratch struct {
	ev [acLanes][]uint64
	n  [acLanes]int
}

// acScratchMin is the least length of acScratch's buffers when first used.
const acScratchMin = 256

// acTab16Len is the length of a table of 16-bit entries: past any index
// 2*entry + class, so that the walk indexes it as an array without bounds
// checks.
const acTab16Len = 2<<16 + 256

// acLaneWalk is the state of a walk in lanes (see scan).
type acLaneWalk struct {
	m        *acMatcher
	from, to [acLanes]int // lane k reads text[from[k]:to[k]] and reports occurrences ending after to[k-1]
	q        int          // the bytes all lanes read in the loop
	sc       *acScratch
}

// acWalk is scan over m's table delta.
func acWalk[E uint16 | uint32](m *acMatcher, delta []E, text []byte, scratch *acScratch, hit func(pattern, end int)) {
	class := &m.class
	outFrom := E(m.outFrom)
	step := func(s E, b byte) E { return delta[2*uint(s)+uint(class[b])] }
	if len(text) < acLanes*(4*m.maxLen+256) {
		s := E(0)
		for i, b := range text {
			s = step(s, b)
			if s >= outFrom {
				for _, p := range m.out[m.state(uint32(s))] {
					hit(p, i+1)
				}
			}
		}
		return
	}
	w := acLaneWalk{m: m, sc: scratch}
	w.q = len(text) / acLanes
	for k := range acLanes {
		w.to[k] = (k + 1) * w.q
		if k > 0 {
			w.from[k] = k*w.q - (m.maxLen - 1)
		}
	}
	w.to[acLanes-1] = len(text)
	if len(scratch.ev[0]) == 0 {
		// Room for a step with output in 64 (clean text has about one
		// in 60, dense text one in 30): a first scan of a MiB grows the
		// buffers at most once or twice.
		for k := range scratch.ev {
			scratch.ev[k] = make([]uint64, max(acScratchMin, w.q/64))
		}
	}
	scratch.n = [acLanes]int{}
	var st [acLanes]E
	switch d := any(delta).(type) {
	case []uint16:
		st16 := w.lanes16((*[acTab16Len]uint16)(d), text)
		for k := range st {
			st[k] = E(st16[k])
		}
	case []uint32:
		st32 := w.lanes32(d, text)
		for k := range st {
			st[k] = E(st32[k])
		}
	}
	// Each lane in turn: the occurrences of its recorded steps, then the
	// rest of its bytes (lanes past the first are longer than q).
	for k := range acLanes {
		after := 0 // lane k reports the occurrences ending after this
		if k > 0 {
			after = w.to[k-1]
		}
		at := w.from[k] + 1
		for _, x := range scratch.ev[k][:scratch.n[k]] {
			end := at + int(x>>32)
			if end <= after {
				continue
			}
			for _, p := range m.out[m.state(uint32(x))] {
				hit(p, end)
			}
		}
		s := st[k]
		for i := w.from[k] + w.q; i < w.to[k]; i++ {
			s = step(s, text[i])
			if s >= outFrom {
				for _, p := range m.out[m.state(uint32(s))] {
					hit(p, i+1)
				}
			}
		}
	}
}

// lanes16 walks the first q bytes of the four lanes of text over a table
// of 16-bit entries, recording the steps to states with output, and
// returns the lanes' states. It and lanes32 are one loop written for each
// table: indexing an array of 16-bit entries needs no bounds check.
func (w *acLaneWalk) lanes16(delta *[acTab16Len]uint16, text []byte) [acLanes]uint16 {
	class := &w.m.class
	l0, l1, l2, l3 := text[:w.q], text[w.from[1]:w.from[1]+w.q], text[w.from[2]:w.from[2]+w.q], text[w.from[3]:w.from[3]+w.q]
	l1, l2, l3 = l1[:len(l0)], l2[:len(l0)], l3[:len(l0)] // one length: no bounds check in the loop
	_ = delta[0]                                          // its nil check here, not in the loop
	// The states are held as uint: the loads widen them, and the next
	// index needs no conversion.
	s0, s1, s2, s3 := uint(0), uint(0), uint(0), uint(0)
	for i := range l0 {
		s0 = uint(delta[2*s0+uint(class[l0[i]])])
		s1 = uint(delta[2*s1+uint(class[l1[i]])])
		s2 = uint(delta[2*s2+uint(class[l2[i]])])
		s3 = uint(delta[2*s3+uint(class[l3[i]])])
		// The union's bits bound the largest entry: below acOut16, no
		// lane has output (fewer operations than max, and the hot states,
		// numbered first, rarely reach acOut16 together). A constant
		// leaves the loop's variables in registers.
		if s0|s1|s2|s3 < acOut16 {
			continue
		}
		w.record(i, uint32(s0), uint32(s1), uint32(s2), uint32(s3))
	}
	return [acLanes]uint16{uint16(s0), uint16(s1), uint16(s2), uint16(s3)}
}

// record records the lanes' i-th step, to the states (entries) s0..s3,
// in the buffers of the lanes whose state has output. Every lane's step is
// written, and the count moves past it only when it has output: no branch
// on the lanes.
func (w *acLaneWalk) record(i int, s0, s1, s2, s3 uint32) {
	sc := w.sc
	if max(sc.n[0], sc.n[1], sc.n[2], sc.n[3]) >= len(sc.ev[0]) {
		sc.grow()
	}
	outFrom, at := uint64(w.m.outFrom), uint64(i)<<32
	n0, n1, n2, n3 := sc.n[0], sc.n[1], sc.n[2], sc.n[3]
	sc.ev[0][n0] = at | uint64(s0)
	sc.ev[1][n1] = at | uint64(s1)
	sc.ev[2][n2] = at | uint64(s2)
	sc.ev[3][n3] = at | uint64(s3)
	sc.n[0] = n0 + acIsOut(uint64(s0), outFrom)
	sc.n[1] = n1 + acIsOut(uint64(s1), outFrom)
	sc.n[2] = n2 + acIsOut(uint64(s2), outFrom)
	sc.n[3] = n3 + acIsOut(uint64(s3), outFrom)
}

// acIsOut returns 1 when the entry e (below 2^32) is at least outFrom, 0
// otherwise, without a branch: e - outFrom wraps to a number with its top
// bit set exactly when e < outFrom.
func acIsOut(e, outFrom uint64) int {
	return int((e-outFrom)>>63) ^ 1
}

// grow doubles the buffers, keeping the steps recorded.
func (sc *acScratch) grow() {
	for k := range sc.ev {
		ev := make([]uint64, 2*len(sc.ev[k]))
		copy(ev, sc.ev[k][:sc.n[k]])
		sc.ev[k] = ev
	}
}

// lanes32 is lanes16 over a table of 32-bit entries.
func (w *acLaneWalk) lanes32(delta []uint32, text []byte) [acLanes]uint32 {
	class, outFrom, from := &w.m.class, w.m.outFrom, &w.from
	l0, l1, l2, l3 := text[:w.q], text[from[1]:from[1]+w.q], text[from[2]:from[2]+w.q], text[from[3]:from[3]+w.q]
	l1, l2, l3 = l1[:len(l0)], l2[:len(l0)], l3[:len(l0)]
	s0, s1, s2, s3 := uint32(0), uint32(0), uint32(0), uint32(0)
	for i := range l0 {
		s0 = delta[2*uint(s0)+uint(class[l0[i]])]
		s1 = delta[2*uint(s1)+uint(class[l1[i]])]
		s2 = delta[2*uint(s2)+uint(class[l2[i]])]
		s3 = delta[2*uint(s3)+uint(class[l3[i]])]
		if s0|s1|s2|s3 < outFrom {
			continue
		}
		w.record(i, s0, s1, s2, s3)
	}
	return [acLanes]uint32{s0, s1, s2, s3}
}

// entry returns the table entry at i (2*entry + class).
func (m *acMatcher) entry(i uint32) uint32 {
	if m.delta16 != nil {
		return uint32(m.delta16[i])
	}
	return m.delta32[i]
}

// state returns the state of an entry (state*half) without a division:
// with recip = ceil(2^64/half), the high word of e*recip errs by less
// than e/2^64, far below 1/half, so it is the exact quotient
// (TestACStateDivision).
func (m *acMatcher) state(e uint32) uint32 {
	hi, _ := bits.Mul64(uint64(e), m.recip)
	return uint32(hi)
}

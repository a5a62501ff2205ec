package classifiers

// acMatcher is a compact Aho-Corasick automaton over ASCII-case-folded bytes.
// It is built once in New and only read afterwards, so it is safe for
// concurrent use.
//
// The automaton is a full DFA: every state has a transition for every byte
// class, so the scan loop is one table load per input byte. Bytes that occur
// in no pattern share class 0, which keeps the table small (states × classes
// uint32 entries).
type acMatcher struct {
	class    [256]uint8 // byte → class (after ASCII case folding)
	nclass   int
	delta    []uint32 // state*nclass + class → next state
	out      [][]int  // state → pattern indices ending here (including via suffix links)
	hasOut   []bool
	patterns []string // lower-cased patterns
}

// newACMatcher builds the automaton for patterns, which must already be
// lower case. Duplicate patterns are allowed; each keeps its own index.
func newACMatcher(patterns []string) *acMatcher {
	m := &acMatcher{patterns: patterns}
	// byte classes
	var used [256]bool
	for _, p := range patterns {
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
	// trie
	type node struct {
		next map[uint8]uint32
		fail uint32
		out  []int
	}
	nodes := []node{{next: map[uint8]uint32{}}}
	for pi, p := range patterns {
		s := uint32(0)
		for i := 0; i < len(p); i++ {
			c := m.class[p[i]]
			nx, ok := nodes[s].next[c]
			if !ok {
				nx = uint32(len(nodes))
				nodes = append(nodes, node{next: map[uint8]uint32{}})
				nodes[s].next[c] = nx
			}
			s = nx
		}
		nodes[s].out = append(nodes[s].out, pi)
	}
	m.delta = make([]uint32, len(nodes)*n)
	// BFS to fill failure links and the full transition table.
	queue := make([]uint32, 0, len(nodes))
	for c := 0; c < n; c++ {
		if nx, ok := nodes[0].next[uint8(c)]; ok {
			m.delta[c] = nx
			nodes[nx].fail = 0
			queue = append(queue, nx)
		}
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		f := nodes[s].fail
		nodes[s].out = append(nodes[s].out, nodes[f].out...)
		for c := 0; c < n; c++ {
			if nx, ok := nodes[s].next[uint8(c)]; ok {
				nodes[nx].fail = m.delta[int(f)*n+c]
				m.delta[int(s)*n+c] = nx
				queue = append(queue, nx)
			} else {
				m.delta[int(s)*n+c] = m.delta[int(f)*n+c]
			}
		}
	}
	m.out = make([][]int, len(nodes))
	m.hasOut = make([]bool, len(nodes))
	for i := range nodes {
		m.out[i] = nodes[i].out
		m.hasOut[i] = len(nodes[i].out) > 0
	}
	// Premultiply: entries hold next*nclass, with bit 31 set when the next
	// state has output, so the scan loop is one load, one add and one test.
	for i, nx := range m.delta {
		v := nx * uint32(n)
		if m.hasOut[nx] {
			v |= outFlag
		}
		m.delta[i] = v
	}
	return m
}

// scan calls hit(pattern, end) for every occurrence of every pattern in text,
// where end is the exclusive end offset of the occurrence.
func (m *acMatcher) scan(text []byte, hit func(pattern, end int)) {
	if m == nil || len(m.patterns) == 0 {
		return
	}
	delta, class, n := m.delta, &m.class, uint32(m.nclass)
	s := uint32(0)
	for i, b := range text {
		s = delta[s+uint32(class[b])]
		if s&outFlag != 0 {
			s &^= outFlag
			for _, p := range m.out[s/n] {
				hit(p, i+1)
			}
		}
	}
}

const outFlag = 1 << 31

package classifiers

import (
	"encoding/binary"
	"regexp/syntax"
	"slices"
)

// digitDFA decides whether a string of ASCII digits fully matches a regular
// expression. It is the subset construction of the expression's compiled
// program (regexp/syntax) over the ten digits, so it accepts exactly what
// regexp.MustCompile("^(?:" + pattern + ")$").MatchString accepts on digit
// strings, in one table step per digit. Immutable once built.
type digitDFA struct {
	next   [][10]int32 // state → digit → state, -1 for no match
	accept []bool
}

// maxDFAStates bounds a digitDFA; patterns needing more keep using regexp.
const maxDFAStates = 4096

// compileDigitDFA returns the DFA of pattern, or nil when the pattern uses
// features it does not model (empty-width assertions) or needs too many
// states.
func compileDigitDFA(pattern string) *digitDFA {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return nil
	}
	ok := true
	mark := make([]uint32, len(prog.Inst)) // generation that visited pc
	gen := uint32(0)
	// closure adds pc and everything reachable without consuming input.
	var closure func(pc uint32, set []uint32) []uint32
	closure = func(pc uint32, set []uint32) []uint32 {
		if mark[pc] == gen {
			return set
		}
		mark[pc] = gen
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			set = closure(in.Out, set)
			set = closure(in.Arg, set)
		case syntax.InstCapture, syntax.InstNop:
			set = closure(in.Out, set)
		case syntax.InstEmptyWidth:
			ok = false
		case syntax.InstFail:
		default: // InstMatch and the rune instructions
			set = append(set, pc)
		}
		return set
	}
	d := &digitDFA{}
	ids := map[string]int32{}
	var sets [][]uint32
	var kb []byte
	add := func(set []uint32) int32 {
		slices.Sort(set) // canonical order
		kb = kb[:0]
		for _, pc := range set {
			kb = binary.LittleEndian.AppendUint32(kb, pc)
		}
		if id, found := ids[string(kb)]; found {
			return id
		}
		id := int32(len(sets))
		ids[string(kb)] = id
		sets = append(sets, slices.Clone(set))
		acc := false
		for _, pc := range set {
			if prog.Inst[pc].Op == syntax.InstMatch {
				acc = true
			}
		}
		d.accept = append(d.accept, acc)
		d.next = append(d.next, [10]int32{})
		return id
	}
	gen++
	add(closure(uint32(prog.Start), nil))
	var nset []uint32
	for s := 0; s < len(sets); s++ {
		if !ok || len(sets) > maxDFAStates {
			return nil
		}
		for dg := 0; dg < 10; dg++ {
			gen++
			nset = nset[:0]
			for _, pc := range sets[s] {
				in := &prog.Inst[pc]
				if in.Op != syntax.InstMatch && in.MatchRune(rune('0'+dg)) {
					nset = closure(in.Out, nset)
				}
			}
			if len(nset) == 0 {
				d.next[s][dg] = -1
				continue
			}
			d.next[s][dg] = add(nset)
		}
	}
	if !ok {
		return nil
	}
	return d
}

// match reports whether the digit string s is accepted. Bytes other than
// digits never match.
func (d *digitDFA) match(s string) bool {
	st := int32(0)
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return false
		}
		if st = d.next[st][c]; st < 0 {
			return false
		}
	}
	return d.accept[st]
}

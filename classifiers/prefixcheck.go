package classifiers

import (
	"bytes"
	"regexp/syntax"
	"unicode/utf8"
)

// A secret pattern that begins with a literal prefix, a few single bytes
// and a run of one character class (`npm_[A-Za-z0-9]{36}`,
// `hv[sbr]\.[A-Za-z0-9_-]{24,}`, `eyJ[A-Za-z0-9_-]{5,}\.eyJ…`) can only
// match where the prefix is followed by those bytes, at least the run's
// minimum of class bytes and, when a literal byte outside the class ends
// the run, that byte. newPrefixRun reads that shape from the pattern's
// syntax; regexWindow searches from the first place that passes, so a
// window merged from a prefix repeated end to end ("npm_npm_…",
// "eyJeyJ…") is not read by the expression at all.

// prefixRun is the shape a pattern's matches begin with (one of them
// for each alternative of a pattern that is an alternation).
type prefixRun struct {
	lead   []*[256]bool // one byte each, before the prefix
	prefix []byte
	fixed  []*[256]bool // one byte each, after the prefix
	hasRun bool         // a run follows the fixed bytes
	class  [256]bool    // the run after them
	min    int          // its fewest bytes
	max    int          // its most bytes, or -1 (unbounded)
	exact  bool         // the run has exactly min bytes
	next   int          // the byte that ends the run (not in class), or -1
	// tailMax bounds the bytes of a match after the run ends at next
	// (-1: unbounded).
	tailMax int
	// more are the parts that follow next, as far as they are single
	// bytes and runs each followed by a byte outside its class (so that
	// a match takes the whole run).
	more []chainPart
	// maxLen bounds the bytes of a match of the alternative the shape
	// belongs to (-1: unbounded).
	maxLen int
}

// chainPart is one byte of a set (run false) or a run of min to max
// (-1: any number) bytes of set. A run is taken whole when follow (what
// comes next cannot start with a byte of set) or last (the pattern ends
// there, the run is greedy); else only its min bytes are checked and the
// chain ends with it.
type chainPart struct {
	set          *[256]bool
	run          bool
	min, max     int
	follow, last bool
}

// maxShapes bounds the shapes a pattern expands to.
const maxShapes = 16

// newPrefixRun returns the prefix run of pat, or nil when pat does not
// begin with a case-sensitive ASCII literal followed (after single bytes)
// by a repeated ASCII character class of at least one byte.
func newPrefixRun(pat string) *prefixRun {
	ps := newPrefixRuns(pat)
	if len(ps) != 1 || len(ps[0].lead) > 0 || !ps[0].hasRun {
		return nil
	}
	return ps[0]
}

// topAlternatives parses pat and returns its top-level alternatives, or nil
// when it does not parse, holds an assertion (^, $, \b: a match then
// depends on the bytes around it) or has no alternatives to split.
func topAlternatives(pat string) []*syntax.Regexp {
	re := parseTop(pat)
	if re == nil || hasAssertion(re) {
		return nil
	}
	return splitTop(re, nil)
}

// newPrefixRuns returns the shapes every match of pat begins with: for
// each alternative of its top (and of a first alternation or optional
// part of its sequence, and each spelling of a small alternation of
// literals in it), the single bytes before and after its first
// case-sensitive ASCII literal and the class run that follows them. It
// returns nil when an alternative has no such literal, when pat holds an
// assertion (^, $, \b: a match then depends on the bytes around it) or
// when the shapes would be more than maxShapes.
func newPrefixRuns(pat string) []*prefixRun {
	alts := topAlternatives(pat)
	if alts == nil {
		return nil
	}
	var out []*prefixRun
	for _, alt := range alts {
		ml := maxBytes(alt)
		elems := flatten(alt)
		seqs, k := expandSets(elems)
		if len(seqs) == 0 || len(out)+len(seqs) > maxShapes {
			return nil
		}
		for _, seq := range seqs {
			p := shapeOf(seq, elems[k:])
			if p == nil {
				return nil
			}
			p.maxLen = ml
			out = append(out, p)
		}
	}
	return out
}

// splitTop appends to out the alternatives re is the union of: those of
// an alternation, and those of a sequence whose first alternation (after
// single bytes only) is distributed over it, (ab|cd)e being abe|cde and
// a(b)?c abc|ac. It returns nil past maxShapes alternatives.
func splitTop(re *syntax.Regexp, out []*syntax.Regexp) []*syntax.Regexp {
	if re.Op == syntax.OpAlternate {
		for _, a := range re.Sub {
			if out = splitTop(a, out); out == nil {
				return nil
			}
		}
		return out
	}
	elems := flatten(re)
	for k, e := range elems {
		if e.Op == syntax.OpAlternate {
			for _, a := range e.Sub {
				seq := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags}
				seq.Sub = append(append(append(seq.Sub, elems[:k]...), a), elems[k+1:]...)
				if out = splitTop(seq, out); out == nil {
					return nil
				}
			}
			return out
		}
		if e.Op == syntax.OpQuest {
			if k > 0 && elems[k-1].Op == syntax.OpCharClass {
				if _, ok := optCopies(e, elems[k-1]); ok {
					break // the end of a run, x{n,m}
				}
			}
			with := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags}
			with.Sub = append(append(append(with.Sub, elems[:k]...), e.Sub[0]), elems[k+1:]...)
			without := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags}
			without.Sub = append(append(without.Sub, elems[:k]...), elems[k+1:]...)
			if out = splitTop(with, out); out == nil {
				return nil
			}
			return splitTop(without, out)
		}
		if e.Op != syntax.OpLiteral && e.Op != syntax.OpCharClass {
			break
		}
	}
	if len(out) >= maxShapes {
		return nil
	}
	return append(out, re)
}

// flatten returns the sequence re matches as a list of elements: nested
// sequences and captures spliced in.
func flatten(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpCapture:
		return flatten(re.Sub[0])
	case syntax.OpConcat:
		var out []*syntax.Regexp
		for _, s := range re.Sub {
			out = append(out, flatten(s)...)
		}
		return out
	}
	return []*syntax.Regexp{re}
}

// expandSets reads single bytes from the start of elems: literals, classes
// (a block of copies of one class only while no literal byte has been read
// and the block is of a fixed length) and small alternations of such
// sequences, each spelling its own sequence. It returns the sequences and
// how many elements they cover.
func expandSets(elems []*syntax.Regexp) ([][]*[256]bool, int) {
	seqs := [][]*[256]bool{nil}
	lit := false // a literal byte has been read
	k := 0
	for k < len(elems) {
		e := elems[k]
		switch {
		case e.Op == syntax.OpLiteral || e.Op == syntax.OpAlternate:
			alts := finiteSeqs(e)
			if alts == nil || len(seqs)*len(alts) > maxShapes {
				return seqs, k
			}
			var next [][]*[256]bool
			for _, s := range seqs {
				for _, a := range alts {
					next = append(next, append(s[:len(s):len(s)], a...))
				}
			}
			seqs = next
			lit = lit || e.Op == syntax.OpLiteral
			k++
		case e.Op == syntax.OpCharClass:
			set, ok := byteSet(e)
			if !ok {
				return seqs, k
			}
			n := 1
			for k+n < len(elems) && elems[k+n].Op == syntax.OpCharClass && elems[k+n].Equal(e) {
				n++
			}
			if n > 1 || (k+1 < len(elems) && sameClass(e, elems[k+1])) {
				// a run: lead bytes only before any literal, of a fixed
				// length, and not too many
				if lit || n > 64 || (k+n < len(elems) && sameClass(e, elems[k+n])) {
					return seqs, k
				}
			}
			for i := range seqs {
				for range n {
					seqs[i] = append(seqs[i], set)
				}
			}
			k += n
		default:
			return seqs, k
		}
	}
	return seqs, k
}

// finiteSeqs returns the byte sequences e matches when it is a literal, a
// class, or a sequence or alternation of those (at most maxShapes), else
// nil.
func finiteSeqs(e *syntax.Regexp) [][]*[256]bool {
	switch e.Op {
	case syntax.OpLiteral:
		if e.Flags&syntax.FoldCase != 0 {
			return nil
		}
		var seq []*[256]bool
		for _, r := range e.Rune {
			if r >= 0x80 {
				return nil
			}
			var set [256]bool
			set[r] = true
			seq = append(seq, &set)
		}
		return [][]*[256]bool{seq}
	case syntax.OpCharClass:
		set, ok := byteSet(e)
		if !ok {
			return nil
		}
		return [][]*[256]bool{{set}}
	case syntax.OpCapture:
		return finiteSeqs(e.Sub[0])
	case syntax.OpConcat:
		out := [][]*[256]bool{nil}
		for _, s := range e.Sub {
			alts := finiteSeqs(s)
			if alts == nil || len(out)*len(alts) > maxShapes {
				return nil
			}
			var next [][]*[256]bool
			for _, o := range out {
				for _, a := range alts {
					next = append(next, append(o[:len(o):len(o)], a...))
				}
			}
			out = next
		}
		return out
	case syntax.OpAlternate:
		var out [][]*[256]bool
		for _, s := range e.Sub {
			alts := finiteSeqs(s)
			if alts == nil || len(out)+len(alts) > maxShapes {
				return nil
			}
			out = append(out, alts...)
		}
		return out
	}
	return nil
}

// shapeOf splits seq at its first literal (the first stretch of single-
// byte sets, the first of two bytes or more when there is one) and reads
// the class run that rest begins with.
func shapeOf(seq []*[256]bool, rest []*syntax.Regexp) *prefixRun {
	single := func(i int) int {
		c := -1
		for b := range 128 {
			if seq[i][b] {
				if c >= 0 {
					return -1
				}
				c = b
			}
		}
		return c
	}
	at, n := -1, 0
	for i := 0; i < len(seq); {
		if single(i) < 0 {
			i++
			continue
		}
		j := i
		for j < len(seq) && single(j) >= 0 {
			j++
		}
		if at < 0 || (n < 2 && j-i >= 2) {
			at, n = i, j-i
		}
		if n >= 2 {
			break
		}
		i = j
	}
	if at < 0 {
		return nil
	}
	p := &prefixRun{lead: seq[:at], fixed: seq[at+n:], next: -1, tailMax: -1}
	for i := at; i < at+n; i++ {
		p.prefix = append(p.prefix, byte(single(i)))
	}
	// The run: copies of one class, then x+ or x* (more of it) or
	// optional copies (x{n,m}).
	k := 0
	var cls *syntax.Regexp
	p.max = -1
	for ; k < len(rest); k++ {
		c := rest[k]
		if c.Op == syntax.OpCharClass && (cls == nil || c.Equal(cls)) {
			cls = c
			p.min++
			continue
		}
		if (c.Op == syntax.OpPlus || c.Op == syntax.OpStar) && c.Sub[0].Op == syntax.OpCharClass && (cls == nil || c.Sub[0].Equal(cls)) {
			cls = c.Sub[0]
			if c.Op == syntax.OpPlus {
				p.min++
			}
			k++
			break
		}
		if cls != nil {
			if n, ok := optCopies(c, cls); ok {
				p.max = p.min + n
				k++
				break
			}
		}
		p.max = p.min
		break
	}
	if k == len(rest) && cls != nil && p.max < 0 && (rest[k-1].Op == syntax.OpCharClass) {
		p.max = p.min // copies up to the pattern's end
	}
	if cls == nil || p.min == 0 {
		return p // fixed bytes only
	}
	set, ok := byteSet(cls)
	if !ok {
		return p
	}
	p.hasRun, p.class = true, *set
	p.exact = p.max == p.min
	p.tailMax = -1
	if k < len(rest) && rest[k].Op == syntax.OpLiteral && rest[k].Flags&syntax.FoldCase == 0 {
		if r := rest[k].Rune[0]; r < 0x80 && !p.class[r] {
			p.next = int(r)
			p.tailMax = maxBytes(&syntax.Regexp{Op: syntax.OpConcat, Sub: rest[k:]})
			p.more = chainOf(rest[k].Rune[1:], rest[k+1:])
		}
	}
	return p
}

// chainOf reads the chain parts of the literal runes lit and then elems.
func chainOf(lit []rune, elems []*syntax.Regexp) []chainPart {
	var out []chainPart
	for _, r := range lit {
		if r >= 0x80 {
			return out
		}
		var set [256]bool
		set[r] = true
		out = append(out, chainPart{set: &set})
	}
	for k := 0; k < len(elems); {
		e := elems[k]
		if e.Op == syntax.OpLiteral {
			if e.Flags&syntax.FoldCase != 0 {
				return out
			}
			for _, r := range e.Rune {
				if r >= 0x80 {
					return out
				}
				var set [256]bool
				set[r] = true
				out = append(out, chainPart{set: &set})
			}
			k++
			continue
		}
		// copies of a class, then x+, x* or optional copies
		var cls *syntax.Regexp
		n, m := 0, -2
		for k < len(elems) {
			c := elems[k]
			if c.Op == syntax.OpCharClass && (cls == nil || c.Equal(cls)) {
				cls = c
				n++
				k++
				continue
			}
			if (c.Op == syntax.OpPlus || c.Op == syntax.OpStar) && c.Sub[0].Op == syntax.OpCharClass && (cls == nil || c.Sub[0].Equal(cls)) {
				cls = c.Sub[0]
				if c.Op == syntax.OpPlus {
					n++
				}
				m = -1
				k++
			} else if cls != nil {
				if o, ok := optCopies(c, cls); ok {
					m = n + o
					k++
				}
			}
			break
		}
		if cls == nil {
			return out
		}
		set, ok := byteSet(cls)
		if !ok {
			return out
		}
		if m == -2 {
			m = n
		}
		if n == 1 && m == 1 {
			out = append(out, chainPart{set: set})
			continue
		}
		part := chainPart{set: set, run: true, min: n, max: m}
		if k == len(elems) {
			part.last = true
		} else if f := firstSet(elems[k]); f != nil && disjoint(f, set) {
			part.follow = true
		}
		out = append(out, part)
		if !part.follow {
			return out
		}
	}
	return out
}

// firstSet returns the bytes a match of e can begin with when e is a
// case-sensitive ASCII literal or class, else nil.
func firstSet(e *syntax.Regexp) *[256]bool {
	switch {
	case e.Op == syntax.OpLiteral && e.Flags&syntax.FoldCase == 0 && e.Rune[0] < 0x80:
		var set [256]bool
		set[e.Rune[0]] = true
		return &set
	case e.Op == syntax.OpCharClass:
		if set, ok := byteSet(e); ok {
			return set
		}
	case e.Op == syntax.OpPlus && e.Sub[0].Op == syntax.OpCharClass:
		if set, ok := byteSet(e.Sub[0]); ok {
			return set
		}
	}
	return nil
}

func disjoint(a, b *[256]bool) bool {
	for i := range a {
		if a[i] && b[i] {
			return false
		}
	}
	return true
}

// chainFits reports whether p.more holds at text[q:hi].
func (p *prefixRun) chainFits(text []byte, q, hi int) bool {
	for _, c := range p.more {
		if !c.run {
			if q >= hi || !c.set[text[q]] {
				return false
			}
			q++
			continue
		}
		limit := hi
		switch {
		case !c.follow: // only its fewest bytes are needed
			limit = min(hi, q+c.min)
		case c.max >= 0:
			limit = min(hi, q+c.max+1)
		}
		r := 0
		for q+r < limit && c.set[text[q+r]] {
			r++
		}
		if r < c.min || c.follow && c.max >= 0 && r > c.max {
			return false
		}
		if !c.follow {
			return true
		}
		q += r
	}
	return true
}

// optCopies reports whether e is optional copies of class cls (the
// simplified form of the part of cls{n,m} past n), and how many.
func optCopies(e, cls *syntax.Regexp) (int, bool) {
	if e.Op != syntax.OpQuest {
		return 0, false
	}
	sub := e.Sub[0]
	if sub.Equal(cls) {
		return 1, true
	}
	if sub.Op != syntax.OpConcat || len(sub.Sub) == 0 {
		return 0, false
	}
	n := 0
	for i, x := range sub.Sub {
		switch {
		case x.Equal(cls):
			n++
		case i == len(sub.Sub)-1:
			m, ok := optCopies(x, cls)
			if !ok {
				return 0, false
			}
			n += m
		default:
			return 0, false
		}
	}
	return n, true
}

// hasAssertion reports whether re holds an empty-width assertion.
func hasAssertion(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	}
	for _, s := range re.Sub {
		if hasAssertion(s) {
			return true
		}
	}
	return false
}

// maxBytes bounds the bytes of a match of re, or -1 when its matches are
// unbounded. A case-folded literal and a class reaching past ASCII count
// utf8.UTFMax bytes a character.
func maxBytes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 || r >= 0x80 {
				n += utf8.UTFMax
			} else {
				n++
			}
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) > 0 && re.Rune[len(re.Rune)-1] < 0x80 {
			return 1
		}
		return utf8.UTFMax
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxBytes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			m := maxBytes(s)
			if m < 0 {
				return -1
			}
			n += m
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxBytes(s)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	case syntax.OpRepeat:
		m := maxBytes(re.Sub[0])
		if m < 0 || re.Max < 0 {
			return -1
		}
		return m * re.Max
	}
	return -1 // star, plus, no match
}

// sameClass reports whether b is a class equal to a (a run of copies).
func sameClass(a, b *syntax.Regexp) bool {
	if b.Op == syntax.OpConcat && len(b.Sub) > 0 {
		b = b.Sub[0]
	}
	if b.Op == syntax.OpPlus {
		b = b.Sub[0]
	}
	return b.Op == syntax.OpCharClass && a.Equal(b)
}

// byteSet returns the bytes of an ASCII character class.
func byteSet(cls *syntax.Regexp) (*[256]bool, bool) {
	var set [256]bool
	for i := 0; i+1 < len(cls.Rune); i += 2 {
		lo, hi := cls.Rune[i], cls.Rune[i+1]
		if lo >= 0x80 || hi >= 0x80 {
			return nil, false // a class reaching past ASCII: no byte table
		}
		for r := lo; r <= hi; r++ {
			set[r] = true
		}
	}
	return &set, true
}

// from returns where in text[pos:hi] a match can start first, or -1: the
// first prefix followed, before hi, by the fixed bytes, at least min class
// bytes (exactly min when exact) and the ending byte when there is one.
// A failed place skips the places whose run would be the same run's tail
// (they fail the same way), so every byte is read a bounded number of
// times.
func (p *prefixRun) from(text []byte, pos, hi int) int {
	s, _ := p.fromRun(text, pos, hi)
	return s
}

// fromRun is from that also returns where the run read there ends.
func (p *prefixRun) fromRun(text []byte, pos, hi int) (int, int) {
	nl := len(p.lead)
	L := nl + len(p.prefix) + len(p.fixed)
	for pos+L <= hi {
		k := bytes.Index(text[pos+nl:hi], p.prefix)
		if k < 0 {
			return -1, -1
		}
		s := pos + k // the prefix is at s+nl
		e := s + nl + len(p.prefix)
		ok := e+len(p.fixed) <= hi
		for i := nl - 1; ok && i >= 0; i-- {
			ok = p.lead[i][text[s+i]]
		}
		for i := 0; ok && i < len(p.fixed); i++ {
			ok = p.fixed[i][text[e+i]]
		}
		if !ok {
			pos = s + 1
			continue
		}
		e += len(p.fixed)
		if !p.hasRun {
			return s, e
		}
		limit := hi // how far the run is read
		if p.next < 0 {
			limit = min(hi, e+p.min)
		} else if p.max >= 0 {
			limit = min(hi, e+p.max+1)
		}
		r := 0
		for e+r < limit && p.class[text[e+r]] {
			r++
		}
		// whole: the run read is the longest there (it did not stop at
		// limit for being too long)
		whole := e+r == hi || !p.class[text[e+r]]
		if r >= p.min && (p.next < 0 || whole && e+r < hi && int(text[e+r]) == p.next && (p.max < 0 || r <= p.max) && p.chainFits(text, e+r+1, hi)) {
			return s, e + r
		}
		// A start inside the run whose own run is this run's tail fails
		// the same way (what follows the run is the same) unless this
		// one failed for being too long.
		if whole && (p.max < 0 || r <= p.max) {
			pos = max(s+1, e+r-L+1)
		} else {
			pos = s + 1
		}
	}
	return -1, -1
}

// startLit is a literal a match begins with: ASCII bytes, matched
// exactly or, fold, in either case (lit is then in lower case).
type startLit struct {
	lit  []byte
	fold bool
}

// index returns where lit is first in s, or -1.
func (l startLit) index(s []byte) int {
	if !l.fold {
		return bytes.Index(s, l.lit)
	}
	lo := l.lit[0]
	up := lo
	if lo >= 'a' && lo <= 'z' {
		up = lo - 'a' + 'A'
	}
	// The next place of each spelling of the first byte, looked for
	// again only once passed.
	nl, nu := -2, -2
	for i := 0; i+len(l.lit) <= len(s); {
		if nl != -1 && nl < i {
			if nl = bytes.IndexByte(s[i:], lo); nl >= 0 {
				nl += i
			}
		}
		if nu != -1 && nu < i {
			if nu = bytes.IndexByte(s[i:], up); nu >= 0 {
				nu += i
			}
		}
		k := nl
		if k < 0 || nu >= 0 && nu < k {
			k = nu
		}
		if k < 0 || k+len(l.lit) > len(s) {
			return -1
		}
		if asciiFoldEqual(s[k+1:k+len(l.lit)], l.lit[1:]) {
			return k
		}
		i = k + 1
	}
	return -1
}

// asciiFoldEqual reports whether a equals lower (lower-case ASCII) with
// ASCII letters in either case.
func asciiFoldEqual(a, lower []byte) bool {
	for i, c := range lower {
		b := a[i]
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != c {
			return false
		}
	}
	return true
}

// startLiterals returns, for each alternative of pat's top (splitTop),
// the literal of two bytes or more it begins with, or nil when one begins
// with none or pat holds an assertion (a match then depends on the bytes
// before it). A case-folded literal is cut before its first 'k' or 's'
// (they also match U+212A and U+017F) and any byte past ASCII.
func startLiterals(pat string) []startLit {
	alts := topAlternatives(pat)
	if alts == nil {
		return nil
	}
	var out []startLit
	for _, alt := range alts {
		elems := flatten(alt)
		if len(elems) == 0 || elems[0].Op != syntax.OpLiteral {
			return nil
		}
		fold := elems[0].Flags&syntax.FoldCase != 0
		var lit []byte
	read:
		for _, e := range elems { // the literals it begins with, as one
			if e.Op != syntax.OpLiteral || (e.Flags&syntax.FoldCase != 0) != fold {
				break
			}
			for _, r := range e.Rune {
				if fold && r >= 'A' && r <= 'Z' {
					r += 'a' - 'A'
				}
				if r >= utf8.RuneSelf || fold && (r == 'k' || r == 's') {
					break read
				}
				lit = append(lit, byte(r))
			}
		}
		if len(lit) < 2 {
			return nil
		}
		out = append(out, startLit{lit: lit, fold: fold})
	}
	return out
}

// requiredLiterals returns the literals of three bytes or more that every
// match of pat holds (the literals of its top-level sequence after the
// first element, case-sensitive ASCII), such as a PEM block's
// "-----END ": a window without one of them after the search's start has
// no match there, and is not read by the expression.
func requiredLiterals(pat string) [][]byte {
	re := parseTop(pat)
	if re == nil {
		return nil
	}
	if re.Op != syntax.OpConcat {
		return nil
	}
	var out [][]byte
	for _, e := range re.Sub[1:] {
		if e.Op != syntax.OpLiteral || e.Flags&syntax.FoldCase != 0 || len(e.Rune) < 3 {
			continue
		}
		var lit []byte
		for _, r := range e.Rune {
			if r >= 0x80 {
				lit = nil
				break
			}
			lit = append(lit, byte(r))
		}
		if lit != nil {
			out = append(out, lit)
		}
	}
	return out
}

// parseTop parses pat as Go's regexp does and returns its simplified
// syntax tree without the captures around its top; nil when pat does not
// parse.
func parseTop(pat string) *syntax.Regexp {
	re, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	return re
}

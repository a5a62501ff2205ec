package classifiers

import (
	"bytes"
	"regexp/syntax"
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

// prefixRun is the shape a pattern's matches begin with.
type prefixRun struct {
	prefix []byte
	fixed  []*[256]bool // one byte each, after the prefix
	class  [256]bool    // the run after them
	min    int          // its fewest bytes
	exact  bool         // the run has exactly min bytes
	next   int          // the byte that ends the run (not in class), or -1
}

// newPrefixRun returns the prefix run of pat, or nil when pat does not
// begin with a case-sensitive ASCII literal followed (after single bytes)
// by a repeated ASCII character class of at least one byte.
func newPrefixRun(pat string) *prefixRun {
	re := parseTop(pat)
	if re == nil {
		return nil
	}
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return nil
	}
	lit := re.Sub[0]
	if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
		return nil
	}
	p := prefixRun{next: -1}
	for _, r := range lit.Rune {
		if r >= 0x80 {
			return nil
		}
		p.prefix = append(p.prefix, byte(r))
	}
	// Single bytes: literals and classes, up to the run.
	rest := re.Sub[1:]
	for len(rest) > 0 {
		e := rest[0]
		if e.Op == syntax.OpLiteral && e.Flags&syntax.FoldCase == 0 {
			for _, r := range e.Rune {
				if r >= 0x80 {
					return nil
				}
				var set [256]bool
				set[r] = true
				p.fixed = append(p.fixed, &set)
			}
		} else if e.Op == syntax.OpCharClass && len(rest) > 1 && !sameClass(e, rest[1]) {
			set, ok := byteSet(e)
			if !ok {
				return nil
			}
			p.fixed = append(p.fixed, set)
		} else {
			break
		}
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil
	}
	// The run: after Simplify, x{n,m} is n copies of x then optional
	// ones, x{n,} is n-1 copies then x+, x{n} is n copies.
	subs, after := rest[:1], rest[1:]
	if rest[0].Op == syntax.OpConcat {
		subs = rest[0].Sub
	} else if rest[0].Op == syntax.OpCharClass {
		subs = rest // consecutive copies in the outer sequence
		after = nil
	}
	var cls *syntax.Regexp
	p.exact = true
	k := 0
	for ; k < len(subs); k++ {
		c := subs[k]
		plus := c.Op == syntax.OpPlus
		if plus {
			c = c.Sub[0]
		}
		if c.Op != syntax.OpCharClass || cls != nil && !c.Equal(cls) {
			break
		}
		cls = c
		p.min++
		if plus {
			p.exact = false
			k++
			break
		}
	}
	if cls == nil {
		return nil
	}
	set, ok := byteSet(cls)
	if !ok {
		return nil
	}
	p.class = *set
	// What follows the run: the ending byte is known when the run is
	// whole (exact, or unbounded) and a literal outside the class comes
	// next.
	tail := append(subs[k:len(subs):len(subs)], after...)
	if rest[0].Op == syntax.OpCharClass {
		tail = subs[k:]
	}
	if k < len(subs) && (subs[k].Op == syntax.OpQuest || subs[k].Op == syntax.OpStar) {
		p.exact = false
		return &p // optional copies: no ending byte
	}
	if len(tail) > 0 && tail[0].Op == syntax.OpLiteral && tail[0].Flags&syntax.FoldCase == 0 {
		if r := tail[0].Rune[0]; r < 0x80 && !p.class[r] {
			p.next = int(r)
		}
	}
	return &p
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
	L := len(p.prefix) + len(p.fixed)
	for pos < hi {
		k := bytes.Index(text[pos:hi], p.prefix)
		if k < 0 {
			return -1
		}
		s := pos + k
		e := s + len(p.prefix)
		ok := e+len(p.fixed) <= hi
		for i := 0; ok && i < len(p.fixed); i++ {
			ok = p.fixed[i][text[e+i]]
		}
		if !ok {
			pos = s + 1
			continue
		}
		e += len(p.fixed)
		limit := hi // how far the run is read
		if p.next < 0 {
			limit = min(hi, e+p.min)
		} else if p.exact {
			limit = min(hi, e+p.min+1)
		}
		r := 0
		for e+r < limit && p.class[text[e+r]] {
			r++
		}
		switch {
		case r < p.min:
		case p.next < 0:
			return s
		case p.exact && r != p.min:
		case e+r < hi && int(text[e+r]) == p.next:
			return s
		}
		if p.exact {
			pos = s + 1
		} else {
			pos = max(s+1, e+r-L+1)
		}
	}
	return -1
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

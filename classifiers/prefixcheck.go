package classifiers

import (
	"bytes"
	"regexp/syntax"
)

// A secret pattern that begins with a literal prefix followed by a run of
// one character class (`npm_[A-Za-z0-9]{36}`, `hvs\.[A-Za-z0-9_-]{24,}`)
// can only match where the prefix is followed by at least that run's
// minimum of class bytes. prefixRun reads that shape from the pattern;
// regexWindow uses it to start the search at the first place that passes,
// so a window merged from a prefix repeated end to end ("npm_npm_…") is
// not read by the expression at all.

// prefixRun is a pattern's literal prefix and the class run that follows
// it: at least min bytes in class.
type prefixRun struct {
	prefix []byte
	class  [256]bool
	min    int
}

// newPrefixRun returns the prefix run of pat, or nil when pat does not
// begin with a case-sensitive ASCII literal followed by a repeated ASCII
// character class of at least one byte.
func newPrefixRun(pat string) *prefixRun {
	re, err := syntax.Parse(pat, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 {
		return nil
	}
	lit, rep := re.Sub[0], re.Sub[1]
	if lit.Op != syntax.OpLiteral || lit.Flags&syntax.FoldCase != 0 {
		return nil
	}
	var p prefixRun
	for _, r := range lit.Rune {
		if r >= 0x80 {
			return nil
		}
		p.prefix = append(p.prefix, byte(r))
	}
	// After Simplify, x{n,m} is n copies of x then optional ones: count
	// the leading copies of one class.
	subs := re.Sub[1:]
	if rep.Op == syntax.OpConcat {
		subs = rep.Sub
	}
	var cls *syntax.Regexp
	for _, s := range subs {
		c := s
		if c.Op == syntax.OpPlus {
			c = c.Sub[0] // one copy, then a star
		} else if c.Op != syntax.OpCharClass {
			break
		}
		if c.Op != syntax.OpCharClass || cls != nil && !c.Equal(cls) {
			break
		}
		cls = c
		p.min++
		if s.Op == syntax.OpPlus {
			break
		}
	}
	if cls == nil {
		return nil
	}
	for i := 0; i+1 < len(cls.Rune); i += 2 {
		lo, hi := cls.Rune[i], cls.Rune[i+1]
		if lo >= 0x80 || hi >= 0x80 {
			return nil // a class reaching past ASCII: no byte table
		}
		for r := lo; r <= hi; r++ {
			p.class[r] = true
		}
	}
	return &p
}

// from returns where in text[pos:hi] a match can start first: the first
// prefix followed by min class bytes (before hi), or -1.
func (p *prefixRun) from(text []byte, pos, hi int) int {
	for pos < hi {
		k := bytes.Index(text[pos:hi], p.prefix)
		if k < 0 {
			return -1
		}
		s := pos + k
		e := s + len(p.prefix)
		n := 0
		for e+n < hi && n < p.min && p.class[text[e+n]] {
			n++
		}
		if n == p.min {
			return s
		}
		pos = s + 1
	}
	return -1
}

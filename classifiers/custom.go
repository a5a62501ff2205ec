package classifiers

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// CustomRule is an organisation's own detector: literal keywords (code
// names, customer names), a regexp2 pattern (.NET/Python-style syntax with
// lookarounds), or both. With both, the pattern only runs near the keywords.
type CustomRule struct {
	// ID names the rule in findings; it must start with "custom.".
	ID          string
	Description string
	// Keywords are matched as whole words.
	Keywords []string
	// CaseSensitive makes keyword matching case-sensitive (patterns use
	// their own (?i) flag).
	CaseSensitive bool
	// Pattern is a github.com/dlclark/regexp2 pattern. A capture group
	// named "value" narrows the finding to that group.
	Pattern string
	// Validator is "" or a name from Validators(), applied to the value.
	Validator string
	// ContextWords near a match raise its confidence by 0.1.
	ContextWords []string
	// Confidence is the base confidence, 0.8 when 0.
	Confidence float64
}

// customRule is a compiled CustomRule; immutable after compileCustom.
type customRule struct {
	id            string
	keywords      []string // as given (for case-sensitive checks)
	caseSensitive bool
	re            *regexp2.Regexp
	valueGroup    bool
	validate      func(string) bool
	context       []string
	conf          float64
	timeout       time.Duration
}

func compileCustom(r CustomRule, timeout time.Duration) (*customRule, error) {
	bad := func(format string, a ...any) error { return &RuleError{Rule: r.ID, Err: fmt.Errorf(format, a...)} }
	if !strings.HasPrefix(r.ID, "custom.") || len(r.ID) == len("custom.") {
		return nil, bad("ID must start with \"custom.\" and name the rule")
	}
	if len(r.Keywords) == 0 && r.Pattern == "" {
		return nil, bad("needs keywords, a pattern, or both")
	}
	c := &customRule{id: r.ID, caseSensitive: r.CaseSensitive, conf: r.Confidence, timeout: timeout}
	if c.conf == 0 {
		c.conf = 0.8
	}
	if c.conf < 0 || c.conf > 1 {
		return nil, bad("confidence %v is outside (0, 1]", r.Confidence)
	}
	for i, k := range r.Keywords {
		if strings.TrimSpace(k) == "" {
			return nil, bad("keyword %d is empty", i)
		}
		if !utf8.ValidString(k) {
			return nil, bad("keyword %d is not valid UTF-8", i)
		}
		c.keywords = append(c.keywords, k)
	}
	for i, w := range r.ContextWords {
		if strings.TrimSpace(w) == "" {
			return nil, bad("context word %d is empty", i)
		}
		c.context = append(c.context, w)
	}
	if r.Pattern != "" {
		// The backtracking stack is left unbounded, as in regexp2 v1: the
		// match timeout is what bounds a pathological pattern, and it is
		// reported as a *TimeoutError.
		re, err := regexp2.Compile(r.Pattern, regexp2.None, regexp2.OptionMaxBacktrackingStackSize(-1))
		if err != nil {
			return nil, &RuleError{Rule: r.ID, Err: fmt.Errorf("pattern: %w", err)}
		}
		re.MatchTimeout = timeout
		c.re = re
		for _, n := range re.GetGroupNames() {
			if n == "value" {
				c.valueGroup = true
			}
		}
	}
	if r.Validator != "" {
		c.validate = validatorFunc(r.Validator)
		if c.validate == nil {
			return nil, bad("unknown validator %q (known: %s)", r.Validator, strings.Join(validatorNames, ", "))
		}
	}
	return c, nil
}

// customWindow is how far around a keyword a rule's pattern looks.
const customWindow = 256

func (st *scanState) runCustom() {
	for i, c := range st.s.custom {
		if err := st.ctx.Err(); err != nil {
			// The rules left are skipped: the scan must not pass for a
			// complete one.
			if st.err == nil {
				st.err = err
			}
			return
		}
		hits := st.custHits[i]
		switch {
		case c.re == nil:
			for _, h := range hits {
				if c.keywordAt(st.text, h.lo, h.hi) {
					st.emitCustom(i, c, h.lo, h.hi)
				}
			}
		case len(c.keywords) > 0:
			var ws []span
			for _, h := range hits {
				if !c.keywordAt(st.text, h.lo, h.hi) {
					continue
				}
				w := span{max(0, h.lo-customWindow), min(len(st.text), h.hi+customWindow)}
				if n := len(ws); n > 0 && w.lo <= ws[n-1].hi {
					ws[n-1].hi = max(ws[n-1].hi, w.hi)
				} else {
					ws = append(ws, w)
				}
			}
			for _, w := range ws {
				if !st.customRegex(i, c, w.lo, w.hi) {
					break
				}
			}
		default:
			st.customRegex(i, c, 0, len(st.text))
		}
	}
}

// keywordAt reports whether the hit is a whole word with the right case.
func (c *customRule) keywordAt(text []byte, lo, hi int) bool {
	if lo > 0 && isWordByte(text[lo]) && isWordByte(text[lo-1]) {
		return false
	}
	if hi < len(text) && isWordByte(text[hi-1]) && isWordByte(text[hi]) {
		return false
	}
	if !c.caseSensitive {
		return true
	}
	v := string(text[lo:hi])
	for _, k := range c.keywords {
		if k == v {
			return true
		}
	}
	return false
}

// customRegex runs the rule's pattern over text[lo:hi]. It returns false
// after a timeout, which it records as a *TimeoutError.
func (st *scanState) customRegex(i int, c *customRule, lo, hi int) bool {
	seg := st.text[lo:hi]
	runes := make([]rune, 0, len(seg))
	offs := make([]int, 0, len(seg)+1) // rune index → byte offset in text
	for k := 0; k < len(seg); {
		r, size := utf8.DecodeRune(seg[k:])
		runes = append(runes, r)
		offs = append(offs, lo+k)
		k += size
	}
	offs = append(offs, hi)
	m, err := c.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		g := &m.Group
		if c.valueGroup {
			if vg := m.GroupByName("value"); vg != nil && len(vg.Captures) > 0 {
				g = vg
			}
		}
		if g.RuneLength > 0 {
			s, e := offs[g.RuneIndex], offs[g.RuneIndex+g.RuneLength]
			if c.validate == nil || c.validate(string(st.text[s:e])) {
				st.emitCustom(i, c, s, e)
			}
		}
		m, err = c.re.FindNextMatch(m)
	}
	if err != nil {
		// regexp2's own error quotes the input; never pass it on.
		if st.err == nil {
			st.err = &TimeoutError{Rule: c.id, Timeout: c.timeout}
		}
		return false
	}
	return true
}

func (st *scanState) emitCustom(i int, c *customRule, lo, hi int) {
	conf := c.conf
	if nearHit(st.custCtx[i], lo, hi, 64) {
		conf = min(1, conf+0.1)
	}
	norm := string(st.text[lo:hi])
	if !c.caseSensitive {
		norm = strings.ToLower(norm)
	}
	st.emitString(len(st.s.dets)+i, lo, hi, conf, norm, maskGeneric)
}

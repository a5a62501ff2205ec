package classifiers

// numCand is a numeric candidate: digit groups joined by short separators
// (space, '-', '.', parentheses), optionally led by '+' or '('. It is found
// by the anchor pass and handed to every numeric detector, which look for
// their own shapes among contiguous group ranges.
type numCand struct {
	start, end int    // span including a leading '+' or '('
	plus       bool   // led by '+'
	groups     []span // digit runs
	seps       []byte // separator between group i and i+1 (its first byte)
	sepLens    []int
	cum        []int // cum[i] is the number of digits in groups[:i]
}

const maxGroups = 24

func isDigit(b byte) bool { return b-'0' < 10 }
func isAlpha(b byte) bool { return (b|0x20)-'a' < 26 }
func isAlnum(b byte) bool { return isDigit(b) || isAlpha(b) }
func isUpper(b byte) bool { return b-'A' < 26 }
func isHex(b byte) bool   { return isDigit(b) || (b|0x20)-'a' < 6 }
func isWordByte(b byte) bool {
	return isAlnum(b) || b == '_'
}

func isNumSep(b byte) bool { return b == ' ' || b == '-' || b == '.' || b == '(' || b == ')' }

// parse reads the candidate starting at the digit text[i] and returns the
// offset just past it.
func (c *numCand) parse(text []byte, i int) int {
	c.groups, c.seps, c.sepLens = c.groups[:0], c.seps[:0], c.sepLens[:0]
	c.cum = append(c.cum[:0], 0)
	c.plus = false
	c.start = i
	if i > 0 {
		if p := text[i-1]; p == '+' || p == '(' {
			c.plus = p == '+'
			c.start = i - 1
		}
	}
	n := len(text)
	j, digits := i, 0
	for {
		g := j
		for j < n && isDigit(text[j]) {
			j++
		}
		digits += j - g
		c.groups = append(c.groups, span{g, j})
		c.cum = append(c.cum, digits)
		if len(c.groups) == maxGroups {
			break
		}
		k := j
		for k < n && k-j < 3 && numSepByte[text[k]] {
			k++
		}
		if k == j || k >= n || !isDigit(text[k]) {
			break
		}
		c.seps = append(c.seps, text[j])
		c.sepLens = append(c.sepLens, k-j)
		j = k
	}
	c.end = j
	return j
}

// digits returns the digits of groups a..b (inclusive) appended to buf.
func (c *numCand) digits(text []byte, a, b int, buf []byte) []byte {
	for g := a; g <= b; g++ {
		buf = append(buf, text[c.groups[g].lo:c.groups[g].hi]...)
	}
	return buf
}

// digitAt returns the k-th digit of groups a.. (the range must hold more
// than k digits).
func (c *numCand) digitAt(text []byte, a, k int) byte {
	for c.groups[a].hi-c.groups[a].lo <= k {
		k -= c.groups[a].hi - c.groups[a].lo
		a++
	}
	return text[c.groups[a].lo+k]
}

// ndigits counts the digits of groups a..b.
func (c *numCand) ndigits(a, b int) int { return c.cum[b+1] - c.cum[a] }

// sameSeps reports whether groups a..b are joined by one kind of single-byte
// separator from allowed (or are a single group).
func (c *numCand) sameSeps(a, b int, allowed string) bool {
	if a == b {
		return true
	}
	s := c.seps[a]
	for g := a; g < b; g++ {
		if c.seps[g] != s || c.sepLens[g] != 1 {
			return false
		}
	}
	for i := 0; i < len(allowed); i++ {
		if allowed[i] == s {
			return true
		}
	}
	return false
}

// spanOf returns the byte span of groups a..b.
func (c *numCand) spanOf(a, b int) (int, int) { return c.groups[a].lo, c.groups[b].hi }

// boundaryOK reports whether text[lo:hi] is not glued to letters or digits
// on either side (an identifier, a longer number).
// It is small enough to be inlined in the loops over digit ranges.
func boundaryOK(text []byte, lo, hi int) bool {
	return (lo == 0 || !wordByte[text[lo-1]]) && (hi >= len(text) || !wordByte[text[hi]])
}

// wordByte is isWordByte as a table, for boundaryOK.
var wordByte = func() (t [256]bool) {
	for c := range t {
		t[c] = isWordByte(byte(c))
	}
	return t
}()

// groupRanges calls fn for contiguous group ranges a..b whose digit count
// is within [minD, maxD], longest first for each a; when fn returns true the
// range is taken and the search resumes after b.
func (c *numCand) groupRanges(minD, maxD int, fn func(a, b int) bool) {
	n := len(c.groups)
	if c.cum[n] < minD {
		return // no range has enough digits
	}
	for a := 0; a < n; a++ {
		if c.cum[n]-c.cum[a] < minD {
			return // nor does any range starting here or later
		}
		// the largest b with ndigits(a, b) <= maxD
		last := a - 1
		for last+1 < n && c.cum[last+2]-c.cum[a] <= maxD {
			last++
		}
		for b := last; b >= a; b-- {
			nd := c.cum[b+1] - c.cum[a]
			if nd < minD {
				break // shorter ranges have fewer digits still
			}
			if fn(a, b) {
				a = b
				break
			}
		}
	}
}

// numSepByte is isNumSep as a table, for parse.
var numSepByte = [256]bool{' ': true, '-': true, '.': true, '(': true, ')': true}

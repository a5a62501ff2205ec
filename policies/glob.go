package policies

import "strings"

// globMatch reports whether name matches pattern, where "*" matches any run
// of characters (including "/" and ".") and "?" exactly one character; every
// other character matches itself. It runs in O(len(pattern)*len(name)) at
// worst and never allocates.
func globMatch(pattern, name string) bool {
	p, n := 0, 0
	starP, starN := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			starP, starN = p, n
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == name[n]):
			p++
			n++
		case starP >= 0:
			starN++
			p, n = starP+1, starN
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// isGlob reports whether pattern holds a wildcard.
func isGlob(pattern string) bool { return strings.ContainsAny(pattern, "*?") }

// specificity ranks how specific a detector pattern is: an exact ID beats
// every glob; among globs, more literal characters win.
func specificity(pattern string) int {
	if !isGlob(pattern) {
		return 1 << 20
	}
	return len(pattern) - strings.Count(pattern, "*") - strings.Count(pattern, "?")
}

// globCovers reports whether every name matching inner also matches outer,
// when that can be proven simply: outer is empty or "*", equal to inner, or
// inner is a literal outer matches.
func globCovers(outer, inner string) bool {
	switch {
	case outer == "" || outer == "*":
		return true
	case inner == "":
		return false
	case outer == inner:
		return true
	case !isGlob(inner):
		return globMatch(outer, inner)
	case strings.HasSuffix(outer, "*") && !isGlob(outer[:len(outer)-1]):
		// "gpt-*" covers "gpt-4*".
		return strings.HasPrefix(inner, outer[:len(outer)-1])
	}
	return false
}

// validDetectorPattern reports whether s is a well-formed detector ID or
// glob: lower-case letters, digits, '_', '-', '.', '*' and '?'.
func validDetectorPattern(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_', c == '-', c == '.', c == '*', c == '?':
		default:
			return false
		}
	}
	return true
}

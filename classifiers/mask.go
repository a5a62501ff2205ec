package classifiers

import (
	"strings"
	"unicode/utf8"
)

// maskGeneric keeps the value's shape (separators stay), shows at most two
// alphanumerics at each end and never more than a quarter of them, and
// stars the rest.
func maskGeneric(v string) string {
	n := 0
	for i := 0; i < len(v); i++ {
		if isAlnum(v[i]) {
			n++
		}
	}
	show := min(2, n/8) // per end; 2*show <= n/4
	var b strings.Builder
	k := 0
	for _, r := range v {
		if r < utf8.RuneSelf && isAlnum(byte(r)) {
			if k < show || k >= n-show {
				b.WriteRune(r)
			} else {
				b.WriteByte('*')
			}
			k++
			continue
		}
		if r < utf8.RuneSelf && strings.ContainsRune(" -.+()/:", r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('*')
		}
	}
	return b.String()
}

// maskPrefix returns a mask that shows a value's public format prefix (such
// as "ghp_", which only says what kind of token it is) and stars a fixed
// number of characters for the rest, so the length is not revealed either.
func maskPrefix(prefixLen int) func(string) string {
	return func(v string) string {
		p := min(prefixLen, len(v)/4)
		return v[:p] + "****"
	}
}

// maskEmail renders j***@e***.com: the first character of the local part
// and of the domain, and the top-level domain.
func maskEmail(v string) string {
	at := strings.LastIndexByte(v, '@')
	if at < 1 {
		return maskGeneric(v)
	}
	local, dom := v[:at], v[at+1:]
	dot := strings.LastIndexByte(dom, '.')
	if dot < 1 {
		return local[:1] + "***@***"
	}
	return local[:1] + "***@" + dom[:1] + "***" + dom[dot:]
}

// maskLabel shows a marker in full: a classification banner or TLP label is
// not sensitive itself, it says how the text around it must be handled.
func maskLabel(v string) string { return v }

// maskFixed stars the whole value with a fixed-width mask.
func maskFixed(v string) string { return "********" }

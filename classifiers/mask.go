package classifiers

import "unicode/utf8"

// maskGeneric keeps the value's shape (separators stay), shows at most two
// alphanumerics at each end and never more than a quarter of them, and
// stars the rest.
func maskGeneric(dst, v []byte) []byte {
	n := 0
	for i := 0; i < len(v); i++ {
		if isAlnum(v[i]) {
			n++
		}
	}
	show := min(2, n/8) // per end; 2*show <= n/4
	k := 0
	for i := 0; i < len(v); {
		c := v[i]
		if c >= utf8.RuneSelf {
			_, size := utf8.DecodeRune(v[i:])
			dst = append(dst, '*')
			i += size
			continue
		}
		i++
		if isAlnum(c) {
			if k < show || k >= n-show {
				dst = append(dst, c)
			} else {
				dst = append(dst, '*')
			}
			k++
			continue
		}
		switch c {
		case ' ', '-', '.', '+', '(', ')', '/', ':':
			dst = append(dst, c)
		default:
			dst = append(dst, '*')
		}
	}
	return dst
}

// maskPrefix returns a mask that shows a value's public format prefix (such
// as "ghp_", which only says what kind of token it is) and stars a fixed
// number of characters for the rest, so the length is not revealed either.
func maskPrefix(prefixLen int) maskFunc {
	return func(dst, v []byte) []byte {
		p := min(prefixLen, len(v)/4)
		return append(append(dst, v[:p]...), "****"...)
	}
}

// maskEmail renders j***@e***.com: the first character of the local part
// and of the domain, and the top-level domain.
func maskEmail(dst, v []byte) []byte {
	at := lastIndexByte(v, '@')
	if at < 1 {
		return maskGeneric(dst, v)
	}
	local, dom := v[:at], v[at+1:]
	dot := lastIndexByte(dom, '.')
	if dot < 1 {
		return append(append(dst, local[:1]...), "***@***"...)
	}
	dst = append(dst, local[:1]...)
	dst = append(dst, "***@"...)
	dst = append(dst, dom[:1]...)
	dst = append(dst, "***"...)
	return append(dst, dom[dot:]...)
}

func lastIndexByte(b []byte, c byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// maskLabel shows a marker in full: a classification banner or TLP label is
// not sensitive itself, it says how the text around it must be handled.
func maskLabel(dst, v []byte) []byte { return append(dst, v...) }

// maskFixed stars the whole value with a fixed-width mask.
func maskFixed(dst, _ []byte) []byte { return append(dst, "********"...) }

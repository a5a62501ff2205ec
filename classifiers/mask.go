package classifiers

import (
	"slices"
	"unicode/utf8"
)

// maskGeneric keeps the value's shape (separators stay), shows at most two
// alphanumerics at each end and never more than a quarter of them, and
// stars the rest (a multi-byte character becomes one star).
func maskGeneric(dst, v []byte) []byte {
	n := 0
	for _, c := range v {
		n += int(maskClass[c] & 1)
	}
	show := min(2, n/8) // per end; 2*show <= n/4
	// The mask is never longer than v: it is written in place of
	// appends.
	d := len(dst)
	dst = slices.Grow(dst, len(v))[:d+len(v)]
	out := dst[d:]
	j, k := 0, 0
	for i := 0; i < len(v); {
		c := v[i]
		switch maskClass[c] {
		case maskAlnum:
			if k < show || k >= n-show {
				out[j] = c
			} else {
				out[j] = '*'
			}
			k++
			i++
		case maskKeep:
			out[j] = c
			i++
		case maskMulti:
			_, size := utf8.DecodeRune(v[i:])
			out[j] = '*'
			i += size
		default: // 0
			out[j] = '*'
			i++
		}
		j++
	}
	return dst[:d+j]
}

// maskClass is maskGeneric's class of a byte: an ASCII letter or digit,
// a separator kept as it is, a byte that may start a multi-byte
// character, or another byte (starred).
var maskClass = func() (t [256]uint8) {
	for c := 0; c < 256; c++ {
		switch b := byte(c); {
		case isAlnum(b):
			t[c] = maskAlnum
		case b >= utf8.RuneSelf:
			t[c] = maskMulti
		case b == ' ', b == '-', b == '.', b == '+', b == '(', b == ')', b == '/', b == ':':
			t[c] = maskKeep
		}
	}
	return t
}()

// The classes of maskClass, 0 for a starred byte (maskAlnum alone has bit
// 0 set).
const (
	maskAlnum = 1
	maskKeep  = 2
	maskMulti = 4
)

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

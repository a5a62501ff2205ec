package tokens

import (
	"testing"
	"unicode"
	"unicode/utf8"
)

// boundsRef is the byte-at-a-time Bounds, kept as the reference of the
// differential test.
func boundsRef(s string) (lower, upper int) {
	upper = len(s)
	const (
		none = iota
		letter
		digit
		punct
	)
	state, digits, punctLen := none, 0, 0
	closePunct := func(nextIsLetter bool) {
		// A single punctuation character right before a letter run joins
		// that run's piece; anything else is a piece of its own.
		if punctLen >= 2 || (punctLen == 1 && !nextIsLetter) {
			lower++
		}
		punctLen = 0
	}
	for i := 0; i < len(s); {
		c := s[i]
		var class int
		size := 1
		switch {
		case c == '\'':
			// The apostrophe is transparent: o200k_base keeps contractions
			// ("n't") in the word's piece, and it joins punctuation runs.
			i++
			continue
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			class = letter
		case c >= '0' && c <= '9':
			class = digit
		case c <= ' ' || c == 0x7f:
			// Spaces and control characters: the split regexes may drop
			// or merge them, so they count for nothing.
			class = none
		case c < utf8.RuneSelf:
			class = punct
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			size = n
			switch {
			case unicode.IsSpace(r) || unicode.Is(unicode.C, r):
				class = none
			case unicode.IsDigit(r):
				class = digit
			default:
				// Letters, marks, symbols and invalid bytes count as letters:
				// merging never makes the lower bound unsafe.
				class = letter
			}
		}
		if state == punct && class != punct {
			closePunct(class == letter)
		}
		if state == digit && class != digit {
			lower += (digits + 2) / 3
			digits = 0
		}
		switch class {
		case letter:
			if state != letter {
				lower++
			}
		case digit:
			digits++
		case punct:
			punctLen++
		}
		state = class
		i += size
	}
	if state == punct {
		closePunct(false)
	}
	if state == digit {
		lower += (digits + 2) / 3
	}
	return lower, upper
}

func FuzzBoundsMatchesReference(f *testing.F) {
	for _, s := range []string{"", "don't stop", "a1234b", "x!!y", "héllo wörld 42", "'''", "a\u00a0b", "\xff\xfe", "9'9", "!'a", "  \t\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, u := Bounds(s)
		rl, ru := boundsRef(s)
		if l != rl || u != ru {
			t.Fatalf("Bounds(%q) = %d,%d; reference %d,%d", s, l, u, rl, ru)
		}
	})
}

package classifiers

import "unicode/utf8"

// printableRuns returns a copy of data of the same length in which every
// run of at least minLen printable characters (printable ASCII and tab,
// or printable non-ASCII runes in valid UTF-8) stays where it is and
// every other byte is a space, except newlines, which stay newlines: the
// strings(1) view of a binary file, with offsets (and line numbers)
// those of the file. The result is valid UTF-8.
func printableRuns(data []byte, minLen int) []byte {
	out := make([]byte, len(data))
	runStart, runChars := 0, 0
	flush := func(end int) {
		if runChars < minLen {
			for k := runStart; k < end; k++ {
				out[k] = ' '
			}
		}
	}
	for i := 0; i < len(data); {
		c := data[i]
		size := 1
		printable := false
		switch {
		case c >= 0x20 && c < 0x7f || c == '\t':
			printable = true
		case c >= 0x80:
			r, n := utf8.DecodeRune(data[i:])
			if r != utf8.RuneError && isPrintableRune(r) {
				printable, size = true, n
			}
		}
		if printable {
			if runChars == 0 {
				runStart = i
			}
			copy(out[i:i+size], data[i:i+size])
			runChars++
			i += size
			continue
		}
		if runChars > 0 {
			flush(i)
			runChars = 0
		}
		if c == '\n' {
			out[i] = '\n'
		} else {
			out[i] = ' '
		}
		i++
	}
	if runChars > 0 {
		flush(len(data))
	}
	return out
}

// isPrintableRune is a non-ASCII rune that strings(1) with UTF-8
// support would print: letters, marks, numbers, punctuation, symbols and
// spaces, not controls, format characters, surrogates or private use.
func isPrintableRune(r rune) bool {
	return r >= 0xa0 && r != 0xad && !(r >= 0x2000 && r <= 0x200f) && !(r >= 0x2028 && r <= 0x202f) &&
		!(r >= 0xe000 && r <= 0xf8ff) && r != 0xfeff && !(r >= 0xfff0 && r <= 0xffff)
}

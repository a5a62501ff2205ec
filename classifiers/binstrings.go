package classifiers

import (
	"bytes"
	"unicode/utf8"
)

// printableRuns returns a copy of data of the same length in which every
// run of at least minLen printable characters (printable ASCII and tab,
// or printable non-ASCII runes in valid UTF-8) stays where it is and
// every other byte is a newline: the strings(1) view of a binary file,
// one string a line, with offsets those of the file. Newlines keep two
// strings apart for the detectors (an assignment never spans them, as
// "password: " and the next string of a program would). The result is
// valid UTF-8.
func printableRuns(data []byte, minLen int) []byte {
	out := make([]byte, len(data))
	runStart, runChars := 0, 0
	flush := func(end int) {
		if runChars < minLen {
			for k := runStart; k < end; k++ {
				out[k] = '\n'
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
		out[i] = '\n'
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

// placeInFile sets the Line, EndLine and Column of findings sorted by
// Start to their place in data, the file (lines end at its newline
// bytes; a column counts a UTF-8 sequence, or an invalid byte, as one), in
// one pass.
func placeInFile(data []byte, fs []Finding) {
	pos, line, col := 0, 1, 1
	for i := range fs {
		f := &fs[i]
		for pos < f.Start && pos < len(data) {
			_, n := utf8.DecodeRune(data[pos:])
			if data[pos] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			pos += min(n, f.Start-pos)
		}
		f.Line, f.Column = line, col
		f.EndLine = line + bytes.Count(data[min(f.Start, len(data)):min(max(f.End-1, f.Start), len(data))], []byte{'\n'})
	}
}

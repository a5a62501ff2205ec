package classifiers

import (
	"bytes"
	"encoding/binary"
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
	copy(out, data) // what is not kept is overwritten below
	blank := func(from, to int) {
		for k := from; k < to; k++ {
			out[k] = '\n'
		}
	}
	runStart, runChars := 0, 0
	for i := 0; i < len(data); {
		if len(data)-i >= 8 && asciiPrintable8(binary.LittleEndian.Uint64(data[i:])) {
			if runChars == 0 {
				runStart = i
			}
			runChars += 8
			i += 8
			continue
		}
		c := data[i]
		size := 0 // of a printable character
		switch {
		case c >= 0x20 && c < 0x7f || c == '\t':
			size = 1
		case c >= 0x80:
			if r, n := utf8.DecodeRune(data[i:]); r != utf8.RuneError && isPrintableRune(r) {
				size = n
			}
		}
		if size > 0 {
			if runChars == 0 {
				runStart = i
			}
			runChars++
			i += size
			continue
		}
		if runChars > 0 && runChars < minLen {
			blank(runStart, i)
		}
		runChars = 0
		out[i] = '\n'
		i++
	}
	if runChars > 0 && runChars < minLen {
		blank(runStart, len(data))
	}
	return out
}

// Bytes of a word, eight at a time (x holds them little-endian).
const (
	byteOnes  = 0x0101010101010101
	byteHighs = 0x8080808080808080
)

// asciiBelow8 reports whether a byte of x, none of them over 0x7f, is
// below n (at most 0x80).
func asciiBelow8(x uint64, n byte) bool { return (x-byteOnes*uint64(n))&^x&byteHighs != 0 }

// ascii8 reports whether the eight bytes of x are ASCII, and none a
// control below 0x20.
func ascii8(x uint64) bool { return x&byteHighs == 0 && !asciiBelow8(x, 0x20) }

// asciiPrintable8 reports whether the eight bytes of x are printable
// ASCII (0x20 to 0x7e).
func asciiPrintable8(x uint64) bool { return ascii8(x) && !asciiBelow8(x^(byteOnes*0x7f), 1) }

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

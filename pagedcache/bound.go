package pagedcache

import (
	"unicode"
	"unicode/utf8"
)

// tokenLowerBound returns a number of tokens that cl100k_base is sure to
// produce for text at least, in one pass without tokenizing.
//
// cl100k_base first splits text with the pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and every piece becomes at least one token. No alternative matches
// letters on both sides of a non-letter, so each maximal run of letters
// (\p{L}) lies in pieces of its own; digits (\p{N}) only appear in pieces
// of at most three digits holding nothing else. Hence tokens >= letter runs
// + sum over digit runs of ceil(len/3). For English prose the bound is about
// four fifths of the real count, enough to refuse a prompt far over a limit
// without paying for full tokenization.
func tokenLowerBound(text string) int {
	n := 0
	inLetters := false
	digits := 0
	for i := 0; i < len(text); {
		c := text[i]
		var letter, number bool
		if c < utf8.RuneSelf {
			letter = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
			number = '0' <= c && c <= '9'
			i++
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			letter, number = unicode.IsLetter(r), unicode.IsNumber(r)
			i += size
		}
		if letter && !inLetters {
			n++
		}
		inLetters = letter
		if number {
			digits++
		} else if digits > 0 {
			n += (digits + 2) / 3
			digits = 0
		}
	}
	return n + (digits+2)/3
}

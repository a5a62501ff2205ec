package main

import (
	"cmp"
	"slices"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
)

// endColumns returns, for each finding of text, the 1-based column (in
// code points, an invalid byte counting as one) just past its last
// character, the endColumn of a SARIF region. Findings end on code point
// boundaries; they are taken in the order of their ends, so text is read
// once whatever their number.
func endColumns(text string, fs []classifiers.Finding) []int {
	if len(fs) == 0 {
		return nil
	}
	out := make([]int, len(fs))
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(fs[a].End, fs[b].End) })
	pos, col := 0, 0 // col counts the code points from the line's start to pos
	for _, i := range order {
		end := min(max(fs[i].End, 0), len(text))
		for pos < end {
			if text[pos] == '\n' {
				col = 0
				pos++
				continue
			}
			_, size := utf8.DecodeRuneInString(text[pos:])
			col++
			pos += size
		}
		out[i] = col + 1
	}
	return out
}

package classifiers

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// parseBytewise is numCand.parse read one byte at a time: the reference
// for the group ends found a word at a time (digitsEnd).
func parseBytewise(c *numCand, text []byte, i int) int {
	c.groups, c.seps, c.sepLens = c.groups[:0], c.seps[:0], c.sepLens[:0]
	c.cum = append(c.cum[:0], 0)
	c.plus = false
	c.start = i
	if i > 0 {
		if p := text[i-1]; p == '+' || p == '(' {
			c.plus = p == '+'
			c.start = i - 1
		}
	}
	n := len(text)
	j, digits := i, 0
	for {
		g := j
		for j < n && isDigit(text[j]) {
			j++
		}
		digits += j - g
		c.groups = append(c.groups, span{g, j})
		c.cum = append(c.cum, digits)
		if len(c.groups) == maxGroups {
			break
		}
		k := j
		for k < n && k-j < 3 && isNumSep(text[k]) {
			k++
		}
		if k == j || k >= n || !isDigit(text[k]) {
			break
		}
		c.seps = append(c.seps, text[j])
		c.sepLens = append(c.sepLens, k-j)
		j = k
	}
	c.end = j
	return j
}

// checkParse compares parse with parseBytewise at every digit of text.
func checkParse(t *testing.T, text []byte) {
	t.Helper()
	var got, want numCand
	for i := range text {
		if !isDigit(text[i]) {
			continue
		}
		gj, wj := got.parse(text, i), parseBytewise(&want, text, i)
		if gj != wj || got.start != want.start || got.end != want.end || got.plus != want.plus ||
			!slices.Equal(got.groups, want.groups) || !slices.Equal(got.seps, want.seps) ||
			!slices.Equal(got.sepLens, want.sepLens) || !slices.Equal(got.cum, want.cum) {
			t.Fatalf("%q at %d: parse %d %+v, bytewise %d %+v", text, i, gj, got, wj, want)
		}
	}
}

// TestParseMatchesBytewise checks the candidates parse reads against the
// byte-at-a-time reading: numbers of every length up to past a word, each
// separator alone and in runs of up to four, separators and digits near
// the end of the text (where parse reads byte by byte), bytes next to the
// digits ('/' and ':', and digits with the high bit set), and random texts
// over those bytes.
func TestParseMatchesBytewise(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"1", "12", "123456789", "1234567890123456", "12345678901234567", "+33 6 12 34 56 78", "(555) 123-4567",
		"4970 1234 5678 9012", "FR76 3000 4000 0300 0000 0000 000", "1 2", "1  2", "1   2", "1    2", "1 -.2", "1 - . 2",
		"1.", "1. ", "1 .", "1-", "12 a", "3.14", "1/2", "1:2", "1,2", "1'2", "9;0", "1\xae2", "1\xa02", "1\xb92", "1\xb02",
		"1 (2)", "(1)", "1)2", "1((2", "0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0-0", "x1", "+1", "((1",
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26",
	} {
		checkParse(t, []byte(s))
		checkParse(t, []byte(s+" and more text after it"))
		checkParse(t, []byte("text before "+s))
	}
	r := rand.New(rand.NewPCG(21, 22))
	const alphabet = "0123456789  -.()/:,'+a\xb0\xae\xa0"
	for range 3000 {
		b := make([]byte, 1+r.IntN(40))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		checkParse(t, b)
	}
}

// FuzzNumCandParse checks parse against the byte-at-a-time reading on
// any input.
func FuzzNumCandParse(f *testing.F) {
	for _, s := range []string{"+33 6 12 34 56 78", "1 - 2", "123456789012", "4970-1234.5678 (9012)", "1\xb02"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkParse(t, b)
	})
}

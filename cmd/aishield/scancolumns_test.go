package main

import (
	"context"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/aishield/aishield/classifiers"
)

// TestEndColumns: the end column of a finding is the column just past its
// last character, in code points, on the line of its end; the one-pass
// version agrees with the one-finding-at-a-time reference.
func TestEndColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		ends []int // byte offsets of the findings' ends
		want []int
	}{
		{"first line", "key AKIA1234", []int{12}, []int{13}},
		{"later line", "a\nbc\ndef", []int{4, 8}, []int{3, 4}},
		{"multi-byte", "é€x\nœuvre", []int{6, 12}, []int{4, 5}},
		{"out of order", "abc\ndef", []int{7, 2}, []int{4, 3}},
		{"at a line's end", "ab\ncd", []int{3}, []int{1}},
		{"past the text", "ab", []int{9}, []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := make([]classifiers.Finding, len(tt.ends))
			for i, e := range tt.ends {
				fs[i] = classifiers.Finding{Start: max(e-1, 0), End: e}
			}
			if got := endColumns(tt.text, fs); !slices.Equal(got, tt.want) {
				t.Errorf("endColumns = %v, want %v", got, tt.want)
			}
			if got := refEndColumns(tt.text, fs); !slices.Equal(got, tt.want) {
				t.Errorf("refEndColumns = %v, want %v", got, tt.want)
			}
		})
	}
	// On real findings, a one-line finding ends its length in code points
	// after its column.
	sc, err := classifiers.New(classifiers.Options{HashKey: []byte("columns test key")})
	if err != nil {
		t.Fatal(err)
	}
	text := "Grüße,\nécrire à jeanne.roux@acme-mail.fr ou AKIAZ3MSJV4WWNKQ7UXM\n"
	fs, err := sc.ScanString(context.Background(), text)
	if err != nil || len(fs) < 2 {
		t.Fatalf("findings %v, %v", fs, err)
	}
	for i, end := range endColumns(text, fs) {
		f := fs[i]
		if f.Line == f.EndLine && end != f.Column+utf8.RuneCountInString(text[f.Start:f.End]) {
			t.Errorf("%s: end column %d, column %d", f.Detector, end, f.Column)
		}
	}
}

// FuzzEndColumns: the one-pass end columns equal the reference's for any
// text and spans, and are at least 1.
func FuzzEndColumns(f *testing.F) {
	f.Add("a\nbc\ndef", 3, 7)
	f.Add("é€x\nœuvre", 6, 11)
	f.Add("", 0, 0)
	f.Fuzz(func(t *testing.T, text string, a, b int) {
		// Findings end on code point boundaries (an invalid byte is one
		// code point): snap the ends to the boundary at or before them.
		var bounds []int
		for i := 0; i < len(text); {
			bounds = append(bounds, i)
			_, size := utf8.DecodeRuneInString(text[i:])
			i += size
		}
		bounds = append(bounds, len(text))
		snap := func(e int) int {
			k, _ := slices.BinarySearch(bounds, min(max(e, 0), len(text))+1)
			return bounds[k-1]
		}
		fs := []classifiers.Finding{{End: snap(a)}, {End: snap(b)}, {End: snap(a + b)}}
		got, want := endColumns(text, fs), refEndColumns(text, fs)
		if !slices.Equal(got, want) {
			t.Fatalf("endColumns = %v, reference %v", got, want)
		}
		for _, c := range got {
			if c < 1 {
				t.Fatalf("end column %d", c)
			}
		}
	})
}

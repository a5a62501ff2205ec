package classifiers

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// refPos is the byte-by-byte definition posTracker must agree with: the
// 1-based line of offset off, and the runes (bytes other than 10xxxxxx)
// between the line's start and off.
func refPos(buf []byte, off int) (line, col int) {
	line = 1 + bytes.Count(buf[:off], []byte{'\n'})
	seg := buf[bytes.LastIndexByte(buf[:off], '\n')+1 : off]
	for _, c := range seg {
		if c&0xC0 != 0x80 {
			col++
		}
	}
	return line, col
}

func TestPosTrackerMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	alphabet := []string{"a", "b", " ", "\n", "\n\n", "é", "€", "😀", "\x80", "\xff", "\x0a\x0b", "\t", "0"}
	for round := 0; round < 300; round++ {
		var b bytes.Buffer
		for b.Len() < 1+r.IntN(400)+(round%3/2)*r.IntN(2000) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		buf := b.Bytes()
		p := newPosTracker()
		step := 20 // dense findings; every third round sparse ones (advanceFar)
		if round%3 == 2 {
			step = 400
		}
		for off := 0; off <= len(buf); off += r.IntN(step) {
			p.advance(buf, 0, off)
			line, col := refPos(buf, off)
			if p.line != line || p.col != col {
				t.Fatalf("round %d: at %d got line %d col %d, want %d %d (%q)", round, off, p.line, p.col, line, col, buf[:off])
			}
			end := min(len(buf), off+r.IntN(40))
			if got, want := countNewlines(buf, off, end), bytes.Count(buf[off:end], []byte{'\n'}); got != want {
				t.Fatalf("countNewlines(%q) = %d, want %d", buf[off:end], got, want)
			}
		}
	}
}

func BenchmarkPosTrackerDense1MB(b *testing.B) {
	data := denseCorpus(1 << 20)
	s, err := New(Options{HashKey: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	fs, err := s.Scan(b.Context(), data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p := newPosTracker()
		for i := range fs {
			p.advance(data, 0, fs[i].Start)
			fs[i].EndLine = p.line + countNewlines(data, fs[i].Start, max(fs[i].Start, fs[i].End-1))
		}
	}
}

package main

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// chunkedFile is a file f.Read reads at most max bytes of at a time,
// size bytes long when opened and grown to len(data) at the read number
// growAt (never when 0); it counts the reads.
type chunkedFile struct {
	data        []byte
	size, max   int
	growAt      int
	off, reads  int
	shortBefore bool // returns short reads before the end
}

func (f *chunkedFile) Read(b []byte) (int, error) {
	f.reads++
	end := f.size
	if f.growAt > 0 && f.reads >= f.growAt {
		end = len(f.data)
	}
	if f.off >= end {
		return 0, io.EOF
	}
	n := min(len(b), end-f.off)
	if f.shortBefore {
		n = min(n, f.max)
	}
	copy(b, f.data[f.off:f.off+n])
	f.off += n
	return n, nil
}

// TestFileReaderRead checks fileReader.read against the plain loop that
// reads to the read returning nothing: a file that does not change is read
// whole whatever the sizes of its reads and of the buffer kept from the
// previous file, with a single read when it fits the first; a file that
// grows before its end is seen is read with its growth; one that grows
// later is read at least to its size when opened, as a prefix of its
// bytes.
func TestFileReaderRead(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(15, 20))
	var rd fileReader
	sizes := []int{0, 1, 4095, 4096, 4097, 8191, 8192, 65536, 1 << 20}
	for round := range 3000 {
		size := rng.IntN(70000)
		if round < len(sizes) {
			size = sizes[round]
		}
		data := make([]byte, size+rng.IntN(3)*rng.IntN(9000))
		for i := range data {
			data[i] = byte(rng.IntN(256))
		}
		f := &chunkedFile{data: data, size: size, max: 1 + rng.IntN(size+10)}
		f.shortBefore = rng.IntN(3) == 0
		grows := len(data) > size && rng.IntN(2) == 0
		if grows {
			f.growAt = 1 + rng.IntN(3)
		}
		if rng.IntN(10) == 0 {
			rd = fileReader{} // no buffer kept
		}
		got, err := rd.read(f, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !grows:
			if !bytes.Equal(got, data[:size]) {
				t.Fatalf("round %d: read %d bytes of a file of %d", round, len(got), size)
			}
			if !f.shortBefore && f.reads != 1 {
				t.Fatalf("round %d: %d reads of a file of %d bytes", round, f.reads, size)
			}
		case len(got) < size || !bytes.Equal(got, data[:len(got)]):
			t.Fatalf("round %d: read %d bytes, not a prefix of the %d of a file of %d grown", round, len(got), len(data), size)
		case f.growAt == 1 && !bytes.Equal(got, data):
			t.Fatalf("round %d: read %d bytes of a file grown to %d before the first read", round, len(got), len(data))
		}
	}
}

// TestFileReaderReadProc checks that a file whose size is 0, read in short
// reads (as /proc's), is read to its end.
func TestFileReaderReadProc(t *testing.T) {
	t.Parallel()
	data := bytes.Repeat([]byte("0-1 r-xp /bin/x\n"), 1000)
	f := &chunkedFile{data: data, size: 0, max: 100, growAt: 1, shortBefore: true}
	var rd fileReader
	got, err := rd.read(f, 0)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(data))
	}
}

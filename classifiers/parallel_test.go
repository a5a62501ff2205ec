package classifiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// serialScan is the one-core chunk loop the parallel scan must match
// field for field: the chunks in order, one posTracker carried across
// them, the findings sorted at the end.
func serialScan(s *Scanner, text []byte) []Finding {
	var all []Finding
	pos := newPosTracker()
	base := 0
	for {
		end := min(base+s.chunk, len(text))
		last := end == len(text)
		chunk := text[base:end]
		acceptLo := 0
		if base > 0 {
			acceptLo = s.overlap
		}
		acceptHi := len(chunk)
		if !last {
			acceptHi = len(chunk) - s.overlap
		}
		fs, _ := s.scanChunk(context.Background(), chunk, acceptLo, acceptHi, pos, base)
		all = append(all, fs...)
		if last {
			break
		}
		pos.advance(chunk, base, base+acceptHi)
		base = base + acceptHi - s.overlap
	}
	return sortFindings(all)
}

// serialScanReader is the one-core loop of a stream: a buffer of one
// chunk, 2*overlap bytes carried from one chunk to the next.
func serialScanReader(s *Scanner, r io.Reader) []Finding {
	var all []Finding
	pos := newPosTracker()
	buf := make([]byte, 0, s.chunk)
	base, acceptLo := 0, 0
	for {
		n, rerr := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		eof := rerr != nil
		acceptHi := len(buf)
		if !eof {
			acceptHi = len(buf) - s.overlap
		}
		fs, _ := s.scanChunk(context.Background(), buf, acceptLo, acceptHi, pos, base)
		all = append(all, fs...)
		if eof {
			break
		}
		pos.advance(buf, base, base+acceptHi)
		keep := acceptHi - s.overlap
		copy(buf, buf[keep:])
		buf = buf[:len(buf)-keep]
		base += keep
		acceptLo = s.overlap
	}
	return sortFindings(all)
}

// collect runs an Each-style scan and concatenates what fn sees.
func collect(t *testing.T, scan func(fn func([]Finding) error) error) []Finding {
	t.Helper()
	var all []Finding
	if err := scan(func(fs []Finding) error {
		if len(fs) == 0 {
			t.Fatal("fn called with no findings")
		}
		all = append(all, fs...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return all
}

// compareParallel checks that every parallel path (Scan, ScanReader,
// ScanReaderEach, 1 to 5 workers, readers of one byte and half reads)
// gives the serial loops' findings, every field of every one, and that
// those are placed right (checkFindings).
func compareParallel(t *testing.T, s *Scanner, text []byte) int {
	t.Helper()
	want := serialScan(s, text)
	checkFindings(t, text, want)
	if got := serialScanReader(s, bytes.NewReader(text)); !reflect.DeepEqual(got, want) {
		t.Fatalf("serial stream differs from serial scan:\n%+v\n%+v", got, want)
	}
	ctx := context.Background()
	diff := func(what string, got []Finding) {
		t.Helper()
		if reflect.DeepEqual(got, want) {
			return
		}
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("%s: finding %d of %d/%d differs:\n got %+v\nwant %+v", what, i, len(got), len(want), got[i], want[i])
			}
		}
		t.Fatalf("%s: %d findings, want %d", what, len(got), len(want))
	}
	got, err := s.Scan(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	diff("Scan", got)
	got, err = s.ScanReader(ctx, bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	diff("ScanReader", got)
	for workers := 1; workers <= 5; workers++ {
		diff(fmt.Sprintf("scanEach/%d", workers), collect(t, func(fn func([]Finding) error) error {
			return s.scanEach(ctx, text, workers, fn)
		}))
		diff(fmt.Sprintf("scanReaderEach/%d", workers), collect(t, func(fn func([]Finding) error) error {
			return s.scanReaderEach(ctx, bytes.NewReader(text), workers, fn)
		}))
	}
	diff("one-byte reader", collect(t, func(fn func([]Finding) error) error {
		return s.scanReaderEach(ctx, iotest.OneByteReader(bytes.NewReader(text)), 3, fn)
	}))
	diff("half reader", collect(t, func(fn func([]Finding) error) error {
		return s.scanReaderEach(ctx, iotest.HalfReader(bytes.NewReader(text)), 2, fn)
	}))
	return len(want)
}

func smallChunks(t testing.TB, chunk, overlap int) *Scanner {
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	s.chunk, s.overlap = chunk, overlap
	return s
}

// TestParallelStraddling plants values across every chunk boundary of a
// small chunk size, after lines of multi-byte runes (columns count runes)
// and inside lines longer than a chunk (a chunk without a newline adds to
// the column of the one before).
func TestParallelStraddling(t *testing.T) {
	t.Parallel()
	values := []string{"jean.dupont@acme-corp.fr", "AKIAZ7XQ4LMN2PQRST3U", "+33 6 12 34 56 78", "CONFIDENTIAL", "password = \"Xk9#mP2$vLq7\""}
	cases := []struct {
		name   string
		filler string // repeated before and between the values
		every  int    // a value after every this many fillers
	}{
		{"ascii lines", "the report\n", 7},
		{"runes", "nœud — 日本語 ", 5},
		{"one long line", "x ", 23},
		{"crlf", "line\r\n", 9},
		{"dense", "; ", 1},
	}
	for _, cfg := range []struct{ chunk, overlap int }{{256, 64}, {300, 70}, {512, 128}} {
		s := smallChunks(t, cfg.chunk, cfg.overlap)
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%d", c.name, cfg.chunk), func(t *testing.T) {
				found := 0
				for shift := 0; shift < 40; shift += 3 {
					var b strings.Builder
					b.WriteString(strings.Repeat("·", shift))
					for i := 0; b.Len() < 6*cfg.chunk; i++ {
						b.WriteString(c.filler)
						if i%c.every == 0 {
							b.WriteString(values[i%len(values)])
							b.WriteByte(' ')
						}
					}
					found += compareParallel(t, s, []byte(b.String()))
				}
				if found == 0 {
					t.Fatal("no findings: the case tests nothing")
				}
			})
		}
	}
}

// TestParallelRandom compares on seeded random texts with planted values,
// invalid UTF-8 and NUL bytes, across chunk sizes.
func TestParallelRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(15, 2026))
	for i := range 40 {
		chunk := 256 + r.IntN(800)
		overlap := 64 + r.IntN(chunk/4-32)
		s := smallChunks(t, chunk, overlap)
		text := randomText(r, 500+r.IntN(12*chunk))
		if compareParallel(t, s, text) == 0 && len(text) > 2000 {
			t.Fatalf("text %d: no findings", i)
		}
	}
}

// TestParallelDefaultChunks runs the default chunk size on a text of a few
// chunks, the path real files take.
func TestParallelDefaultChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("a few MiB")
	}
	t.Parallel()
	s, _ := New(Options{HashKey: []byte("k")})
	r := rand.New(rand.NewPCG(7, 8))
	text := randomText(r, 3*s.chunk+12345)
	if compareParallel(t, s, text) == 0 {
		t.Fatal("no findings")
	}
}

// failAfter yields n bytes of text, then err.
type failAfter struct {
	r   io.Reader
	n   int
	err error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	p = p[:min(len(p), f.n)]
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

// TestScanReaderEachErrors: a read error comes back wrapped after the
// findings of the chunks before it; an error of fn stops the scan and is
// returned; a done context returns its error.
func TestScanReaderEachErrors(t *testing.T) {
	t.Parallel()
	s := smallChunks(t, 512, 128)
	r := rand.New(rand.NewPCG(1, 1))
	text := randomText(r, 40*512)
	want := serialScan(s, text)
	ctx := context.Background()

	disk := errors.New("disk on fire")
	var got []Finding
	err := s.scanReaderEach(ctx, &failAfter{r: bytes.NewReader(text), n: 20 * 512, err: disk}, 2, func(fs []Finding) error {
		got = append(got, fs...)
		return nil
	})
	if !errors.Is(err, disk) || !strings.HasPrefix(err.Error(), "classifiers: read: ") {
		t.Fatalf("read error: %v", err)
	}
	if len(got) == 0 || len(got) >= len(want) || !reflect.DeepEqual(got, want[:len(got)]) {
		t.Fatalf("read error: %d findings, not a prefix of the %d of the whole text", len(got), len(want))
	}

	stop := errors.New("enough")
	calls := 0
	err = s.scanReaderEach(ctx, bytes.NewReader(text), 3, func([]Finding) error {
		calls++
		return stop
	})
	if err != stop || calls != 1 {
		t.Fatalf("fn error: %v after %d calls", err, calls)
	}
	err = s.scanEach(ctx, text, 3, func([]Finding) error { return stop })
	if err != stop {
		t.Fatalf("scanEach fn error: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = s.scanReaderEach(cctx, bytes.NewReader(text), 2, func([]Finding) error {
		calls++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("cancelled: %v after %d calls", err, calls)
	}
	if fs, err := s.Scan(cctx, text); !errors.Is(err, context.Canceled) || fs != nil {
		t.Fatalf("Scan on a done context: %d findings, %v", len(fs), err)
	}
}

// FuzzParallelScan: any input, any chunk size, the parallel scans give the
// serial loops' findings.
func FuzzParallelScan(f *testing.F) {
	f.Add([]byte("jean.dupont@acme-corp.fr\nCONFIDENTIAL\n"), uint16(0))
	f.Add(randomText(rand.New(rand.NewPCG(1, 2)), 4000), uint16(300))
	f.Add([]byte(strings.Repeat("nœud AKIAZ7XQ4LMN2PQRST3U ", 100)), uint16(77))
	f.Add([]byte(strings.Repeat("\xff\x00\n+33 6 12 34 56 78 ", 80)), uint16(999))
	s := smallChunks(f, 256, 64) // its sizes set per input: the calls are sequential
	f.Fuzz(func(t *testing.T, data []byte, size uint16) {
		s.chunk = 256 + int(size)%1024
		s.overlap = 64 + int(size)%(s.chunk/4-32)
		compareParallel(t, s, data)
	})
}

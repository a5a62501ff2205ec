package classifiers

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
)

// Inputs longer than one chunk are scanned on every core: the chunks (the
// same chunks, with the same overlap, as a scan on one core would cut) go
// to GOMAXPROCS workers, and their findings are handed on in the order of
// the chunks. Each worker places its findings relative to the start of
// its chunk's accepted span (line 1, column 1 there) and measures the
// span (newlines, runes after the last one); the consumer, which sees the
// chunks in order, knows the line and column where each span starts and
// shifts the findings. The result is the serial scan's, field for field.

// chunkWork is one chunk of a parallel scan.
type chunkWork struct {
	buf                []byte
	base               int // stream offset of buf[0]
	acceptLo, acceptHi int // in buf

	fs  []Finding
	err error
	// lines and col measure the accepted span: its newlines, and the
	// runes after its last newline (after its start when it has none).
	lines, col int
	done       chan struct{}
}

// runChunk scans the chunk with a tracker starting at its accepted span.
func (s *Scanner) runChunk(ctx context.Context, w *chunkWork) {
	defer close(w.done)
	if err := ctx.Err(); err != nil {
		w.err = err
		return
	}
	pos := &posTracker{off: w.base + w.acceptLo, line: 1}
	w.fs, w.err = s.scanChunk(ctx, w.buf, w.acceptLo, w.acceptHi, pos, w.base)
	w.fs = sortFindings(w.fs)
	pos.advance(w.buf, w.base, w.base+w.acceptHi)
	w.lines, w.col = pos.line-1, pos.col
}

// chunkPositions shifts the findings of consecutive chunks from their
// chunk-relative lines and columns to the stream's.
type chunkPositions struct {
	line, col int // at the start of the next chunk's accepted span
}

func (p *chunkPositions) shift(w *chunkWork) {
	for i := range w.fs {
		f := &w.fs[i]
		if f.Line == 1 {
			f.Column += p.col
		}
		f.Line += p.line - 1
		f.EndLine += p.line - 1
	}
	if w.lines > 0 {
		p.line += w.lines
		p.col = w.col
	} else {
		p.col += w.col
	}
}

// scanWorkers is the number of chunks scanned at once.
func scanWorkers() int { return runtime.GOMAXPROCS(0) }

// parallelScan scans the chunks next yields (nil when there are no more;
// an error when the input failed) on workers goroutines, at most
// 2*workers+2 chunks in flight (so that a worker done with its chunk
// finds another while a slower chunk holds up the ones after it), and
// hands the findings of each chunk, in stream order, to fn. release,
// when not nil, gets back each chunk once its findings were handed on (to
// reuse its buffer).
//
// As the serial loop, a chunk's own error (a custom pattern's timeout)
// does not stop the scan: the first one is returned at the end. An error
// of next ends the scan after the chunks before it were handed on, and is
// returned in its place; so is ctx.Err() when ctx is done, and fn's error
// at once.
func (s *Scanner) parallelScan(ctx context.Context, workers int, next func() (*chunkWork, error), fn func([]Finding) error, release func(*chunkWork)) error {
	inner, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan *chunkWork)
	order := make(chan *chunkWork, 2*workers)
	var nextErr error // set before order is closed
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for w := range jobs {
				s.runChunk(inner, w)
			}
		})
	}
	go func() {
		defer close(order)
		defer close(jobs)
		for inner.Err() == nil {
			w, err := next()
			if err != nil {
				nextErr = err
			}
			if w == nil {
				return
			}
			w.done = make(chan struct{})
			order <- w // never blocks for good: the consumer drains order
			jobs <- w
		}
	}()
	var stop, chunkErr error
	pos := chunkPositions{line: 1}
	for w := range order {
		<-w.done
		switch {
		case stop != nil:
		case ctx.Err() != nil:
			stop = ctx.Err()
		default:
			pos.shift(w)
			if w.err != nil && chunkErr == nil {
				chunkErr = w.err
			}
			if len(w.fs) > 0 {
				stop = fn(w.fs)
			}
		}
		if stop != nil {
			cancel()
		}
		w.fs = nil
		if release != nil {
			release(w)
		}
	}
	wg.Wait()
	switch {
	case stop != nil:
		return stop
	case ctx.Err() != nil:
		return ctx.Err()
	case nextErr != nil:
		return nextErr
	}
	return chunkErr
}

// scanEach scans text in overlapping chunks on every core (cut as the
// serial loop of Scan cuts them), handing the findings of each chunk to
// fn in order of Start, on workers goroutines.
func (s *Scanner) scanEach(ctx context.Context, text []byte, workers int, fn func([]Finding) error) error {
	base := 0
	done := false
	next := func() (*chunkWork, error) {
		if done {
			return nil, nil
		}
		end := min(base+s.chunk, len(text))
		w := &chunkWork{buf: text[base:end], base: base, acceptHi: end - base}
		if base > 0 {
			w.acceptLo = s.overlap
		}
		if end == len(text) {
			done = true
		} else {
			w.acceptHi -= s.overlap
			base += w.acceptHi - s.overlap
		}
		return w, nil
	}
	return s.parallelScan(ctx, workers, next, fn, nil)
}

// ScanReaderEach scans everything r yields, in chunks with overlap scanned
// on every core (GOMAXPROCS), and hands the findings to fn a chunk at a
// time, in order of Start: the concatenation of the slices fn sees is what
// ScanReader returns, field for field. It holds about 2*GOMAXPROCS+2
// chunks (1 MiB each) and never more than one chunk's findings per chunk
// in flight, so memory does not grow with the stream nor with its
// findings. fn runs on the calling goroutine, one call at a time, and may
// keep the slice; an error from fn ends the scan and is returned.
//
// Like ScanReader it returns a *TimeoutError, at the end, when a custom
// pattern timed out (the other findings are all handed on), a read error
// once the findings before it were handed on, and ctx.Err() when ctx is
// done.
func (s *Scanner) ScanReaderEach(ctx context.Context, r io.Reader, fn func([]Finding) error) error {
	return s.scanReaderEach(ctx, r, scanWorkers(), fn)
}

// scanReaderEach is ScanReaderEach on workers goroutines.
func (s *Scanner) scanReaderEach(ctx context.Context, r io.Reader, workers int, fn func([]Finding) error) error {
	free := make(chan []byte, 2*workers+2)
	get := func() []byte {
		select {
		case b := <-free:
			return b[:0]
		default:
			return make([]byte, 0, s.chunk)
		}
	}
	var carry []byte // the bytes the next chunk starts with
	base := 0        // stream offset of carry[0]
	done := false
	next := func() (*chunkWork, error) {
		if done {
			return nil, nil
		}
		buf := append(get(), carry...)
		n, rerr := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		eof := rerr == io.EOF || rerr == io.ErrUnexpectedEOF
		if rerr != nil && !eof {
			done = true
			return nil, fmt.Errorf("classifiers: read: %w", rerr)
		}
		w := &chunkWork{buf: buf, base: base, acceptHi: len(buf)}
		if base > 0 {
			w.acceptLo = s.overlap
		}
		if eof {
			done = true
			return w, nil
		}
		w.acceptHi -= s.overlap
		keep := w.acceptHi - s.overlap
		carry = append(carry[:0], buf[keep:]...)
		base += keep
		return w, nil
	}
	release := func(w *chunkWork) {
		select {
		case free <- w.buf:
		default:
		}
	}
	return s.parallelScan(ctx, workers, next, fn, release)
}

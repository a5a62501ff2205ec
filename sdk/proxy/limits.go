package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aishield/aishield/internal/sse"
)

// Defaults of the resource limits of Options.
const (
	// DefaultMaxConcurrent bounds the API requests served at once.
	DefaultMaxConcurrent = 64
	// DefaultMaxInFlightBytes bounds the sum of the request bodies being
	// served: four bodies of DefaultMaxBody (Options.MaxInFlightBytes is
	// four of Options.MaxBody by default).
	DefaultMaxInFlightBytes = 4 * DefaultMaxBody
	// DefaultMaxStreamBytes bounds one streamed response.
	DefaultMaxStreamBytes = 64 << 20
	// DefaultBodyTimeout bounds the reading of one request body.
	DefaultBodyTimeout = 30 * time.Second
)

// admitWait is how long a request over the concurrency limit waits for a
// slot before it is answered 429: long enough to smooth a burst, short
// enough that no queue builds up behind a slow upstream.
const admitWait = 250 * time.Millisecond

// reserveStep is the granularity in which a body of unknown length
// reserves its share of Options.MaxInFlightBytes as it is read.
const reserveStep = 256 << 10

// Limit names, the label of aishield_proxy_limit_total.
const (
	limitConcurrency   = "concurrency"
	limitInFlightBytes = "in_flight_bytes"
	limitBodySize      = "body_size"
	limitBodyTimeout   = "body_timeout"
	limitStreamBytes   = "stream_bytes"
)

// limiter admits requests: at most max at once, and bodies summing to at
// most maxBytes. Safe for concurrent use.
type limiter struct {
	slots    chan struct{} // nil: no bound on requests
	maxBytes int64         // <= 0: no bound on bytes
	bytes    atomic.Int64
}

func newLimiter(maxConcurrent int, maxBytes int64) *limiter {
	l := &limiter{maxBytes: maxBytes}
	if maxConcurrent > 0 {
		l.slots = make(chan struct{}, maxConcurrent)
	}
	return l
}

// acquire takes a request slot, waiting at most admitWait (and no longer
// than ctx); false when none freed up.
func (l *limiter) acquire(ctx context.Context) bool {
	if l.slots == nil {
		return true
	}
	select {
	case l.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(admitWait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (l *limiter) release() {
	if l.slots != nil {
		<-l.slots
	}
}

// reserve adds n bytes to those in flight; false, adding nothing, when
// that would exceed the bound.
func (l *limiter) reserve(n int64) bool {
	if l.maxBytes <= 0 {
		l.bytes.Add(n)
		return true
	}
	for {
		cur := l.bytes.Load()
		if cur+n > l.maxBytes {
			return false
		}
		if l.bytes.CompareAndSwap(cur, cur+n) {
			return true
		}
	}
}

func (l *limiter) unreserve(n int64) { l.bytes.Add(-n) }

// errInFlight is the error a request body's read returns when reading
// more would exceed Options.MaxInFlightBytes.
var errInFlight = errors.New("the proxy's bytes in flight are at their limit")

// clientBody is the caller's request body as the guard reads it. It
// reserves the bytes read against Options.MaxInFlightBytes (beyond what
// the declared Content-Length reserved), reports a read error as the
// client's (*clientBodyError) rather than the guard's, and lifts the body
// read deadline once the body is read, so that a long stream written back
// is not cut by it.
type clientBody struct {
	rc       io.ReadCloser
	lim      *limiter
	reserved int64 // bytes reserved, released by the call's end
	read     int64
	done     func() // lifts the read deadline at the body's end; called once
	once     sync.Once
	mu       sync.Mutex
}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.mu.Lock()
		b.read += int64(n)
		short := b.read - b.reserved
		if short > 0 {
			// Reserve ahead in steps, or just what was read when a step
			// does not fit.
			step := max(short, reserveStep)
			if !b.lim.reserve(step) {
				if step = short; !b.lim.reserve(step) {
					b.mu.Unlock()
					return 0, errInFlight
				}
			}
			b.reserved += step
		}
		b.mu.Unlock()
	}
	if errors.Is(err, io.EOF) {
		// Read whole: the deadline has done its work. (After a failed
		// read it stays: net/http then discards what is left of the body,
		// which must not wait for ever.)
		if b.done != nil {
			b.once.Do(b.done)
		}
	} else if err != nil {
		err = &clientBodyError{err: err}
	}
	return n, err
}

// Close does nothing: the guard's Transport closes the body it read, but
// net/http closes the request body itself once the handler returns, and
// closing it earlier would discard what the client has not sent yet
// while the handler waits.
func (b *clientBody) Close() error { return nil }

// releaseAll returns the body's reservation; called once the call ends.
func (b *clientBody) releaseAll() {
	b.mu.Lock()
	n := b.reserved
	b.reserved = 0
	b.mu.Unlock()
	b.lim.unreserve(n)
}

// clientBodyError reports a request body that could not be read.
type clientBodyError struct{ err error }

func (e *clientBodyError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *clientBodyError) Unwrap() error { return e.err }

// timedOut reports whether a body read failed on its deadline.
func (e *clientBodyError) timedOut() bool {
	var ne net.Error
	return errors.Is(e.err, os.ErrDeadlineExceeded) || (errors.As(e.err, &ne) && ne.Timeout())
}

// streamCap cuts streamed (text/event-stream) upstream responses longer
// than max bytes. It sits below the guard's Transport, which reads the
// cut as a stream it cannot parse: it ends the stream with an
// aishield_guard_error event, releases nothing it did not verify, and its
// audit record names the failure (stage "stream").
type streamCap struct {
	rt    http.RoundTripper
	max   int64
	onCut func()
}

func (t *streamCap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || t.max <= 0 {
		return resp, err
	}
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Type"))), "text/event-stream") {
		resp.Body = &cappedBody{rc: resp.Body, left: t.max, max: t.max, onCut: t.onCut}
	}
	return resp, nil
}

// cappedBody is a stream body that fails once more than max bytes came.
type cappedBody struct {
	rc    io.ReadCloser
	left  int64
	max   int64
	lines int
	err   error
	onCut func()
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.lines += bytes.Count(p[:n], []byte{'\n'})
		b.err = &sse.Error{Line: b.lines + 1, Msg: fmt.Sprintf("stream longer than %d bytes, the proxy's limit (max stream bytes)", b.max)}
		b.left = 0
		if b.onCut != nil {
			b.onCut()
		}
		if n > 0 {
			return n, nil
		}
		return 0, b.err
	}
	b.left -= int64(n)
	b.lines += bytes.Count(p[:n], []byte{'\n'})
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

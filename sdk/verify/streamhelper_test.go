package verify

import (
	"context"

	"github.com/aishield/aishield/sdk/inbound"
)

// Stream drives a session as the guard's stream filter does, for the tests
// of this package: it verifies a streamed response and releases only
// verified text: it
// holds back the session's trailing window and, once a signal whose action
// is block is found, stops releasing anything and reports the verdict.
// A Stream is not safe for concurrent use.
type Stream struct {
	v        *Verifier
	s        *session
	released int
	verdict  *Verdict
	stopped  bool
}

// Stream begins the verification of a streamed response to ex.
func (v *Verifier) Stream(ctx context.Context, ex *inbound.Exchange) (*Stream, error) {
	s, err := v.begin(ctx, ex)
	if err != nil {
		return nil, err
	}
	return &Stream{v: v, s: s, verdict: v.verdict(ex.ID, nil)}, nil
}

// Write feeds the next piece of the stream and returns the text that is now
// verified and may be passed on. When the verdict blocks, Write returns
// stop = true and no text, now and afterwards.
func (st *Stream) Write(ctx context.Context, d inbound.Delta) (release string, stop bool, err error) {
	if st.stopped {
		return "", true, nil
	}
	sigs, err := st.s.Write(ctx, d)
	st.v.add(st.verdict, sigs)
	if err != nil || st.verdict.Blocked {
		st.stopped = st.verdict.Blocked
		return "", st.stopped, err
	}
	upto := len(st.s.buf) - st.s.HoldBack()
	if upto <= st.released {
		return "", false, nil
	}
	out := string(st.s.buf[st.released:upto])
	st.released = upto
	return out, false, nil
}

// Close ends the stream: it verifies the held-back text and the metadata,
// records the exchange, and returns the rest of the text (none when the
// verdict blocks) with the verdict.
func (st *Stream) Close(ctx context.Context, end inbound.End) (rest string, vd *Verdict, err error) {
	if st.s.closed {
		return "", st.verdict, nil
	}
	// Text this Stream stopped releasing was refused: it must become
	// nobody's source, and its end was not the engine's.
	end.Refused = end.Refused || st.stopped
	sigs, err := st.s.Close(ctx, end)
	st.v.add(st.verdict, sigs)
	if err != nil || st.verdict.Blocked || st.stopped {
		st.stopped = true
		return "", st.verdict, err
	}
	rest = string(st.s.buf[st.released:])
	st.released = len(st.s.buf)
	return rest, st.verdict, nil
}

// Verdict returns the verdict so far.
func (st *Stream) Verdict() *Verdict { return st.verdict }

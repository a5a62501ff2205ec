package verify

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/aishield/aishield/policies"
)

// Exchanges aborted mid-way are a source of contamination of their own. In
// a paged KV cache, a request aborted during prefill may have its pages
// freed while a chunk of its prompt is still being written; the write then
// lands in the pages of whichever request takes them next, and that
// request's answer reads the aborted request's words (the fault
// pagedcache.FaultAbortReuseRace reproduces). They come a few words at a
// time, in fragments shorter than the MinSpan any other source needs.
//
// So an exchange that ended without a complete answer is marked in the
// store for Options.AbortWindow (a key of its own per time slot, under a
// pseudo-exchange that holds nothing else, so that processes sharing a
// Redis store see the mark too), and a run of text shared with a marked
// exchange's request is contamination once fingerprints that at most MaxDocFreq/2 other
// exchanges hold cover Options.MinAbortSpan bytes of it (32: any fragment
// of 46 bytes or more of rare wording), instead of MinSpan (48: 62 bytes),
// with the same informative words and the same neutral text (own request,
// boilerplate, common words) as any run. The bar is lower only against
// those few sources, and only for a while: TestQuality aborts one exchange
// in 21 and measures both what it catches and that clean answers stay
// clean.

// abortKey is the store key that marks an exchange aborted in time slot
// slot (see abortSlot). The domain tag keeps it apart from text
// fingerprints, canaries and entities.
func abortKey(exchange string, slot int64) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(slot))
	sum := sha256.Sum256(append([]byte("aishield-aborted\x00"+exchange+"\x00"), b[:]...))
	return binary.BigEndian.Uint64(sum[:8])
}

// abortSlot returns the time slot of t: a sixth of the window (at least a
// second). A mark is looked for in the slots the window covers, so that
// its end does not depend on how a store expires what it records (a
// store may keep a record past its TTL: a Store implementation is only
// asked to forget it eventually, and a mark recorded again renews it).
func (v *Verifier) abortSlot(t time.Time) int64 {
	return t.UnixNano() / int64(max(time.Second, v.opts.AbortWindow/6))
}

// abortHolder is the pseudo-exchange under which the mark of exchange is
// recorded (a store renews an exchange's TTL when it records more: the
// mark must not change the exchange's own memory).
func abortHolder(exchange string) string { return "aborted:" + exchange }

// MarkAborted records that the exchange with this ID ended without a
// complete answer: the caller gave up, the provider answered an error or a
// finish reason of "abort", or the stream was cut. For Options.AbortWindow
// (rounded up to a sixth of it), a run of text shared with its request is
// contamination from MinAbortSpan bytes on (see Options.MinAbortSpan). The
// mark is kept in the store, so that every Verifier sharing it (a Redis
// store) applies the lower bar; its time slots are wall-clock, so such
// processes need synchronised clocks (a skew of seconds only moves the
// window's ends by as much).
//
// The guard need not call it: a session closed with End.Truncated or an
// abort-like FinishReason ("abort", "aborted", "error", "cancelled",
// "canceled") marks its exchange itself, unless End.Refused says the guard
// refused the answer (then the end was the guard's doing). Only the
// exchange's request is a suspect source: an answer that did not end
// cleanly is never recorded. Safe for concurrent use.
func (v *Verifier) MarkAborted(ctx context.Context, exchangeID string) error {
	if exchangeID == "" {
		return errors.New("verify: mark of an exchange without ID")
	}
	if v.opts.AbortWindow <= 0 || !v.on(policies.SignalCrossExchange) {
		return nil
	}
	key := abortKey(exchangeID, v.abortSlot(v.now()))
	if err := v.store.Record(ctx, abortHolder(exchangeID), []uint64{key}, 2*v.opts.AbortWindow); err != nil {
		return fmt.Errorf("verify: marking exchange %s aborted: %w", exchangeID, err)
	}
	return nil
}

// fromAborted reports whether r's source, the request of exchange id, was
// marked aborted less than AbortWindow ago (see MarkAborted), asking the
// store once per run.
func (s *session) fromAborted(ctx context.Context, r *run, id string) (bool, error) {
	v := s.v
	if r.aborted == 0 {
		r.aborted = -1
		if v.opts.AbortWindow <= 0 {
			return false, nil
		}
		now := v.now()
		var keys [8]uint64
		n := 0
		for slot := v.abortSlot(now.Add(-v.opts.AbortWindow)); slot <= v.abortSlot(now) && n < len(keys); slot++ {
			keys[n] = abortKey(id, slot)
			n++
		}
		hs, err := v.store.Lookup(ctx, keys[:n])
		if err != nil {
			return false, fmt.Errorf("verify: abort mark lookup: %w", err)
		}
		for _, h := range hs {
			if h.Count > 0 {
				r.aborted = 1
			}
		}
	}
	return r.aborted == 1, nil
}

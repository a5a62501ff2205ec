package verify

import (
	"context"
	"sync"
	"time"
)

// Exchanges aborted mid-way are a source of contamination of their own. In
// a paged KV cache, a request aborted during prefill may have its pages
// freed while a chunk of its prompt is still being written; the write then
// lands in the pages of whichever request takes them next, and that
// request's answer reads the aborted request's words (the fault
// pagedcache.FaultAbortReuseRace reproduces). They come a few words at a
// time, in fragments shorter than the MinSpan any other source needs.
//
// So the Verifier remembers, for Options.AbortWindow, the exchanges it saw
// end without a complete answer, and a run of text shared with one of them
// is contamination once fingerprints that at most MaxDocFreq/2 other
// exchanges hold cover Options.MinAbortSpan bytes of it (32: any fragment
// of 46 bytes or more of rare wording), instead of MinSpan (48: 62 bytes),
// with the same informative words and the same neutral text (own request,
// boilerplate, common words) as any run. The bar is lower only against
// those few sources, and only for a while: TestQuality aborts one exchange
// in 21 and measures both what it catches and that clean answers stay
// clean.

// maxAborted bounds the aborted exchanges remembered (the oldest go first).
const maxAborted = 4096

// abortedSet remembers the exchanges a Verifier saw aborted, each until its
// mark expires. It is safe for concurrent use.
type abortedSet struct {
	mu    sync.Mutex
	until map[string]time.Time // exchange ID -> end of its window
	order []string             // marking order, for the bound and expiry
}

// mark records id as aborted until now+window.
func (a *abortedSet) mark(id string, now time.Time, window time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.until == nil {
		a.until = map[string]time.Time{}
	}
	if _, ok := a.until[id]; !ok {
		a.order = append(a.order, id)
	}
	a.until[id] = now.Add(window)
	a.expireLocked(now)
}

// expireLocked drops expired marks from the front and keeps the bound
// (marks are made with one window, so the front expires first).
func (a *abortedSet) expireLocked(now time.Time) {
	n := 0
	for n < len(a.order) && (len(a.order)-n > maxAborted || !a.until[a.order[n]].After(now)) {
		delete(a.until, a.order[n])
		n++
	}
	if n > 0 {
		a.order = append(a.order[:0], a.order[n:]...)
	}
}

// has reports whether id is marked and its mark has not expired.
func (a *abortedSet) has(id string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.until[id]
	return ok && t.After(now)
}

// any reports whether some mark may still be live (a cheap test before
// naming a run's source).
func (a *abortedSet) any(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expireLocked(now)
	return len(a.order) > 0
}

// MarkAborted records that the exchange with this ID ended without a
// complete answer: the caller gave up, the provider answered an error or a
// finish reason of "abort", or the stream was cut. For Options.AbortWindow,
// a run of text shared with its request is contamination from MinAbortSpan
// bytes on (see Options.MinAbortSpan).
//
// The guard need not call it: a session closed with End.Truncated or a
// FinishReason of "abort" marks its exchange itself. Marks are kept by this
// Verifier only, not in a shared store. Safe for concurrent use.
func (v *Verifier) MarkAborted(ctx context.Context, exchangeID string) {
	if exchangeID != "" && v.opts.AbortWindow > 0 {
		v.aborted.mark(exchangeID, v.now(), v.opts.AbortWindow)
	}
}

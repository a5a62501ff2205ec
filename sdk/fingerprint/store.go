package fingerprint

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Store remembers which exchanges hold which fingerprints, for a while.
//
// Implementations must be safe for concurrent use, bound their memory, and
// forget an exchange once its TTL has passed. The holder lists they return
// may be truncated (see [Holders]); the counts are what tells boilerplate
// (fingerprints held by many exchanges) from foreign material.
type Store interface {
	// Record remembers that exchange holds hashes, until ttl from now.
	// Recording the same exchange again adds hashes and renews its TTL.
	Record(ctx context.Context, exchange string, hashes []uint64, ttl time.Duration) error
	// Lookup returns, for each of hashes (same order), the exchanges that
	// hold it.
	Lookup(ctx context.Context, hashes []uint64) ([]Holders, error)
}

// Holders are the exchanges known to hold one fingerprint.
type Holders struct {
	// Count is the number of live exchanges holding the fingerprint (its
	// document frequency). It saturates at the store's bound on holders
	// per fingerprint.
	Count int
	// Exchanges are some of those exchanges (at most the store's
	// MaxHolders), most recent first.
	Exchanges []string
}

// Default bounds of the stores.
const (
	DefaultTTL          = 15 * time.Minute
	DefaultMaxExchanges = 10000
	DefaultMaxEntries   = 8 << 20
	DefaultMaxHolders   = 16
)

// MemoryOptions configure a [MemoryStore]. The zero value uses the defaults.
type MemoryOptions struct {
	// MaxExchanges bounds the number of remembered exchanges; the oldest
	// are forgotten first. 0 means DefaultMaxExchanges.
	MaxExchanges int
	// MaxEntries bounds the total number of (fingerprint, exchange)
	// entries; the oldest exchanges are forgotten first. 0 means
	// DefaultMaxEntries.
	MaxEntries int
	// MaxHolders bounds the exchange IDs returned per fingerprint (and the
	// number kept); counts stay exact. 0 means DefaultMaxHolders.
	MaxHolders int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MemoryStore is a [Store] in process memory, bounded in exchanges and
// entries, with a TTL per exchange. It is safe for concurrent use.
type MemoryStore struct {
	opts MemoryOptions

	mu      sync.Mutex
	seq     uint32
	byID    map[string]*memExchange
	bySeq   map[uint32]*memExchange
	order   *list.List // *memExchange, least recently recorded first
	index   map[uint64]*memEntry
	entries int
}

type memExchange struct {
	id      string
	seq     uint32
	hashes  []uint64
	expires time.Time
	elem    *list.Element
}

type memEntry struct {
	count   int32
	holders []uint32 // exchange seqs, oldest first, at most MaxHolders
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(opts MemoryOptions) *MemoryStore {
	if opts.MaxExchanges <= 0 {
		opts.MaxExchanges = DefaultMaxExchanges
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultMaxEntries
	}
	if opts.MaxHolders <= 0 {
		opts.MaxHolders = DefaultMaxHolders
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &MemoryStore{
		opts:  opts,
		byID:  make(map[string]*memExchange),
		bySeq: make(map[uint32]*memExchange),
		order: list.New(),
		index: make(map[uint64]*memEntry),
	}
}

var _ Store = (*MemoryStore)(nil)

// Record implements [Store].
func (s *MemoryStore) Record(ctx context.Context, exchange string, hashes []uint64, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	ex := s.byID[exchange]
	if ex == nil {
		s.seq++
		ex = &memExchange{id: exchange, seq: s.seq}
		ex.elem = s.order.PushBack(ex)
		s.byID[exchange] = ex
		s.bySeq[ex.seq] = ex
	} else {
		s.order.MoveToBack(ex.elem)
	}
	ex.expires = now.Add(ttl)
	for _, h := range hashes {
		e := s.index[h]
		if e == nil {
			e = &memEntry{}
			s.index[h] = e
		} else if n := len(e.holders); n > 0 && e.holders[n-1] == ex.seq {
			continue // already held (fingerprints repeat within a text)
		} else if s.holds(e, ex.seq) {
			continue
		}
		e.count++
		if len(e.holders) < s.opts.MaxHolders {
			e.holders = append(e.holders, ex.seq)
		} else {
			// Keep the most recent holders.
			copy(e.holders, e.holders[1:])
			e.holders[len(e.holders)-1] = ex.seq
		}
		ex.hashes = append(ex.hashes, h)
		s.entries++
	}
	s.bound()
	return nil
}

// holds reports whether seq is among e's holders. When e has more holders
// than it keeps, an exchange recorded earlier may be missing from the list;
// Record then counts it twice, which only makes the fingerprint look more
// common (never foreign).
func (s *MemoryStore) holds(e *memEntry, seq uint32) bool {
	for _, h := range e.holders {
		if h == seq {
			return true
		}
	}
	return false
}

// Lookup implements [Store].
func (s *MemoryStore) Lookup(ctx context.Context, hashes []uint64) ([]Holders, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := s.opts.Now()
	out := make([]Holders, len(hashes))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	for i, h := range hashes {
		e := s.index[h]
		if e == nil {
			continue
		}
		out[i].Count = int(e.count)
		ids := make([]string, 0, len(e.holders))
		for j := len(e.holders) - 1; j >= 0; j-- {
			if ex := s.bySeq[e.holders[j]]; ex != nil {
				ids = append(ids, ex.id)
			}
		}
		out[i].Exchanges = ids
	}
	return out, nil
}

// Len returns the number of remembered exchanges and entries.
func (s *MemoryStore) Len() (exchanges, entries int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID), s.entries
}

// expire forgets exchanges whose TTL has passed. Exchanges are kept in order
// of last recording; with one TTL for all, the expired ones are at the
// front. An exchange recorded with a shorter TTL than a later one is
// forgotten when it reaches the front.
func (s *MemoryStore) expire(now time.Time) {
	for el := s.order.Front(); el != nil; el = s.order.Front() {
		ex := el.Value.(*memExchange)
		if ex.expires.After(now) {
			return
		}
		s.forget(ex)
	}
}

// bound forgets the oldest exchanges until the store is within its bounds.
func (s *MemoryStore) bound() {
	for (len(s.byID) > s.opts.MaxExchanges || s.entries > s.opts.MaxEntries) && s.order.Len() > 1 {
		s.forget(s.order.Front().Value.(*memExchange))
	}
}

func (s *MemoryStore) forget(ex *memExchange) {
	s.order.Remove(ex.elem)
	delete(s.byID, ex.id)
	delete(s.bySeq, ex.seq)
	for _, h := range ex.hashes {
		e := s.index[h]
		if e == nil {
			continue
		}
		e.count--
		for j, seq := range e.holders {
			if seq == ex.seq {
				e.holders = append(e.holders[:j], e.holders[j+1:]...)
				break
			}
		}
		if e.count <= 0 {
			delete(s.index, h)
		}
	}
	s.entries -= len(ex.hashes)
}

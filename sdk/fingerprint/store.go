package fingerprint

import (
	"context"
	"slices"
	"sync"
	"time"
	"unsafe"
)

// Store remembers which exchanges hold which fingerprints, for a while.
//
// Implementations must be safe for concurrent use, bound their memory, and
// forget an exchange once its TTL has passed. The holder lists they return
// may be truncated (see [Holders]); the counts are what tells boilerplate
// (fingerprints held by many exchanges) from foreign material.
//
// Exchange names are opaque to a store: a caller may record several
// holders for one exchange. Package sdk/verify records an exchange's
// request and its answer under two names derived from the exchange ID
// (carrying the side and a keyed tag of the exchange's principal), so that
// a lookup tells, for each holder, where the material was and whose it
// was, without a second key per fingerprint.
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
	// MaxExchanges bounds the number of remembered exchanges; those
	// closest to expiry (the least recently recorded, when all share a
	// TTL) are forgotten first. 0 means DefaultMaxExchanges.
	MaxExchanges int
	// MaxEntries bounds the total number of (fingerprint, exchange)
	// entries; exchanges are forgotten in the same order. 0 means
	// DefaultMaxEntries.
	MaxEntries int
	// MaxHolders bounds the exchange IDs returned per fingerprint (and the
	// number kept); counts stay exact. 0 means DefaultMaxHolders.
	MaxHolders int
	// MaxBytes bounds the store's memory, as [MemoryStore.Bytes] counts it
	// (its index, exchange table, fingerprint lists, posting lists and
	// exchange IDs) with 1/64 of it left to the allocator's rounding: once
	// a recording takes it past that, exchanges are forgotten in the same
	// order as for MaxExchanges (those closest to expiry first) until it
	// fits or one exchange is left; [MemoryStore.Forgotten] counts them.
	// The index never shrinks, so the bound also stops it from growing:
	// its table grows (by a quarter) only while the grown table fits (exchanges are
	// forgotten first to make room, the one being recorded excepted). 0
	// means no bound but the others.
	MaxBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// MemoryStore is a [Store] in process memory, bounded in exchanges and
// entries, with a TTL per exchange. It is safe for concurrent use: lookups
// share a read lock (one per batch), recordings take the write lock.
//
// Exchange IDs are interned: each remembered exchange has a slot, and the
// index maps a fingerprint to its single holder's slot directly (most
// fingerprints have one holder) or to a shared posting list of slots.
// [MemoryStore.LookupRefs] answers in compact form without allocating.
type MemoryStore struct {
	opts MemoryOptions

	mu         sync.RWMutex
	seq        uint32
	byID       map[string]uint32 // exchange ID → slot
	bySeq      map[Ref]uint32    // Ref → slot
	exs        []memExchange     // slots
	freeSlots  []uint32
	head, tail uint32 // the slots that expire first and last, noSlot when none
	live       int
	index      hashIndex // hash → slot, or multiTag|posting
	posts      []memPosting
	freePosts  []uint32
	entries    int
	varBytes   int64  // bytes held outside the fixed-size tables (see Bytes)
	forgotten  uint64 // exchanges forgotten to keep within the bounds
}

// Memory accounted per remembered exchange besides its slot and its
// fingerprint list: its ID's entries in byID and bySeq (Swiss-table slots
// with their control bytes, at the tables' load) and the ID's string.
const (
	slotBytes    = int64(unsafe.Sizeof(memExchange{}))
	postingBytes = int64(unsafe.Sizeof(memPosting{}))
	mapBytes     = 64 // byID's entry (string header and value) and bySeq's, at 7/8 load, rounded up
)

// noSlot marks the ends of the list in order of expiry.
const noSlot = ^uint32(0)

// multiTag marks an index value that is a posting list, not a slot.
const multiTag = 1 << 31

type memExchange struct {
	id         string
	ref        Ref
	hashes     []uint64 // held fingerprints, for forgetting them
	expires    int64    // Unix nanoseconds
	prev, next uint32   // order of expiry
}

type memPosting struct {
	count   int32
	holders []uint32 // slots, oldest first, at most MaxHolders
}

// Ref is a compact reference to an exchange remembered by a
// [MemoryStore], returned by [MemoryStore.LookupRefs]. Refs are not reused
// (until 2³² recordings of new exchanges); [MemoryStore.ExchangeID] turns
// one back into its exchange ID while the store remembers it.
type Ref uint32

// Refs is the compact answer of a lookup, reusable from call to call so that
// lookups allocate nothing once it has grown.
type Refs struct {
	// Others[i] is the number of live exchanges, other than the excluded
	// one, holding hashes[i] (saturating like [Holders.Count]).
	Others []int32
	// Start indexes Holders: the other holders of hashes[i] are
	// Holders[Start[i]:Start[i+1]], most recent first, at most MaxHolders.
	Start []int32
	// Holders are the holders of all hashes, in order.
	Holders []Ref
}

// Of returns the other holders of hashes[i].
func (r *Refs) Of(i int) []Ref { return r.Holders[r.Start[i]:r.Start[i+1]] }

// Reset empties r for n hashes, keeping its memory.
func (r *Refs) Reset(n int) {
	r.Others = slices.Grow(r.Others[:0], n)[:n]
	clear(r.Others)
	r.Start = append(r.Start[:0], 0)
	r.Holders = r.Holders[:0]
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
		byID:  make(map[string]uint32),
		bySeq: make(map[Ref]uint32),
		head:  noSlot,
		tail:  noSlot,
		index: newHashIndex(1024),
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
	now := s.opts.Now().UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	slot, ok := s.byID[exchange]
	if !ok {
		slot = s.newSlot(exchange)
	} else {
		s.unlink(slot)
	}
	ex := &s.exs[slot]
	ex.expires = now + int64(ttl)
	s.insert(slot)
	s.reserve(slot, len(hashes))
	ex = &s.exs[slot]
	capBefore := cap(ex.hashes)
	if ex.hashes == nil {
		ex.hashes = slices.Grow([]uint64(nil), len(hashes)) // its capacity is the size class allocated
	}
	if s.index.full(len(hashes)) {
		s.rebuild(s.index.grownSize(len(hashes)))
	}
	for _, h := range hashes {
		added, ok := s.hold(slot, h)
		for !ok {
			s.rebuild(s.index.grownSize(len(hashes)))
			added, ok = s.hold(slot, h)
		}
		if !added {
			continue
		}
		ex = &s.exs[slot]
		ex.hashes = append(ex.hashes, h)
		s.entries++
	}
	if ex = &s.exs[slot]; cap(ex.hashes) > len(ex.hashes)+len(ex.hashes)/4+16 {
		ex.hashes = slices.Clip(slices.Clone(ex.hashes)) // no slack kept for long
	}
	s.varBytes += 8 * int64(cap(ex.hashes)-capBefore)
	s.bound()
	return nil
}

// hold makes slot a holder of h in the index. It reports whether that
// added an entry (false when slot already holds h), and ok false when the
// index could not take h and must be rebuilt (see [hashIndex.ref]).
func (s *MemoryStore) hold(slot uint32, h uint64) (added, ok bool) {
	vp, found := s.index.ref(h, slot)
	switch {
	case vp == nil:
		return false, false
	case !found:
		return true, true // inserted with slot as its single holder
	}
	v := *vp
	if v&multiTag == 0 {
		if v == slot {
			return false, true // already held (fingerprints repeat within a text)
		}
		*vp = multiTag | s.newPosting(v, slot)
		return true, true
	}
	p := &s.posts[v&^multiTag]
	if n := len(p.holders); n > 0 && p.holders[n-1] == slot || slices.Contains(p.holders, slot) {
		// Already held. When p has more holders than it keeps, an
		// exchange recorded earlier may be missing from the list; it is
		// then counted twice, which only makes the fingerprint look more
		// common (never foreign).
		return false, true
	}
	p.count++
	if len(p.holders) < s.opts.MaxHolders {
		c := cap(p.holders)
		p.holders = append(p.holders, slot)
		s.varBytes += 4 * int64(cap(p.holders)-c)
	} else {
		// Keep the most recent holders.
		copy(p.holders, p.holders[1:])
		p.holders[len(p.holders)-1] = slot
	}
	return true, true
}

// rebuild puts the index in a table of size slots (or more, if an entry
// cannot be put near its home in it): the index keeps only part of each
// hash, so it is rebuilt from the fingerprint lists of the exchanges, in
// order of expiry, posting lists included. Its cost is that of recording
// every remembered fingerprint once; the table grows by a quarter or more
// each time, so that is a constant amortised cost per fingerprint
// recorded.
func (s *MemoryStore) rebuild(size int) {
	for !s.replay(size) {
		size += size/4 + 16
	}
}

// replay is one attempt of rebuild: false when the table of size slots
// could not take an entry. A fingerprint an exchange holds twice in the
// rebuilt index (two hashes that the larger table no longer tells apart)
// is dropped from the exchange's list.
func (s *MemoryStore) replay(size int) bool {
	s.index = newHashIndex(size)
	// Every posting list is free, its memory kept for the lists the
	// replay makes (lowest first); what it does not reuse is let go.
	s.freePosts = s.freePosts[:0]
	for i := len(s.posts) - 1; i >= 0; i-- {
		s.posts[i].count, s.posts[i].holders = 0, s.posts[i].holders[:0]
		s.freePosts = append(s.freePosts, uint32(i))
	}
	defer func() {
		for _, i := range s.freePosts {
			s.varBytes -= 4 * int64(cap(s.posts[i].holders))
			s.posts[i] = memPosting{}
		}
	}()
	s.entries = 0
	for slot := s.head; slot != noSlot; slot = s.exs[slot].next {
		ex := &s.exs[slot]
		kept := ex.hashes[:0]
		for _, h := range ex.hashes {
			added, ok := s.hold(slot, h)
			if !ok {
				return false
			}
			if added {
				kept = append(kept, h)
			}
		}
		ex = &s.exs[slot]
		ex.hashes = kept
		s.entries += len(kept)
	}
	return true
}

// reserve makes room for n more entries of slot under MaxBytes: while the
// index would have to grow for them and the grown table would not fit, it
// forgets the exchanges closest to expiry (never slot).
func (s *MemoryStore) reserve(slot uint32, n int) {
	if s.opts.MaxBytes <= 0 {
		return
	}
	for s.index.full(n) && s.bytes()+8*int64(s.index.grownSize(n)-len(s.index.slots)) > s.limit() && s.head != slot && s.live > 1 {
		s.forget(s.head)
		s.forgotten++
	}
}

// limit is what the store lets Bytes reach under MaxBytes: 63/64 of it,
// the rest left to the allocator's rounding of what Bytes counts (the heap
// in use measured after a collection is some 0.1% above Bytes).
func (s *MemoryStore) limit() int64 { return s.opts.MaxBytes - s.opts.MaxBytes/64 }

// Bytes returns the memory the store holds, in bytes: its index (8 bytes a
// table slot, free or not), its exchange table, posting lists, each
// remembered exchange's fingerprint list (8 bytes a fingerprint) and ID
// with its map entries. Memory the Go runtime keeps around them (span
// rounding, garbage not collected yet) is not counted: measured as the heap
// in use after a collection, it adds about 0.1% (TestMemoryStoreMaxBytes).
func (s *MemoryStore) Bytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes()
}

// bytes is Bytes under the lock.
func (s *MemoryStore) bytes() int64 {
	return s.index.bytes() + int64(cap(s.exs))*slotBytes + int64(cap(s.posts))*postingBytes +
		int64(cap(s.freeSlots)+cap(s.freePosts))*4 + s.varBytes
}

// Forgotten returns how many exchanges the store forgot before their TTL
// to keep within its bounds (MaxExchanges, MaxEntries, MaxBytes).
func (s *MemoryStore) Forgotten() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.forgotten
}

func (s *MemoryStore) newSlot(id string) uint32 {
	var slot uint32
	if n := len(s.freeSlots); n > 0 {
		slot = s.freeSlots[n-1]
		s.freeSlots = s.freeSlots[:n-1]
	} else {
		slot = uint32(len(s.exs))
		s.exs = append(s.exs, memExchange{})
	}
	s.seq++
	if s.seq == 0 {
		s.seq++
	}
	s.exs[slot] = memExchange{id: id, ref: Ref(s.seq), prev: noSlot, next: noSlot}
	s.byID[id] = slot
	s.bySeq[Ref(s.seq)] = slot
	s.live++
	s.varBytes += mapBytes + int64(len(id))
	return slot
}

func (s *MemoryStore) newPosting(a, b uint32) uint32 {
	if n := len(s.freePosts); n > 0 {
		i := s.freePosts[n-1]
		s.freePosts = s.freePosts[:n-1]
		p := &s.posts[i]
		if cap(p.holders) < 2 {
			p.holders = make([]uint32, 0, 4)
			s.varBytes += 4 * 4
		}
		p.count, p.holders = 2, append(p.holders[:0], a, b)
		return i
	}
	holders := make([]uint32, 2, 4)
	s.varBytes += 4 * 4
	holders[0], holders[1] = a, b
	s.posts = append(s.posts, memPosting{count: 2, holders: holders})
	return uint32(len(s.posts) - 1)
}

// insert links slot into the list in order of expiry, after the exchanges
// that expire no later. With one TTL for all, that is the tail, found at
// once; an exchange recorded with a shorter TTL than those recorded
// before it walks back past them.
func (s *MemoryStore) insert(slot uint32) {
	ex := &s.exs[slot]
	after := s.tail
	for after != noSlot && s.exs[after].expires > ex.expires {
		after = s.exs[after].prev
	}
	ex.prev = after
	if after == noSlot {
		ex.next = s.head
		s.head = slot
	} else {
		ex.next = s.exs[after].next
		s.exs[after].next = slot
	}
	if ex.next == noSlot {
		s.tail = slot
	} else {
		s.exs[ex.next].prev = slot
	}
}

func (s *MemoryStore) unlink(slot uint32) {
	ex := &s.exs[slot]
	if ex.prev != noSlot {
		s.exs[ex.prev].next = ex.next
	} else {
		s.head = ex.next
	}
	if ex.next != noSlot {
		s.exs[ex.next].prev = ex.prev
	} else {
		s.tail = ex.prev
	}
	ex.prev, ex.next = noSlot, noSlot
}

// Lookup implements [Store].
func (s *MemoryStore) Lookup(ctx context.Context, hashes []uint64) ([]Holders, error) {
	var r Refs
	if err := s.LookupRefs(ctx, "", hashes, &r); err != nil {
		return nil, err
	}
	out := make([]Holders, len(hashes))
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i := range hashes {
		out[i].Count = int(r.Others[i])
		refs := r.Of(i)
		if len(refs) == 0 {
			continue
		}
		ids := make([]string, 0, len(refs))
		for _, ref := range refs {
			if slot, ok := s.bySeq[ref]; ok {
				ids = append(ids, s.exs[slot].id)
			}
		}
		out[i].Exchanges = ids
	}
	return out, nil
}

// LookupRefs is [MemoryStore.Lookup] in compact form, leaving exchange
// exclude out (its own fingerprints are not "others"): it fills dst for
// hashes, under one read lock and without allocating once dst has grown.
func (s *MemoryStore) LookupRefs(ctx context.Context, exclude string, hashes []uint64, dst *Refs) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dst.Reset(len(hashes))
	now := s.opts.Now().UnixNano()
	s.mu.RLock()
	if s.head != noSlot && s.exs[s.head].expires <= now {
		// Forgetting needs the write lock; rare (once per expiry).
		s.mu.RUnlock()
		s.mu.Lock()
		s.expire(now)
		s.mu.Unlock()
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	self := noSlot
	if slot, ok := s.byID[exclude]; ok && exclude != "" {
		self = slot
	}
	for i, h := range hashes {
		v, ok := s.index.get(h)
		if ok {
			if v&multiTag == 0 {
				if v != self {
					dst.Others[i] = 1
					dst.Holders = append(dst.Holders, s.exs[v].ref)
				}
			} else {
				p := &s.posts[v&^multiTag]
				n := p.count
				for j := len(p.holders) - 1; j >= 0; j-- {
					if slot := p.holders[j]; slot != self {
						dst.Holders = append(dst.Holders, s.exs[slot].ref)
					} else {
						n--
					}
				}
				dst.Others[i] = n
			}
		}
		dst.Start = append(dst.Start, int32(len(dst.Holders)))
	}
	return nil
}

// ExchangeID returns the ID of the exchange ref refers to, while the store
// remembers it.
func (s *MemoryStore) ExchangeID(ref Ref) (string, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	slot, ok := s.bySeq[ref]
	if !ok {
		return "", false
	}
	return s.exs[slot].id, true
}

// Len returns the number of remembered exchanges and entries.
func (s *MemoryStore) Len() (exchanges, entries int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.live, s.entries
}

// expire forgets exchanges whose TTL has passed: exchanges are kept in
// order of expiry (insert), so the expired ones are at the front.
func (s *MemoryStore) expire(now int64) {
	for s.head != noSlot && s.exs[s.head].expires <= now {
		s.forget(s.head)
	}
}

// bound forgets the exchanges closest to expiry (the least recently
// recorded, when all share a TTL) until the store is within its bounds or
// holds one exchange.
func (s *MemoryStore) bound() {
	for (s.live > s.opts.MaxExchanges || s.entries > s.opts.MaxEntries ||
		s.opts.MaxBytes > 0 && s.bytes() > s.limit()) && s.live > 1 {
		s.forget(s.head)
		s.forgotten++
	}
}

func (s *MemoryStore) forget(slot uint32) {
	s.unlink(slot)
	ex := &s.exs[slot]
	delete(s.byID, ex.id)
	delete(s.bySeq, ex.ref)
	for _, h := range ex.hashes {
		at := s.index.find(h)
		if at < 0 {
			continue
		}
		v := s.index.slots[at].val
		if v&multiTag == 0 {
			if v == slot {
				s.index.delAt(at)
			}
			continue
		}
		pi := v &^ multiTag
		p := &s.posts[pi]
		p.count--
		if j := slices.Index(p.holders, slot); j >= 0 {
			p.holders = slices.Delete(p.holders, j, j+1)
		}
		switch {
		case p.count <= 0:
			s.index.delAt(at)
		case p.count == 1 && len(p.holders) == 1:
			s.index.slots[at].val = p.holders[0] // back to a single holder
		default:
			continue
		}
		s.varBytes -= 4 * int64(cap(p.holders))
		s.posts[pi] = memPosting{}
		s.freePosts = append(s.freePosts, pi)
	}
	s.entries -= len(ex.hashes)
	s.varBytes -= 8*int64(cap(ex.hashes)) + mapBytes + int64(len(ex.id))
	*ex = memExchange{prev: noSlot, next: noSlot}
	s.freeSlots = append(s.freeSlots, slot)
	s.live--
}

package fingerprint

import "math/bits"

// hashIndex maps fingerprint hashes to 32-bit values for [MemoryStore]:
// open addressing with linear probing, each slot's key and value side by
// side (12 bytes a slot: a probe reads one cache line, rarely two), at most
// 3/4 full, and backward-shift deletion (no tombstones). A slot is placed
// by the top bits of the hash times an odd constant: fingerprints are
// window minima, so their own top bits are mostly zero. It is not safe for
// concurrent writes.
type hashIndex struct {
	slots []indexSlot
	shift uint // 64 - log2(len(slots))
	n     int
}

// indexSlot is one slot: the key in two halves (so that the slot is 12
// bytes, not 16) and the value, emptyVal when free.
type indexSlot struct {
	lo, hi, val uint32
}

func (e *indexSlot) key() uint64 { return uint64(e.hi)<<32 | uint64(e.lo) }

const emptyVal = ^uint32(0)

func newHashIndex(size int) hashIndex {
	size = max(16, 1<<bits.Len(uint(size-1)))
	x := hashIndex{slots: make([]indexSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	for i := range x.slots {
		x.slots[i].val = emptyVal
	}
	return x
}

func (x *hashIndex) home(h uint64) int { return int((h * 0x9e3779b97f4a7c15) >> x.shift) }

// get returns the value of h.
func (x *hashIndex) get(h uint64) (uint32, bool) {
	mask := len(x.slots) - 1
	lo, hi := uint32(h), uint32(h>>32)
	for i := x.home(h); ; i = (i + 1) & mask {
		e := &x.slots[i]
		if e.val == emptyVal {
			return 0, false
		}
		if e.lo == lo && e.hi == hi {
			return e.val, true
		}
	}
}

// ref returns the value of h, or, when h is not in the table, inserts it
// with value v and returns ok false. Either way it returns a pointer to the
// value, valid until the next insertion or deletion. v must not be
// emptyVal.
func (x *hashIndex) ref(h uint64, v uint32) (val *uint32, ok bool) {
	if 4*(x.n+1) > 3*len(x.slots) {
		x.grow()
	}
	mask := len(x.slots) - 1
	lo, hi := uint32(h), uint32(h>>32)
	for i := x.home(h); ; i = (i + 1) & mask {
		e := &x.slots[i]
		if e.val == emptyVal {
			e.lo, e.hi, e.val = lo, hi, v
			x.n++
			return &e.val, false
		}
		if e.lo == lo && e.hi == hi {
			return &e.val, true
		}
	}
}

// put sets the value of h (v must not be emptyVal).
func (x *hashIndex) put(h uint64, v uint32) {
	p, _ := x.ref(h, v)
	*p = v
}

// del removes h, shifting back the entries of its probe sequence.
func (x *hashIndex) del(h uint64) {
	mask := len(x.slots) - 1
	lo, hi := uint32(h), uint32(h>>32)
	i := x.home(h)
	for ; ; i = (i + 1) & mask {
		e := &x.slots[i]
		if e.val == emptyVal {
			return
		}
		if e.lo == lo && e.hi == hi {
			break
		}
	}
	for j := i; ; {
		j = (j + 1) & mask
		if x.slots[j].val == emptyVal {
			break
		}
		// The entry at j may move to i if its home is not in (i, j]
		// cyclically.
		k := x.home(x.slots[j].key())
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i].val = emptyVal
	x.n--
}

// wouldGrow reports whether putting n new keys would double the table.
func (x *hashIndex) wouldGrow(n int) bool { return 4*(x.n+n) > 3*len(x.slots) }

// bytes returns the memory of the table: 12 bytes a slot.
func (x *hashIndex) bytes() int64 { return 12 * int64(len(x.slots)) }

func (x *hashIndex) grow() {
	old := x.slots
	*x = newHashIndex(2 * len(old))
	for i := range old {
		if e := &old[i]; e.val != emptyVal {
			x.put(e.key(), e.val)
		}
	}
}

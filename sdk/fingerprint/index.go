package fingerprint

import "math/bits"

// hashIndex maps fingerprint hashes to 32-bit values for [MemoryStore]:
// open addressing with linear probing, keys and values in separate arrays
// (12 bytes a slot), at most 3/4 full, and backward-shift deletion (no
// tombstones). A slot is placed by the top bits of the hash times an odd
// constant: fingerprints are window minima, so their own top bits are
// mostly zero. It is not safe for concurrent writes.
type hashIndex struct {
	keys  []uint64
	vals  []uint32 // emptyVal marks a free slot
	shift uint     // 64 - log2(len(keys))
	n     int
}

const emptyVal = ^uint32(0)

func newHashIndex(size int) hashIndex {
	size = max(16, 1<<bits.Len(uint(size-1)))
	x := hashIndex{keys: make([]uint64, size), vals: make([]uint32, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
	for i := range x.vals {
		x.vals[i] = emptyVal
	}
	return x
}

func (x *hashIndex) home(h uint64) int { return int((h * 0x9e3779b97f4a7c15) >> x.shift) }

// get returns the value of h.
func (x *hashIndex) get(h uint64) (uint32, bool) {
	mask := len(x.keys) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		v := x.vals[i]
		if v == emptyVal {
			return 0, false
		}
		if x.keys[i] == h {
			return v, true
		}
	}
}

// put sets the value of h (v must not be emptyVal).
func (x *hashIndex) put(h uint64, v uint32) {
	if 4*(x.n+1) > 3*len(x.keys) {
		x.grow()
	}
	mask := len(x.keys) - 1
	for i := x.home(h); ; i = (i + 1) & mask {
		if x.vals[i] == emptyVal {
			x.keys[i], x.vals[i] = h, v
			x.n++
			return
		}
		if x.keys[i] == h {
			x.vals[i] = v
			return
		}
	}
}

// del removes h, shifting back the entries of its probe sequence.
func (x *hashIndex) del(h uint64) {
	mask := len(x.keys) - 1
	i := x.home(h)
	for ; ; i = (i + 1) & mask {
		if x.vals[i] == emptyVal {
			return
		}
		if x.keys[i] == h {
			break
		}
	}
	for j := i; ; {
		j = (j + 1) & mask
		if x.vals[j] == emptyVal {
			break
		}
		// The entry at j may move to i if its home is not in (i, j]
		// cyclically.
		k := x.home(x.keys[j])
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			x.keys[i], x.vals[i] = x.keys[j], x.vals[j]
			i = j
		}
	}
	x.vals[i] = emptyVal
	x.n--
}

func (x *hashIndex) grow() {
	old := *x
	*x = newHashIndex(2 * len(old.keys))
	for i, v := range old.vals {
		if v != emptyVal {
			x.put(old.keys[i], v)
		}
	}
}

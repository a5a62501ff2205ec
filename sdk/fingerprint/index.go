package fingerprint

// hashIndex maps fingerprint hashes to 32-bit values for [MemoryStore]:
// open addressing with linear probing in Robin Hood order, 8 bytes a slot,
// of any size (not only powers of two).
//
// A hash h is placed by the top 32 bits of h·c₁ reduced to the table's
// size by a multiply-high (its home slot); the slot keeps the top 24 bits
// of h·c₂ (its remainder) and the entry's distance from its home (8
// bits), beside the value. The index is therefore exact on
// the reduced key (home, remainder): two hashes of equal reduced key are
// one key to it. A hash that is not in the table matches a given entry
// with probability about 2⁻²⁴/size (its home and its remainder must both
// agree), so a lookup finds a foreign entry with probability about
// load·2⁻²⁴ ≈ 5·10⁻⁸ (TestHashIndexFalseMatch). The reduced key depends on
// the size, so the table cannot grow from its own slots: [MemoryStore]
// rebuilds it from the full hashes it keeps per exchange.
//
// Robin Hood order (entries sorted by home along each run) stops a lookup
// of an absent hash as soon as it meets an entry nearer its home than the
// probe is: 2.9 probes on average at 3/4 load, about as many as a lookup
// that succeeds. Deletion shifts
// the following entries back (no tombstones). An insertion that would put
// an entry 255 slots or more from its home fails and leaves the table to
// be rebuilt (larger) by its owner. It is not safe for concurrent writes.
type hashIndex struct {
	slots []indexSlot
	n     int
}

// indexSlot is one slot: tag is the remainder (top 24 bits) and the
// distance from home plus one (low 8 bits; 0 when the slot is free).
type indexSlot struct {
	tag, val uint32
}

const maxDist = 254 // the largest distance from home a tag can hold

func newHashIndex(size int) hashIndex {
	return hashIndex{slots: make([]indexSlot, max(16, size))}
}

// locate returns h's home slot and its remainder (top 24 bits of a tag):
// the top bits of two products of h by odd constants (fingerprints are
// already mixed hashes, but window minima, so their own top bits are
// mostly zero; other keys of the store are mixed hashes too).
func (x *hashIndex) locate(h uint64) (int, uint32) {
	home := (h * 0x9e3779b97f4a7c15 >> 32) * uint64(len(x.slots)) >> 32
	return int(home), uint32(h*0xbf58476d1ce4e5b9>>32) &^ 0xff
}

// probe walks h's run: it returns h's slot and found true, or, when h is
// not in the table, the slot where h belongs (free, or holding an entry
// nearer its home than h would be: Robin Hood order) with h's tag there,
// or -1 when that would be more than maxDist from h's home.
func (x *hashIndex) probe(h uint64) (i int, tag uint32, found bool) {
	i, rem := x.locate(h)
	tag = rem | 1 // the tag of h at distance 0
	for {
		t := x.slots[i].tag
		if t == tag {
			return i, tag, true
		}
		if t&0xff < tag&0xff {
			return i, tag, false
		}
		if tag&0xff == maxDist+1 {
			return -1, 0, false
		}
		tag++
		if i++; i == len(x.slots) {
			i = 0
		}
	}
}

// find returns the slot of h, or -1.
func (x *hashIndex) find(h uint64) int {
	if i, _, found := x.probe(h); found {
		return i
	}
	return -1
}

// get returns the value of h.
func (x *hashIndex) get(h uint64) (uint32, bool) {
	if i, _, found := x.probe(h); found {
		return x.slots[i].val, true
	}
	return 0, false
}

// ref returns the value of h, or, when h is not in the table, inserts it
// with value v and returns found false. Either way it returns a pointer to
// the value, valid until the next insertion or deletion. It returns nil
// when h is not in the table and cannot be put within maxDist of its home:
// the table then misses one entry (the last one displaced) and must be
// rebuilt.
func (x *hashIndex) ref(h uint64, v uint32) (val *uint32, found bool) {
	i, tag, found := x.probe(h)
	if found {
		return &x.slots[i].val, true
	}
	if i < 0 {
		return nil, false
	}
	// h goes to slot i; the entries from there to the next free slot
	// move on by one (each in turn takes the place of the first entry
	// nearer its home than it is).
	placed := &x.slots[i].val
	cur := indexSlot{tag: tag, val: v}
	for {
		e := &x.slots[i]
		if e.tag&0xff == 0 {
			*e = cur
			x.n++
			return placed, false
		}
		if e.tag&0xff < cur.tag&0xff {
			cur, *e = *e, cur
		}
		if cur.tag&0xff == maxDist+1 {
			return nil, false
		}
		cur.tag++
		if i++; i == len(x.slots) {
			i = 0
		}
	}
}

// delAt removes the entry in slot i, shifting back the entries that follow
// it.
func (x *hashIndex) delAt(i int) {
	for {
		j := i + 1
		if j == len(x.slots) {
			j = 0
		}
		e := x.slots[j]
		if e.tag&0xff <= 1 { // free, or at its home
			break
		}
		e.tag--
		x.slots[i] = e
		i = j
	}
	x.slots[i] = indexSlot{}
	x.n--
}

// full reports whether n more entries would fill the table past 3/4, the
// load above which it is rebuilt larger.
func (x *hashIndex) full(n int) bool { return 4*(x.n+n) > 3*len(x.slots) }

// grownSize is the size of the table rebuilt for n more entries: filled to
// 3/5 of it (a quarter more entries fill it to 3/4 again), and at least a
// quarter larger than it is.
func (x *hashIndex) grownSize(n int) int { return max(len(x.slots)*5/4, (x.n+n)*5/3) + 16 }

// bytes returns the memory of the table: 8 bytes a slot.
func (x *hashIndex) bytes() int64 { return 8 * int64(len(x.slots)) }

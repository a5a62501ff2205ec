package verify

// hashSet is a set of 64-bit hashes (already well mixed): open addressing
// with linear probing in a power-of-two table kept at most half full. It
// is not safe for concurrent writes; reads of a set that no longer changes
// may be concurrent.
type hashSet struct {
	slots []uint64 // 0 marks an empty slot
	zero  bool     // 0 is in the set
	n     int
}

// slotOf places h: its bits above the 32nd after an odd multiplier, so that
// hashes with structure in their low or high bits (window minima, small
// numbers) still spread.
func slotOf(h uint64, mask int) int { return int((h*0x9e3779b97f4a7c15)>>32) & mask }

func newHashSet(n int) hashSet {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return hashSet{slots: make([]uint64, size)}
}

// reset empties s, sized for n hashes, reusing its table when it is large
// enough.
func (s *hashSet) reset(n int) {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	if cap(s.slots) >= size {
		s.slots = s.slots[:size]
		clear(s.slots)
	} else {
		s.slots = make([]uint64, size)
	}
	s.zero, s.n = false, 0
}

func (s *hashSet) add(h uint64) {
	if h == 0 {
		s.zero = true
		return
	}
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	mask := len(s.slots) - 1
	for i := slotOf(h, mask); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			s.slots[i] = h
			s.n++
			return
		case h:
			return
		}
	}
}

// addAll adds every hash of hs: add's steps in one loop, the table grown
// first to hold them all.
func (s *hashSet) addAll(hs []uint64) {
	if len(hs) == 0 {
		return
	}
	for 2*(s.n+len(hs)) > len(s.slots) {
		s.grow()
	}
	slots := s.slots
	mask := len(slots) - 1
	_ = slots[mask]
	for _, h := range hs {
		if h == 0 {
			s.zero = true
			continue
		}
		for i := slotOf(h, mask); ; i = (i + 1) & mask {
			if v := slots[i]; v == 0 {
				slots[i] = h
				s.n++
				break
			} else if v == h {
				break
			}
		}
	}
}

func (s *hashSet) has(h uint64) bool {
	if h == 0 {
		return s.zero
	}
	if len(s.slots) == 0 {
		return false
	}
	mask := len(s.slots) - 1
	for i := slotOf(h, mask); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case 0:
			return false
		case h:
			return true
		}
	}
}

func (s *hashSet) grow() {
	old := s.slots
	s.slots = make([]uint64, max(16, 2*len(old)))
	s.n = 0
	for _, h := range old {
		if h != 0 {
			s.add(h)
		}
	}
}

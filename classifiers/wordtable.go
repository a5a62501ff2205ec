package classifiers

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// wordTable is a read-only map from words to values for the name
// detector's many lookups of short words: open addressing over a
// power-of-two array with a multiply hash of the word's first and last
// bytes, which costs a fraction of a runtime map lookup of a string.
// Built once from a map; safe for concurrent reads.
type wordTable[V any] struct {
	slots []wordSlot[V]
	mask  uint32
}

type wordSlot[V any] struct {
	key string // "" marks an empty slot
	val V
}

// newWordTable returns the table of m. The empty word is never a key (a
// lookup of it finds nothing), so m must not hold it.
func newWordTable[V any](m map[string]V) *wordTable[V] {
	n := 16
	for n < 2*len(m) {
		n *= 2
	}
	t := &wordTable[V]{slots: make([]wordSlot[V], n), mask: uint32(n - 1)}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the same layout every time
	for _, k := range keys {
		v := m[k]
		if k == "" {
			panic("classifiers: empty word in a word table")
		}
		i := wordHash([]byte(k)) & t.mask
		for t.slots[i].key != "" {
			i = (i + 1) & t.mask
		}
		t.slots[i] = wordSlot[V]{k, v}
	}
	return t
}

// get returns w's value, and whether w is a key.
func (t *wordTable[V]) get(w []byte) (V, bool) {
	for i := wordHash(w) & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.key == string(w) && s.key != "" {
			return s.val, true
		}
		if s.key == "" {
			var zero V
			return zero, false
		}
	}
}

// at returns w's value, or V's zero value (as a map index does).
func (t *wordTable[V]) at(w []byte) V {
	v, _ := t.get(w)
	return v
}

// wordHash mixes a word's length with its first and last eight bytes (or
// four, or the first, middle and last byte of a shorter word).
func wordHash(w []byte) uint32 {
	n := len(w)
	var a, b uint64
	switch {
	case n >= 8:
		a, b = binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[n-8:])
	case n >= 4:
		a, b = uint64(binary.LittleEndian.Uint32(w)), uint64(binary.LittleEndian.Uint32(w[n-4:]))
	case n > 0:
		a = uint64(w[0])<<16 | uint64(w[n>>1])<<8 | uint64(w[n-1])
	}
	hi, lo := bits.Mul64(a^0x9E3779B97F4A7C15, b^uint64(n)^0xC2B2AE3D27D4EB4F)
	return uint32(hi ^ lo)
}

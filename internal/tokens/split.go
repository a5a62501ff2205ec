package tokens

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
)

// The exact count of tiktoken is the sum, over the pieces its split regex
// cuts the text into, of one token for a piece in the vocabulary and of the
// byte-pair merge of any other piece. The regex (run by a backtracking
// engine) is most of the cost. For text of printable ASCII, tabs and line
// breaks, splitASCII cuts the same pieces as the cl100k_base and o200k_base
// regexes in one linear pass, and a piece's count is one vocabulary lookup,
// or for a piece outside the vocabulary the library's byte-pair merge redone
// on the same ranks (the library itself merges pieces of maxMerge bytes and
// more). Table, random and fuzz tests (FuzzExactMatchesLibrary) check the
// count against the library's.

// fastClass classifies the bytes of the fast path: every other byte (control
// characters but tab, CR and LF; DEL; non-ASCII) sends the text to the
// library, whose Unicode classes and \s the split below does not model.
const (
	fcOther = iota
	fcUpper
	fcLower
	fcDigit
	fcSpace // ' ', '\t'
	fcLine  // '\r', '\n'
	fcPunct // printable ASCII that is neither a letter, a digit nor a space
)

var fastClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'A' && c <= 'Z':
			t[c] = fcUpper
		case c >= 'a' && c <= 'z':
			t[c] = fcLower
		case c >= '0' && c <= '9':
			t[c] = fcDigit
		case c == ' ' || c == '\t':
			t[c] = fcSpace
		case c == '\r' || c == '\n':
			t[c] = fcLine
		case c > ' ' && c < 0x7f:
			t[c] = fcPunct
		}
	}
	return t
}()

// fastText reports whether every byte of s is on the fast path.
func fastText(s string) bool {
	for i := 0; i < len(s); i++ {
		if fastClass[s[i]] == fcOther {
			return false
		}
	}
	return true
}

func isLetter(c uint8) bool { return c == fcUpper || c == fcLower }
func isSpace(c uint8) bool  { return c == fcSpace || c == fcLine }

// contraction returns the length of the contraction ('s, 't, 're, 've,
// 'm, 'll, 'd, any case) at s[i:], 0 when there is none.
func contraction(s string, i int) int {
	if i+1 >= len(s) || s[i] != '\'' {
		return 0
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return 2
	case 'r', 'v', 'l':
		if i+2 < len(s) {
			want := byte('e')
			if s[i+1]|0x20 == 'l' {
				want = 'l'
			}
			if s[i+2]|0x20 == want {
				return 3
			}
		}
	}
	return 0
}

// splitASCII calls yield with the pieces the split regex of cl100k_base
// (o200k false) or o200k_base (o200k true) cuts s into; every byte of s
// must be on the fast path (fastText).
func splitASCII(s string, o200k bool, yield func(piece string)) {
	cls := func(i int) uint8 {
		if i < len(s) {
			return fastClass[s[i]]
		}
		return fcOther
	}
	run := func(i int, ok func(uint8) bool) int {
		for i < len(s) && ok(fastClass[s[i]]) {
			i++
		}
		return i
	}
	runAt := func(i int, ok func(int) bool) int {
		for i < len(s) && ok(i) {
			i++
		}
		return i
	}
	punct := func(c uint8) bool { return c == fcPunct }
	line := func(c uint8) bool { return c == fcLine }
	lineOrSlash := func(i int) bool { return s[i] == '/' || fastClass[s[i]] == fcLine }
	lower := func(c uint8) bool { return c == fcLower }
	upper := func(c uint8) bool { return c == fcUpper }
	for i := 0; i < len(s); {
		c := cls(i)
		end := 0
		// The letters alternatives, with an optional prefix that is
		// neither a line break, a letter nor a digit.
		p := i
		if c == fcSpace || c == fcPunct {
			p = i + 1
		}
		if !o200k {
			// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+
			if n := contraction(s, i); n > 0 {
				end = i + n
			} else if isLetter(cls(p)) {
				end = run(p, isLetter)
			}
		} else if isLetter(cls(p)) {
			// [^\r\n\p{L}\p{N}]?\p{Lu}*\p{Ll}+(?i:'s|...)?
			// |[^\r\n\p{L}\p{N}]?\p{Lu}+\p{Ll}*(?i:'s|...)?
			// The first alternative takes the capitals and the lower-case
			// run after them; failing that (capitals not followed by a
			// lower-case letter), the second takes the capitals alone.
			end = run(run(p, upper), lower)
			end += contraction(s, end)
		}
		if end == 0 {
			switch {
			case c == fcDigit:
				// \p{N}{1,3}
				end = min(run(i, func(c uint8) bool { return c == fcDigit }), i+3)
			case c == fcPunct || (s[i] == ' ' && cls(i+1) == fcPunct):
				// ' ?[^\s\p{L}\p{N}]+[\r\n]*', o200k_base [\r\n/]*: after
				// the punctuation run (which holds any '/'), line breaks, and
				// for o200k_base slashes after them.
				end = run(i+1, punct)
				if o200k {
					end = runAt(end, lineOrSlash)
				} else {
					end = run(end, line)
				}
			default:
				// \s*[\r\n]+|\s+(?!\S)|\s+ over the run of spaces. The
				// library's regex engine ends the first alternative with the
				// first run of line breaks ("\n \n" is "\n", " \n"), as a
				// lazy \s*? would.
				ws := run(i, isSpace)
				end = 0
				for k := i; k < ws; k++ {
					if cls(k) == fcLine {
						end = run(k, line)
						break
					}
				}
				if end == 0 {
					switch {
					case ws == len(s) || ws-i == 1:
						end = ws
					default:
						end = ws - 1
					}
				}
			}
		}
		yield(s[i:end])
		i = end
	}
}

// vocab maps the tokens of an encoding to their ranks (their IDs), built
// from the library's own vocabulary through Decode: a piece of the split
// in it is one token, and the ranks drive the byte-pair merge of the
// others. Tokens of one or two bytes are found in an array, those of up to
// seven bytes by a word of their bytes (one probe, no string to compare),
// those of eight to fifteen bytes by two words, the others by string.
type vocab struct {
	pairs [1 << 16]uint32 // rank+1 of the two-byte tokens, 0 for none
	bytes [256]uint32     // rank+1 of the one-byte tokens
	short shortTable      // tokens of three to seven bytes
	mid   midTable        // tokens of eight to fifteen bytes
	long  map[string]uint32
}

// shortTable is an open-addressing hash table of shortKey words (never 0,
// which marks an empty slot) at most three quarters full (half full for
// both encodings): a lookup reads one slot, or a few neighbours.
type shortTable struct {
	slots []shortSlot
	shift uint // 64 - log2(len(slots))
}

type shortSlot struct {
	key  uint64
	rank uint32
}

// tableBits is log2 of the slots of an open-addressing table for n keys:
// the smallest power of two above n*4/3, so that it stays at most three
// quarters full.
func tableBits(n int) uint {
	bits := uint(1)
	for 1<<bits < n*4/3+1 {
		bits++
	}
	return bits
}

func newShortTable(n int) shortTable {
	bits := tableBits(n)
	return shortTable{slots: make([]shortSlot, 1<<bits), shift: 64 - bits}
}

func (t *shortTable) get(key uint64) (uint32, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := (key * 0x9e3779b97f4a7c15) >> t.shift; ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case key:
			return t.slots[i].rank, true
		case 0:
			return 0, false
		}
	}
}

// put adds key; the table must keep an empty slot.
func (t *shortTable) put(key uint64, rank uint32) {
	mask := uint64(len(t.slots) - 1)
	for i := (key * 0x9e3779b97f4a7c15) >> t.shift; ; i = (i + 1) & mask {
		if k := t.slots[i].key; k == 0 || k == key {
			t.slots[i] = shortSlot{key, rank}
			return
		}
	}
}

// midTable is shortTable for tokens of 8 to 15 bytes, keyed by two words
// (midKey): hi is never 0, which marks an empty slot.
type midTable struct {
	slots []midSlot
	shift uint
}

type midSlot struct {
	lo, hi uint64
	rank   uint32
}

func newMidTable(n int) midTable {
	bits := tableBits(n)
	return midTable{slots: make([]midSlot, 1<<bits), shift: 64 - bits}
}

func (t *midTable) hash(lo, hi uint64) uint64 {
	return ((lo ^ hi*0xff51afd7ed558ccd) * 0x9e3779b97f4a7c15) >> t.shift
}

func (t *midTable) get(lo, hi uint64) (uint32, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.hash(lo, hi); ; i = (i + 1) & mask {
		s := &t.slots[i]
		switch {
		case s.hi == hi && s.lo == lo:
			return s.rank, true
		case s.hi == 0:
			return 0, false
		}
	}
}

// put adds a key; the table must keep an empty slot.
func (t *midTable) put(lo, hi uint64, rank uint32) {
	mask := uint64(len(t.slots) - 1)
	for i := t.hash(lo, hi); ; i = (i + 1) & mask {
		if s := &t.slots[i]; s.hi == 0 || s.hi == hi && s.lo == lo {
			*s = midSlot{lo, hi, rank}
			return
		}
	}
}

// midKey packs a string of 8 to 15 bytes: its first eight bytes in lo,
// the others and its length in hi.
func midKey(s string) (lo, hi uint64) {
	_ = s[7]
	lo = uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
	hi = uint64(len(s)) << 56
	for i := 8; i < len(s); i++ {
		hi |= uint64(s[i]) << (8 * (i - 8))
	}
	return lo, hi
}

// shortKey packs a string of at most 7 bytes and its length in a word.
func shortKey(s string) uint64 {
	k := uint64(len(s)) << 56
	for i := 0; i < len(s); i++ {
		k |= uint64(s[i]) << (8 * i)
	}
	return k
}

// rank returns the rank of token t.
func (v *vocab) rank(t string) (uint32, bool) {
	switch {
	case len(t) == 1:
		r := v.bytes[t[0]]
		return r - 1, r != 0
	case len(t) == 2:
		r := v.pairs[uint16(t[0])<<8|uint16(t[1])]
		return r - 1, r != 0
	case len(t) <= 7:
		return v.short.get(shortKey(t))
	case len(t) <= 15:
		return v.mid.get(midKey(t))
	default:
		r, ok := v.long[t]
		return r, ok
	}
}

func (v *vocab) add(t string, rank uint32) {
	switch {
	case len(t) == 1:
		v.bytes[t[0]] = rank + 1
	case len(t) == 2:
		v.pairs[uint16(t[0])<<8|uint16(t[1])] = rank + 1
	case len(t) <= 7:
		v.short.put(shortKey(t), rank)
	case len(t) <= 15:
		lo, hi := midKey(t)
		v.mid.put(lo, hi, rank)
	default:
		v.long[t] = rank
	}
}

// vocabs holds the vocabularies of cl100k_base and o200k_base, built on
// first use and read-only after: they are as constant as the library's own
// tables, and shared by every Counter.
var vocabs = map[tokenizer.Encoding]func() (*vocab, error){
	tokenizer.Cl100kBase: sync.OnceValues(func() (*vocab, error) { return loadVocab(tokenizer.Cl100kBase) }),
	tokenizer.O200kBase:  sync.OnceValues(func() (*vocab, error) { return loadVocab(tokenizer.O200kBase) }),
}

// loadVocab decodes every token ID of enc. IDs are dense from 0; the
// special tokens, further on, are not decoded (nor counted as such by the
// library's Count).
func loadVocab(enc tokenizer.Encoding) (*vocab, error) {
	codec, err := tokenizer.Get(enc)
	if err != nil {
		return nil, err
	}
	var tokens []string
	id := []uint{0}
	for misses := 0; misses < 1024; id[0]++ {
		t, err := codec.Decode(id)
		if err != nil || t == "" {
			t, misses = "", misses+1
		} else {
			misses = 0
		}
		tokens = append(tokens, t)
	}
	short, mid := 0, 0
	for _, t := range tokens {
		switch {
		case len(t) >= 3 && len(t) <= 7:
			short++
		case len(t) >= 8 && len(t) <= 15:
			mid++
		}
	}
	v := &vocab{short: newShortTable(short), mid: newMidTable(mid), long: map[string]uint32{}}
	for rank, t := range tokens {
		if t != "" {
			v.add(t, uint32(rank))
		}
	}
	return v, nil
}

// maxMerge bounds the pieces merged here; longer ones (rare: runs of
// letters or punctuation of 64 bytes and more) go through the library.
const maxMerge = 64

// mergeParts runs the byte-pair merge of piece as the library's merge
// does: repeatedly merge the leftmost adjacent pair of lowest rank whose
// concatenation is a token. It leaves the offsets of the tokens' starts in
// off, the length of piece after them, and returns how many offsets it
// wrote (the token count plus one); ok is false for a piece of maxMerge
// bytes or more.
func (v *vocab) mergeParts(piece string, off *[maxMerge + 1]int) (parts int, ok bool) {
	if len(piece) >= maxMerge {
		return 0, false
	}
	const none = ^uint32(0)
	var rankBuf [maxMerge + 1]uint32
	parts = len(piece) + 1
	rank := rankBuf[:parts]
	for i := range parts {
		off[i], rank[i] = i, none
	}
	// rankOf is the rank of the token joining parts i and i+1+skip.
	rankOf := func(i, skip int) uint32 {
		if i+skip+2 < parts {
			if r, ok := v.rank(piece[off[i]:off[i+skip+2]]); ok {
				return r
			}
		}
		return none
	}
	for i := 0; i < parts-2; i++ {
		rank[i] = rankOf(i, 0)
	}
	for parts > 1 {
		minRank, minIndex := none, 0
		for i := range parts - 1 {
			if rank[i] < minRank {
				minRank, minIndex = rank[i], i
			}
		}
		if minRank == none {
			break
		}
		rank[minIndex] = rankOf(minIndex, 1)
		if minIndex > 0 {
			rank[minIndex-1] = rankOf(minIndex-1, 1)
		}
		copy(off[minIndex+1:parts-1], off[minIndex+2:parts])
		copy(rank[minIndex+1:parts-1], rank[minIndex+2:parts])
		parts--
	}
	return parts, true
}

// merges returns the number of tokens the byte-pair merge makes of piece;
// ok is false for a piece of maxMerge bytes or more.
func (v *vocab) merges(piece string) (n int, ok bool) {
	var off [maxMerge + 1]int
	parts, ok := v.mergeParts(piece, &off)
	return parts - 1, ok
}

// exactFast counts s as codec does, through splitASCII and v; ok is false
// when s is not on the fast path.
func exactFast(codec tokenizer.Codec, v *vocab, o200k bool, s string) (n int, ok bool, err error) {
	if !fastText(s) {
		return 0, false, nil
	}
	splitASCII(s, o200k, func(piece string) {
		if err != nil {
			return
		}
		if _, in := v.rank(piece); in {
			n++
			return
		}
		if k, ok := v.merges(piece); ok {
			n += k
			return
		}
		// A long piece: the library merges it alone, which its regex cuts
		// into that one piece.
		k, e := codec.Count(piece)
		n, err = n+k, e
	})
	return n, true, err
}

// encodeFast appends the token IDs of s to dst as codec encodes it,
// through splitASCII and v; ok is false (and dst unchanged) when s is not
// on the fast path.
func encodeFast(dst []uint32, codec tokenizer.Codec, v *vocab, o200k bool, s string) (_ []uint32, ok bool, err error) {
	if !fastText(s) {
		return dst, false, nil
	}
	var off [maxMerge + 1]int
	splitASCII(s, o200k, func(piece string) {
		if err != nil {
			return
		}
		if r, in := v.rank(piece); in {
			dst = append(dst, r)
			return
		}
		if parts, ok := v.mergeParts(piece, &off); ok {
			for i := range parts - 1 {
				// Every part of the merge is a token (single bytes
				// included); the library gives rank 0 to any other.
				r, _ := v.rank(piece[off[i]:off[i+1]])
				dst = append(dst, r)
			}
			return
		}
		// A long piece: the library merges it alone, which its regex cuts
		// into that one piece.
		var ids []uint
		ids, _, err = codec.Encode(piece)
		for _, id := range ids {
			dst = append(dst, uint32(id))
		}
	})
	return dst, true, err
}

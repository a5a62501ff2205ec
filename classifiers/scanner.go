package classifiers

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configures a Scanner. The zero value enables every built-in
// detector with a random hash key.
type Options struct {
	// HashKey is the key for Finding.Hash (HMAC-SHA256). Nil means a random
	// key per Scanner, so hashes only compare within one Scanner.
	HashKey []byte
	// Custom rules, compiled by New.
	Custom []CustomRule
	// Detectors lists the enabled built-in detector IDs or path.Match globs
	// such as "pii.*". Empty enables every built-in. Custom rules are always
	// enabled.
	Detectors []string
	// IncludeReserved reports reserved example values too: RFC 2606
	// domains, documented test card numbers and IBANs, documentation IP
	// ranges, AWS's AKIAIOSFODNN7EXAMPLE and the like.
	IncludeReserved bool
	// MatchTimeout bounds every regexp2 match of a custom pattern; the
	// default is 100ms.
	MatchTimeout time.Duration
	// Allow lists values the organisation publishes or that are not
	// sensitive in its context (a support address, a product named after
	// a person, a public officer's name): New scans each entry, and a
	// finding with the same detector and the same normalised value (so the
	// same hash: case, spacing and separators aside) is never reported.
	// An entry in which no enabled detector finds a value is an error.
	Allow []string
}

// DefaultMatchTimeout is the per-match timeout of custom patterns when
// Options.MatchTimeout is zero.
const DefaultMatchTimeout = 100 * time.Millisecond

// DetectorInfo describes a built-in detector.
type DetectorInfo struct {
	ID          string
	Category    Category
	Description string
}

// RuleError reports a custom rule (or detector selection, or Allow entry:
// Rule "allow[i]") that cannot be compiled. Rule names the rule; the error
// never contains scanned text nor an Allow entry.
type RuleError struct {
	Rule string
	Err  error
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %q: %v", e.Rule, e.Err) }
func (e *RuleError) Unwrap() error { return e.Err }

// TimeoutError reports that a custom pattern exceeded the match timeout
// while scanning. The input is never part of the message.
type TimeoutError struct {
	Rule    string
	Timeout time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("rule %q: pattern match exceeded timeout of %v", e.Rule, e.Timeout)
}

// Sizes of the chunks large inputs are scanned in. Overlap is larger than
// the longest value any built-in detector reports plus the context it reads,
// so a value straddling two chunks is found exactly once, in the chunk where
// it starts.
const (
	chunkSize    = 1 << 20
	chunkOverlap = 32 << 10
)

// Scanner finds sensitive values in text. It is built by New and is safe for
// concurrent use by multiple goroutines: its configuration is never modified
// after New, and the phone validation tables it builds on first use are
// guarded by a lock.
type Scanner struct {
	key             []byte
	dets            []*detector
	custom          []*customRule
	ac              *acMatcher
	acRefs          []acRef
	numeric         []*detector
	gates           *gateMasks // numeric's gates as masks, or nil
	email           *detector
	ipv6            *detector // pii.ip_address, or nil
	privateIP       *detector // pii.private_ip, or nil
	scanIPv6        bool      // either is on: anchors reads IPv6 tokens
	names           *detector
	includeReserved bool
	timeout         time.Duration
	chunk, overlap  int // chunkSize and chunkOverlap; smaller in tests
	phones          *phoneBook
	states          sync.Pool // *scanState, see getState
	viewBufs        sync.Pool // *viewBufs, see scanChunkRaw
	entropy         entropyTable
	ovClass         []uint8 // per who (see rawFinding): overlapClass of its category
	allowed         map[allowKey]bool
	partialOnce     sync.Once
	partial         *partialTables // ScanPartial's tables, built on first use
}

// allowKey is an allowed value: its detector (a rawFinding's who) and the
// hex hash of its normalised value.
type allowKey struct {
	who  int32
	hash string
}

// acRef says what an Aho-Corasick pattern means: a trigger or a context word
// of detector det, or a keyword of custom rule custom.
type acRef struct {
	det     int // index in dets, or -1
	custom  int // index in custom, or -1
	context bool
	length  int
}

// New compiles the enabled built-in detectors and the custom rules. A bad
// custom rule or an unknown detector selection returns a *RuleError naming
// it.
func New(opts Options) (*Scanner, error) {
	s := &Scanner{includeReserved: opts.IncludeReserved, timeout: opts.MatchTimeout, chunk: chunkSize, overlap: chunkOverlap, phones: newPhoneBook(),
		entropy: newEntropyTable()}
	if s.timeout <= 0 {
		s.timeout = DefaultMatchTimeout
	}
	if opts.HashKey != nil {
		s.key = slices.Clone(opts.HashKey)
	} else {
		s.key = make([]byte, 32)
		if _, err := rand.Read(s.key); err != nil {
			return nil, fmt.Errorf("classifiers: hash key: %w", err)
		}
	}
	all := builtinDetectors()
	for _, sel := range opts.Detectors {
		if _, err := path.Match(sel, ""); err != nil {
			return nil, &RuleError{Rule: sel, Err: fmt.Errorf("bad detector pattern: %w", err)}
		}
		found := false
		for _, d := range all {
			if ok, _ := path.Match(sel, d.id); ok {
				found = true
				break
			}
		}
		if !found {
			return nil, &RuleError{Rule: sel, Err: errors.New("matches no built-in detector")}
		}
	}
	for _, d := range all {
		if len(opts.Detectors) > 0 {
			on := false
			for _, sel := range opts.Detectors {
				if ok, _ := path.Match(sel, d.id); ok {
					on = true
					break
				}
			}
			if !on {
				continue
			}
		}
		s.dets = append(s.dets, d)
	}
	seen := map[string]bool{}
	for _, r := range opts.Custom {
		if seen[r.ID] {
			return nil, &RuleError{Rule: r.ID, Err: errors.New("duplicate rule ID")}
		}
		seen[r.ID] = true
		cr, err := compileCustom(r, s.timeout)
		if err != nil {
			return nil, err
		}
		s.custom = append(s.custom, cr)
	}
	var pats []string
	add := func(p string, ref acRef) {
		pats = append(pats, strings.ToLower(p))
		ref.length = len(p)
		s.acRefs = append(s.acRefs, ref)
	}
	for i, d := range s.dets {
		d.idx = i
		for _, k := range d.keywords {
			add(k, acRef{det: i, custom: -1})
		}
		for _, k := range d.context {
			add(k, acRef{det: i, custom: -1, context: true})
		}
		switch {
		case d.numeric != nil:
			s.numeric = append(s.numeric, d)
		case d.id == "pii.email":
			s.email = d
		}
		switch d.id {
		case "pii.ip_address":
			s.ipv6 = d
		case "pii.private_ip":
			s.privateIP = d
		case "pii.person_name":
			s.names = d
		}
	}
	for i, c := range s.custom {
		for _, k := range c.keywords {
			add(k, acRef{det: -1, custom: i})
		}
		for _, k := range c.context {
			add(k, acRef{det: -1, custom: i, context: true})
		}
	}
	s.scanIPv6 = s.ipv6 != nil || s.privateIP != nil
	s.ac = newACMatcher(pats)
	s.gates = newGateMasks(s.numeric)
	for _, d := range s.dets {
		s.ovClass = append(s.ovClass, overlapClass(d.cat))
	}
	for range s.custom {
		s.ovClass = append(s.ovClass, overlapClass(CategoryCustom))
	}
	if len(opts.Allow) > 0 {
		allowed := map[allowKey]bool{}
		for i, a := range opts.Allow {
			fs, err := s.ScanString(context.Background(), a)
			if err != nil {
				return nil, &RuleError{Rule: fmt.Sprintf("allow[%d]", i), Err: err}
			}
			if len(fs) == 0 {
				// The entry is not echoed: it may be a value the caller
				// keeps out of logs.
				return nil, &RuleError{Rule: fmt.Sprintf("allow[%d]", i), Err: errors.New("no enabled detector finds a value in it")}
			}
			for _, f := range fs {
				allowed[allowKey{s.who(f.Detector), f.Hash}] = true
			}
		}
		s.allowed = allowed
	}
	return s, nil
}

// who returns the rawFinding index of a detector or custom rule ID.
func (s *Scanner) who(id string) int32 {
	for i, d := range s.dets {
		if d.id == id {
			return int32(i)
		}
	}
	for i, c := range s.custom {
		if c.id == id {
			return int32(len(s.dets) + i)
		}
	}
	return -1
}

// KeyID identifies the scanner's hash key without revealing it: the first
// eight bytes, in hex, of the HMAC-SHA256 of a fixed label under the key.
// Two scanners give comparable Finding.Hash values when their KeyIDs are
// equal. Safe for concurrent use.
func (s *Scanner) KeyID() string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("aishield scanner key id"))
	return hex.EncodeToString(m.Sum(nil)[:8])
}

// Builtins lists every built-in detector, in a stable order.
func Builtins() []DetectorInfo {
	ds := builtinDetectors()
	out := make([]DetectorInfo, 0, len(ds)+1)
	for _, d := range ds {
		out = append(out, DetectorInfo{ID: d.id, Category: d.cat, Description: d.desc})
	}
	out = append(out, DetectorInfo{ID: sensitivityLabelID, Category: CategoryMarker,
		Description: "Microsoft Information Protection sensitivity label in an Office document's metadata (ScanDocument only)"})
	return out
}

// Scan returns the findings in text, sorted by Start. Inputs longer than
// one chunk (1 MiB) are scanned in overlapping chunks on every core
// (GOMAXPROCS), with the findings a scan on one core gives. When a custom
// pattern times out, Scan returns every other finding and a *TimeoutError;
// when ctx is done it returns the findings so far and ctx.Err().
func (s *Scanner) Scan(ctx context.Context, text []byte) ([]Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(text) <= s.chunk {
		fs, err := s.scanChunk(ctx, text, 0, len(text), newPosTracker(), 0)
		return sortFindings(fs), err
	}
	var all []Finding
	err := s.scanEach(ctx, text, scanWorkers(), func(fs []Finding) error {
		all = appendChunk(all, fs)
		return nil
	})
	return all, err
}

// ScanString is Scan for a string.
func (s *Scanner) ScanString(ctx context.Context, text string) ([]Finding, error) {
	return s.Scan(ctx, []byte(text))
}

// ScanReader scans everything r yields, in chunks with overlap scanned on
// every core, holding a few chunks in memory (see ScanReaderEach, which
// also hands the findings on as they are found). Offsets are relative to
// the start of the stream.
func (s *Scanner) ScanReader(ctx context.Context, r io.Reader) ([]Finding, error) {
	var all []Finding
	err := s.ScanReaderEach(ctx, r, func(fs []Finding) error {
		all = appendChunk(all, fs)
		return nil
	})
	return all, err
}

// appendChunk appends a chunk's findings to those of the chunks before it
// (the first chunk's slice is taken as is).
func appendChunk(all, fs []Finding) []Finding {
	if all == nil {
		return fs
	}
	return append(all, fs...)
}

func sortFindings(fs []Finding) []Finding {
	sorted := true // the usual case, checked without a comparison closure
	for i := 1; i < len(fs) && sorted; i++ {
		a, b := &fs[i-1], &fs[i]
		sorted = a.Start < b.Start || (a.Start == b.Start && (a.End < b.End || (a.End == b.End && a.Detector <= b.Detector)))
	}
	if sorted {
		return fs
	}
	return sortStable(fs, func(a, b *Finding) int {
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		if c := cmp.Compare(a.End, b.End); c != 0 {
			return c
		}
		return strings.Compare(a.Detector, b.Detector)
	})
}

// posTracker turns byte offsets into line and column numbers across chunks.
// Offsets must be presented in increasing order.
type posTracker struct {
	off  int // stream offset reached
	line int // line at off (1-based)
	col  int // runes since the start of the line at off
}

func newPosTracker() *posTracker { return &posTracker{line: 1} }

// advance moves the tracker to stream offset to; buf starts at stream offset
// base and must contain the bytes between the tracker and to.
func (p *posTracker) advance(buf []byte, base, to int) {
	if to <= p.off {
		return
	}
	i, end := p.off-base, to-base
	if end-i >= farGap {
		p.advanceFar(buf, i, end, to)
		return
	}
	line, col := p.line, p.col
	// Eight bytes at a time: the newlines of a word, and the rune starts
	// (bytes other than 10xxxxxx) after its last newline. A last partial
	// word is read whole when buf goes on, its bytes past end masked off.
	for ; i+8 <= end; i += 8 {
		line, col = advanceWord(binary.LittleEndian.Uint64(buf[i:]), ^uint64(0), line, col)
	}
	if i < end && i+8 <= len(buf) {
		line, col = advanceWord(binary.LittleEndian.Uint64(buf[i:]), 1<<(8*(end-i))-1, line, col)
		i = end
	}
	for ; i < end; i++ {
		if c := buf[i]; c == '\n' {
			line++
			col = 0
		} else if c&0xC0 != 0x80 {
			col++
		}
	}
	p.line, p.col, p.off = line, col, to
}

// advanceWord returns line and col after the bytes of x (little-endian)
// whose bits are set in keep: their newlines, and the rune starts (bytes
// other than 10xxxxxx) after the last of them.
func advanceWord(x, keep uint64, line, col int) (int, int) {
	starts := ^(x &^ (x << 1)) & hiBits & keep
	if nl := zeroBytes(x^0x0a0a0a0a0a0a0a0a) & keep; nl != 0 {
		last := (63 - bits.LeadingZeros64(nl)) >> 3 // byte index of the last newline
		return line + bits.OnesCount64(nl), bits.OnesCount64(starts >> (8 * (last + 1)))
	}
	return line, col + bits.OnesCount64(starts)
}

// farGap is the distance from which advance counts the newlines first and
// then the characters of the last line only (sparse findings), instead of
// both in one pass (dense findings).
const farGap = 128

// advanceFar is advance over buf[i:end] (to is end's stream offset): the
// newlines eight bytes at a time, then the characters after the last one.
func (p *posTracker) advanceFar(buf []byte, i, end, to int) {
	line, from := p.line, i // from: where the characters of the last line are counted
	for ; i+8 <= end; i += 8 {
		if nl := zeroBytes(binary.LittleEndian.Uint64(buf[i:]) ^ 0x0a0a0a0a0a0a0a0a); nl != 0 {
			line += bits.OnesCount64(nl) // zeroBytes is exact: one bit a newline
			from = i + (63-bits.LeadingZeros64(nl))>>3 + 1
		}
	}
	for ; i < end; i++ {
		if buf[i] == '\n' {
			line++
			from = i + 1
		}
	}
	col := p.col
	if line != p.line {
		col = 0
	}
	p.line, p.col, p.off = line, col+runeStarts(buf[from:end]), to
}

// runeStarts counts the bytes of b that start a character (all but
// 10xxxxxx), eight at a time.
func runeStarts(b []byte) int {
	n, i := 0, 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		n += bits.OnesCount64(^(x &^ (x << 1)) & hiBits)
	}
	for ; i < len(b); i++ {
		if b[i]&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// hiBits has the high bit of every byte of a word set.
const hiBits = 0x8080808080808080

// zeroBytes has the high bit of each zero byte of x set, and no other bit
// (exact: no borrow crosses bytes).
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^(((x & low7) + low7) | x | low7)
}

// countNewlines is bytes.Count(buf[i:end], "\n") for the short spans of
// findings, eight bytes at a time (a last partial word is read whole when
// buf goes on, its bytes past end masked off).
func countNewlines(buf []byte, i, end int) int {
	n := 0
	for ; i+8 <= end; i += 8 {
		n += bits.OnesCount64(zeroBytes(binary.LittleEndian.Uint64(buf[i:]) ^ 0x0a0a0a0a0a0a0a0a))
	}
	if i < end && i+8 <= len(buf) {
		nl := zeroBytes(binary.LittleEndian.Uint64(buf[i:]) ^ 0x0a0a0a0a0a0a0a0a)
		n += bits.OnesCount64(nl & (1<<(8*(end-i)) - 1))
		i = end
	}
	for ; i < end; i++ {
		if buf[i] == '\n' {
			n++
		}
	}
	return n
}

// place sets f's stream offsets and positions from its chunk-relative
// span (buf starts at stream offset base); findings must be placed in
// order of their start.
func (p *posTracker) place(f *Finding, buf []byte, base, start, end int) {
	p.advance(buf, base, base+start)
	f.Line = p.line
	f.Column = p.col + 1
	f.EndLine = f.Line + countNewlines(buf, start, max(start, end-1))
	f.Start, f.End = base+start, base+end
}

// hash is the keyed hash of a normalised value (scans use the same
// construction through scanState.emit without allocating per value).
func (s *Scanner) hash(norm string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(norm))
	return hex.EncodeToString(m.Sum(nil)[:hashBytes])
}

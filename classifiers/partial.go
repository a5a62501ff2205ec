package classifiers

import (
	"bytes"
	"context"
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Partial text. A streamed answer is verified as it arrives: the verifier
// scans the text received so far and releases what it can vouch for. Most
// of that text is settled long before the answer ends: no finding can start
// in it any more, and the findings that do are final. ScanPartial says
// where that stops. Everything after that point is a candidate that more
// text may still complete, extend, create or cancel, family by family:
//
//   - the trailing token (the bytes after the last white space): every value
//     without white space in it (e-mail addresses, URLs and connection
//     strings, keys and tokens, wallets, IP addresses, codes, template-like
//     markup) lies in one token, and its detector reads at most one byte
//     past it (a boundary);
//   - a trailing run of digit groups joined by up to three separator bytes
//     (space, '-', '.', parentheses, '+'), with the upper-case letter groups
//     IBANs carry and the letters a NINO, DNI or Corsican NIR puts around
//     them ("+33 6 12 34", "GB29 NWBK 60", "AB 12 34 56 C"), held from its
//     first group (less three bytes: a NINO's letters, a '+' or '(');
//   - a trailing chain of name words (capitalised words, initials,
//     particles, a doctorate's field) joined by one or two spaces, up to the
//     last stop word or title before it: a name can still grow, start or
//     (for "DUPONT Jean", "John Doe") be cancelled by the next word;
//   - the start of a keyword the text ends inside of (a multi-word banner
//     such as "for internal use", a custom keyword, a key prefix), and a
//     keyword that ends the text (its boundary is not known yet);
//   - a confidentiality banner whose line may still turn out to hold it
//     alone, a TLP label, a private key block without its END line, and the
//     quoted value of a "password = ..." assignment without its closing
//     quote;
//   - a number of eight digits or more, or an Ethereum address, that a
//     context word may still make a finding (a bare SSN, a national phone
//     number, SIREN, SIRET, NHS, BSN), and every finding whose confidence a
//     context word may still raise: until ctxReach bytes have followed it
//     and no context word can still start within them;
//   - a Twilio key or auth token that the word "twilio" may still follow
//     (300 bytes), a service account's "private_key_id" (3000 bytes), and the
//     matches of a custom pattern whose keywords may still follow (256
//     bytes).
//
// A finding that reaches into what is held is held with it, and so is any
// other that overlaps it before overlaps are resolved (which of two
// overlapping values is kept may change). Custom patterns that can match
// white space (or the end of the text) are held for PartialOptions.MaxHold
// bytes: no regular-expression engine says whether a match could still
// begin before the end of a text.

// ctxReach is how far after a value a context word may start and still
// count: hasContext's dist/2 for the widest dist its callers use (64), and
// nearHit's for custom rules.
const ctxReach = 32

// PartialOptions tune ScanPartial.
type PartialOptions struct {
	// MaxHold bounds how long a candidate that is not a finding yet holds
	// text back: one that began more than MaxHold bytes before the end of
	// the text no longer does (a stream then releases its start, as a
	// fixed window of MaxHold bytes would). 0 means no bound. Findings
	// already found are held regardless.
	MaxHold int
	// Hold is a hold-back of the caller's own, in bytes from the end of
	// the text (a canary it may be reading): findings that reach into it
	// are not final either. 0 means none.
	Hold int
	// Scratch, when not nil, is reused by ScanPartialFrom instead of
	// allocating its working memory anew (a stream scanned piece after
	// piece passes the same one).
	Scratch *PartialScratch
}

// ScanPartial scans text, the part received so far of a longer text (a
// streamed answer), as Scan does, and returns besides its findings
// settled, the offset before which they are final: whatever follows text,
// the findings of the longer text that start before settled are exactly
// the returned findings that start before settled (same detector, span,
// confidence and hash). See the file comment for what is held and why;
// candidates held longer than opts.MaxHold are the exception. It is safe
// for concurrent use.
func (s *Scanner) ScanPartial(ctx context.Context, text []byte, opts PartialOptions) (fs []Finding, settled int, err error) {
	var part partialScan
	if len(text) <= s.chunk {
		fs, err = s.scanChunkRaw(ctx, text, 0, len(text), newPosTracker(), 0, &part)
		fs = sortFindings(fs)
	} else {
		// A long text: its findings as Scan finds them, and what the
		// last chunk holds (what is held lies well within it).
		fs, err = s.Scan(ctx, text)
		base := len(text) - s.overlap
		if ctx.Err() == nil {
			// This pass keeps only part; its findings (Scan's already)
			// are dropped, so their lines are not counted: the tracker
			// starts where the chunk does.
			at := &posTracker{off: base, line: 1}
			_, _ = s.scanChunkRaw(ctx, text[base:], 0, len(text)-base, at, base, &part)
			if part.view != nil {
				// Offsets in the view of text[base:]: settled there.
				return fs, base + s.settleView(text[base:], &part, opts), err
			}
			for i := range part.spans {
				part.spans[i].start += base
				part.spans[i].end += base
			}
			for i := range part.hits {
				part.hits[i].start += base
				part.hits[i].end += base
			}
		}
	}
	return fs, s.settleView(text, &part, opts), err
}

// settleView is settle for a scan whose detectors read a normalised view
// of text (part.view; settle itself when there is none): the view is
// settled, with the hold bounds mapped to it, and the offset mapped back
// to text, where the findings that reach into what is held hold with it.
func (s *Scanner) settleView(text []byte, part *partialScan, opts PartialOptions) int {
	v := part.view
	if v == nil {
		return s.settle(text, part, opts)
	}
	n := len(v.text)
	vo := PartialOptions{}
	if opts.MaxHold > 0 {
		vo.MaxHold = max(1, n-v.down(max(0, len(text)-opts.MaxHold)))
	}
	at := v.boundaryUp(s.settle(v.text, part, vo))
	if opts.Hold > 0 {
		at = min(at, max(0, len(text)-opts.Hold))
	}
	var spans []rawSpan
	if opts.Scratch != nil {
		spans = opts.Scratch.spans[:0]
	}
	for _, r := range part.spans {
		a, b, _ := v.spanUp(r.start, r.end)
		spans = append(spans, rawSpan{a, b, r.who})
	}
	if opts.Scratch != nil {
		opts.Scratch.spans = spans
	}
	for changed := true; changed; {
		changed = false
		for _, r := range spans {
			if r.start < at && r.end > at {
				at, changed = r.start, true
			}
		}
	}
	return at
}

// partialScan is what a scan records for ScanPartial.
type partialScan struct {
	spans []rawSpan // findings before overlaps are resolved
	hits  []detHit  // keyword hits of the built-in detectors (context words aside)
	// view is the normalised view the offsets above are in (nil: the
	// text's own offsets).
	view *view
}

// rawSpan is a finding before overlaps are resolved: its span and who
// found it (see rawFinding).
type rawSpan struct {
	start, end int
	who        int32
}

// partialTables are what ScanPartial needs of a Scanner beyond what Scan
// does, built on first use and only read afterwards.
type partialTables struct {
	// findDepth and ctxDepth give, per Aho-Corasick state, the length of
	// the longest suffix of the text read that a keyword (findDepth) or a
	// context word (ctxDepth) properly extends: the text ends inside it.
	findDepth, ctxDepth []int32
	// ctxWho: per who (see rawFinding), whether context words can change
	// the finding (its confidence, or whether it is one).
	ctxWho []bool
	// Detectors read forward in their own way (indices in Scanner.dets,
	// -1 when disabled).
	banner, pem, tlp, generic, twilio, gcp int
	twilioRe                               *regexp.Regexp
	// customToken: per custom rule with a pattern, whether its matches
	// lie within one run of non-white-space bytes (tokenShaped).
	customToken []bool
}

func (s *Scanner) partialTables() *partialTables {
	s.partialOnce.Do(func() { s.partial = newPartialTables(s) })
	return s.partial
}

// next returns the state after reading b in state (both unpremultiplied).
func (m *acMatcher) next(state uint32, b byte) uint32 {
	return m.state(m.entry(2*state*m.half + uint32(m.class[b])))
}

func newPartialTables(s *Scanner) *partialTables {
	t := &partialTables{banner: -1, pem: -1, tlp: -1, generic: -1, twilio: -1, gcp: -1}
	m := s.ac
	nst := len(m.depth)
	// Bit 1: a keyword properly extends the state; bit 2: a context word.
	ext := make([]uint8, nst)
	for pi, p := range m.patterns {
		bit := uint8(1)
		if s.acRefs[pi].context {
			bit = 2
		}
		st := uint32(0)
		for i := 0; i < len(p); i++ {
			ext[st] |= bit
			st = m.next(st, p[i])
		}
	}
	// Fold the failure chains (every suffix of the text read that starts a
	// keyword): a failure link points to a shallower state, so states are
	// visited by depth.
	order := make([]uint32, nst)
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortStableFunc(order, func(a, b uint32) int { return int(m.depth[a] - m.depth[b]) })
	t.findDepth, t.ctxDepth = make([]int32, nst), make([]int32, nst)
	for _, st := range order[1:] { // the root holds nothing
		f := m.fail[st]
		t.findDepth[st], t.ctxDepth[st] = t.findDepth[f], t.ctxDepth[f]
		if ext[st]&1 != 0 {
			t.findDepth[st] = m.depth[st]
		}
		if ext[st]&2 != 0 {
			t.ctxDepth[st] = m.depth[st]
		}
	}
	for i, d := range s.dets {
		t.ctxWho = append(t.ctxWho, len(d.context) > 0)
		switch d.id {
		case "marker.classification":
			t.banner = i
		case "secret.private_key":
			t.pem = i
		case "marker.tlp":
			t.tlp = i
		case "secret.generic":
			t.generic = i
		case "secret.twilio":
			t.twilio = i
			// The candidates of secretDetectors' twilio pattern, found
			// without the keyword.
			t.twilioRe = regexp.MustCompile(`SK[0-9a-fA-F]{32}|(?i:auth_?token)["']?\s*(?:=|:)\s*["']?([0-9a-f]{32})`)
		case "secret.gcp_service_account":
			t.gcp = i
		}
	}
	for _, c := range s.custom {
		t.ctxWho = append(t.ctxWho, len(c.context) > 0)
		ok := false
		if c.re != nil {
			ok = tokenShaped(c.re.String())
		}
		t.customToken = append(t.customToken, ok)
	}
	return t
}

// settle returns where the findings of text stop being final (see
// ScanPartial), given what its scan recorded.
func (s *Scanner) settle(text []byte, part *partialScan, opts PartialOptions) int {
	t := s.partialTables()
	n := len(text)
	floor := 0
	if opts.MaxHold > 0 {
		floor = max(0, n-opts.MaxHold)
	}
	lex := n // candidates: held from here, but never before floor
	hold := func(at int) { lex = min(lex, max(at, floor)) }

	hold(tokenTail(text, floor))
	hold(numericTail(text, floor))
	if s.names != nil {
		hold(nameTail(text, floor))
	}
	// Keywords the text ends inside of, or with.
	m := s.ac
	st := uint32(0)
	for _, b := range text[max(0, n-m.maxLen):] {
		st = m.next(st, b)
	}
	hold(n - int(t.findDepth[st]))
	ctxFrom := n - int(t.ctxDepth[st]) // where a context word may still start
	for _, p := range m.out[st] {
		if !s.acRefs[p].context {
			hold(n - s.acRefs[p].length)
		}
	}
	// Keywords whose detector still reads forward.
	token := false // a "token" keyword (genericKeys), as in auth_token
	for _, h := range part.hits {
		switch h.det {
		case t.banner:
			if bannerOpen(text, h.start, h.end) {
				hold(h.start)
			}
		case t.pem:
			if pemOpen(text, h.start) {
				hold(h.start)
			}
		case t.tlp:
			if h.end+20 > n { // the detector's window after "tlp"
				hold(h.start)
			}
		case t.generic:
			hold(genericOpen(text, h.start, h.end))
			token = token || h.end > n-306
		}
	}
	// Numbers a context word may still make findings: those that end at
	// or after ctxLo.
	ctxLo := min(n, ctxFrom) - ctxReach
	for j := n - 1; j >= max(floor, ctxLo-1); j-- {
		if !isDigit(text[j]) {
			continue
		}
		a, digits := numberAround(text, j, floor)
		if digits >= 8 {
			hold(a - 1) // with a leading '+' or '('
		}
		j = a
	}
	// An Ethereum address without checksum needs context too: "0x" and
	// 40 hex digits, ending at or after ctxLo.
	for j := max(floor, ctxLo-42); j+1 < n; j++ {
		k := bytes.IndexByte(text[j:n-1], '0')
		if k < 0 {
			break
		}
		j += k
		if (text[j+1]|0x20) == 'x' && allHex(text[j+2:min(n, j+42)]) {
			hold(j)
			break
		}
	}
	// Candidates a keyword may still enable from afar.
	if t.twilio >= 0 {
		w := max(floor, n-306)
		if seg := text[w:]; bytes.Contains(seg, []byte("SK")) || token || t.generic < 0 && containsFoldASCII(seg, "token") {
			if loc := t.twilioRe.FindIndex(seg); loc != nil {
				hold(w + loc[0])
			}
		}
	}
	if t.gcp >= 0 {
		w := max(floor, n-3000-len(`"service_account"`))
		if i := bytes.Index(text[w:], []byte(`"private_key_id"`)); i >= 0 {
			hold(w + i)
		}
	}
	for i, c := range s.custom {
		switch {
		case c.re == nil:
		case !t.customToken[i]:
			hold(floor) // see the file comment
		case len(c.keywords) > 0:
			// A keyword may still come within customWindow bytes (and
			// merge with an earlier keyword's window).
			w := max(floor, n-2*customWindow-m.maxLen)
			if at, ok := firstMatch(c, text[w:]); ok {
				hold(w + at)
			}
		}
	}

	at := lex
	if opts.Hold > 0 {
		at = min(at, max(0, n-opts.Hold))
	}
	// Findings a context word may still change.
	for _, r := range part.spans {
		if t.ctxWho[r.who] && min(n, ctxFrom) <= r.end+ctxReach {
			at = min(at, r.start)
		}
	}
	// A finding that reaches into what is held, and any that overlaps it.
	for changed := true; changed; {
		changed = false
		for _, r := range part.spans {
			if r.start < at && r.end > at {
				at, changed = r.start, true
			}
		}
	}
	return at
}

func isSpaceByte(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\v' || b == '\f'
}

// tokenTail returns where the trailing run of non-white-space bytes starts
// (len(text) when text ends with white space), not before floor.
func tokenTail(text []byte, floor int) int {
	i := len(text)
	for i > floor && !isSpaceByte(text[i-1]) {
		i--
	}
	return i
}

// isChainSep reports the bytes between the groups of a number: numCand's
// separators, IBAN and readCompact's spaces and dots, a phone's '+'.
func isChainSep(b byte) bool { return isNumSep(b) || b == '+' }

// numericTail returns where a number that more text may still extend
// starts (see the file comment), len(text) when there is none.
func numericTail(text []byte, floor int) int {
	n := len(text)
	hold := n
	// "AB " before a NINO's digits that have not come yet.
	if ninoLetters(text, n, floor) {
		hold = n - 3
	}
	i := n
	for k := 0; i > floor && isChainSep(text[i-1]); k++ {
		if k == 3 {
			return hold // four separator bytes: nothing joins what came before
		}
		i--
	}
	start, digit := -1, false
	for {
		k := i
		for k > floor && isAlnum(text[k-1]) {
			k--
		}
		if k == i {
			break
		}
		w := text[k:i]
		d := bytes.ContainsFunc(w, func(r rune) bool { return r >= '0' && r <= '9' })
		if !d && (len(w) > 34 || !allUpperASCII(w)) {
			break
		}
		start, digit = k, digit || d
		j := k
		for j > floor && isChainSep(text[j-1]) && k-j < 4 {
			j--
		}
		if j == k || k-j > 3 {
			break
		}
		i = j
	}
	if digit {
		switch {
		case ninoLetters(text, start, floor):
			start -= 3
		case start > floor && (text[start-1] == '+' || text[start-1] == '('):
			start--
		}
		hold = min(hold, start)
	}
	return hold
}

// ninoLetters reports whether a NINO's two letters and a space ("AB ")
// precede text[i] (ninoNumeric reads them there, in either case).
func ninoLetters(text []byte, i, floor int) bool {
	return i-3 >= floor && text[i-1] == ' ' && isAlpha(text[i-2]) && isAlpha(text[i-3]) && (i-3 == 0 || !isWordByte(text[i-4]))
}

func allUpperASCII(w []byte) bool {
	for _, c := range w {
		if !isUpper(c) {
			return false
		}
	}
	return true
}

// numberAround returns the start of the digit groups (joined as numCand
// joins them) around the digit text[j], and how many digits they hold,
// reading back no further than floor.
func numberAround(text []byte, j, floor int) (start, digits int) {
	a := j
	for {
		for a > floor && isDigit(text[a-1]) {
			a--
		}
		k := a
		for k > floor && isNumSep(text[k-1]) && a-k < 3 {
			k--
		}
		if k == a || k == floor || !isDigit(text[k-1]) {
			break
		}
		a = k
	}
	for i := a; i < len(text); {
		if isDigit(text[i]) {
			digits++
			i++
			continue
		}
		k := i
		for k < len(text) && isNumSep(text[k]) && k-i < 3 {
			k++
		}
		if k == i || k == len(text) || !isDigit(text[k]) {
			break
		}
		i = k
	}
	return a, digits
}

// nameTail returns where a person name that the next words may still
// extend, create or cancel can start (see the file comment), len(text)
// when none can.
func nameTail(text []byte, floor int) int {
	n := len(text)
	i, sep := n, 0
	for i > floor && sep <= 2 {
		c := text[i-1]
		switch {
		case c == ' ' || c == '\t':
			i, sep = i-1, sep+1
			continue
		case c == 0xA0 && i-2 >= floor && text[i-2] == 0xC2:
			i, sep = i-2, sep+2
			continue
		case c == 0xC2 && i == n: // a no-break space may be coming
			i, sep = i-1, sep+1
			continue
		}
		break
	}
	if sep > 2 {
		return n // nameSep takes no more: every name before is complete
	}
	start := n
	var buf [48]byte
	for last := true; i > floor; last = false {
		k := i
		if text[k-1] == '.' {
			k--
		}
		core := k
		for k > floor && (nameLetter(text[k-1]) || text[k-1] == '-' || text[k-1] == '\'') &&
			!(text[k-1] == 0xA0 && k-2 >= floor && text[k-2] == 0xC2) {
			k--
		}
		if k == core {
			return start
		}
		if !nameChainWord(text, k, core, i, last && sep == 0, &buf) {
			return start
		}
		start = k
		// The separator before the word: one or two spaces, tabs or a
		// no-break space (nameSep).
		j := k
		for j > floor && k-j <= 2 {
			if c := text[j-1]; c == ' ' || c == '\t' {
				j--
			} else if c == 0xA0 && j-2 >= floor && text[j-2] == 0xC2 {
				j -= 2
			} else {
				break
			}
		}
		if j == k || k-j > 2 {
			return start
		}
		i = j
	}
	return start
}

// nameParts are the lower-case words a name may hold (particles and a
// doctorate's fields), for the question whether a word being read may
// still become one.
var nameParts = func() []string {
	var out []string
	for w := range nameParticles {
		out = append(out, w)
	}
	for w := range nameDegrees {
		out = append(out, w)
	}
	return out
}()

// nameChainWord reports whether the word text[k:end] (its letters end at
// core; a period may follow) may be part of a name that is not complete
// yet: a capitalised word that is neither a stop word nor a title, an
// initial, a particle, a doctorate's field, or, when partial (the text ends
// with it), any word that may still become one of those.
func nameChainWord(text []byte, k, core, end int, partial bool, buf *[48]byte) bool {
	w := text[k:core]
	upper := isUpper(w[0]) || w[0] >= utf8.RuneSelf
	dot := end > core
	if partial && !dot {
		if upper {
			return true
		}
		if len(w) >= 2 && w[0] == 'd' && (w[1] == '\'' || w[1] == 0xE2) || string(w) == "d" {
			return true
		}
		for _, p := range nameParts {
			if len(p) >= len(w) && p[:len(w)] == string(w) {
				return true
			}
		}
		return false
	}
	if upper {
		if dot {
			if l, _ := letterAt(text, k); l > 0 && k+l == core {
				return true // an initial
			}
		}
		if kind := (nameWord{start: k, end: core}).kind(text, buf); kind == nameStop || kind == nameTitle {
			return false
		}
		return !dot // a name may end with "Dupont." but not go on after it
	}
	if dot {
		return nameDegrees[string(w)]
	}
	return nameParticles[string(w)] || len(w) > 2 && w[0] == 'd' && (w[1] == '\'' || w[1] == 0xE2)
}

// bannerOpen reports whether the banner keyword text[start:end] may still
// become a finding or stop being one (bannerHit's reading, up to where the
// text ends).
func bannerOpen(text []byte, start, end int) bool {
	n := len(text)
	if start > 0 && isWordByte(text[start-1]) {
		return false
	}
	caveats := text[end-1] == '/'
	if end == n {
		return true
	}
	if !caveats && isWordByte(text[end]) {
		return false
	}
	if text[end] >= 0x80 {
		if !utf8.FullRune(text[end:]) {
			return true
		}
		if r, _ := utf8.DecodeRune(text[end:]); unicode.IsLetter(r) {
			return false
		}
	}
	hi := end
	if caveats {
		for hi < n && hi-end < 60 && (isUpper(text[hi]) || text[hi] == '/' || text[hi] == ' ' || text[hi] == '-') {
			hi++
		}
		if hi == n && hi-end < 60 {
			return true
		}
		for hi > end && text[hi-1] == ' ' {
			hi--
		}
		if hi == end {
			return false
		}
	}
	// Alone on its line: known once the line ends, or once it holds
	// anything but decoration, or lineReach (200) bytes on.
	rest := text[hi:]
	if bytes.IndexByte(rest, '\n') >= 0 || len(rest) > 200 {
		return false
	}
	return len(bytes.Trim(rest, " \t\r*#=-_[]|<>/!.\"'")) == 0
}

// pemOpen reports whether the private key block that starts at text[start]
// may still match: it has no END line yet.
func pemOpen(text []byte, start int) bool {
	if !bytes.HasPrefix(text[start:], []byte("-----BEGIN ")) || len(text)-start > 16100 {
		return false
	}
	rest := text[start+11:]
	for {
		i := bytes.Index(rest, []byte("-----END "))
		if i < 0 {
			return true
		}
		j := i + 9
		for j < len(rest) && j-i-9 < 40 && (isUpper(rest[j]) || rest[j] == ' ') {
			j++
		}
		if j == len(rest) || len(rest)-j < 5 && bytes.HasPrefix([]byte("-----"), rest[j:]) {
			return true // the END line is still being written
		}
		if j-i-9 >= 3 && bytes.HasPrefix(rest[j:], []byte("-----")) {
			return false
		}
		rest = rest[i+1:]
	}
}

// genericOpen returns where the value of an assignment whose keyword is
// text[start:end] starts, when the value is still being read (readGeneric
// reached the end of the text inside it), else len(text).
func genericOpen(text []byte, start, end int) int {
	r := readGeneric(text, start, end)
	if !r.open || r.lo == 0 {
		return len(text) // no value, or not yet: it will start at the end or later
	}
	return r.lo
}

// containsFoldASCII reports whether s holds lower-case ASCII word w in any
// case.
func containsFoldASCII(s []byte, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if _, ok := foldPrefix(s[:i+len(w)], i, w); ok {
			return true
		}
	}
	return false
}

// firstMatch returns the byte offset in text of the first match of c's
// pattern, keywords or not; a timeout counts as a match at 0.
func firstMatch(c *customRule, text []byte) (int, bool) {
	runes := make([]rune, 0, len(text))
	offs := make([]int, 0, len(text))
	for k := 0; k < len(text); {
		r, size := utf8.DecodeRune(text[k:])
		runes = append(runes, r)
		offs = append(offs, k)
		k += size
	}
	m, err := c.re.FindRunesMatch(runes)
	if err != nil {
		return 0, true
	}
	if m == nil {
		return 0, false
	}
	return offs[m.RuneIndex], true
}

// tokenShaped reports whether every match of pattern (a regexp2 pattern)
// lies within one run of non-white-space characters and is decided by the
// byte after it at most: the pattern parses as a Go regexp (no lookaround,
// no backreference), and no part of it matches white space or the end of
// the text.
func tokenShaped(pattern string) bool {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return false
	}
	return !matchesSpace(re)
}

// whiteSpace is every rune unicode.IsSpace reports.
var whiteSpace = []rune{'\t', '\n', '\v', '\f', '\r', ' ', 0x85, 0xA0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
	0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}

func matchesSpace(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL, syntax.OpEndLine, syntax.OpEndText:
		return true
	case syntax.OpLiteral:
		if slices.ContainsFunc(re.Rune, unicode.IsSpace) {
			return true
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for _, sp := range whiteSpace {
				if re.Rune[i] <= sp && sp <= re.Rune[i+1] {
					return true
				}
			}
		}
	}
	return slices.ContainsFunc(re.Sub, matchesSpace)
}

func allHex(b []byte) bool {
	for _, c := range b {
		if !isHex(c) {
			return false
		}
	}
	return true
}

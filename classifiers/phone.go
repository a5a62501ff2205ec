package classifiers

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

//go:generate go run ./internal/phonemeta/gen

// Phone validation.
//
// The engine validates phone candidates (digits only: no letters,
// extensions or formatting) as phonenumbers.Parse followed by
// IsValidNumber or IsValidNumberForRegion would, with libphonenumber's
// metadata and patterns but without the library: phonemeta_gen.go holds
// the metadata the decisions need, written by go generate from the pinned
// github.com/nyaruka/phonenumbers, as string constants that cost nothing
// at start-up. phoneMeta indexes them on the first validation; phoneBook
// decodes a region and compiles its patterns the first time a number
// needs it. TestPhoneExamplesMatchLibrary, TestPhoneRandomMatchesLibrary,
// TestPhoneFastPathMatchesLibrary and FuzzPhoneMatchesLibrary check the
// answers against the library, TestPhoneMetaGenerated that the data is
// the library's.

// phoneIndex locates the generated metadata: the region keys of each
// calling code and the record of each region key (a region id, or "001"
// and the calling code for a non-geographic entity). Read only.
type phoneIndex struct {
	codes   [1000][]string    // calling code → region keys, main region first
	records map[string]string // region key → its line of phoneMetaRegions
}

// phoneMeta returns the index of the generated metadata, built once.
var phoneMeta = sync.OnceValue(func() *phoneIndex {
	ix := &phoneIndex{records: make(map[string]string, 256)}
	for rec := range strings.Lines(phoneMetaRegions) {
		rec = strings.TrimSuffix(rec, "\n")
		key, _, _ := strings.Cut(rec, "\t")
		ix.records[key] = rec
	}
	for line := range strings.Lines(phoneMetaCallingCodes) {
		cc, list, _ := strings.Cut(strings.TrimSuffix(line, "\n"), ":")
		c, err := strconv.Atoi(cc)
		if err != nil || c <= 0 || c >= len(ix.codes) {
			continue
		}
		keys := strings.Split(list, ",")
		for i, k := range keys {
			if k == "001" {
				keys[i] = k + cc
			}
		}
		ix.codes[c] = keys
	}
	return ix
})

// phoneBook holds per-region validation tables, built on first use. It is
// safe for concurrent use.
type phoneBook struct {
	mu      sync.RWMutex
	regions map[string]*phoneRegion
}

// phoneRegion is one region's compiled metadata; immutable once built.
type phoneRegion struct {
	ok        bool   // metadata found and its patterns compiled
	id        string // the region id ("001" for a non-geographic entity)
	cc        int
	ccStr     string
	idd       string         // international prefix when a digit literal (possibly empty)
	iddRe     *regexp.Regexp // otherwise, the anchored pattern
	npLit     string         // national prefix for parsing when a digit literal and there is no transform rule
	npfp      *regexp.Regexp // otherwise, the anchored pattern, or nil when the region has none
	transform string         // national prefix transform rule (a regexp replacement template), or ""
	leading   *regexp.Regexp // leading digits for shared calling codes, or nil
	general   phoneDesc
	types     []phoneDesc
	possible  []int32 // general possible lengths (testNumberLength)
	localOnly []int32
}

// phoneDesc is a PhoneNumberDesc: possible lengths (empty means those of
// the general description) and the anchored national number pattern.
type phoneDesc struct {
	lens []int32
	re   *regexp.Regexp
	dfa  *digitDFA // the same pattern as a DFA over digits, when it has one
}

func (d *phoneDesc) match(nsn string) bool {
	if len(d.lens) > 0 {
		found := false
		for _, l := range d.lens {
			if int(l) == len(nsn) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return d.full(nsn)
}

// full reports whether the digit string s matches the pattern (lengths
// not checked).
func (d *phoneDesc) full(s string) bool {
	if d.dfa != nil {
		return d.dfa.match(s)
	}
	return d.re.MatchString(s)
}

func newPhoneBook() *phoneBook { return &phoneBook{regions: map[string]*phoneRegion{}} }

// region returns the compiled tables of region key id (built once).
func (b *phoneBook) region(id string) *phoneRegion {
	b.mu.RLock()
	r, ok := b.regions[id]
	b.mu.RUnlock()
	if ok {
		return r
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.regions[id]; ok {
		return r
	}
	r = buildPhoneRegion(phoneMeta().records[id])
	b.regions[id] = r
	return r
}

// Fields of a phoneMetaRegions record.
const (
	phoneFieldCC = 1 + iota
	phoneFieldIDD
	phoneFieldNPFP
	phoneFieldTransform
	phoneFieldLeading
	phoneFieldSame
	phoneFieldGeneral
	phoneFieldFixed
	phoneFieldMobile
	phoneFields = phoneFieldGeneral + 11
)

func isDigits(s string) bool { return strings.Trim(s, "0123456789") == "" }

// buildPhoneRegion decodes and compiles a phoneMetaRegions record; the
// region is not ok when rec is empty (no such region) or malformed.
func buildPhoneRegion(rec string) *phoneRegion {
	r := &phoneRegion{}
	f := strings.Split(rec, "\t")
	if len(f) != phoneFields {
		return r
	}
	compile := func(pat string) *regexp.Regexp {
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil
		}
		return re
	}
	cc, err := strconv.Atoi(f[phoneFieldCC])
	if err != nil {
		return r
	}
	r.id = f[0]
	if strings.HasPrefix(r.id, "001") {
		r.id = "001" // the key of a non-geographic entity adds its calling code
	}
	r.cc, r.ccStr = cc, f[phoneFieldCC]
	if idd := f[phoneFieldIDD]; isDigits(idd) {
		r.idd = idd
	} else if r.iddRe = compile("^(?:" + idd + ")"); r.iddRe == nil {
		return r
	}
	r.transform = f[phoneFieldTransform]
	if p := f[phoneFieldNPFP]; p != "" {
		if isDigits(p) && r.transform == "" {
			r.npLit = p // a digit literal: "^(?:0)" matches exactly its prefix
		} else if r.npfp = compile("^(?:" + p + ")"); r.npfp == nil {
			return r
		}
	}
	if p := f[phoneFieldLeading]; p != "" {
		if r.leading = compile("^(?:" + p + ")"); r.leading == nil {
			return r
		}
	}
	// A pattern with a digit DFA needs no regexp (full uses the DFA):
	// compiling only one of them halves the cost of building a region,
	// paid on the first scan that meets it. Fields are "-" (no
	// description) or "lengths local-only-lengths pattern".
	desc := func(field string) (d phoneDesc, local []int32, ok bool) {
		lens, rest, _ := strings.Cut(field, " ")
		loc, pat, found := strings.Cut(rest, " ")
		if !found {
			return d, nil, false
		}
		if d.lens, ok = parseLengths(lens); !ok {
			return d, nil, false
		}
		if local, ok = parseLengths(loc); !ok {
			return d, nil, false
		}
		if d.dfa = compileDigitDFA(pat); d.dfa != nil {
			return d, local, true
		}
		d.re = compile("^(?:" + pat + ")$")
		return d, local, d.re != nil
	}
	g, local, ok := desc(f[phoneFieldGeneral])
	if !ok {
		return r
	}
	r.general = g
	r.possible, r.localOnly = g.lens, local
	if len(r.possible) == 0 {
		return r
	}
	// The types getNumberTypeHelper tries. Only "is any type matched"
	// matters, so the common ones go first; mobile is not tried when it
	// shares fixed-line's pattern.
	for i := phoneFieldFixed; i < phoneFields; i++ {
		if f[i] == "-" || (i == phoneFieldMobile && f[phoneFieldSame] == "1") {
			continue
		}
		t, _, ok := desc(f[i])
		if !ok {
			return r
		}
		r.types = append(r.types, t)
	}
	r.ok = true
	return r
}

// parseLengths decodes comma-separated possible lengths ("" is none).
func parseLengths(s string) ([]int32, bool) {
	if s == "" {
		return nil, true
	}
	var out []int32
	for v := range strings.SplitSeq(s, ",") {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, false
		}
		out = append(out, int32(n))
	}
	return out, true
}

// valid is getNumberTypeHelper(nsn) != UNKNOWN.
func (r *phoneRegion) valid(nsn string) bool {
	if !r.general.match(nsn) {
		return false
	}
	for i := range r.types {
		if r.types[i].match(nsn) {
			return true
		}
	}
	return false
}

// Results of testNumberLength that keep a stripped national prefix.
func (r *phoneRegion) lengthKeepsStrip(n string) bool {
	if r.possible[0] == -1 {
		return false // INVALID_LENGTH
	}
	l := int32(len(n))
	for _, x := range r.localOnly {
		if x == l {
			return false // IS_POSSIBLE_LOCAL_ONLY
		}
	}
	if r.possible[0] == l {
		return true
	}
	if r.possible[0] > l {
		return false // TOO_SHORT
	}
	if r.possible[len(r.possible)-1] < l {
		return true // TOO_LONG
	}
	for _, x := range r.possible[1:] {
		if x == l {
			return true
		}
	}
	return false // INVALID_LENGTH
}

// stripNP is maybeStripNationalPrefixAndCarrierCode: n without its national
// prefix, or with the prefix rewritten by the region's transform rule,
// unless n was viable (matches the general pattern) and the result is not.
func (r *phoneRegion) stripNP(n string) string {
	if len(n) == 0 {
		return n
	}
	var p string
	switch {
	case r.npLit != "":
		if !strings.HasPrefix(n, r.npLit) {
			return n
		}
		p = n[len(r.npLit):]
	case r.npfp != nil:
		m := r.npfp.FindStringSubmatchIndex(n)
		if m == nil {
			return n
		}
		// The library transforms when the rule is set and the last
		// capturing group matched (the whole match when there is none).
		if r.transform != "" && m[len(m)-2] >= 0 {
			p = r.npfp.ReplaceAllString(n, r.transform)
		} else {
			p = n[m[1]:]
		}
	default:
		return n
	}
	if r.general.full(n) && !r.general.full(p) {
		return n
	}
	return p
}

// nsn strips the national prefix from a national number as Parse does
// (kept only when the rest has a possible length) and applies Parse's
// length limits.
func (r *phoneRegion) nsn(n string) (string, bool) {
	if len(n) < 2 {
		return "", false
	}
	if p := r.stripNP(n); p != n && r.lengthKeepsStrip(p) {
		n = p
	}
	if len(n) < 2 || len(n) > 17 {
		return "", false
	}
	return n, true
}

// tooLong is testNumberLength(n) == TOO_LONG.
func (r *phoneRegion) tooLong(n string) bool {
	if r.possible[0] == -1 {
		return false
	}
	l := int32(len(n))
	for _, x := range r.localOnly {
		if x == l {
			return false
		}
	}
	return r.possible[0] < l && r.possible[len(r.possible)-1] < l
}

// phoneNumber is a validated number: calling code and national significant
// number.
type phoneNumber struct {
	cc  int
	nsn string
}

// international validates the digits that followed a '+', as
// Parse("+"+digits, "ZZ") and IsValidNumber do.
func (b *phoneBook) international(digits string) (num phoneNumber, valid bool) {
	if len(digits) <= 2 || digits[0] == '0' {
		return num, false // too short after '+', or no calling code
	}
	// The calling code: the first of digits[:1], [:2], [:3] that is one
	// (they are prefix-free).
	ix := phoneMeta()
	code, cc := 0, ""
	var regions []string
	for i := 1; i <= 3; i++ {
		c, _ := strconv.Atoi(digits[:i])
		if rs := ix.codes[c]; len(rs) > 0 {
			code, cc, regions = c, digits[:i], rs
			break
		}
	}
	if code == 0 {
		return num, false // unknown calling code
	}
	main := b.region(regions[0])
	if !main.ok || main.cc != code {
		return num, false
	}
	nsn, ok := main.nsn(digits[len(cc):])
	if !ok {
		return num, false
	}
	region := main
	if len(regions) > 1 {
		if region = b.regionFor(code, nsn, regions); region == nil {
			return num, false
		}
	}
	return phoneNumber{code, nsn}, region.valid(nsn)
}

// regionFor is GetRegionCodeForNumber of calling code cc and national
// significant number nsn: the only region of cc, else the first whose
// leading digits start nsn or, when it has none, that nsn is valid for.
// regions are cc's region keys; nil when none fits.
func (b *phoneBook) regionFor(cc int, nsn string, regions []string) *phoneRegion {
	if len(regions) == 1 {
		return b.region(regions[0])
	}
	for _, id := range regions {
		r := b.region(id)
		if !r.ok || r.cc != cc {
			return nil
		}
		if r.leading != nil {
			if r.leading.MatchString(nsn) {
				return r
			}
		} else if r.valid(nsn) {
			return r
		}
	}
	return nil
}

// national validates digits as a national number of region id, as
// Parse(digits, id) and IsValidNumberForRegion(n, id) do: an international
// prefix (IDD) or the region's own calling code in front is recognised.
func (b *phoneBook) national(digits, id string) (num phoneNumber, valid bool) {
	r := b.region(id)
	if !r.ok || len(id) != 2 {
		return num, false // Parse rejects a region it does not know
	}
	iddEnd := -1
	if r.iddRe != nil {
		if m := r.iddRe.FindStringIndex(digits); m != nil {
			iddEnd = m[1]
		}
	} else if strings.HasPrefix(digits, r.idd) {
		iddEnd = len(r.idd)
	}
	parseRegion := r // whose metadata strips the national prefix
	national := digits
	switch {
	case iddEnd >= 0 && !(len(digits) > iddEnd && digits[iddEnd] == '0'):
		// IDD: an international number. It can only be valid for id
		// when its calling code is id's (calling codes are prefix-free).
		rest := digits[iddEnd:]
		if len(rest) <= 2 || !strings.HasPrefix(rest, r.ccStr) {
			return num, false
		}
		national = rest[len(r.ccStr):]
		if parseRegion = b.mainRegion(r.cc); parseRegion == nil {
			return num, false
		}
	case strings.HasPrefix(digits, r.ccStr):
		// The region's calling code without '+': Parse drops it when
		// the number is only valid, or only short enough, without it.
		p := r.stripNP(digits[len(r.ccStr):])
		if (!r.general.full(digits) && r.general.full(p)) || r.tooLong(digits) {
			national = p
			if parseRegion = b.mainRegion(r.cc); parseRegion == nil {
				return num, false
			}
		}
	}
	nsn, ok := parseRegion.nsn(national)
	if !ok {
		return num, false
	}
	return phoneNumber{r.cc, nsn}, r.valid(nsn)
}

// mainRegion returns the tables of the main region of calling code cc
// (GetRegionCodeForCountryCode), or nil when there is none.
func (b *phoneBook) mainRegion(cc int) *phoneRegion {
	codes := &phoneMeta().codes
	if cc <= 0 || cc >= len(codes) || len(codes[cc]) == 0 {
		return nil
	}
	m := b.region(codes[cc][0])
	if !m.ok || m.cc != cc {
		return nil
	}
	return m
}

// e164 formats the number as phonenumbers.Format(n, E164) does.
func (n phoneNumber) e164() string { return "+" + strconv.Itoa(n.cc) + n.nsn }

// e164Reusing is e164, returning s instead of a new string when s already
// holds the same text.
func (n phoneNumber) e164Reusing(s string) string {
	var b [24]byte
	cc := strconv.AppendInt(append(b[:0], '+'), int64(n.cc), 10)
	if len(s) == len(cc)+len(n.nsn) && s[:len(cc)] == string(cc) && s[len(cc):] == n.nsn {
		return s
	}
	return n.e164()
}

// nationalNumber is the national number as an integer would print it
// (PhoneNumber.GetNationalNumber): without leading zeros.
func (n phoneNumber) nationalNumber() string {
	s := strings.TrimLeft(n.nsn, "0")
	if s == "" {
		return "0"
	}
	return s
}

package classifiers

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
)

// Fast phone validation.
//
// phonenumbers.Parse followed by IsValidNumber costs about 10µs per
// candidate, most of it spent on steps that cannot apply to the candidates
// the engine hands over (digits only: no letters, extensions or formatting)
// and on looking patterns up by their text in a shared cache. phoneBook
// performs the same decisions with libphonenumber's own metadata and
// patterns, compiled once per region on first use, and defers to
// phonenumbers where it does not replicate the library (non-geographic
// calling codes, regions whose metadata has national prefix transform
// rules).
// TestPhoneFastPathMatchesLibrary checks that both give the same answer.

// phoneBook holds per-region validation tables, built on first use. It is
// safe for concurrent use.
type phoneBook struct {
	mu      sync.RWMutex
	regions map[string]*phoneRegion
}

// phoneRegion is one region's compiled metadata; immutable once built.
type phoneRegion struct {
	ok        bool // metadata found and its patterns compiled
	transform bool // national prefix transform rule: numbers of this region go to phonenumbers
	cc        int
	ccStr     string
	idd       string         // international prefix when a digit literal, else "" (national numbers go to phonenumbers)
	npLit     string         // national prefix for parsing when it is a digit literal
	npfp      *regexp.Regexp // otherwise, the pattern, or nil
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

// region returns the compiled tables of region id (built once).
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
	r = buildPhoneRegion(id)
	b.regions[id] = r
	return r
}

func buildPhoneRegion(id string) *phoneRegion {
	r := &phoneRegion{}
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		return r
	}
	var m *phonenumbers.PhoneMetadata
	for _, md := range coll.GetMetadata() {
		if md.GetId() == id {
			m = md
			break
		}
	}
	if m == nil || m.GetGeneralDesc() == nil {
		return r
	}
	r.transform = m.GetNationalPrefixTransformRule() != ""
	// Only national numbers need the international prefix: a region
	// whose prefix is a pattern (AU, JP, …) still validates numbers
	// written after a '+' here.
	if idd := m.GetInternationalPrefix(); idd != "" && strings.Trim(idd, "0123456789") == "" {
		r.idd = idd
	}
	compile := func(pat string) *regexp.Regexp {
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil
		}
		return re
	}
	r.cc = int(m.GetCountryCode())
	r.ccStr = strconv.Itoa(r.cc)
	if p := m.GetNationalPrefixForParsing(); p != "" {
		if strings.Trim(p, "0123456789") == "" {
			r.npLit = p // a digit literal: "^(?:0)" matches exactly its prefix
		} else if r.npfp = compile("^(?:" + p + ")"); r.npfp == nil {
			return r
		}
	}
	if p := m.GetLeadingDigits(); p != "" {
		if r.leading = compile("^(?:" + p + ")"); r.leading == nil {
			return r
		}
	}
	// A pattern with a digit DFA needs no regexp (full uses the DFA):
	// compiling only one of them halves the cost of building a region,
	// paid on the first scan that meets it.
	desc := func(d *phonenumbers.PhoneNumberDesc) (phoneDesc, bool) {
		pd := phoneDesc{lens: d.GetPossibleLength(), dfa: compileDigitDFA(d.GetNationalNumberPattern())}
		if pd.dfa != nil {
			return pd, true
		}
		pd.re = compile("^(?:" + d.GetNationalNumberPattern() + ")$")
		return pd, pd.re != nil
	}
	g, ok := desc(m.GetGeneralDesc())
	if !ok {
		return r
	}
	r.general = g
	r.possible = m.GetGeneralDesc().GetPossibleLength()
	r.localOnly = m.GetGeneralDesc().GetPossibleLengthLocalOnly()
	if len(r.possible) == 0 {
		return r
	}
	// The types getNumberTypeHelper tries. Only "is any type matched"
	// matters, so the common ones go first.
	ds := []*phonenumbers.PhoneNumberDesc{m.GetFixedLine()}
	if !m.GetSameMobileAndFixedLinePattern() {
		ds = append(ds, m.GetMobile())
	}
	ds = append(ds, m.GetPremiumRate(), m.GetTollFree(), m.GetSharedCost(), m.GetVoip(),
		m.GetPersonalNumber(), m.GetPager(), m.GetUan(), m.GetVoicemail())
	for _, d := range ds {
		if d == nil {
			continue
		}
		t, ok := desc(d)
		if !ok {
			return r
		}
		r.types = append(r.types, t)
	}
	r.ok = true
	return r
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
// prefix, unless n was viable (matches the general pattern) and the rest is
// not.
func (r *phoneRegion) stripNP(n string) string {
	if len(n) == 0 {
		return n
	}
	end := -1
	if r.npLit != "" {
		if strings.HasPrefix(n, r.npLit) {
			end = len(r.npLit)
		}
	} else if r.npfp != nil {
		if m := r.npfp.FindStringIndex(n); m != nil {
			end = m[1]
		}
	}
	if end < 0 {
		return n
	}
	p := n[end:]
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
	if p := r.stripNP(n); len(p) != len(n) && r.lengthKeepsStrip(p) {
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

// international validates the digits that followed a '+'. handled is false
// when the fast path does not apply and phonenumbers must decide.
func (b *phoneBook) international(digits string) (num phoneNumber, valid, handled bool) {
	if len(digits) <= 2 || digits[0] == '0' {
		return num, false, true // too short after '+', or no calling code
	}
	// The calling code: the first of digits[:1], [:2], [:3] that is one
	// (they are prefix-free).
	code, cc := 0, ""
	var regions []string
	for i := 1; i <= 3; i++ {
		c, _ := strconv.Atoi(digits[:i])
		if rs := phonenumbers.GetRegionCodesForCountryCode(c); len(rs) > 0 {
			code, cc, regions = c, digits[:i], rs
			break
		}
	}
	if code == 0 {
		return num, false, true // unknown calling code
	}
	if regions[0] == "001" {
		return num, false, false // non-geographic entity: phonenumbers decides
	}
	main := b.region(regions[0])
	if !main.ok || main.transform || main.cc != code {
		return num, false, false
	}
	nsn, ok := main.nsn(digits[len(cc):])
	if !ok {
		return num, false, true
	}
	region := main
	if len(regions) > 1 {
		region = nil
		for _, id := range regions {
			r := b.region(id)
			if !r.ok || r.cc != code {
				return num, false, false
			}
			if r.leading != nil {
				if r.leading.MatchString(nsn) {
					region = r
					break
				}
			} else if r.valid(nsn) {
				region = r
				break
			}
		}
		if region == nil {
			return num, false, true
		}
	}
	return phoneNumber{code, nsn}, region.valid(nsn), true
}

// national validates digits as a national number of region id, as
// Parse(digits, id) and IsValidNumberForRegion(n, id) do: an international
// prefix (IDD) or the region's own calling code in front is recognised.
func (b *phoneBook) national(digits, id string) (num phoneNumber, valid, handled bool) {
	r := b.region(id)
	if !r.ok || r.transform || r.idd == "" {
		return num, false, false
	}
	parseRegion := r // whose metadata strips the national prefix
	national := digits
	switch {
	case strings.HasPrefix(digits, r.idd) && !(len(digits) > len(r.idd) && digits[len(r.idd)] == '0'):
		// IDD: an international number. It can only be valid for id
		// when its calling code is id's (calling codes are prefix-free).
		rest := digits[len(r.idd):]
		if len(rest) <= 2 || !strings.HasPrefix(rest, r.ccStr) {
			return num, false, true
		}
		national = rest[len(r.ccStr):]
		if parseRegion = b.mainRegion(r.cc); parseRegion == nil {
			return num, false, false
		}
	case strings.HasPrefix(digits, r.ccStr):
		// The region's calling code without '+': Parse drops it when
		// the number is only valid, or only short enough, without it.
		p := r.stripNP(digits[len(r.ccStr):])
		if (!r.general.full(digits) && r.general.full(p)) || r.tooLong(digits) {
			national = p
			if parseRegion = b.mainRegion(r.cc); parseRegion == nil {
				return num, false, false
			}
		}
	}
	nsn, ok := parseRegion.nsn(national)
	if !ok {
		return num, false, true
	}
	return phoneNumber{r.cc, nsn}, r.valid(nsn), true
}

// mainRegion returns the tables of the main region of calling code cc
// (GetRegionCodeForCountryCode), or nil when the fast path cannot use it.
func (b *phoneBook) mainRegion(cc int) *phoneRegion {
	m := b.region(phonenumbers.GetRegionCodeForCountryCode(cc))
	if !m.ok || m.transform || m.cc != cc {
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

func fromLibrary(n *phonenumbers.PhoneNumber) phoneNumber {
	return phoneNumber{int(n.GetCountryCode()), phonenumbers.GetNationalSignificantNumber(n)}
}

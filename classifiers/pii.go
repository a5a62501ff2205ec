package classifiers

import (
	"bytes"
	"net/netip"
	"strings"
)

// Context words (English and French first, then DE/ES/IT/NL where they
// help) that raise a PII finding's confidence or, for numbers that are
// otherwise too ambiguous, are required.
var (
	ctxPhone = []string{"phone", "tel", "tél", "telephone", "téléphone", "mobile", "portable", "cell", "fax",
		"call", "appeler", "appelez", "joindre", "contact", "whatsapp", "telefon", "teléfono", "telefono", "numéro", "number",
		"reach", "ring me", "text me", "rufen"}
	ctxCard = []string{"card", "carte", "credit", "crédit", "visa", "mastercard", "amex", "cb ", "payment",
		"paiement", "pan", "karte", "tarjeta", "carta"}
	ctxIBAN  = []string{"iban", "bank", "banque", "account", "compte", "rib", "virement", "transfer", "bic", "swift"}
	ctxSSN   = []string{"ssn", "social security", "social sec", "taxpayer"}
	ctxNIR   = []string{"nir", "sécurité sociale", "securite sociale", "sécu", "secu", "insee", "social security", "numéro de sécurité"}
	ctxSIREN = []string{"siren", "rcs", "immatricul", "n° tva", "entreprise", "company number"}
	ctxSIRET = []string{"siret", "établissement", "etablissement"}
	ctxNINO  = []string{"national insurance", "nino", "ni number", "ni no"}
	ctxNHS   = []string{"nhs", "patient"}
	ctxDNI   = []string{"dni", "nie", "documento", "identidad", "nif"}
	ctxCIF   = []string{"cif", "nif"}
	ctxCF    = []string{"codice fiscale", "fiscal code", "c.f.", "cf:", "tessera sanitaria"}
	ctxBSN   = []string{"bsn", "burgerservicenummer", "sofinummer", "sofi-nummer"}
	ctxIP    = []string{"ip", "address", "adresse", "client", "remote", "src", "from", "login", "connexion", "connected"}
	ctxEmail = []string{"email", "e-mail", "mail", "courriel", "contact", "adresse", "address", "to:", "from:", "cc:"}
	ctxWal   = []string{"wallet", "portefeuille", "bitcoin", "btc", "ethereum", "eth", "address", "adresse", "send", "envoyer"}
)

func piiDetectors() []*detector {
	return []*detector{
		{id: "pii.email", cat: CategoryPII, desc: "E-mail address (RFC 5321 shape; RFC 2606 domains are reserved)", context: ctxEmail, mask: maskEmail},
		{id: "pii.phone", cat: CategoryPII, desc: "Phone number, international or national format for FR, US, GB, DE, ES, IT, BE, CH, CA (validated with libphonenumber metadata), with its extension (x309, ext. 72, poste 12) and trunk (0); a local 7- or 8-digit number right after a cue (call me on, reach her at, mobile:); SSN-shaped 3-2-4 groups and identifier tails (ORD-…) are not phones", gate: numGate{minDigits: 7}, numeric: phoneNumeric, context: ctxPhone},
		{id: "pii.credit_card", cat: CategoryPII, desc: "Payment card number (Luhn + ISO/IEC 7812 issuer ranges and lengths: Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro 12-19 digits, UATP; 12-digit Maestro and UATP need a card word; documented test numbers are reserved)", gate: numGate{minDigits: 12}, numeric: cardNumeric, context: ctxCard},
		{id: "pii.iban", cat: CategoryPII, desc: "IBAN (ISO 13616: per-country length, ISO 7064 mod 97 check digits; compact, or grouped with spaces or dashes)", glued: true, gate: numGate{minDigits: 2, upperBefore: true}, numeric: ibanNumeric, context: ctxIBAN},
		{id: "pii.us_ssn", cat: CategoryPII, desc: "US Social Security number (SSA area/group/serial rules; 9 bare digits need context)", gate: numGate{minDigits: 9}, numeric: ssnNumeric, context: ctxSSN},
		{id: "pii.fr_nir", cat: CategoryPII, desc: "French NIR / social security number (sex, month, 97-complement key, Corsica 2A/2B)", gate: numGate{minDigits: 15, orLead12: true}, numeric: nirNumeric, context: ctxNIR},
		{id: "pii.fr_siren", cat: CategoryPII, desc: "French SIREN company number (Luhn; needs a context word such as SIREN or RCS)", gate: numGate{minDigits: 9}, numeric: sirenNumeric, context: ctxSIREN},
		{id: "pii.fr_siret", cat: CategoryPII, desc: "French SIRET establishment number (Luhn, La Poste rule; needs a context word)", gate: numGate{minDigits: 14}, numeric: siretNumeric, context: append(append([]string{}, ctxSIRET...), "siren")},
		{id: "pii.uk_nino", cat: CategoryPII, desc: "UK National Insurance number (HMRC prefix and suffix rules)", glued: true, gate: numGate{minDigits: 6, firstLens: 0x7e}, numeric: ninoNumeric, context: ctxNINO},
		{id: "pii.uk_nhs", cat: CategoryPII, desc: "UK NHS number (mod 11 check digit; compact or 3-3-4 with spaces or dashes; needs NHS or patient nearby)", gate: numGate{minDigits: 10}, numeric: nhsNumeric, context: ctxNHS},
		{id: "pii.es_dni", cat: CategoryPII, desc: "Spanish DNI or NIE, the NIF of a person (check letter mod 23; 12345678Z, 12.345.678-Z, X1234567L, X-1234567-L)", glued: true, gate: numGate{minDigits: 7, firstLens: 1<<2 | 1<<7 | 1<<8}, numeric: dniNumeric, context: ctxDNI},
		{id: "pii.es_cif", cat: CategoryPII, desc: "Spanish CIF, the NIF of a company or other legal entity (entity letter, 7 digits, control digit or letter; needs a context word such as CIF or NIF)", glued: true, gate: numGate{minDigits: 7, firstLens: 1<<7 | 1<<8, upperBefore: true}, numeric: cifNumeric, context: ctxCIF},
		{id: "pii.it_fiscal_code", cat: CategoryPII, desc: "Italian codice fiscale (shape and check character)", glued: true, gate: numGate{minDigits: 2, firstLens: 1 << 2, upperBefore: true}, numeric: cfNumeric, context: ctxCF},
		{id: "pii.nl_bsn", cat: CategoryPII, desc: "Dutch BSN (11-proof; needs a context word such as BSN)", gate: numGate{minDigits: 9}, numeric: bsnNumeric, context: ctxBSN},
		{id: "pii.ip_address", cat: CategoryPII, desc: "Public IPv4/IPv6 address (net/netip; private, loopback, link-local, multicast and documentation ranges excluded)", gate: numGate{minDigits: 4, minGroups: 4}, numeric: ipv4Numeric, context: ctxIP},
		{id: "pii.private_ip", cat: CategoryPII, desc: "Internal IPv4/IPv6 address: private (RFC 1918, IPv6 unique local fc00::/7) or link-local (169.254/16, fe80::/10); loopback, CGNAT and documentation ranges excluded", gate: numGate{minDigits: 4, minGroups: 4}, numeric: privateIPv4Numeric, context: ctxIP},
		{id: "pii.crypto_wallet", cat: CategoryPII, desc: "Bitcoin address (base58check, bech32/bech32m) or Ethereum address (EIP-55 checksum when mixed case)", gate: numGate{alphaAfter: true, notGlued: true}, numeric: walletNumeric,
			keywords: []string{"bc1", "tb1"}, after: 90, window: bech32Window, context: ctxWal},
		nameDetector(),
	}
}

// conf combines a base confidence with a context bonus.
func (st *scanState) conf(d *detector, base float64, lo, hi int) float64 {
	if st.hasContext(d, lo, hi, 64) {
		return min(1, base+0.15)
	}
	return base
}

// ---- e-mail ----

func isLocalByte(b byte) bool {
	switch b {
	case '.', '_', '%', '+', '-', '\'':
		return true
	}
	return isAlnum(b)
}
func isDomainByte(b byte) bool { return isAlnum(b) || b == '.' || b == '-' }

var reservedDomains = []string{"example.com", "example.net", "example.org", "example.edu"}
var reservedTLDs = []string{".example", ".test", ".invalid", ".localhost", ".local"}

func reservedDomain(dom string) bool {
	dom = strings.ToLower(dom)
	for _, r := range reservedDomains {
		if dom == r || strings.HasSuffix(dom, "."+r) {
			return true
		}
	}
	for _, t := range reservedTLDs {
		if strings.HasSuffix(dom, t) || dom == t[1:] {
			return true
		}
	}
	return false
}

// reservedDomainASCII is reservedDomain for a lower-case ASCII domain.
func reservedDomainASCII(dom []byte) bool {
	if len(dom) == 0 || !reservedLast[dom[len(dom)-1]] {
		return false // every name below ends with a byte of reservedLast
	}
	for _, r := range reservedDomains {
		if len(dom) >= len(r) && string(dom[len(dom)-len(r):]) == r && (len(dom) == len(r) || dom[len(dom)-len(r)-1] == '.') {
			return true
		}
	}
	for _, t := range reservedTLDs {
		if len(dom) >= len(t) && string(dom[len(dom)-len(t):]) == t || string(dom) == t[1:] {
			return true
		}
	}
	return false
}

// reservedLast marks the last bytes of reservedDomains and reservedTLDs.
var reservedLast = func() (t [256]bool) {
	for _, r := range append(append([]string{}, reservedDomains...), reservedTLDs...) {
		t[r[len(r)-1]] = true
	}
	return t
}()

// emailAt checks for an e-mail address around the '@' at i.
func (st *scanState) emailAt(i int) {
	text := st.text
	lo := i
	for lo > 0 && i-lo < 64 && isLocalByte(text[lo-1]) {
		lo--
	}
	for lo < i && (text[lo] == '.' || text[lo] == '\'') {
		lo++
	}
	if lo == i || text[i-1] == '.' {
		return
	}
	if lo > 0 && (isLocalByte(text[lo-1]) || (text[lo-1] == ':' || text[lo-1] == '/') && !mailPrefix(text, lo)) {
		return // too long, or URI userinfo (user:password@host)
	}
	hi := i + 1
	for hi < len(text) && hi-i < 255 && isDomainByte(text[hi]) {
		hi++
	}
	for hi > i+1 && (text[hi-1] == '.' || text[hi-1] == '-') {
		hi--
	}
	dom := text[i+1 : hi]
	nlabels, ls := 0, 0
	for k := 0; k <= len(dom); k++ {
		if k < len(dom) && dom[k] != '.' {
			continue
		}
		l := dom[ls:k]
		if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return
		}
		nlabels++
		ls = k + 1
	}
	if nlabels < 2 {
		return
	}
	tld := dom[lastIndexByte(dom, '.')+1:]
	if len(tld) < 2 {
		return
	}
	for k := 0; k < len(tld); k++ {
		if !isAlpha(tld[k]) {
			return
		}
	}
	if hi < len(text) && (isAlnum(text[hi]) || text[hi] == '@') {
		return
	}
	if lo > 0 && text[lo-1] == ':' && hi+1 < len(text) && text[hi] == ':' && isDigit(text[hi+1]) {
		return // user:password@host:port
	}
	// Addresses are ASCII here (isLocalByte, isDomainByte), so ASCII case
	// folding is strings.ToLower.
	var lb [320]byte
	low := asciiLowerBytes(lb[:0], text[lo:hi])
	if !st.s.includeReserved && reservedDomainASCII(low[i+1-lo:]) {
		return
	}
	d := st.s.email
	st.emit(d.idx, lo, hi, st.conf(d, 0.85, lo, hi), low, d.mask)
}

// mailPrefix reports whether what ends at text[lo] (a ':' or a '/')
// introduces an e-mail address rather than the password of a URI's
// userinfo: a word and a colon that are not inside a URI's authority
// ("mailto:", "sip:", "user:", "login:"; not the "user:" of
// "https://user:password@host"), or the "//" after a mail protocol's
// scheme ("smtp://", "imap://"; not "ssh://git@host").
func mailPrefix(text []byte, lo int) bool {
	if text[lo-1] == '/' {
		if lo < 3 || text[lo-2] != '/' || text[lo-3] != ':' {
			return false
		}
		k := lo - 3
		for k > 0 && isAlnum(text[k-1]) {
			k--
		}
		if k > 0 && (isWordByte(text[k-1]) || text[k-1] == '.' || text[k-1] == '+' || text[k-1] == '-') {
			return false
		}
		var b [16]byte
		switch string(asciiLowerBytes(b[:0], text[k:lo-3])) {
		case "smtp", "smtps", "submission", "imap", "imaps", "pop", "pops", "pop3", "pop3s", "xmpp", "mailto":
			return true
		}
		return false
	}
	k := lo - 1 // the colon
	for k > 0 && (isAlnum(text[k-1]) || text[k-1] == '_' || text[k-1] == '-') {
		k--
	}
	if k == lo-1 {
		return false // "://:password@host", "::"
	}
	return k == 0 || !(text[k-1] == '/' || text[k-1] == ':' || text[k-1] == '@' || isLocalByte(text[k-1]))
}

// ---- phone ----

// plausibleNational is a cheap length check before the costly libphonenumber
// parse: national numbers of the supported regions have 9 to 11 digits
// (German and Italian landlines 6 to 12 with the trunk 0).
func plausibleNational[T ~string | ~[]byte](d T) bool {
	if d[0] == '0' {
		return len(d) >= 7 && len(d) <= 13
	}
	return len(d) >= 9 && len(d) <= 11
}

// phoneRegionsFor lists the regions whose national numbers can start with
// the digits of d.
func phoneRegionsFor[T ~string | ~[]byte](d T) []string {
	switch {
	case d[0] == '0':
		return regionsTrunk0
	case d[0] == '1' && len(d) == 11:
		return regionsNANP
	case len(d) == 10 && d[0] >= '2':
		if d[0] == '3' {
			return regionsNANPIT
		}
		return regionsNANP
	case len(d) == 9 && d[0] >= '6':
		return regionsES
	case len(d) == 9 && d[0] == '3':
		return regionsIT
	}
	return nil
}

// Region lists of phoneRegionsFor (read only).
var (
	regionsTrunk0 = []string{"FR", "GB", "DE", "IT", "BE", "CH"}
	regionsNANP   = []string{"US", "CA"}
	regionsNANPIT = []string{"US", "CA", "IT"}
	regionsES     = []string{"ES"}
	regionsIT     = []string{"IT"}
)

func phoneNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	var buf [32]byte
	// A context word near a range is near the candidate: look it up once.
	ctxNear := st.hasContext(d, c.start, c.end, 48)
	plusLed := c.plus && c.start < c.groups[0].lo
	gluedLeft := c.start > 0 && isWordByte(text[c.start-1])
	if !ctxNear && !plusLed {
		// Without context or '+', only the whole candidate (not glued to
		// a word) or a range led by an IDD prefix "00" can be a phone.
		whole := c.cum[len(c.groups)] >= 8 && c.cum[len(c.groups)] <= 15 && !gluedLeft
		zero := false
		for _, g := range c.groups {
			if text[g.lo] == '0' {
				zero = true
				break
			}
		}
		if !whole && !zero {
			return
		}
	}
	found := false
	last := len(c.groups) - 1
	c.groupRanges(8, 15, func(a, b int) bool {
		lo, hi := c.spanOf(a, b)
		intl := false
		if a == 0 && c.start < lo {
			lo = c.start
			intl = c.plus
		}
		// Without a context word, only an international range or the whole
		// candidate not glued to a word can be reported (the checks below
		// say so one by one): the slices of a longer number, most of the
		// ranges tried, are rejected before anything else is read.
		if !ctxNear && !intl && (a != 0 || b != last || gluedLeft) &&
			!(c.ndigits(a, b) >= 11 && c.digitAt(text, a, 0) == '0' && c.digitAt(text, a, 1) == '0') {
			return false
		}
		if a > 0 && (c.seps[a-1] == '-' || c.seps[a-1] == '.') {
			return false
		}
		end := hi // past an extension: x309, ext. 72
		if mayExtend(text, hi) {
			end = phoneExtensionWord(text, hi)
		}
		if !boundaryOK(text, lo, end) || (lo > 0 && text[lo-1] == '.') || (end < len(text) && text[end] == '.' && end+1 < len(text) && isDigit(text[end+1])) {
			return false
		}
		if !c.plus && idTail(text, lo) {
			return false // the tail of an identifier: ORD-8555513230
		}
		// Cheap rejections first, before the digits are copied.
		nd := c.ndigits(a, b)
		idd := !intl && nd >= 11 && c.digitAt(text, a, 0) == '0' && c.digitAt(text, a, 1) == '0'
		if idd {
			intl = true // an IDD prefix: 00 33 6…
		}
		if b-a == 3 && c.sameSeps(a, b, ".") && nd <= 12 {
			return false // dotted quad: an IPv4 address, not a phone
		}
		if !intl && b-a == 2 && text[lo] != '0' && c.groups[a].hi-c.groups[a].lo == 3 && c.groups[a+1].hi-c.groups[a+1].lo == 2 && c.groups[b].hi-c.groups[b].lo == 4 {
			return false // 3-2-4 without a trunk 0: the shape of a US SSN, not how the supported regions write phones
		}
		formatted := b > a
		if formatted {
			// a date or version, not a phone: yyyy-mm-dd, dd.mm.yyyy
			for g := a; g <= b; g++ {
				if c.groups[g].hi-c.groups[g].lo > 5 {
					formatted = false
					break
				}
			}
		}
		if !intl && !formatted && !(ctxNear && st.hasContext(d, lo, hi, 48)) {
			return false
		}
		if !intl && (a != 0 || b != len(c.groups)-1 || (c.start > 0 && isWordByte(text[c.start-1]))) && !(ctxNear && st.hasContext(d, lo, hi, 48)) {
			return false // a slice of a longer number sequence or identifier
		}
		// key is the memo key: '+' for international numbers, then digits.
		key := append(buf[:0], '+')
		key = c.digits(text, a, b, key)
		digits := key[1:]
		if idd {
			key = key[2:] // drop the IDD prefix
			key[0] = '+'
			digits = key[1:]
		}
		if !intl {
			key = digits
			if !plausibleNational(digits) || phoneRegionsFor(digits) == nil {
				return false
			}
		}
		res := st.phoneLookup(key, intl)
		if !res.valid {
			return false
		}
		found = true
		if !st.s.includeReserved && res.fictional {
			return true
		}
		base := 0.7
		if intl {
			base = 0.85
		}
		st.emitString(d.idx, lo, end, st.conf(d, base, lo, hi), res.e164, d.mask)
		return true
	})
	if !found && ctxNear && !c.plus && c.cum[len(c.groups)] <= 8 {
		st.localPhone(d, c)
	}
}

// localPhone reports a local number (7 or 8 digits, without the area code
// or trunk prefix) right after a cue that says a phone number follows
// ("call me on 736 5012", "reach her at 4821-7730", "mobile: 9123 4567").
// Such a number cannot be validated against a numbering plan: the cue,
// a first digit from 2 to 9 (0 and 1 lead trunk and service codes) and
// groups of two digits or more with one kind of separator make it one.
// NANP's fictional 555-01xx is reserved. The value hashed is the digits.
func (st *scanState) localPhone(d *detector, c *numCand) {
	text := st.text
	n := len(c.groups)
	nd := c.cum[n]
	if nd < 7 || n > 4 || c.start != c.groups[0].lo || text[c.start] < '2' {
		return
	}
	for g := 0; g < n; g++ {
		if c.groups[g].hi-c.groups[g].lo < 2 {
			return
		}
	}
	if !c.sameSeps(0, n-1, " -.") {
		return
	}
	lo, hi := c.start, c.end
	end := phoneExtension(text, hi)
	if !boundaryOK(text, lo, end) || idTail(text, lo) || lo > 0 && text[lo-1] == '.' ||
		end < len(text) && text[end] == '.' && end+1 < len(text) && isDigit(text[end+1]) || !localPhoneCue(text, lo) {
		return
	}
	var buf [8]byte
	dg := c.digits(text, 0, n-1, buf[:0])
	if !st.s.includeReserved && nd == 7 && string(dg[:4]) == "5550" && dg[4] == '1' {
		return // NANP 555-0100 to 555-0199, reserved for fiction
	}
	st.emit(d.idx, lo, end, 0.6, dg, d.mask)
}

// localPhoneCues say that a phone number follows (lower case). Each must
// end within localCueGap bytes before the number, with no digit between.
var localPhoneCues = []string{"call me on", "call me at", "call him on", "call him at", "call her on", "call her at",
	"call us on", "call us at", "call them on", "call them at", "reach me at", "reach me on", "reach him at",
	"reach him on", "reach her at", "reach her on", "reach us at", "reach us on", "reach them at", "reach them on",
	"text me on", "text me at", "ring me on", "ring me at", "mobile", "cell", "phone", "tel", "tél", "telephone",
	"téléphone", "portable", "fax", "landline", "direct line", "whatsapp", "appelle-moi au", "appelez-moi au", "joindre au"}

// localCueGap bounds the bytes between a local phone cue and the number
// (": ", " is ", " number: ", " no. ").
const localCueGap = 12

// localPhoneCue reports whether a localPhoneCues phrase ends within
// localCueGap bytes before text[lo], starts a word, and is followed by
// no digit up to the number.
func localPhoneCue(text []byte, lo int) bool {
	from := max(0, lo-localCueGap-24)
	var buf [64]byte
	win := asciiLowerBytes(buf[:0], text[from:lo])
	for k := len(win) - 1; k >= 0 && k >= len(win)-localCueGap-1; k-- {
		if isDigit(win[k]) {
			return false
		}
	}
	for _, cue := range localPhoneCues {
		for e := len(win); e >= len(cue) && e >= len(win)-localCueGap; e-- {
			s := e - len(cue)
			if string(win[s:e]) != cue {
				continue
			}
			if (s == 0 && from == 0 || s > 0 && !isAlpha(win[s-1])) && (e == len(win) || !isAlpha(win[e])) {
				return true
			}
		}
	}
	return false
}

// phoneExtension returns where an extension written after a phone number
// ending at text[hi] ends ("x309", " x 5", " ext. 72", " extension 4",
// " poste 12"), or hi when there is none.
func phoneExtension(text []byte, hi int) int {
	if !mayExtend(text, hi) {
		return hi
	}
	return phoneExtensionWord(text, hi)
}

// mayExtend is phoneExtension's first test, small enough to be inlined in
// the loops over digit ranges: an extension takes a letter and a digit at
// least, and starts with x, e or p, or a blank then one, so a number
// followed by a blank and a digit, or by anything else, has none.
func mayExtend(text []byte, hi int) bool {
	return hi+1 < len(text) && (extLead[text[hi]] || text[hi] == ' ' && !isDigit(text[hi+1]))
}

// extLead marks the bytes an extension word starts with: x, e, p in
// either case.
var extLead = func() (t [256]bool) {
	for _, c := range []byte("xXeEpP") {
		t[c] = true
	}
	return t
}()

// phoneExtensionWord is phoneExtension past its first test.
func phoneExtensionWord(text []byte, hi int) int {
	i := hi
	for i < len(text) && i-hi < 2 && text[i] == ' ' {
		i++
	}
	if i == len(text) {
		return hi
	}
	switch text[i] | 0x20 { // the first letters of the words below
	case 'x', 'e', 'p':
	default:
		return hi
	}
	k := i
	for k < len(text) && k-i < 9 && isAlpha(text[k]) {
		k++
	}
	var buf [9]byte
	switch string(asciiLowerBytes(buf[:0], text[i:k])) {
	case "x", "ext", "extn", "extension", "poste":
		if k < len(text) && (text[k] == '.' || text[k] == ':') {
			k++
		}
		for j := 0; j < 2 && k < len(text) && text[k] == ' '; j++ {
			k++
		}
	default:
		return hi
	}
	e := k
	for e < len(text) && e-k < 6 && isDigit(text[e]) {
		e++
	}
	if e == k || e < len(text) && isWordByte(text[e]) {
		return hi
	}
	return e
}

// idTail reports whether the digits at text[lo] end an identifier: they
// follow a '-', '_', '#' or '/' glued to a letter or digit (ORD-8555513230,
// case_4155550199).
func idTail(text []byte, lo int) bool {
	if lo < 2 {
		return false
	}
	switch text[lo-1] {
	case '-', '_', '#', '/':
		return isAlnum(text[lo-2])
	}
	return false
}

// phoneMemo is an entry of a phoneTable.
type phoneMemo struct {
	key string // '+' and the digits of an international number, or the digits
	res phoneResult
}

// phoneSlot is a phoneTable slot: the hash of an entry's key and its index
// in entries plus one (0: empty). Slots are small so that probing a table
// sized for a dense chunk stays in cache.
type phoneSlot struct {
	hash uint32
	idx  uint32
}

// phoneTable memoises the phone validations of one chunk scan (the same
// number often appears many times): an open-addressing hash table keyed by
// the normalised digits, grown with the chunk's distinct numbers and
// emptied when the chunk is done, so no result carries from one scan to
// the next. It is part of a scanState and shares its (lack of) concurrency.
type phoneTable struct {
	slots   []phoneSlot // power-of-two length, or nil
	entries []phoneMemo
}

// Bounds of a phoneTable's slot count: the first allocation, and the size
// past which it stops growing (and stops memoising: results stay correct,
// only new numbers are validated each time they appear).
const (
	phoneTableMin = 64
	phoneTableMax = 1 << 16
)

// phoneLookup returns the validation of key ('+' and digits when intl,
// else the digits of a national number), from the chunk's memo when it
// was validated before in this chunk.
func (st *scanState) phoneLookup(key []byte, intl bool) phoneResult {
	t := &st.phones
	h := uint32(2166136261) // FNV-1a
	for _, ch := range key {
		h = (h ^ uint32(ch)) * 16777619
	}
	if t.slots != nil {
		mask := uint32(len(t.slots) - 1)
		for i := h & mask; t.slots[i].idx != 0; i = (i + 1) & mask {
			if sl := t.slots[i]; sl.hash == h {
				if e := &t.entries[sl.idx-1]; e.key == string(key) {
					return e.res
				}
			}
		}
	}
	k := string(key)
	ds := k
	if intl {
		ds = k[1:]
	}
	res := st.s.checkPhoneKey(ds, intl, k)
	t.insert(h, phoneMemo{key: k, res: res})
	return res
}

// insert adds e, whose key (of hash h) is not in t, growing t to keep it
// at most half full.
func (t *phoneTable) insert(h uint32, e phoneMemo) {
	if 2*(len(t.entries)+1) > len(t.slots) {
		if len(t.slots) >= phoneTableMax {
			return
		}
		t.grow()
	}
	t.entries = append(t.entries, e)
	t.place(h, uint32(len(t.entries)))
}

// place puts entry idx-1 of hash h in the first free slot of its probe
// sequence.
func (t *phoneTable) place(h, idx uint32) {
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].idx != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = phoneSlot{h, idx}
}

// grow doubles the slot count and re-inserts the entries.
func (t *phoneTable) grow() {
	old := t.slots
	t.slots = make([]phoneSlot, max(phoneTableMin, 2*len(old)))
	for _, sl := range old {
		if sl.idx != 0 {
			t.place(sl.hash, sl.idx)
		}
	}
}

// reset empties t, keeping its memory.
func (t *phoneTable) reset() {
	if len(t.entries) == 0 {
		return
	}
	clear(t.slots)
	clear(t.entries) // drop the strings
	t.entries = t.entries[:0]
}

// phoneResult is the outcome of validating one phone candidate.
type phoneResult struct {
	valid     bool
	fictional bool   // a number reserved for fiction (see fictionalPhone)
	e164      string // normalised form, when valid
}

// checkPhone validates digits (after a '+' or an IDD "00" when intl, else a
// national number of one of phoneRegionsFor's regions) with libphonenumber's
// metadata.
func (s *Scanner) checkPhone(digits string, intl bool) phoneResult {
	return s.checkPhoneKey(digits, intl, "")
}

// checkPhoneKey is checkPhone whose result's E.164 form is key itself when
// they are equal (key is the memo key: '+' and the digits of an
// international number), so that a memo entry holds one string, not two.
func (s *Scanner) checkPhoneKey(digits string, intl bool, key string) phoneResult {
	var num phoneNumber
	found := false
	if intl {
		num, found = s.phones.international(digits)
	} else if plausibleNational(digits) {
		for _, region := range phoneRegionsFor(digits) {
			if n, valid := s.phones.national(digits, region); valid {
				num, found = n, true
				break
			}
		}
	}
	if !found {
		return phoneResult{}
	}
	return phoneResult{valid: true, fictional: fictionalPhone(num.cc, num.nationalNumber()), e164: num.e164Reusing(key)}
}

// fictionalPhone reports numbers reserved for fiction and documentation:
// NANP 555-0100 to 555-0199, and ARCEP's ranges for audiovisual works in
// France (01 99 00, 02 61 91, 03 53 01, 04 65 71, 05 36 49, 06 39 98).
func fictionalPhone(cc int, nat string) bool {
	switch cc {
	case 1:
		return len(nat) == 10 && nat[3:7] == "5550" && nat[7] == '1'
	case 33:
		for _, p := range []string{"19900", "26191", "35301", "46571", "53649", "63998"} {
			if strings.HasPrefix(nat, p) {
				return true
			}
		}
	case 44:
		// Ofcom drama numbers: 020 7946 0xxx, 0113 496 0xxx, 01632 960xxx, 07700 900xxx, …
		for _, p := range []string{"2079460", "1134960", "1154960", "1174960", "1184960", "1214960", "1314960", "1414960", "1514960", "1614960", "1632960", "7700900"} {
			if strings.HasPrefix(nat, p) {
				return true
			}
		}
	}
	return false
}

// ---- payment cards ----

// Documented test card numbers (Stripe, Adyen, PayPal, Braintree docs).
var testCards = map[string]bool{
	"4111111111111111": true, "4242424242424242": true, "4000056655665556": true, "4012888888881881": true,
	"4222222222222": true, "4000000000000002": true, "4000000000009995": true, "4000002500003155": true,
	"5555555555554444": true, "5200828282828210": true, "5105105105105100": true, "2223003122003222": true,
	"5454545454545454": true, "378282246310005": true, "371449635398431": true, "378734493671000": true,
	"6011111111111117": true, "6011000990139424": true, "6011000400000000": true, "3056930009020004": true,
	"36227206271667": true, "30569309025904": true, "38520000023237": true, "3566002020360505": true,
	"3530111333300000": true, "6200000000000005": true, "6759649826438453": true, "4917610000000000": true,
	"4000000000000077": true, "4000000760000002": true, "4000001240000000": true, "4000002500001001": true,
}

// cardIssuer reports whether a card number of n digits whose first four
// make p4 starts with an issuer range of a length it issues (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro,
// UATP). The ranges and lengths are the issuer identification numbers of
// ISO/IEC 7812 as the card networks publish them, collected in the table of
// Wikipedia's "Payment card number" article: UATP 1 (15 digits); JCB
// 1800 and 2131 (15), 3528-3589 (16-19); Maestro 5018, 5020, 5038, 5893,
// 6304, 6759, 6761-6763 (12-19), kept here as the wider 50 and 56-69.
func cardIssuer(p4, n int) bool {
	return n < 32 && cardLengthSet(p4)>>n&1 != 0
}

// cardLengthSet is cardLengths(p4) of a four-digit prefix, read from
// tables laid out at build time (tables_gen.go): the class of p4, a byte
// of cardLengthClass, indexes cardLengthSets.
func cardLengthSet(p4 int) uint32 { return cardLengthSets[cardLengthClass[p4]] }

// cardLengths is the set of lengths cardIssuer accepts after the first
// four digits p4, bit n for n digits.
func cardLengths(p4 int) uint32 {
	const (
		len12to19 = 0xff << 12
		len14to19 = 0x3f << 14
		len16to19 = 0xf << 16
	)
	p2 := p4 / 100
	p3 := p4 / 10
	switch {
	case p4 == 1800, p4 == 2131:
		return 1 << 15 // JCB
	case p2 >= 10 && p2 < 20:
		return 1 << 15 // UATP
	case p2 >= 40 && p2 < 50:
		return 1<<13 | 1<<16 | 1<<19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720:
		return 1 << 16
	case p2 == 34 || p2 == 37:
		return 1 << 15
	case p4 == 6011, p2 == 65, p3 >= 644 && p3 <= 649:
		return len16to19
	case p4 >= 3528 && p4 <= 3589:
		return len16to19
	case p3 >= 300 && p3 <= 305, p2 == 36, p2 == 38, p2 == 39:
		return len14to19
	case p2 == 62:
		return len16to19
	case p2 == 50, p2 >= 56 && p2 <= 69:
		return len12to19
	}
	return 0
}

// cardSepRun returns the last group b for which c.sameSeps(a, b, " -")
// holds: the groups a..b are joined by one kind of separator, a single
// space or dash.
func cardSepRun(c *numCand, a int) int {
	b := a
	if a+1 < len(c.groups) {
		if s := c.seps[a]; s == ' ' || s == '-' {
			for b+1 < len(c.groups) && c.seps[b] == s && c.sepLens[b] == 1 {
				b++
			}
		}
	}
	return b
}

func cardNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	var buf [32]byte
	// For the ranges from group pa: lens is the set of lengths the issuer
	// of their first four digits issues (cardLengths), and sepTo the last
	// group b for which c.sameSeps(pa, b, " -") holds.
	pa, lens, sepTo := -1, uint32(0), 0
	c.groupRanges(12, 19, func(a, b int) bool {
		if f := text[c.groups[a].lo]; f < '1' || f > '6' {
			return false // no issuer range starts with 0, 7, 8 or 9
		}
		if a != pa {
			p4 := 0
			if g := c.groups[a]; g.hi-g.lo >= 4 {
				p4 = int(text[g.lo]-'0')*1000 + int(text[g.lo+1]-'0')*100 + int(text[g.lo+2]-'0')*10 + int(text[g.lo+3]-'0')
			} else {
				for k := 0; k < 4; k++ {
					p4 = p4*10 + int(c.digitAt(text, a, k)-'0')
				}
			}
			pa, lens, sepTo = a, cardLengthSet(p4), cardSepRun(c, a)
		}
		// The separators and the issuer range and length reject most
		// ranges before the digits are copied.
		if b > sepTo || lens>>c.ndigits(a, b)&1 == 0 {
			return false
		}
		lo, hi := c.spanOf(a, b)
		if !boundaryOK(text, lo, hi) {
			return false
		}
		dg := c.digits(text, a, b, buf[:0])
		if !luhn(dg) {
			return false
		}
		if (len(dg) == 12 || dg[0] == '1') && !st.hasContext(d, lo, hi, 64) {
			return false // 12-digit Maestro and UATP: one random number in ten passes Luhn
		}
		if len(dg) == 15 && dg[0] <= '2' && validNIR(dg) {
			return false // a French NIR (sex digit 1 or 2, mod 97 key), not a UATP or JCB card
		}
		if !st.s.includeReserved && testCards[string(dg)] {
			return true // consume, report nothing
		}
		st.emit(d.idx, lo, hi, st.conf(d, 0.85, lo, hi), dg, d.mask)
		return true
	})
}

// ---- IBAN ----

// Example IBANs published by ISO 13616, the ECBS and national banks.
var exampleIBANs = map[string]bool{
	"GB82WEST12345698765432": true, "GB29NWBK60161331926819": true, "DE89370400440532013000": true,
	"FR1420041010050500013M02606": true, "FR7630006000011234567890189": true, "NL91ABNA0417164300": true,
	"BE68539007547034": true, "ES9121000418450200051332": true, "IT60X0542811101000000123456": true,
	"CH9300762011623852957": true, "AT611904300234573201": true, "LU280019400644750000": true,
}

func ibanNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	g := c.groups[0]
	lo := g.lo - 2
	if c.start != g.lo || lo < 0 || g.hi-g.lo < 2 || !isUpper(text[lo]) || !isUpper(text[lo+1]) {
		return
	}
	if lo > 0 && isWordByte(text[lo-1]) {
		return
	}
	want := ibanLengths[string(text[lo:lo+2])]
	if want == 0 {
		return
	}
	var buf [40]byte
	out := buf[:0]
	i := lo
	var sep byte
	for i < len(text) && len(out) < want {
		ch := text[i]
		switch {
		case isDigit(ch) || isUpper(ch):
			out = append(out, ch)
			i++
		case (ch == ' ' || ch == '-') && (sep == 0 || sep == ch) && i+1 < len(text) && isAlnum(text[i+1]) && len(out) >= 4:
			sep = ch // one kind of separator: spaces or dashes
			i++
		default:
			return
		}
	}
	if len(out) != want || (i < len(text) && isWordByte(text[i])) {
		return
	}
	if !validIBAN(out) {
		return
	}
	if !st.s.includeReserved && exampleIBANs[string(out)] {
		return
	}
	st.emit(d.idx, lo, i, st.conf(d, 0.9, lo, i), out, d.mask)
}

// ---- US SSN ----

var reservedSSN = map[string]bool{"078051120": true, "219099999": true, "123456789": true}

func ssnNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	var buf [16]byte
	for a := 0; a < len(c.groups); a++ {
		var b int
		switch {
		case a+2 < len(c.groups) && c.groups[a].hi-c.groups[a].lo == 3 && c.groups[a+1].hi-c.groups[a+1].lo == 2 &&
			c.groups[a+2].hi-c.groups[a+2].lo == 4 && c.sameSeps(a, a+2, "- "):
			b = a + 2
			if (a > 0 && c.seps[a-1] == c.seps[a]) || (b+1 < len(c.groups) && c.seps[b] == c.seps[a]) {
				continue
			}
		case c.groups[a].hi-c.groups[a].lo == 9:
			b = a
		default:
			continue
		}
		lo, hi := c.spanOf(a, b)
		if !boundaryOK(text, lo, hi) {
			continue
		}
		dg := c.digits(text, a, b, buf[:0])
		if !validSSN(dg) {
			continue
		}
		ctx := st.hasContext(d, lo, hi, 64)
		if a == b && !ctx {
			continue
		}
		if !st.s.includeReserved && (reservedSSN[string(dg)] || string(dg[:8]) == "98765432") {
			continue
		}
		conf := 0.75
		if ctx {
			conf = 0.95
		}
		st.emit(d.idx, lo, hi, conf, dg, d.mask)
		a = b
	}
}

// ---- French NIR, SIREN, SIRET ----

func nirNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	var buf [24]byte
	// Corsica: "2 85 05 2A 006 084 36" breaks the digit run at the letter;
	// the candidate then starts at the sex digit and we read the rest here.
	g0 := c.groups[0]
	if g0.lo == c.start && (text[g0.lo] == '1' || text[g0.lo] == '2') && (g0.lo == 0 || !isWordByte(text[g0.lo-1])) && corsicaLetter(text, c) {
		if lo, hi, v, ok := readCompact(text, g0.lo, 15, " .", buf[:0]); ok && bytes.ContainsAny(v, "AB") && validNIR(v) {
			st.emit(d.idx, lo, hi, st.conf(d, 0.85, lo, hi), v, d.mask)
			return
		}
	}
	c.groupRanges(15, 15, func(a, b int) bool {
		if !c.sameSeps(a, b, " .") {
			return false
		}
		lo, hi := c.spanOf(a, b)
		if !boundaryOK(text, lo, hi) {
			return false
		}
		dg := c.digits(text, a, b, buf[:0])
		if !validNIR(dg) {
			return false
		}
		st.emit(d.idx, lo, hi, st.conf(d, 0.85, lo, hi), dg, d.mask)
		return true
	})
}

// corsicaLetter reports whether readCompact, reading on from the
// candidate c, can meet a letter (the A or B of Corsica's 2A, 2B). It
// reads the digit groups of c and single '.' or ' ' between them; the
// candidate ended where neither a digit nor up to three separators then a
// digit followed, so the first byte that is not a digit or a separator
// readCompact takes is at c.end, or just past one separator there. A
// candidate cut at maxGroups may go on: readCompact decides.
func corsicaLetter(text []byte, c *numCand) bool {
	e := c.end
	if len(c.groups) >= maxGroups {
		return true
	}
	return e < len(text) && (isAlpha(text[e]) || (text[e] == ' ' || text[e] == '.') && e+1 < len(text) && isAlpha(text[e+1]))
}

// readCompact reads n alphanumerics from text[lo:], skipping single
// separators from seps, and returns the span and the upper-cased value.
func readCompact(text []byte, lo, n int, seps string, buf []byte) (int, int, []byte, bool) {
	out := buf[:0]
	i := lo
	for i < len(text) && len(out) < n {
		ch := text[i]
		switch {
		case isAlnum(ch):
			if ch >= 'a' && ch <= 'z' {
				ch -= 'a' - 'A'
			}
			out = append(out, ch)
			i++
		case strings.IndexByte(seps, ch) >= 0 && i+1 < len(text) && isAlnum(text[i+1]) && len(out) > 0:
			i++
		default:
			return 0, 0, nil, false
		}
	}
	if len(out) != n || (i < len(text) && isWordByte(text[i])) {
		return 0, 0, nil, false
	}
	return lo, i, out, true
}

// contextNumeric is the shape of the numbers that are too ambiguous alone
// (SIREN, SIRET, NHS, BSN): digits of an exact count, in one group or
// uniformly grouped, with a context word required before them.
func contextNumeric(n int, valid func([]byte) bool, seps string) func(*scanState, *detector, *numCand) {
	return func(st *scanState, d *detector, c *numCand) {
		text := st.text
		// Every range below starts in [c.start, c.end] and needs a context
		// hit within 48 bytes before its start: look once per candidate.
		if !st.hasContext(d, c.start, c.end, 48) {
			return
		}
		var buf [24]byte
		c.groupRanges(n, n, func(a, b int) bool {
			if !c.sameSeps(a, b, seps) {
				return false
			}
			lo, hi := c.spanOf(a, b)
			if !boundaryOK(text, lo, hi) || !st.hasContext(d, lo, lo, 48) {
				return false
			}
			dg := c.digits(text, a, b, buf[:0])
			if !valid(dg) {
				return false
			}
			st.emit(d.idx, lo, hi, 0.9, dg, d.mask)
			return true
		})
	}
}

var (
	sirenNumeric = contextNumeric(9, func(s []byte) bool { return luhn(s) && string(s) != "000000000" }, " .")
	siretNumeric = contextNumeric(14, validSIRET[[]byte], " .")
	nhsNumeric   = contextNumeric(10, validNHS[[]byte], " -")
	bsnNumeric   = contextNumeric(9, validBSN[[]byte], " .-")
)

// ---- UK NINO ----

func ninoNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	g := c.groups[0]
	if c.start != g.lo {
		return
	}
	lo := g.lo - 2
	if lo >= 1 && text[lo+1] == ' ' {
		lo--
	}
	if lo < 0 || !isAlpha(text[lo]) || c.cum[len(c.groups)] != 6 {
		// validNINO needs a letter first, then six digits and a letter:
		// a candidate of six digits, as the letter ends it.
		return
	}
	var buf [16]byte
	start, hi, v, ok := readCompact(text, lo, 9, " ", buf[:0])
	if !ok || !validNINO(string(v)) || (start > 0 && isWordByte(text[start-1])) {
		return
	}
	st.emit(d.idx, start, hi, st.conf(d, 0.8, start, hi), v, d.mask)
}

// ---- Spanish DNI / NIE ----

func dniNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	g := c.groups[0]
	lo := g.lo
	n := g.hi - g.lo
	nie := false
	hi := g.hi
	switch {
	case n == 7 && lo > 0 && strings.IndexByte("XYZ", text[lo-1]) >= 0:
		lo-- // NIE: X1234567L
		nie = true
	case n == 7 && lo > 1 && text[lo-1] == '-' && strings.IndexByte("XYZ", text[lo-2]) >= 0:
		lo -= 2 // NIE: X-1234567-L
		nie = true
	case n == 2 && len(c.groups) >= 3 && c.groups[1].hi-c.groups[1].lo == 3 && c.groups[2].hi-c.groups[2].lo == 3 &&
		c.sameSeps(0, 2, ".") && (len(c.groups) == 3 || c.seps[2] != '.'):
		hi = c.groups[2].hi // DNI with thousands dots: 12.345.678-Z
	case n != 8:
		return
	}
	if c.start != g.lo || (lo > 0 && isWordByte(text[lo-1])) {
		return
	}
	if hi < len(text) && (text[hi] == '-' || text[hi] == ' ') {
		hi++
	}
	if hi >= len(text) || !isUpper(text[hi]) {
		return
	}
	hi++
	if hi < len(text) && isWordByte(text[hi]) {
		return
	}
	var buf [16]byte
	v := buf[:0]
	for _, ch := range text[lo:hi] {
		if isAlnum(ch) {
			v = append(v, ch)
		}
	}
	if !validDNI(string(v)) {
		return
	}
	base := 0.8
	if nie {
		base = 0.85
	}
	st.emit(d.idx, lo, hi, st.conf(d, base, lo, hi), v, d.mask)
}

// cifNumeric finds a Spanish CIF (código de identificación fiscal, the
// NIF of a company or other legal entity): an entity letter, seven
// digits and a control digit or letter (A58818501, Q2826000H).
func cifNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	g := c.groups[0]
	n := g.hi - g.lo
	lo := g.lo - 1
	if c.start != g.lo || lo < 0 || (lo > 0 && isWordByte(text[lo-1])) || n != 7 && n != 8 {
		return
	}
	hi := g.hi
	if n == 7 {
		if hi >= len(text) || !isUpper(text[hi]) {
			return
		}
		hi++
	}
	if hi < len(text) && isWordByte(text[hi]) {
		return
	}
	v := text[lo:hi]
	if !validCIF(v) || !st.hasContext(d, lo, hi, 48) {
		return // one letter-and-digits code in ten passes the check: a CIF needs a context word
	}
	st.emit(d.idx, lo, hi, 0.85, v, d.mask)
}

// ---- Italian codice fiscale ----

func cfNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	g := c.groups[0]
	lo := g.lo - 6
	if c.start != g.lo || lo < 0 || g.hi-g.lo != 2 || (lo > 0 && isWordByte(text[lo-1])) || lo+16 > len(text) {
		return
	}
	hi := lo + 16
	if hi < len(text) && isWordByte(text[hi]) {
		return
	}
	v := string(text[lo:hi])
	if !validCodiceFiscale(v) {
		return
	}
	st.emitString(d.idx, lo, hi, st.conf(d, 0.9, lo, hi), v, d.mask)
}

// ---- IP addresses ----

// publicAddr reports whether a is an address that can identify a person's
// connection: global unicast, and not private, loopback, link-local,
// multicast, unspecified, shared (CGNAT 100.64/10), benchmarking
// (198.18/15) or reserved (240/4). IPv6 must be in 2000::/3. Documentation
// ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are
// reserved: reported only with IncludeReserved.
func publicAddr(a netip.Addr, includeReserved bool) bool {
	a = a.Unmap()
	if !a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() {
		return false
	}
	for _, p := range nonPersonal {
		if p.Contains(a) {
			return false
		}
	}
	if a.Is6() && !ipv6Global.Contains(a) {
		return false
	}
	if !includeReserved {
		for _, p := range docRanges {
			if p.Contains(a) {
				return false
			}
		}
	}
	return true
}

var (
	nonPersonal = []netip.Prefix{netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("198.18.0.0/15"),
		netip.MustParsePrefix("240.0.0.0/4"), netip.MustParsePrefix("0.0.0.0/8")}
	docRanges = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("198.51.100.0/24"),
		netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")}
	ipv6Global = netip.MustParsePrefix("2000::/3")
)

// privateAddr reports whether a is an organisation's internal address:
// private (RFC 1918 10/8, 172.16/12, 192.168/16; IPv6 unique local
// fc00::/7, RFC 4193) or link-local (169.254/16, RFC 3927; fe80::/10).
// Loopback (127/8, ::1) is every machine's own and is not reported, nor
// are the shared CGNAT range (100.64/10, the carrier's) and the
// documentation ranges (RFC 5737, RFC 3849), which publicAddr handles.
func privateAddr(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsPrivate() || a.IsLinkLocalUnicast()
}

func ipv4Numeric(st *scanState, d *detector, c *numCand) {
	ipv4Ranges(st, d, c, 0.7, func(a netip.Addr) bool { return publicAddr(a, st.s.includeReserved) })
}

func privateIPv4Numeric(st *scanState, d *detector, c *numCand) {
	ipv4Ranges(st, d, c, 0.6, privateAddr)
}

// privateBlocks are the standard blocks themselves: "10.0.0.0/8" names a
// range every network may use, not an organisation's addressing.
var privateBlocks = map[netip.Prefix]bool{netip.MustParsePrefix("10.0.0.0/8"): true,
	netip.MustParsePrefix("172.16.0.0/12"): true, netip.MustParsePrefix("192.168.0.0/16"): true,
	netip.MustParsePrefix("169.254.0.0/16"): true, netip.MustParsePrefix("fc00::/7"): true,
	netip.MustParsePrefix("fd00::/8"): true, netip.MustParsePrefix("fe80::/10"): true}

// standardBlock reports whether a, written at text[hi:] with a prefix
// length after it, is one of privateBlocks.
func standardBlock(text []byte, hi int, a netip.Addr) bool {
	if hi+1 >= len(text) || text[hi] != '/' || !isDigit(text[hi+1]) {
		return false
	}
	e := hi + 1
	bits := 0
	for e < len(text) && e-hi <= 3 && isDigit(text[e]) {
		bits = bits*10 + int(text[e]-'0')
		e++
	}
	p, err := a.Prefix(bits)
	return err == nil && p.Addr() == a && privateBlocks[p]
}

// ipv4Ranges reports the dotted quads of c whose address want accepts.
func ipv4Ranges(st *scanState, d *detector, c *numCand, base float64, want func(netip.Addr) bool) {
	text := st.text
	if bytes.IndexByte(c.seps, '.') < 0 {
		return // most candidates: no dot at all
	}
	dots := 0 // an address needs three
	for g := 0; g+1 < len(c.groups) && dots < 3; g++ {
		if c.seps[g] == '.' {
			dots++
		}
	}
	if dots < 3 {
		return
	}
	for a := 0; a+3 < len(c.groups); a++ {
		if a > 0 && c.seps[a-1] == '.' {
			continue
		}
		b := a + 3
		ok := true
		for g := a; g < b; g++ {
			if c.seps[g] != '.' || c.sepLens[g] != 1 {
				ok = false
			}
		}
		if !ok || (b+1 < len(c.groups) && c.seps[b] == '.') {
			continue
		}
		lo, hi := c.spanOf(a, b)
		if !boundaryOK(text, lo, hi) || (lo > 0 && text[lo-1] == '.') || (hi < len(text) && text[hi] == '.' && hi+1 < len(text) && isAlnum(text[hi+1])) {
			continue
		}
		addr, ok := parseIPv4(text, c.groups[a:b+1])
		if !ok || !want(addr) || standardBlock(text, hi, addr) {
			continue
		}
		var nb [16]byte
		st.emit(d.idx, lo, hi, st.conf(d, base, lo, hi), addr.AppendTo(nb[:0]), d.mask)
		a = b
	}
}

// parseIPv4 reads four dot-separated digit groups as netip.ParseAddr does:
// each 1 to 3 digits, at most 255, no leading zero.
func parseIPv4(text []byte, groups []span) (netip.Addr, bool) {
	var ip [4]byte
	for k, g := range groups {
		var v int
		switch g.hi - g.lo {
		case 1:
			v = int(text[g.lo] - '0')
		case 2:
			v = int(text[g.lo]-'0')*10 + int(text[g.lo+1]-'0')
		case 3:
			v = int(text[g.lo]-'0')*100 + int(text[g.lo+1]-'0')*10 + int(text[g.lo+2]-'0')
		default:
			return netip.Addr{}, false
		}
		if v > 255 || (g.hi-g.lo > 1 && text[g.lo] == '0') {
			return netip.Addr{}, false
		}
		ip[k] = byte(v)
	}
	return netip.AddrFrom4(ip), true
}

// ipv6At checks the hex-and-colon token around text[i] and returns the
// offset just past it.
func (st *scanState) ipv6At(i int) int {
	text := st.text
	isV6 := func(b byte) bool { return isHex(b) || b == ':' || b == '.' }
	lo := i
	for lo > 0 && i-lo < 45 && isV6(text[lo-1]) {
		lo--
	}
	hi := i
	for hi < len(text) && hi-i < 45 && isV6(text[hi]) {
		hi++
	}
	end := max(hi, i+1) // always make progress
	for hi > lo && text[hi-1] == '.' {
		hi--
	}
	raw := text[lo:hi]
	if hi-lo > 45 || bytes.Count(raw, []byte{':'}) < 2 || !boundaryOK(text, lo, hi) {
		return end
	}
	hexN := 0
	for _, c := range raw {
		if isHex(c) {
			hexN++
		}
	}
	if hexN < 4 {
		return end
	}
	addr, err := netip.ParseAddr(string(raw))
	if err != nil || !addr.Is6() {
		return end
	}
	d, base := st.s.ipv6, 0.75
	if !publicAddr(addr, st.s.includeReserved) {
		if !privateAddr(addr) {
			return end
		}
		d, base = st.s.privateIP, 0.6
	}
	if d != nil && !standardBlock(text, hi, addr) {
		st.emitString(d.idx, lo, hi, st.conf(d, base, lo, hi), addr.String(), d.mask)
	}
	return end
}

// ---- crypto wallets ----

func walletNumeric(st *scanState, d *detector, c *numCand) {
	text := st.text
	g := c.groups[0]
	lo := g.lo
	if c.start != lo || (lo > 0 && isWordByte(text[lo-1])) {
		return
	}
	switch {
	case text[lo] == '0' && lo+42 <= len(text) && (text[lo+1] == 'x' || text[lo+1] == 'X') && g.hi == lo+1:
		hi := lo + 42
		if (hi < len(text) && isWordByte(text[hi])) || !allHex(text[lo+2:hi]) {
			return // not 40 hex digits (a 0x literal of code): no string made
		}
		v := string(text[lo:hi])
		ok, checked := validEthAddress(v)
		if !ok {
			return
		}
		if !checked && !st.hasContext(d, lo, hi, 64) {
			return // 40 hex digits without checksum or context: a hash, probably
		}
		conf := 0.7
		if checked {
			conf = 0.9
		}
		st.emitString(d.idx, lo, hi, st.conf(d, conf, lo, hi), strings.ToLower(v), d.mask)
	case (text[lo] == '1' || text[lo] == '3') && g.hi < len(text) && isAlpha(text[g.hi]):
		hi := lo
		for hi < len(text) && hi-lo <= 35 && isAlnum(text[hi]) {
			hi++
		}
		if hi-lo < 26 || hi-lo > 35 || (hi < len(text) && isWordByte(text[hi])) {
			return
		}
		v := string(text[lo:hi])
		if !validBase58Check(v) {
			return
		}
		if !st.s.includeReserved && v == "1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa" {
			return // the genesis block address, quoted in every tutorial
		}
		st.emitString(d.idx, lo, hi, st.conf(d, 0.85, lo, hi), v, d.mask)
	}
}

func bech32Window(st *scanState, d *detector, lo, hi int) {
	text := st.text
	for i := lo; i+3 <= hi; i++ {
		if (text[i]|0x20) != 'b' && (text[i]|0x20) != 't' {
			continue
		}
		if !((text[i+1]|0x20) == 'c' || (text[i+1]|0x20) == 'b') || text[i+2] != '1' || (i > 0 && isWordByte(text[i-1])) {
			continue
		}
		j := i
		for j < len(text) && j-i <= 90 && isAlnum(text[j]) {
			j++
		}
		if j < len(text) && isWordByte(text[j]) {
			continue
		}
		v := string(text[i:j])
		if validBech32Address(v) {
			st.emitString(d.idx, i, j, st.conf(d, 0.9, i, j), strings.ToLower(v), d.mask)
			i = j
		}
	}
}

package classifiers

import (
	"bytes"
	"strings"
	"unicode"
	"unicode/utf8"
)

const sensitivityLabelID = "marker.sensitivity_label"

// classificationBanners are the banners marker.classification looks for,
// lower case, in English, French, German, Spanish and Italian.
var classificationBanners = []string{
	// English
	"confidential", "strictly confidential", "highly confidential", "company confidential", "internal use only",
	"for internal use only", "internal only", "restricted", "highly restricted", "top secret", "secret//", "secret //",
	"for official use only", "official-sensitive", "official sensitive",
	// French
	"confidentiel", "strictement confidentiel", "diffusion restreinte", "diffusion limitée", "usage interne",
	"usage interne uniquement", "confidentiel défense", "secret défense", "très secret",
	// German
	"vertraulich", "streng vertraulich", "nur für den internen gebrauch", "nur für den dienstgebrauch", "verschlusssache",
	// Spanish
	"confidencial", "estrictamente confidencial", "uso interno", "difusión limitada", "reservado",
	// Italian
	"riservato", "strettamente riservato", "riservatissimo", "confidenziale", "uso interno riservato",
}

// classificationLabels introduce a banner on the same line.
var classificationLabels = []string{"classification", "classified", "sensitivity", "marking", "label", "niveau",
	"confidentialité", "mention", "klassifizierung", "einstufung", "clasificación", "clasificacion", "classificazione", "status"}

func markerDetectors() []*detector {
	return []*detector{
		{id: "marker.classification", cat: CategoryMarker,
			desc:     "Confidentiality banner (CONFIDENTIAL, INTERNAL USE ONLY, SECRET//NOFORN, Confidentiel, Diffusion restreinte, Vertraulich, Confidencial, Riservato…) in capitals, after a label, or alone on its line",
			keywords: classificationBanners, hit: bannerHit},
		{id: "marker.tlp", cat: CategoryMarker, desc: "Traffic Light Protocol 2.0 label (TLP:RED, TLP:AMBER+STRICT, TLP:AMBER, TLP:GREEN, TLP:CLEAR; TLP 1.0 WHITE too)",
			keywords: []string{"tlp"}, after: 20,
			window: matchWindow(findTLP, 0, isAlnum, func(st *scanState, d *detector, lo, hi int, m []int) {
				color := strings.ToUpper(string(st.text[m[2]:m[3]]))
				conf := 0.95
				if color == "WHITE" {
					conf = 0.8
				}
				st.emitString(d.idx, lo, hi, conf, "TLP:"+color, maskLabel)
			})},
	}
}

// tlpColors are the alternatives of (?i)TLP ?: ?(AMBER\+STRICT|RED|AMBER|
// GREEN|CLEAR|WHITE), in the order a regexp tries them.
var tlpColors = []string{"amber+strict", "red", "amber", "green", "clear", "white"}

// findTLP matches (?i)TLP ?: ?(AMBER\+STRICT|RED|AMBER|GREEN|CLEAR|WHITE)
// as regexp does: case folding includes U+017F (long s, which folds to s),
// the only non-ASCII letter folding to one of these letters.
func findTLP(text []byte, pos, hi int, m []int) []int {
	for s := pos; s+3 <= hi; s++ {
		if text[s]|0x20 != 't' || text[s+1]|0x20 != 'l' || text[s+2]|0x20 != 'p' {
			continue
		}
		i := s + 3
		if i < hi && text[i] == ' ' {
			i++
		}
		if i >= hi || text[i] != ':' {
			continue
		}
		i++
		if i < hi && text[i] == ' ' {
			i++
		}
		for _, c := range tlpColors {
			if e, ok := foldPrefix(text[:hi], i, c); ok {
				return append(m, s, e, i, e)
			}
		}
	}
	return nil
}

// foldPrefix matches lower-case ASCII word w at text[i:] case-insensitively
// as (?i) does and returns the end of the match.
func foldPrefix(text []byte, i int, w string) (int, bool) {
	for k := 0; k < len(w); k++ {
		c := w[k]
		switch {
		case i < len(text) && (text[i] == c || (isAlpha(c) && text[i] == c-('a'-'A'))):
			i++
		case c == 's' && i+1 < len(text) && text[i] == 0xC5 && text[i+1] == 0xBF: // ſ
			i += 2
		default:
			return 0, false
		}
	}
	return i, true
}

// bannerHit decides whether a banner keyword is a marking: written in
// capitals, introduced by a label on its line, or alone on its line.
// "confidential" in running prose is not a finding.
func bannerHit(st *scanState, d *detector, start, end int) {
	text := st.text
	caveats := text[end-1] == '/'
	if (start > 0 && isWordByte(text[start-1])) || (!caveats && end < len(text) && isWordByte(text[end])) {
		return
	}
	if end < len(text) && text[end] >= 0x80 {
		if r, _ := utf8.DecodeRune(text[end:]); unicode.IsLetter(r) {
			return
		}
	}
	word := text[start:end]
	hi := end
	if bytes.HasSuffix(word, []byte("/")) { // SECRET//NOFORN: take the caveats
		for hi < len(text) && hi-end < 60 && (isUpper(text[hi]) || text[hi] == '/' || text[hi] == ' ' || text[hi] == '-') {
			hi++
		}
		for hi > end && text[hi-1] == ' ' {
			hi--
		}
		if hi == end {
			return
		}
	}
	// The line around the banner, looked for at most lineReach bytes away
	// (a keyword in a huge single-line input must not cost a line scan).
	const lineReach = 200
	from := max(0, start-lineReach)
	ls := from
	if i := bytes.LastIndexByte(text[from:start], '\n'); i >= 0 {
		ls = from + i + 1
	}
	to := min(len(text), hi+lineReach)
	le := to
	if i := bytes.IndexByte(text[hi:to], '\n'); i >= 0 {
		le = hi + i
	}
	caps := isAllCaps(word)
	var lb [60]byte
	before := lowerSmall(lb[:0], text[max(ls, start-60):start])
	trim := func(b []byte) []byte { return bytes.Trim(b, " \t\r*#=-_[]|<>/!.\"'") }
	// Labelled: a label word, a few words of its own ("Sensitivity
	// level", "Niveau de confidentialité"), ':' or '=', then the banner.
	// Not "relabelled … wrote: \"The confidential …".
	labelled := false
	for _, l := range classificationLabels {
		i := bytes.LastIndex(before, []byte(l))
		if i < 0 || i > 0 && isWordByte(before[i-1]) {
			continue
		}
		rest := before[i+len(l):]
		j := bytes.IndexAny(rest, ":=")
		if j >= 0 && j <= 24 && !bytes.ContainsAny(rest[:j], ".,;!?\"") && len(trim(rest[j+1:])) == 0 {
			labelled = true
			break
		}
	}
	alone := (ls > from || ls == 0) && (le < to || le == len(text)) && len(trim(text[ls:start])) == 0 && len(trim(text[hi:le])) == 0
	var conf float64
	switch {
	case labelled:
		conf = 0.95
	case caps && len(word) >= 6:
		conf = 0.9
	case alone:
		conf = 0.85
	default:
		return
	}
	if v := text[start:hi]; asciiText(v) {
		// strings.ToUpper of ASCII, without its string
		st.norm = st.norm[:0]
		for _, c := range v {
			if c-'a' < 26 {
				c -= 'a' - 'A'
			}
			st.norm = append(st.norm, c)
		}
		st.emit(d.idx, start, hi, conf, st.norm, maskLabel)
		return
	}
	st.emitString(d.idx, start, hi, conf, strings.ToUpper(string(text[start:hi])), maskLabel)
}

// asciiText reports whether b is all ASCII.
func asciiText(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerSmall is bytes.ToLower(b), appended to dst when b is ASCII (no
// allocation while dst has room).
func lowerSmall(dst, b []byte) []byte {
	if !asciiText(b) {
		return bytes.ToLower(b)
	}
	return asciiLowerBytes(dst, b)
}

func isAllCaps(b []byte) bool {
	letters := 0
	for _, r := range string(b) {
		if unicode.IsLetter(r) {
			if !unicode.IsUpper(r) {
				return false
			}
			letters++
		}
	}
	return letters > 0
}

// builtinDetectors returns fresh instances of every built-in detector in a
// stable order. It is a function, not a package variable, so no state is
// shared between Scanners.
func builtinDetectors() []*detector {
	var out []*detector
	out = append(out, piiDetectors()...)
	out = append(out, secretDetectors()...)
	out = append(out, familyDetectors()...)
	out = append(out, markerDetectors()...)
	return out
}

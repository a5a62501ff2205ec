package classifiers

import (
	"bytes"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
)

// cardIssuerSpec is cardIssuer's definition on the digits d themselves:
// the issuer ranges as prefixes of d and the lengths each issues.
func cardIssuerSpec(d []byte) bool {
	n := len(d)
	p2, _ := strconv.Atoi(string(d[:2]))
	p3, _ := strconv.Atoi(string(d[:3]))
	p4, _ := strconv.Atoi(string(d[:4]))
	in := func(v, lo, hi int) bool { return v >= lo && v <= hi }
	switch {
	case p4 == 1800 || p4 == 2131:
		return n == 15 // JCB
	case d[0] == '1':
		return n == 15 // UATP
	case d[0] == '4':
		return n == 13 || n == 16 || n == 19
	case in(p2, 51, 55) || in(p4, 2221, 2720):
		return n == 16
	case p2 == 34 || p2 == 37:
		return n == 15
	case p4 == 6011 || p2 == 65 || in(p3, 644, 649) || in(p4, 3528, 3589) || p2 == 62:
		return in(n, 16, 19)
	case in(p3, 300, 305) || p2 == 36 || p2 == 38 || p2 == 39:
		return in(n, 14, 19)
	case p2 == 50 || in(p2, 56, 69):
		return in(n, 12, 19)
	}
	return false
}

// TestCardIssuer compares cardIssuer with its definition on every four-
// digit prefix and every length from 4 to 20 digits.
func TestCardIssuer(t *testing.T) {
	yes := 0
	for p4 := 0; p4 < 10000; p4++ {
		for n := 4; n <= 20; n++ {
			d := []byte(strconv.Itoa(10000 + p4)[1:])
			for len(d) < n {
				d = append(d, '7')
			}
			got, want := cardIssuer(p4, n), cardIssuerSpec(d)
			if got != want {
				t.Fatalf("cardIssuer(%04d, %d) = %v, its definition says %v", p4, n, got, want)
			}
			if got {
				yes++
			}
		}
	}
	if yes == 0 {
		t.Fatal("no issuer range accepted")
	}
}

// TestCardAndPhoneRanges checks the card and phone detectors on numbers
// whose ranges the early rejections skip (slices of a longer number, an
// issuer range of the wrong length) and on ones they must keep.
func TestCardAndPhoneRanges(t *testing.T) {
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text, id string
		want     int
	}{
		{"Card 4970 1234 5678 9013 exp 12/27", "pii.credit_card", 1},
		{"Card 4970 1234 5678 9013 5 exp 12/27", "pii.credit_card", 1}, // 17 digits, no Visa length: its first 16
		{"ref 1111 4970 1234 5678 9013 end", "pii.credit_card", 1},     // the card inside a longer run
		{"Card 3782 822463 12340 exp 12/27", "pii.credit_card", 1},     // Amex 4-6-5
		{"IBAN FR76 3000 6000 0112 3456 7890 189", "pii.phone", 0},     // slices of an account number
		{"tel +33 6 12 34 56 78", "pii.phone", 1},                      // international
		{"from 0033 6 12 34 56 78 today", "pii.phone", 1},              // an IDD prefix without context
		{"ref 44 1234 0033 6 12 34 56 78 today", "pii.phone", 1},       // an IDD range inside a longer run
		{"ref 12 06 12 34 56 78", "pii.phone", 0},                      // a slice, no context
		{"phone: 12 06 12 34 56 78", "pii.phone", 1},                   // the same slice with a cue
	} {
		fs, err := s.Scan(t.Context(), []byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range fs {
			if f.Detector == tc.id {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("%q: %d %s findings, want %d (%v)", tc.text, n, tc.id, tc.want, fs)
		}
	}
}

// luhnSpec is the Luhn check as ISO/IEC 7812 states it: from the right,
// every second digit doubled, 9 taken off a doubled digit above 9, the sum
// a multiple of 10.
func luhnSpec(d []byte) bool {
	sum := 0
	for k := 0; k < len(d); k++ {
		n := int(d[len(d)-1-k] - '0')
		if k%2 == 1 {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
	}
	return sum%10 == 0
}

func TestLuhn(t *testing.T) {
	for _, tc := range []struct {
		d    string
		want bool
	}{
		{"4970123456789013", true}, {"4970123456789014", false}, {"378282246312340", true}, {"0", true},
		{"", true}, {"18", true}, {"59", true}, {"79927398713", true}, {"79927398710", false},
	} {
		if got, spec := luhn([]byte(tc.d)), luhnSpec([]byte(tc.d)); got != tc.want || spec != tc.want || luhn(tc.d) != tc.want {
			t.Errorf("luhn(%q) = %v (definition %v), want %v", tc.d, got, spec, tc.want)
		}
	}
	for n := 0; n < 100000; n++ {
		d := []byte(strconv.Itoa(n))
		if got, spec := luhn(d), luhnSpec(d); got != spec {
			t.Fatalf("luhn(%s) = %v, its definition says %v", d, got, spec)
		}
	}
}

func FuzzLuhn(f *testing.F) {
	f.Add([]byte("4970123456789013"))
	f.Add([]byte("12a"))
	f.Fuzz(func(t *testing.T, d []byte) {
		if got, spec := luhn(d), luhnSpec(d); got != spec {
			t.Fatalf("luhn(%q) = %v, its definition says %v", d, got, spec)
		}
	})
}

// TestPhoneExtensionFastPath checks phoneExtension's inlined first test against
// reading the extension word at every position.
func TestPhoneExtensionFastPath(t *testing.T) {
	for _, text := range []string{"0612345678 x309", "0612345678x3", "0612345678  ext. 72", "061 poste 12", "06 extension 4, ",
		"06   x 5", "06 Ext: 9a", "06-12 34", "06 e", "06 ", "06  ", "x1", " X2 ", "  p", "0612 xylophone 5"} {
		for hi := 0; hi <= len(text); hi++ {
			if got, want := phoneExtension([]byte(text), hi), phoneExtensionWord([]byte(text), hi); got != want {
				t.Errorf("phoneExtension(%q, %d) = %d, reading the word says %d", text, hi, got, want)
			}
		}
	}
	if got := phoneExtension([]byte("0612345678 x309"), 10); got != 15 {
		t.Errorf("phoneExtension(x309) = %d, want 15", got)
	}
}

func FuzzPhoneExtension(f *testing.F) {
	f.Add([]byte("06 ext. 72"))
	f.Fuzz(func(t *testing.T, text []byte) {
		for hi := 0; hi <= len(text); hi++ {
			if got, want := phoneExtension(text, hi), phoneExtensionWord(text, hi); got != want {
				t.Fatalf("phoneExtension(%q, %d) = %d, reading the word says %d", text, hi, got, want)
			}
		}
	})
}

// TestCardSepRun compares cardSepRun with sameSeps on the candidates of
// random digit groups joined by every kind of separator.
func TestCardSepRun(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	seps := []string{" ", "-", ".", "  ", "- ", "(", ")", " -"}
	var c numCand
	for range 20000 {
		var b []byte
		for g := 1 + r.IntN(8); g > 0; g-- {
			for k := 1 + r.IntN(5); k > 0; k-- {
				b = append(b, byte('0'+r.IntN(10)))
			}
			if g > 1 {
				b = append(b, seps[r.IntN(len(seps))]...)
			}
		}
		c.parse(b, 0)
		for a := range c.groups {
			to := cardSepRun(&c, a)
			for bb := a; bb < len(c.groups); bb++ {
				if got, want := bb <= to, c.sameSeps(a, bb, " -"); got != want {
					t.Fatalf("%q: groups %d..%d joined: %v, sameSeps says %v", b, a, bb, got, want)
				}
			}
		}
	}
}

// TestReservedLast checks reservedDomainASCII's last-byte filter against
// reservedDomain on the reserved names, their suffixes and other domains.
func TestReservedLast(t *testing.T) {
	doms := []string{"", "a", "m", "acme-corp12.fr", "mail.example.com", "example.com", "xexample.com", "a.test", "test",
		"local", "a.localhost", "b.invalid", "example.edu", "x.example", "example", "examplf.com"}
	for _, r := range append(append([]string{}, reservedDomains...), reservedTLDs...) {
		for k := range r {
			doms = append(doms, r[k:], "w"+r[k:], "w."+r[k:])
		}
	}
	for _, d := range doms {
		if got, want := reservedDomainASCII([]byte(d)), reservedDomain(d); got != want {
			t.Errorf("reservedDomainASCII(%q) = %v, reservedDomain says %v", d, got, want)
		}
	}
}

// TestCorsicaLetter checks that when corsicaLetter says no letter can be
// met, readCompact's value from the candidate's start holds no A or B,
// on random digits, separators and letters.
func TestCorsicaLetter(t *testing.T) {
	met := 0
	randomCandidates(rand.New(rand.NewPCG(7, 8)), "0123456789012345678901234567890123456789 . .-()ABabXz", 100000, 40,
		func(b []byte, i int, c *numCand) {
			var buf [24]byte
			_, _, v, ok := readCompact(b, c.groups[0].lo, 15, " .", buf[:0])
			letter := ok && bytes.ContainsAny(v, "AB")
			if letter {
				met++
			}
			if letter && !corsicaLetter(b, c) {
				t.Fatalf("%q at %d: readCompact reads %q, corsicaLetter says no letter", b, i, v)
			}
		})
	if met == 0 {
		t.Fatal("no value with a letter read")
	}
}

// randomCandidates makes n random texts of 1 to maxLen bytes of alphabet
// and calls fn with each numeric candidate (a digit after a non-digit),
// parsed.
func randomCandidates(r *rand.Rand, alphabet string, n, maxLen int, fn func(b []byte, i int, c *numCand)) {
	var c numCand
	for range n {
		b := make([]byte, 1+r.IntN(maxLen))
		for k := range b {
			b[k] = alphabet[r.IntN(len(alphabet))]
		}
		for i := 0; i < len(b); i++ {
			if isDigit(b[i]) && (i == 0 || !isDigit(b[i-1])) {
				c.parse(b, i)
				fn(b, i, &c)
			}
		}
	}
}

// TestNINODigits checks that every NINO read as ninoNumeric reads it (two
// letters, digits from the candidate, a letter, single spaces) comes from
// a candidate of exactly six digits, on random letters, digits and
// separators.
func TestNINODigits(t *testing.T) {
	met := 0
	randomCandidates(rand.New(rand.NewPCG(9, 10)), "0123456789012345678901234567890123456789  .-ABCDAJKLab", 200000, 24,
		func(b []byte, i int, c *numCand) {
			for _, lo := range []int{i - 2, i - 3} {
				if lo < 0 {
					continue
				}
				var buf [16]byte
				_, _, v, ok := readCompact(b, lo, 9, " ", buf[:0])
				if !ok || !validNINO(string(v)) || v[2] != b[i] {
					continue
				}
				met++
				if c.cum[len(c.groups)] != 6 {
					t.Fatalf("%q from %d: NINO %q from a candidate of %d digits", b, lo, v, c.cum[len(c.groups)])
				}
			}
		})
	if met == 0 {
		t.Fatal("no NINO read")
	}
}

// TestParseIPv4 compares parseIPv4 with netip.ParseAddr on dotted quads
// of one to four digits, leading zeros and values over 255 among them.
func TestParseIPv4(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var c numCand
	for range 100000 {
		var b []byte
		for g := 0; g < 4; g++ {
			if g > 0 {
				b = append(b, '.')
			}
			n := 1 + r.IntN(4)
			for k := 0; k < n; k++ {
				d := r.IntN(10)
				if k == 0 && r.IntN(3) == 0 {
					d = r.IntN(3)
				}
				b = append(b, byte('0'+d))
			}
		}
		c.parse(b, 0)
		got, ok := parseIPv4(b, c.groups)
		want, err := netip.ParseAddr(string(b))
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("parseIPv4(%q) = %v, %v; netip.ParseAddr: %v, %v", b, got, ok, want, err)
		}
	}
}

func FuzzEntropyTable(f *testing.F) {
	tab := newEntropyTable()
	f.Add([]byte("Xk9#mP2$v123456Lq7"))
	f.Add([]byte("\x00\x00\xff\x80"))
	f.Fuzz(func(t *testing.T, v []byte) {
		if got, want := tab.of(v), shannon(v); got != want {
			t.Fatalf("entropyTable.of(%q) = %v, shannon %v", v, got, want)
		}
	})
}

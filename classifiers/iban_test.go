package classifiers

import (
	"math/rand/v2"
	"testing"
)

// validIBANRef is validIBAN as first written: the remainder after every
// character.
func validIBANRef(s string) bool {
	if len(s) < 15 || len(s) > 34 || !isUpper(s[0]) || !isUpper(s[1]) || !isDigit(s[2]) || !isDigit(s[3]) {
		return false
	}
	if ibanLengths[s[:2]] != len(s) {
		return false
	}
	r := 0
	for k := 0; k < len(s); k++ {
		c := s[(k+4)%len(s)]
		switch {
		case isDigit(c):
			r = (r*10 + int(c-'0')) % 97
		case isUpper(c):
			r = (r*100 + int(c-'A') + 10) % 97
		default:
			return false
		}
	}
	return r == 1
}

func TestValidIBANMatchesReference(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 11))
	countries := make([]string, 0, len(ibanLengths))
	for cc := range ibanLengths {
		countries = append(countries, cc)
	}
	const chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ9999999999ZZZZZ"
	valid := 0
	for n := 0; n < 300000; n++ {
		cc := countries[r.IntN(len(countries))]
		l := ibanLengths[cc]
		if r.IntN(10) == 0 {
			l = 14 + r.IntN(22)
		}
		b := []byte(cc)
		for len(b) < l {
			b = append(b, chars[r.IntN(len(chars))])
		}
		if l >= 4 {
			b[2], b[3] = byte('0'+r.IntN(10)), byte('0'+r.IntN(10))
		}
		if r.IntN(50) == 0 {
			b[r.IntN(len(b))] = "a-_ é"[r.IntN(5)]
		}
		s := string(b)
		if r.IntN(2) == 0 && len(s) == ibanLengths[cc] {
			// check digits that make it valid, when some do
			for cd := 2; cd < 99; cd++ {
				if v := s[:2] + string(rune('0'+cd/10)) + string(rune('0'+cd%10)) + s[4:]; validIBANRef(v) {
					s = v
					break
				}
			}
		}
		want := validIBANRef(s)
		if want {
			valid++
		}
		if validIBAN(s) != want || validIBAN([]byte(s)) != want {
			t.Fatalf("validIBAN(%q) != %v", s, want)
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d valid IBANs generated", valid)
	}
}

package classifiers

import (
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"
)

// libraryPhone is the reference: phonenumbers.Parse and IsValidNumber
// (international) or IsValidNumberForRegion (national, regions in
// phoneRegionsFor order), exactly as the engine validated phones before
// the fast path.
func libraryPhone(digits string, intl bool) phoneResult {
	var num *phonenumbers.PhoneNumber
	if intl {
		n, err := phonenumbers.Parse("+"+digits, "ZZ")
		if err != nil || !phonenumbers.IsValidNumber(n) {
			return phoneResult{}
		}
		num = n
	} else if plausibleNational(digits) {
		for _, region := range phoneRegionsFor(digits) {
			n, err := phonenumbers.Parse(digits, region)
			if err == nil && phonenumbers.IsValidNumberForRegion(n, region) {
				num = n
				break
			}
		}
	}
	if num == nil {
		return phoneResult{}
	}
	return phoneResult{valid: true, e164: phonenumbers.Format(num, phonenumbers.E164),
		fictional: fictionalPhone(int(num.GetCountryCode()), strconv.FormatUint(num.GetNationalNumber(), 10))}
}

// phoneSamples generates digit strings shaped like the candidates the
// engine validates: example numbers of every supported region with random
// changes, national forms with trunk prefixes, and random digits.
func phoneSamples(n int, seed uint64) []struct {
	digits string
	intl   bool
} {
	r := rand.New(rand.NewPCG(seed, 11))
	var seeds []string
	regions := []string{"US", "CA", "FR", "GB", "DE", "ES", "IT", "BE", "CH", "GG", "IM", "JE", "VA", "AG", "PR", "JM"}
	for region := range phonenumbers.GetSupportedRegions() {
		regions = append(regions, region)
	}
	slices.Sort(regions[16:]) // map order is random; keep the samples reproducible
	for _, region := range regions {
		for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
			phonenumbers.PREMIUM_RATE, phonenumbers.SHARED_COST, phonenumbers.VOIP, phonenumbers.PERSONAL_NUMBER,
			phonenumbers.PAGER, phonenumbers.UAN, phonenumbers.VOICEMAIL} {
			if ex := phonenumbers.GetExampleNumberForType(region, typ); ex != nil {
				seeds = append(seeds, strconv.Itoa(int(ex.GetCountryCode()))+"|"+phonenumbers.GetNationalSignificantNumber(ex))
			}
		}
	}
	out := make([]struct {
		digits string
		intl   bool
	}, 0, n)
	for len(out) < n {
		var d []byte
		intl := r.IntN(2) == 0
		switch k := r.IntN(10); {
		case k < 7:
			s := seeds[r.IntN(len(seeds))]
			i := 0
			for s[i] != '|' {
				i++
			}
			cc, nsn := s[:i], []byte(s[i+1:])
			for m := r.IntN(4); m > 0; m-- { // change, drop or add digits
				p := r.IntN(len(nsn))
				switch r.IntN(4) {
				case 0, 1:
					nsn[p] = byte('0' + r.IntN(10))
				case 2:
					if len(nsn) > 2 {
						nsn = append(nsn[:p], nsn[p+1:]...)
					}
				case 3:
					nsn = append(nsn[:p], append([]byte{byte('0' + r.IntN(10))}, nsn[p:]...)...)
				}
			}
			switch {
			case intl && r.IntN(8) == 0:
				d = append([]byte(cc+"0"), nsn...) // +33 0 6…
			case intl:
				d = append([]byte(cc), nsn...)
			case r.IntN(10) == 0:
				d = append([]byte("00"+cc), nsn...) // international prefix, national parse
			case r.IntN(10) == 0:
				d = append([]byte(cc), nsn...) // calling code without '+'
			case r.IntN(20) == 0:
				d = append([]byte(cc+"0"), nsn...)
			case cc == "1" && r.IntN(3) == 0:
				d = append([]byte("1"), nsn...)
			case cc == "1" || cc == "34" || cc == "39":
				d = nsn
			default:
				d = append([]byte("0"), nsn...)
			}
		default:
			l := 3 + r.IntN(14)
			for j := 0; j < l; j++ {
				d = append(d, byte('0'+r.IntN(10)))
			}
			switch r.IntN(4) {
			case 0:
				d = append([]byte([]string{"1", "32", "33", "34", "39", "41", "44", "49"}[r.IntN(8)]), d...)
			case 1:
				d = append([]byte("00"), d...)
			}
		}
		if len(d) < 3 || len(d) > 17 {
			continue
		}
		out = append(out, struct {
			digits string
			intl   bool
		}{string(d), intl})
	}
	return out
}

// TestPhoneFastPathMatchesLibrary checks the fast phone validation against
// phonenumbers on generated candidates (PHONE_SAMPLES raises the count).
func TestPhoneFastPathMatchesLibrary(t *testing.T) {
	t.Parallel()
	n := 30000
	if testing.Short() {
		n = 3000
	}
	if v, err := strconv.Atoi(os.Getenv("PHONE_SAMPLES")); err == nil {
		n = v
	}
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	valid, bad := 0, 0
	for _, c := range phoneSamples(n, 1) {
		got, want := s.checkPhone(c.digits, c.intl), libraryPhone(c.digits, c.intl)
		if got != want {
			bad++
			if bad <= 10 {
				t.Errorf("intl=%v %s: fast %+v, phonenumbers %+v", c.intl, c.digits, got, want)
			}
		}
		if want.valid {
			valid++
		}
	}
	if valid < n/10 {
		t.Errorf("only %d of %d samples are valid numbers: the generator does not exercise validation", valid, n)
	}
	t.Logf("%d samples, %d valid, %d mismatches", n, valid, bad)
}

// TestDigitDFA checks every national number pattern of libphonenumber's
// metadata: the DFA accepts exactly the digit strings the regexp accepts.
func TestDigitDFA(t *testing.T) {
	t.Parallel()
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 8))
	n := 200
	if testing.Short() {
		n = 40
	}
	built, accepted := 0, 0
	for _, m := range coll.GetMetadata() {
		for _, d := range []*phonenumbers.PhoneNumberDesc{m.GetGeneralDesc(), m.GetFixedLine(), m.GetMobile(), m.GetTollFree(),
			m.GetPremiumRate(), m.GetSharedCost(), m.GetVoip(), m.GetPersonalNumber(), m.GetPager(), m.GetUan(), m.GetVoicemail()} {
			if d == nil {
				continue
			}
			pat := d.GetNationalNumberPattern()
			dfa := compileDigitDFA(pat)
			if dfa == nil {
				continue
			}
			built++
			re := regexp.MustCompile("^(?:" + pat + ")$")
			samples := []string{"", d.GetExampleNumber()}
			for k := 0; k < n; k++ {
				b := []byte(d.GetExampleNumber())
				if len(b) == 0 || r.IntN(3) == 0 {
					b = make([]byte, 1+r.IntN(17))
					for i := range b {
						b[i] = byte('0' + r.IntN(10))
					}
				} else {
					for j := 1 + r.IntN(3); j > 0; j-- {
						b[r.IntN(len(b))] = byte('0' + r.IntN(10))
					}
					if r.IntN(4) == 0 {
						b = b[:r.IntN(len(b))]
					}
				}
				samples = append(samples, string(b))
			}
			for _, s := range samples {
				if got, want := dfa.match(s), re.MatchString(s); got != want {
					t.Fatalf("%s %q on %q: dfa %v, regexp %v", m.GetId(), pat, s, got, want)
				} else if got {
					accepted++
				}
			}
		}
	}
	if built < 1000 || accepted < 1000 {
		t.Fatalf("built %d DFAs, %d accepted samples: too few to mean anything", built, accepted)
	}
	t.Logf("%d patterns as DFAs, %d accepted samples", built, accepted)
}

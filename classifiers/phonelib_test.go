package classifiers

import (
	"bytes"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers/internal/phonemeta"
	"github.com/nyaruka/phonenumbers"
)

// The tests of this file compare phoneBook with github.com/nyaruka/phonenumbers
// (whose metadata phonemeta_gen.go is generated from): for every input,
// the same validity and, for a valid number, the same E.164 form and region.

// phoneLibCase is one input: digits after a '+' (region "") or a national
// number of region.
type phoneLibCase struct {
	digits, region string
}

// libraryAnswer is what the library says of c: valid, E.164 and region.
func libraryAnswer(c phoneLibCase) (valid bool, e164, region string) {
	var n *phonenumbers.PhoneNumber
	var err error
	if c.region == "" {
		n, err = phonenumbers.Parse("+"+c.digits, "ZZ")
		valid = err == nil && phonenumbers.IsValidNumber(n)
	} else {
		n, err = phonenumbers.Parse(c.digits, c.region)
		valid = err == nil && phonenumbers.IsValidNumberForRegion(n, c.region)
	}
	if !valid {
		return false, "", ""
	}
	return true, phonenumbers.Format(n, phonenumbers.E164), phonenumbers.GetRegionCodeForNumber(n)
}

// bookAnswer is what b says of c.
func bookAnswer(b *phoneBook, c phoneLibCase) (valid bool, e164, region string) {
	var n phoneNumber
	if c.region == "" {
		n, valid = b.international(c.digits)
	} else {
		n, valid = b.national(c.digits, c.region)
	}
	if !valid {
		return false, "", ""
	}
	r := b.regionFor(n.cc, n.nsn, phoneMeta().codes[n.cc])
	if r == nil {
		return true, n.e164(), ""
	}
	return true, n.e164(), r.id
}

// comparePhone reports whether b and the library agree on c, logging the
// first disagreements.
func comparePhone(t testing.TB, b *phoneBook, c phoneLibCase, bad *int) bool {
	gv, ge, gr := bookAnswer(b, c)
	wv, we, wr := libraryAnswer(c)
	if gv == wv && ge == we && gr == wr {
		return wv
	}
	*bad++
	if *bad <= 10 {
		t.Errorf("%+v: got valid=%v %s %s, library valid=%v %s %s", c, gv, ge, gr, wv, we, wr)
	}
	return wv
}

// libRegions returns the library's geographic regions, sorted, and its
// calling codes in order.
func libRegions() (regions []string, codes []int) {
	for r := range phonenumbers.GetSupportedRegions() {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	for cc := range phonenumbers.GetSupportedCallingCodes() {
		codes = append(codes, cc)
	}
	slices.Sort(codes)
	return regions, codes
}

// nationalForms returns ways a number nsn of region could be written
// without '+': as is, after the national prefix, after the region's
// calling code, after an international prefix and the calling code.
func nationalForms(region, nsn string) []string {
	cc := strconv.Itoa(phonenumbers.GetCountryCodeForRegion(region))
	out := []string{nsn, cc + nsn, "00" + cc + nsn, "011" + cc + nsn}
	if np := phonenumbers.GetNddPrefixForRegion(region, true); np != "" {
		out = append(out, np+nsn, cc+np+nsn)
	}
	return out
}

// TestPhoneExamplesMatchLibrary checks every example number of every type
// of every region and non-geographic entity in the metadata, and changed
// forms of it (a digit dropped, added or changed), international and in
// national forms for every region that shares its calling code.
func TestPhoneExamplesMatchLibrary(t *testing.T) {
	t.Parallel()
	coll, err := phonenumbers.MetadataCollection()
	if err != nil {
		t.Fatal(err)
	}
	b := newPhoneBook()
	r := rand.New(rand.NewPCG(15, 18))
	n, valid, bad := 0, 0, 0
	for _, m := range coll.GetMetadata() {
		cc := strconv.Itoa(int(m.GetCountryCode()))
		var regions []string
		for _, id := range phonenumbers.GetRegionCodesForCountryCode(int(m.GetCountryCode())) {
			if id != "001" {
				regions = append(regions, id)
			}
		}
		for _, d := range []*phonenumbers.PhoneNumberDesc{m.GetGeneralDesc(), m.GetFixedLine(), m.GetMobile(), m.GetPremiumRate(),
			m.GetTollFree(), m.GetSharedCost(), m.GetVoip(), m.GetPersonalNumber(), m.GetPager(), m.GetUan(), m.GetVoicemail()} {
			ex := d.GetExampleNumber()
			if ex == "" {
				continue
			}
			variants := []string{ex}
			for k := 0; k < 4; k++ {
				v := []byte(ex)
				p := r.IntN(len(v))
				switch k {
				case 0:
					v[p] = byte('0' + r.IntN(10))
				case 1:
					v = slices.Delete(v, p, p+1)
				case 2:
					v = slices.Insert(v, p, byte('0'+r.IntN(10)))
				case 3:
					v = v[:len(v)-1]
				}
				variants = append(variants, string(v))
			}
			for _, v := range variants {
				cases := []phoneLibCase{{digits: cc + v}}
				for _, id := range regions {
					for _, f := range nationalForms(id, v) {
						cases = append(cases, phoneLibCase{f, id})
					}
				}
				for _, c := range cases {
					n++
					if comparePhone(t, b, c, &bad) {
						valid++
					}
				}
			}
		}
	}
	if n < 10000 || valid < n/10 {
		t.Fatalf("%d cases, %d valid: too few to mean anything", n, valid)
	}
	t.Logf("%d cases, %d valid, %d mismatches", n, valid, bad)
}

// TestPhoneRandomMatchesLibrary checks random digit strings for every
// calling code (after '+') and every region (national, with and without
// national and international prefixes), and changed example numbers of
// the code or region (PHONE_RANDOM sets the count per code and region).
func TestPhoneRandomMatchesLibrary(t *testing.T) {
	t.Parallel()
	per := 1000
	if testing.Short() {
		per = 100
	}
	if v, err := strconv.Atoi(os.Getenv("PHONE_RANDOM")); err == nil {
		per = v
	}
	regions, codes := libRegions()
	// The example numbers of each calling code.
	examples := map[int][]string{}
	for _, id := range regions {
		for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
			phonenumbers.PREMIUM_RATE, phonenumbers.VOIP, phonenumbers.UAN} {
			if ex := phonenumbers.GetExampleNumberForType(id, typ); ex != nil {
				examples[int(ex.GetCountryCode())] = append(examples[int(ex.GetCountryCode())], phonenumbers.GetNationalSignificantNumber(ex))
			}
		}
	}
	for cc := range phonenumbers.GetSupportedGlobalNetworkCallingCodes() {
		for _, typ := range []phonenumbers.PhoneNumberType{phonenumbers.FIXED_LINE, phonenumbers.MOBILE, phonenumbers.TOLL_FREE,
			phonenumbers.PREMIUM_RATE, phonenumbers.VOIP, phonenumbers.UAN, phonenumbers.SHARED_COST, phonenumbers.PERSONAL_NUMBER} {
			if ex := phonenumbers.GetExampleNumberForNonGeoEntity(cc); ex != nil && typ == phonenumbers.FIXED_LINE {
				examples[cc] = append(examples[cc], phonenumbers.GetNationalSignificantNumber(ex))
			}
		}
	}
	r := rand.New(rand.NewPCG(18, 15))
	digits := func(l int) string {
		var s strings.Builder
		for range l {
			s.WriteByte(byte('0' + r.IntN(10)))
		}
		return s.String()
	}
	// body is a random national number of calling code cc: a changed
	// example, or random digits.
	body := func(cc int) string {
		ex := examples[cc]
		if len(ex) == 0 || r.IntN(3) == 0 {
			return digits(1 + r.IntN(16))
		}
		v := []byte(ex[r.IntN(len(ex))])
		for k := r.IntN(3); k > 0; k-- {
			p := r.IntN(len(v))
			switch r.IntN(4) {
			case 0, 1:
				v[p] = byte('0' + r.IntN(10))
			case 2:
				if len(v) > 1 {
					v = slices.Delete(v, p, p+1)
				}
			case 3:
				v = slices.Insert(v, p, byte('0'+r.IntN(10)))
			}
		}
		return string(v)
	}
	b := newPhoneBook()
	n, valid, bad := 0, 0, 0
	for _, cc := range codes {
		ccs := strconv.Itoa(cc)
		for range per {
			n++
			if comparePhone(t, b, phoneLibCase{digits: ccs + body(cc)}, &bad) {
				valid++
			}
		}
	}
	for _, id := range regions {
		cc := phonenumbers.GetCountryCodeForRegion(id)
		forms := nationalForms(id, "")
		for range per {
			c := phoneLibCase{digits: forms[r.IntN(len(forms))] + body(cc), region: id}
			if r.IntN(8) == 0 {
				c.digits = digits(1 + r.IntN(18))
			}
			n++
			if comparePhone(t, b, c, &bad) {
				valid++
			}
		}
	}
	if valid < n/20 {
		t.Fatalf("only %d of %d cases are valid numbers: the generator does not exercise validation", valid, n)
	}
	t.Logf("%d cases, %d valid, %d mismatches", n, valid, bad)
}

// FuzzPhoneMatchesLibrary compares phoneBook with the library on any
// digit string, international (mode 0) or national for a region chosen by
// mode.
func FuzzPhoneMatchesLibrary(f *testing.F) {
	for _, s := range []struct {
		digits string
		mode   uint16
	}{{"33612345678", 0}, {"0612345678", 1}, {"81312345678", 0}, {"80012345678", 0}, {"24106031234", 0},
		{"2423570000", 0}, {"3570000", 2}, {"0011441481256789", 3}, {"0549123456", 4}, {"12423570000", 5}} {
		f.Add(s.digits, s.mode)
	}
	regions, _ := libRegions()
	b := newPhoneBook()
	f.Fuzz(func(t *testing.T, s string, mode uint16) {
		// Candidates are ASCII digits: map every byte to one.
		d := make([]byte, 0, 20)
		for i := 0; i < len(s) && len(d) < 20; i++ {
			d = append(d, '0'+s[i]%10)
		}
		c := phoneLibCase{digits: string(d)}
		if mode != 0 {
			c.region = regions[int(mode)%len(regions)]
		}
		bad := 0
		comparePhone(t, b, c, &bad)
	})
}

// TestPhoneMetaGenerated checks that phonemeta_gen.go is what the
// generator writes from the library now (run go generate ./classifiers
// after changing the library's version).
func TestPhoneMetaGenerated(t *testing.T) {
	t.Parallel()
	want, err := phonemeta.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(phonemeta.FileName)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the generator writes: run go generate ./classifiers", phonemeta.FileName)
	}
}

// TestPhoneMetaIndex checks the decoded index against the library: every
// calling code's regions, and every region builds.
func TestPhoneMetaIndex(t *testing.T) {
	t.Parallel()
	ix := phoneMeta()
	b := newPhoneBook()
	codes := 0
	for cc := range ix.codes {
		want := phonenumbers.GetRegionCodesForCountryCode(cc)
		got := ix.codes[cc]
		if len(got) != len(want) {
			t.Fatalf("calling code %d: %v, library %v", cc, got, want)
		}
		for i, id := range got {
			r := b.region(id)
			if !r.ok || r.cc != cc || r.id != want[i] {
				t.Fatalf("calling code %d: region %s (library %s) ok=%v cc=%d id=%s", cc, id, want[i], r.ok, r.cc, r.id)
			}
		}
		if len(got) > 0 {
			codes++
		}
	}
	if codes < 200 || len(ix.records) < 250 {
		t.Fatalf("%d calling codes, %d regions: the index lost some", codes, len(ix.records))
	}
	if r := b.region("XX"); r.ok {
		t.Fatal("an unknown region built")
	}
	for _, rec := range []string{"", "US", "US\tx", "US\t1\t011\t1\t\t\t1\t10 7\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-"} {
		if r := buildPhoneRegion(rec); r.ok {
			t.Fatalf("malformed record %q built", rec)
		}
	}
}

package classifiers

import (
	"strings"
	"testing"
)

// cifRef is validCIF written from the rule, digit by digit, as a
// reference.
func cifRef(s string) bool {
	if len(s) != 9 || !strings.ContainsRune("ABCDEFGHJNPQRSUVW", rune(s[0])) {
		return false
	}
	even, odd := 0, 0
	for pos := 1; pos <= 7; pos++ {
		c := s[pos]
		if c < '0' || c > '9' {
			return false
		}
		d := int(c - '0')
		if pos%2 == 0 {
			even += d
			continue
		}
		dd := 2 * d
		odd += dd/10 + dd%10
	}
	n := (10 - (even+odd)%10) % 10
	letter := string("JABCDEFGHI"[n])
	digit := string(rune('0' + n))
	switch s[0] {
	case 'A', 'B', 'E', 'H':
		return s[8:] == digit
	case 'N', 'P', 'Q', 'R', 'S', 'W':
		return s[8:] == letter
	}
	return s[8:] == digit || s[8:] == letter
}

func TestValidCIF(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want bool
	}{
		{"A58818501", true}, {"B12345674", true}, {"Q2826000H", true}, {"P1234567D", true}, {"G12345674", true},
		{"G1234567D", true}, {"A58818502", false}, {"A5881850A", false}, {"Q28260008", false}, {"I58818501", false},
		{"A5881850", false}, {"A588185011", false}, {"A58a18501", false}, {"", false},
	} {
		if got := validCIF(c.in); got != c.want {
			t.Errorf("validCIF(%q) = %v, want %v", c.in, got, c.want)
		}
		if got := cifRef(c.in); got != c.want {
			t.Errorf("cifRef(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

// FuzzValidCIF checks validCIF against cifRef.
func FuzzValidCIF(f *testing.F) {
	for _, s := range []string{"A58818501", "Q2826000H", "G1234567D", "X1234567L", "A5881850\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validCIF(s), cifRef(s); got != want {
			t.Fatalf("validCIF(%q) = %v, reference %v", s, got, want)
		}
	})
}

func TestNameCueBefore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string // the name starts at the '|'
		want nameCue
	}{
		{"Dear |Tomasz", cueStrong},
		{"Thanks, |Hugo", cueStrong},
		{"thank you |Ana", cueStrong},
		{"Good morning |Ana", cueStrong},
		{"Monday Morning |Meeting", cueGiven},
		{"cc: |Ana", cueWeak},
		{"Kind regards,\n|Ana", cueStrong},
		{"Kind regards,\r\n|Ana", cueStrong},
		{"See you.\n— |Ana", cueStrong},
		{"See you.\n-- |Ana Lima, Sales", cueStrong},
		{"-- |a.go --", cueNone},
		{"x — |Ana", cueNone},
		{"ask |Maria", cueWeak},
		{"I spoke to |Ana", cueWeak},
		{"went on to |Ana", cueGiven},
		{"my manager |Ana", cueWeak},
		{"the tenant, |Ana", cueWeak},
		{"Patient: |Ana", cueNone},
		{"Reason: |Ana", cueNone},
		{"add $hi, |R", cueNone},
		{"lo, hi |Reg", cueNone},
		{"Hi, |Ana", cueStrong},
		{"Chère |Inès", cueStrong},
		{"Supervisor |Memory", cueNone},
		{"our supervisor |Ana", cueWeak},
		{"thehi |Ana", cueNone},
		{"|Ana", cueNone},
		{"Regards\n|Ana", cueNone},
		{"for the |Report", cueNone},
	} {
		i := strings.IndexByte(c.text, '|')
		text := []byte(c.text[:i] + c.text[i+1:])
		if got := nameCueBefore(text, i); got != c.want {
			t.Errorf("nameCueBefore(%q) = %d, want %d", c.text, got, c.want)
		}
	}
}

func TestPhoneExtension(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string // the number ends at the '|'
		want string // the extension found
	}{
		{"|x309", "x309"}, {"| x 5", " x 5"}, {"| ext. 72,", " ext. 72"}, {"| Ext:12", " Ext:12"},
		{"| extension 4", " extension 4"}, {"| poste 214", " poste 214"}, {"|x1234567", ""}, {"|x12a", ""},
		{"| next 4", ""}, {"|", ""}, {"| ext.", ""}, {"|   x 5", ""},
	} {
		i := strings.IndexByte(c.text, '|')
		text := []byte(c.text[:i] + c.text[i+1:])
		if got := string(text[i:phoneExtension(text, i)]); got != c.want {
			t.Errorf("phoneExtension(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// FuzzNameCues checks the backward and forward readers of cues, phone
// extensions and signatures stay in bounds and agree with their contract
// on any text and position.
func FuzzNameCues(f *testing.F) {
	f.Add("Dear Tomasz,\nThanks, Hugo.\nKind regards,\n— Ana\n-- a.go --", 5)
	f.Add("call 212-736-5000x309 ext. 72 call me on 736 5012", 20)
	f.Add("\xc3\xa9\xe2\x80\x94 \xe2\x80\x94 Ana\r\n,", 3)
	f.Fuzz(func(t *testing.T, s string, i int) {
		text := []byte(s)
		if len(text) == 0 {
			return
		}
		i = (i%len(text) + len(text)) % len(text)
		if c := nameCueBefore(text, i); c > cueStrong {
			t.Fatalf("nameCueBefore returned %d", c)
		}
		if e := phoneExtension(text, i); e < i || e > len(text) {
			t.Fatalf("phoneExtension(%d) = %d", i, e)
		}
		localPhoneCue(text, i)
		personAfter(text, i)
		signatureRest(text, i)
		idTail(text, i)
	})
}

package classifiers

import (
	"context"
	"fmt"

	"strings"
	"testing"
)

// partialScanners are the scanners the partial-scan tests run: every
// built-in, the same reporting reserved values, and one with custom rules
// of every kind (keywords of several words, a pattern without white space
// alone and behind keywords), and one with a pattern that spans white
// space.
func partialScanners(t testing.TB) map[string]*Scanner {
	t.Helper()
	out := map[string]*Scanner{}
	for name, o := range map[string]Options{
		"builtins": {HashKey: []byte("partial")},
		"reserved": {HashKey: []byte("partial"), IncludeReserved: true},
		"custom": {HashKey: []byte("partial"), Custom: []CustomRule{
			{ID: "custom.codename", Keywords: []string{"Project Falcon", "Northwind Traders", "Apollo"}, ContextWords: []string{"launch"}},
			{ID: "custom.ticket", Pattern: `\b(?:OPS|SEC)-\d{6}\b`},
			{ID: "custom.gated", Keywords: []string{"ticket"}, Pattern: `[A-Z]{3}-\d{4}`},
		}},
		// A pattern that spans white space holds everything (MaxHold).
		"spaced": {HashKey: []byte("partial"), Custom: []CustomRule{
			{ID: "custom.spaced", Pattern: `(?i)falcon\s+launch\s+\d+`},
		}},
	} {
		s, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

// partialTexts are texts dense in every kind of value and near miss, with
// the prose around them.
func partialTexts() map[string]string {
	out := map[string]string{}
	for seed := uint64(1); seed <= 3; seed++ {
		out[fmt.Sprint("mixed", seed)] = string(mixedCorpus(2500, seed))
		out[fmt.Sprint("dense", seed)] = string(denseCorpusSeed(2000, seed))
		out[fmt.Sprint("people", seed)] = string(peopleCorpus(2000, seed))
		out[fmt.Sprint("phones", seed)] = string(phoneCorpus(1500, seed)[:1500])
		out[fmt.Sprint("corrupt", seed)] = string(corrupt(mixedCorpus(2000, seed+20), seed, 0.01))
	}
	out["names"] = string(namesCorpus(2000))
	out["clean"] = string(cleanCorpus(2500))
	out["custom"] = "Re: Project Falcon launch 12 moved; see OPS-123456 and SEC-654321x. The ticket ABC-1234 " +
		"is Northwind Traders' (ticket XYZ-9876). Falcon  launch 7 is SECRET//NOFORN\n  CONFIDENTIAL  \n" +
		"for internal use only\nApollo, Apollonia. DEF-4321 is older; " + strings.Repeat("and so on, ", 25) +
		"then a ticket. Project Falconry, Northwind Tradersx, Project Falcon.\n"
	out["edges"] = "Classification : Diffusion restreinte\nSECRET // REL TO USA\n-----BEGIN RSA PRIVATE KEY-----\n" +
		"MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----\n" +
		`password: "correct horse battery staple 42" and token = 'Zx9#qP2$vL7m', ` +
		"twilio SK0123456789abcdef0123456789abcdef then auth_token: 0123456789abcdef0123456789abcdef " +
		`{"private_key_id": "0123456789abcdef0123456789abcdef01234567", "type": "service_account"} ` +
		"SSN 219099998 and 536-90-4399 (social security). 0x52908400098527886E0F7030069857D2E4169EE7 eth wallet. " +
		"0x52908400098527886e0f7030069857d2e4169ee7 is my eth wallet; SKfedcba9876543210fedcba9876543210 is our Twilio key. " +
		"Dr. med. Hans Weber, M. RENAUD, DUPONT Jean, John Doe Smith, Jean-Pierre K. Martin, Amélie d'Estaing, " +
		"Mme\u00a0Lefèvre, rue Victor Hugo. NINO ab 12 34 56 c, DNI 12345678 Z, NIR 2 69 05 2A 001 012 34, " +
		"TLP : AMBER+STRICT, tél. +33 6 12 34 56 78 ou 01 42 68 53 00, SIREN 732 829 320."
	// Values that a keyword or context word after them makes findings,
	// far from any before them.
	pad := strings.Repeat("and so on, ", 30)
	out["later-eth"] = pad + "0x52908400098527886e0f7030069857d2e4169ee7 is my eth wallet. " + pad
	out["later-twilio"] = pad + "SKfedcba9876543210fedcba9876543210 is our Twilio key. " + pad
	out["later-custom"] = pad + "DEF-4321 is older; " + strings.Repeat("and so on, ", 10) + "then a ticket. " + pad
	out["later-ssn"] = pad + "219099998 is her SSN and 732829320 is the SIREN. " + pad
	return out
}

type partialFinding struct {
	det        string
	start, end int
	conf       float64
	hash       string
}

func before(fs []Finding, at int) []partialFinding {
	var out []partialFinding
	for _, f := range fs {
		if f.Start < at {
			out = append(out, partialFinding{f.Detector, f.Start, f.End, f.Confidence, f.Hash})
		}
	}
	return out
}

// TestScanPartialSettled checks ScanPartial's promise on every prefix of
// every text: the findings of the whole text that start before settled
// are those of the prefix that start before settled, detector, span,
// confidence and hash. It also reports how much of a prefix stays held.
func TestScanPartialSettled(t *testing.T) {
	ctx := context.Background()
	texts := partialTexts()
	for sname, s := range partialScanners(t) {
		for tname, text := range texts {
			if sname != "builtins" && !strings.HasPrefix(tname, "mixed1") && tname != "custom" && !strings.HasPrefix(tname, "later") && tname != "edges" && tname != "people1" {
				continue
			}
			whole, err := s.ScanString(ctx, text)
			if err != nil {
				t.Fatal(err)
			}
			held, fails := 0, 0
			for k := 0; k <= len(text) && fails < 5; k++ {
				fs, settled, err := s.ScanPartial(ctx, []byte(text[:k]), PartialOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if settled < 0 || settled > k {
					t.Fatalf("%s/%s: settled %d of %d", sname, tname, settled, k)
				}
				held += k - settled
				want, got := before(whole, settled), before(fs, settled)
				if fmt.Sprint(want) != fmt.Sprint(got) {
					fails++
					t.Errorf("%s/%s: prefix of %d bytes, settled %d (…%q|%q…):\n whole  %v\n prefix %v",
						sname, tname, k, settled, text[max(0, settled-40):settled], text[settled:k], want, got)
				}
			}
			if sname == "builtins" {
				t.Logf("%-9s %5d bytes: %3d findings, held %5.1f bytes on average", tname, len(text), len(whole), float64(held)/float64(len(text)+1))
			}
		}
	}
}

// TestScanPartialMaxHold: a candidate is held no longer than MaxHold
// (findings already found excepted), and the default scanner holds clean
// prose for a word or so.
func TestScanPartialMaxHold(t *testing.T) {
	ctx := context.Background()
	s := partialScanners(t)["builtins"]
	text := []byte("-----BEGIN RSA PRIVATE KEY-----\n" + strings.Repeat("MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n", 10))
	if _, settled, _ := s.ScanPartial(ctx, text, PartialOptions{}); settled != 0 {
		t.Errorf("open key block: settled %d, want 0", settled)
	}
	if _, settled, _ := s.ScanPartial(ctx, text, PartialOptions{MaxHold: 256}); settled != len(text)-256 {
		t.Errorf("open key block, MaxHold 256: settled %d, want %d", settled, len(text)-256)
	}
	for _, tc := range []struct {
		text string
		held string
	}{
		{"The committee reviewed the figures on Monday and ", ""},
		{"The committee reviewed the figures on Mon", "Mon"},
		{"Please send it for internal use", "for internal use"},
		{"Reach me at bob.martin@glo", "bob.martin@glo"},
		{"Call me on +33 6 12 34 ", "+33 6 12 34 "},
		{"Thanks to Dr Oliver Ren", "Oliver Ren"},
		{"Thanks to Amélie Fontaine ", "Amélie Fontaine "},
		{"Thanks to Amélie Fontaine and", "and"},
		{"Thanks to Amélie Fontaine and ", ""},
		{`password = "correct horse`, "correct horse"},
	} {
		_, settled, _ := s.ScanPartial(ctx, []byte(tc.text), PartialOptions{MaxHold: 256})
		if got := tc.text[settled:]; got != tc.held {
			t.Errorf("%q: held %q, want %q", tc.text, got, tc.held)
		}
	}
}

// FuzzScanPartial checks ScanPartial's promise on arbitrary text cut
// anywhere.
func FuzzScanPartial(f *testing.F) {
	for _, text := range partialTexts() {
		f.Add(text[:min(len(text), 400)], uint16(len(text)/3))
	}
	s := partialScanners(f)["custom"]
	f.Fuzz(func(t *testing.T, text string, cut uint16) {
		ctx := context.Background()
		k := int(cut) % (len(text) + 1)
		whole, _ := s.ScanString(ctx, text)
		fs, settled, _ := s.ScanPartial(ctx, []byte(text[:k]), PartialOptions{})
		if want, got := before(whole, settled), before(fs, settled); fmt.Sprint(want) != fmt.Sprint(got) {
			t.Fatalf("prefix of %d bytes, settled %d:\n whole  %v\n prefix %v", k, settled, want, got)
		}
	})
}

// TestScanPartialLong: a text longer than a chunk (an answer over 1 MiB
// written at once) is scanned whole, its findings those of Scan, and
// settled within its last chunk; a value at its very end is held.
func TestScanPartialLong(t *testing.T) {
	s, err := New(Options{HashKey: []byte("partial")})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var b strings.Builder
	for b.Len() < 1<<20+300<<10 {
		b.WriteString("The quarterly review covers the usual items and nothing of note.\n")
	}
	for _, tail := range []string{"Write to jeanne.roux@acme-mail.fr", "Write to jeanne.roux@acme-mail.fr today.\n", "nothing at the end.\n"} {
		text := []byte(b.String() + tail)
		fs, settled, err := s.ScanPartial(ctx, text, PartialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.Scan(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != len(want) {
			t.Fatalf("%q: %d findings, Scan %d", tail, len(fs), len(want))
		}
		for i := range fs {
			if fs[i].Start != want[i].Start || fs[i].Line != want[i].Line || fs[i].Column != want[i].Column {
				t.Errorf("%q: finding %d at %d (%d:%d), Scan's at %d (%d:%d)", tail, i, fs[i].Start, fs[i].Line, fs[i].Column, want[i].Start, want[i].Line, want[i].Column)
			}
		}
		if settled < len(text)-s.chunk || settled > len(text) {
			t.Errorf("%q: settled at %d of %d", tail, settled, len(text))
		}
		if strings.HasSuffix(tail, "fr") && settled > len(text)-len("jeanne.roux@acme-mail.fr") {
			t.Errorf("%q: the address the text ends inside of is settled (%d of %d)", tail, settled, len(text))
		}
	}
}

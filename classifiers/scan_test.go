package classifiers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestChunkBoundaries(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	s.chunk, s.overlap = 256, 64
	value := "jean.dupont@acme-corp.fr"
	for pad := 200; pad < 280; pad++ {
		text := strings.Repeat("x ", pad/2) + strings.Repeat(" ", pad%2) + value + " and more text here"
		fs, err := s.ScanString(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 || text[fs[0].Start:fs[0].End] != value {
			t.Fatalf("pad %d: findings %+v", pad, fs)
		}
		rs, err := s.ScanReader(context.Background(), strings.NewReader(text))
		if err != nil || !reflect.DeepEqual(rs, fs) {
			t.Fatalf("pad %d: ScanReader %+v != Scan %+v (%v)", pad, rs, fs, err)
		}
	}
}

func TestLineColumn(t *testing.T) {
	t.Parallel()
	s, _ := New(Options{})
	text := "première ligne\nnœud: jean.dupont@acme-corp.fr\n"
	fs, _ := s.ScanString(context.Background(), text)
	if len(fs) != 1 || fs[0].Line != 2 || fs[0].Column != 7 || fs[0].EndLine != 2 {
		t.Fatalf("%+v", fs)
	}
}

func TestHashKeyed(t *testing.T) {
	t.Parallel()
	a, _ := New(Options{HashKey: []byte("k1")})
	b, _ := New(Options{HashKey: []byte("k1")})
	c, _ := New(Options{HashKey: []byte("k2")})
	h := func(s *Scanner, text string) string {
		fs, _ := s.ScanString(context.Background(), text)
		if len(fs) != 1 {
			t.Fatalf("%q: %+v", text, fs)
		}
		if len(fs[0].Hash) != 32 {
			t.Fatalf("hash %q", fs[0].Hash)
		}
		return fs[0].Hash
	}
	if h(a, "Jean.Dupont@ACME-corp.fr") != h(b, "jean.dupont@acme-corp.fr") {
		t.Error("normalised e-mails with one key hash differently")
	}
	if h(a, "jean.dupont@acme-corp.fr") == h(c, "jean.dupont@acme-corp.fr") {
		t.Error("different keys, same hash")
	}
}

func TestCustomRules(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Custom: []CustomRule{
		{ID: "custom.apollo", Keywords: []string{"Project Apollo", "APL-7"}, ContextWords: []string{"codename", "nom de code"}},
		{ID: "custom.case", Keywords: []string{"Zeus"}, CaseSensitive: true},
		{ID: "custom.contract", Pattern: `(?<=contract )(?<value>CT-\d{6})(?!\d)`, Confidence: 0.9},
		{ID: "custom.acct", Keywords: []string{"account"}, Pattern: `\b\d{12}\b`, Validator: "luhn"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	text := "nom de code: project apollo. Zeus, not zeus. See contract CT-123456 and contract CT-1234567. account " + luhnComplete("12345678901") + " and 123456789012 unrelated"
	fs, err := s.ScanString(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		if f.Category == CategoryCustom {
			got = append(got, fmt.Sprintf("%s=%s@%.2f", f.Detector, text[f.Start:f.End], f.Confidence))
		}
	}
	want := []string{"custom.apollo=project apollo@0.90", "custom.case=Zeus@0.80", "custom.contract=CT-123456@0.90", "custom.acct=" + luhnComplete("12345678901") + "@0.80"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestCustomRuleErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		rule CustomRule
		msg  string
	}{
		{CustomRule{ID: "apollo", Keywords: []string{"x"}}, `must start with "custom."`},
		{CustomRule{ID: "custom.empty"}, "needs keywords"},
		{CustomRule{ID: "custom.bad", Pattern: `(unclosed`}, "pattern"},
		{CustomRule{ID: "custom.val", Pattern: `x`, Validator: "nope"}, "unknown validator"},
		{CustomRule{ID: "custom.kw", Keywords: []string{" "}}, "keyword 0 is empty"},
		{CustomRule{ID: "custom.conf", Keywords: []string{"x"}, Confidence: 2}, "confidence"},
	}
	for _, c := range cases {
		_, err := New(Options{Custom: []CustomRule{c.rule}})
		var re *RuleError
		if !errors.As(err, &re) || re.Rule != c.rule.ID || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v", c.rule.ID, err)
		}
	}
	if _, err := New(Options{Detectors: []string{"pii.nothing*"}}); err == nil {
		t.Error("unknown detector selection accepted")
	}
	s, err := New(Options{Detectors: []string{"secret.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if fs, _ := s.ScanString(context.Background(), "jean.dupont@acme-corp.fr"); len(fs) != 0 {
		t.Errorf("pii ran with secret.* only: %+v", fs)
	}
}

func TestCustomTimeout(t *testing.T) {
	s, err := New(Options{MatchTimeout: 50 * time.Millisecond, Custom: []CustomRule{
		{ID: "custom.redos", Pattern: `(a+)+$`},
	}})
	if err != nil {
		t.Fatal(err)
	}
	text := "contact jean.dupont@acme-corp.fr " + strings.Repeat("a", 5000) + "b"
	start := time.Now()
	fs, err := s.ScanString(context.Background(), text)
	elapsed := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Rule != "custom.redos" {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "aaaa") {
		t.Fatal("timeout error leaks the input")
	}
	if elapsed > 5*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	if len(fs) != 1 || fs[0].Detector != "pii.email" {
		t.Fatalf("findings so far lost: %+v", fs)
	}
}

// doneAfter is a context whose Err is nil for its first n calls and
// context.Canceled after: a cancellation that lands at a chosen point of a
// scan.
type doneAfter struct {
	context.Context
	n int
}

func (c *doneAfter) Err() error {
	if c.n > 0 {
		c.n--
		return nil
	}
	return context.Canceled
}

// TestScanContextDone: a scan whose context is done before it ends returns
// the context's error, whether the context was done before the scan, or
// while its only chunk was being scanned (custom rules are then skipped,
// so a result without the error would pass for a complete scan).
func TestScanContextDone(t *testing.T) {
	t.Parallel()
	s, err := New(Options{HashKey: []byte("k"), Custom: []CustomRule{{ID: "custom.falcon", Keywords: []string{"Falcon"}}}})
	if err != nil {
		t.Fatal(err)
	}
	const text = "Project Falcon: write to jean.dupont@acme-corp.fr"
	for _, tt := range []struct {
		name string
		ok   int // calls of Err that report nil
	}{
		{"done before", 0},
		{"done during the chunk", 1},
		{"not done", 1 << 30},
	} {
		for _, reader := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reader=%v", tt.name, reader), func(t *testing.T) {
				ctx := &doneAfter{Context: context.Background(), n: tt.ok}
				var fs []Finding
				var err error
				if reader {
					fs, err = s.ScanReader(ctx, strings.NewReader(text))
				} else {
					fs, err = s.ScanString(ctx, text)
				}
				if tt.ok == 1<<30 {
					if err != nil || len(fs) != 2 {
						t.Fatalf("err %v, %d findings: want both", err, len(fs))
					}
					return
				}
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("err = %v with %d findings, want context.Canceled", err, len(fs))
				}
			})
		}
	}
}

// randomText mixes prose, code, separators, multibyte runes, invalid UTF-8
// and real-looking values.
func randomText(r *rand.Rand, n int) []byte {
	pieces := []string{"the ", "quarterly ", "report ", "func main() {", "}\n", "x := 42\n", "é", "日本", "\xff", "\x00",
		"jean.dupont@acme-corp.fr", "+33 6 12 34 56 78", "4970 1012 3456 7891", "CONFIDENTIAL\n", "TLP:RED ", "81.2.69.160",
		"password = \"Xk9#mP2$vLq7\"\n", "AKIAZ7XQ4LMN2PQRST3U", "SSN 536-22-1234", "2a00:1450:4007:80e::200e", " ", "\n", "0", "12", ".", "-"}
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.Bytes()
}

// runeBoundaries marks the offsets where utf8.DecodeRune starts a rune
// (an invalid byte is a rune of its own, as range over a string sees it).
func runeBoundaries(text []byte) []bool {
	b := make([]bool, len(text)+1)
	for i := 0; i < len(text); {
		b[i] = true
		_, size := utf8.DecodeRune(text[i:])
		i += size
	}
	b[len(text)] = true
	return b
}

func checkFindings(t *testing.T, text []byte, fs []Finding) {
	t.Helper()
	bounds := runeBoundaries(text)
	for i, f := range fs {
		if f.Start < 0 || f.End > len(text) || f.Start >= f.End {
			t.Fatalf("span %d-%d out of %d", f.Start, f.End, len(text))
		}
		if !bounds[f.Start] || !bounds[f.End] {
			t.Fatalf("span %d-%d not on rune boundaries", f.Start, f.End)
		}
		if i > 0 && fs[i-1].Start > f.Start {
			t.Fatal("not sorted by Start")
		}
		if f.Confidence <= 0 || f.Confidence > 1 || f.Line < 1 || f.Column < 1 || f.EndLine < f.Line {
			t.Fatalf("bad finding %+v", f)
		}
		// Positions against the plainest computation: lines are counted
		// in newlines, columns in rune starts since the last one (bytes
		// that are not UTF-8 continuation bytes; 1-based).
		before := text[:f.Start]
		line := 1 + bytes.Count(before, []byte{'\n'})
		col := 1
		for _, c := range before[bytes.LastIndexByte(before, '\n')+1:] {
			if c&0xC0 != 0x80 {
				col++
			}
		}
		endLine := line + bytes.Count(text[f.Start:max(f.Start, f.End-1)], []byte{'\n'})
		if f.Line != line || f.Column != col || f.EndLine != endLine {
			t.Fatalf("finding at %d-%d: line %d col %d end line %d, want %d %d %d", f.Start, f.End, f.Line, f.Column, f.EndLine, line, col, endLine)
		}
	}
}

func FuzzScan(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 8; i++ {
		f.Add(randomText(r, 300+i*100))
	}
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"))
	f.Add([]byte("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.x"))
	// Person names: titles, capitals, particles, apostrophes, Latin-1,
	// no-break spaces, and words glued to them.
	f.Add([]byte("Referred by Dr Oliver Renaud; M. RENAUD and Prof. J. van Dijk met Jean-Pierre K. Martin, Valérie Giscard d'Estaing."))
	f.Add([]byte("Chère Inès\u00a0Benali, Ms O’Brien’s note; Marie-Claire O'Neil\txJohn Smith2 Hugo Street, Mme DELACROIX-\xc3"))
	// One sample of each secret family, and curl command lines.
	for _, c := range familySamples() {
		for _, p := range append(append([]famTP(nil), c.tps...), c.raw...) {
			f.Add([]byte("x = " + p.text + "\n"))
		}
	}
	// Cues, signatures, extensions, local numbers, Spanish NIFs, internal
	// addresses.
	f.Add([]byte("Dear Tomasz,\nThanks, Hugo. I spoke to Ottoline Vasquez; Zhang Wei said hi.\nKind regards,\nAna\n— Ana Lima\n-- a.go --"))
	f.Add([]byte("call 212-736-5000x309, (415)736-0199 ext. 72, call me on 736 5012, +44 (0)20 7123 4567, ORD-8555513230, 666-74-2104"))
	f.Add([]byte("DNI 12.345.678-Z, NIE X-1234567-L, CIF A58818501, IBAN FR76-3000-4000-0312-3456-7890-185, host 10.1.2.3, fd12::1, 10.0.0.0/8"))
	whole, _ := New(Options{HashKey: []byte("k")})
	chunked, _ := New(Options{HashKey: []byte("k")})
	chunked.chunk, chunked.overlap = 512, 128
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := whole.Scan(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		checkFindings(t, data, fs)
		// chunked == whole, for findings shorter than the overlap
		cs, err := chunked.Scan(context.Background(), data)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := chunked.ScanReader(context.Background(), bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(cs, rs) {
			t.Fatalf("ScanReader differs from Scan:\n%+v\n%+v", rs, cs)
		}
		if !sameShort(fs, cs, 60) {
			t.Fatalf("chunked differs from whole:\n%+v\n%+v", cs, fs)
		}
	})
}

// sameShort compares findings shorter than n bytes (longer ones may need
// more context than the test's small overlap).
func sameShort(a, b []Finding, n int) bool {
	keep := func(fs []Finding) []Finding {
		var out []Finding
		for _, f := range fs {
			if f.End-f.Start < n {
				out = append(out, f)
			}
		}
		return out
	}
	return reflect.DeepEqual(keep(a), keep(b))
}

func TestRandomChunked(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	whole, _ := New(Options{HashKey: []byte("k")})
	chunked, _ := New(Options{HashKey: []byte("k")})
	chunked.chunk, chunked.overlap = 700, 160
	for i := 0; i < 50; i++ {
		text := randomText(r, 3000)
		fs, _ := whole.Scan(context.Background(), text)
		cs, _ := chunked.Scan(context.Background(), text)
		checkFindings(t, text, fs)
		if !sameShort(fs, cs, 60) {
			t.Fatalf("chunked differs:\n%+v\n%+v", cs, fs)
		}
		if len(fs) == 0 {
			t.Fatal("random text with planted values yields nothing")
		}
	}
}

// TestAdversarialLinear feeds inputs built to make a naive engine quadratic
// (one huge line of keywords, long runs of overlapping token candidates);
// each must finish quickly. The bound is generous: it only catches
// quadratic behaviour (minutes), not speed (see the benchmarks).
func TestAdversarialLinear(t *testing.T) {
	s, _ := New(Options{})
	inputs := map[string]string{
		"banners on one line": strings.Repeat("confidential ", 80000),
		"jwt run":             strings.Repeat("eyJ", 300000) + ".eyJhbGciOiJub25lIn0.",
		"token run":           strings.Repeat("ghp_", 250000),
		"digits":              strings.Repeat("1 ", 500000),
		"colons":              strings.Repeat("a:", 500000),
		"at signs":            strings.Repeat("a@", 500000),
		"generic keys":        strings.Repeat("password=", 110000),
	}
	for name, in := range inputs {
		start := time.Now()
		if _, err := s.ScanString(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
	}
}

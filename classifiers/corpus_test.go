package classifiers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// The findings corpus is a differential harness for engine changes: the
// findings (detector, byte span, line:column-end line, confidence, masked
// preview, keyed hash; never the value itself) of a fixed set of generated
// inputs, scanned with and without IncludeReserved, whole and in small
// chunks, under a "== input reserved=… mode: N findings" header (see
// dumpFindings for what is listed and what summarised). TestFindingsCorpus compares it with the golden file
// testdata/findings_corpus.golden and shows the first lines that differ; a
// change of behaviour that is intended rewrites the golden file
// (go test ./classifiers -run TestFindingsCorpus -update) in the same
// commit, and git diff shows every finding it changed.

// corpusInputs returns the named inputs of the findings corpus.
func corpusInputs() []struct {
	name string
	text []byte
} {
	type in = struct {
		name string
		text []byte
	}
	var out []in
	out = append(out, in{"dense", denseCorpus(1 << 20)})
	out = append(out, in{"clean", cleanCorpus(256 << 10)})
	for seed := uint64(1); seed <= 4; seed++ {
		out = append(out, in{fmt.Sprintf("dense-seed%d", seed), denseCorpusSeed(128<<10, seed)})
	}
	for seed := uint64(1); seed <= 4; seed++ {
		out = append(out, in{fmt.Sprintf("phones%d", seed), phoneCorpus(64<<10, seed)})
	}
	for seed := uint64(1); seed <= 6; seed++ {
		out = append(out, in{fmt.Sprintf("corrupt%d", seed), corrupt(denseCorpusSeed(96<<10, seed+10), seed, 0.002*float64(seed))})
	}
	for seed := uint64(1); seed <= 4; seed++ {
		out = append(out, in{fmt.Sprintf("mixed%d", seed), mixedCorpus(64<<10, seed)})
	}
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		out = append(out, in{fmt.Sprintf("random%d", seed), randomText(r, 64<<10)})
	}
	out = append(out, in{"corrupt-mixed", corrupt(mixedCorpus(64<<10, 9), 9, 0.01)})
	out = append(out, in{"names", namesCorpus(128 << 10)})
	for seed := uint64(1); seed <= 2; seed++ {
		out = append(out, in{fmt.Sprintf("people%d", seed), peopleCorpus(64<<10, seed)})
		out = append(out, in{fmt.Sprintf("corrupt-people%d", seed), corrupt(peopleCorpus(32<<10, seed+10), seed, 0.01)})
	}
	return out
}

// peopleCorpus is about n bytes of lines that name people, or almost do, in
// every form the name detector handles or refuses: titles, form labels,
// surnames first in capitals, particles, accents, places and brands named
// after people, reserved example names, names in capitals.
func peopleCorpus(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 31))
	givens := strings.Fields(nameGivens)
	surnames := []string{"Renaud", "Fontaine", "van Dijk", "O'Neil", "García", "Müller", "d'Estaing", "Nguyen", "Benali-Martin", "Lefèvre"}
	upper := func(w string) string { return strings.ToUpper(w[:1]) + w[1:] }
	var b bytes.Buffer
	for b.Len() < n {
		g, sn := upper(givens[r.IntN(len(givens))]), surnames[r.IntN(len(surnames))]
		switch r.IntN(10) {
		case 0:
			fmt.Fprintf(&b, "Réunion avec Mme %s et M. %s demain.\n", sn, strings.ToUpper(sn))
		case 1:
			fmt.Fprintf(&b, "Employee: %s %s, start date %d March\n", g, sn, 1+r.IntN(28))
		case 2:
			fmt.Fprintf(&b, "Présents : %s %s, %s %s.\n", strings.ToUpper(sn), g, strings.ToUpper(surnames[r.IntN(len(surnames))]), upper(givens[r.IntN(len(givens))]))
		case 3:
			fmt.Fprintf(&b, "Dear Dr %s %s, the Elizabeth Line is closed.\n", g, sn)
		case 4:
			fmt.Fprintf(&b, "12 rue %s %s, Lycée %s %s, Saint %s\n", g, sn, g, sn, g)
		case 5:
			fmt.Fprintf(&b, "Signed: John Doe; witness %s J. %s\n", g, sn)
		case 6:
			fmt.Fprintf(&b, "THE %s %s REPORT by %s\n", strings.ToUpper(g), strings.ToUpper(sn), g)
		case 7:
			fmt.Fprintf(&b, "Herr Doktor %s und Prof. Dr. %s %s\n", sn, g, sn)
		case 8:
			fmt.Fprintf(&b, "%s%s %s2 x%s %s_%s\n", g, sn, g, g, g, sn)
		default:
			fmt.Fprintf(&b, "Thanks, %s. See Hugo Street and Victor Inc.\n", g)
		}
	}
	return b.Bytes()[:n]
}

// denseCorpusSeed is denseCorpus with another seed and more kinds of lines
// (the benchmark's own corpus stays as it is).
func denseCorpusSeed(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 9))
	var b bytes.Buffer
	for b.Len() < n {
		switch r.IntN(12) {
		case 0:
			fmt.Fprintf(&b, "Contact: user%d@acme-corp%d.fr, tel +33 6 %02d %02d %02d %02d\n", r.IntN(1e6), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(100))
		case 1:
			fmt.Fprintf(&b, "Card %s exp 12/27\n", groups4(luhnComplete(fmt.Sprintf("4970%011d", r.Int64N(1e11)))))
		case 2:
			fmt.Fprintf(&b, "IBAN %s\n", groups4(makeIBAN("FR", fmt.Sprintf("30004%05d%011d00", r.IntN(1e5), r.Int64N(1e11)))))
		case 3:
			fmt.Fprintf(&b, "SSN %03d-%02d-%04d from 81.%d.%d.%d\n", 100+r.IntN(800), r.IntN(100), r.IntN(10000), r.IntN(256), r.IntN(256), r.IntN(256))
		case 4:
			fmt.Fprintf(&b, "GITHUB_TOKEN=%s\n", makeGitHub("ghp", fmt.Sprintf("aB3dE5fG7hJ9kL1mN3pQ%010d", r.Int64N(1e10))))
		case 5:
			fmt.Fprintf(&b, "password = \"Xk9#mP2$v%dLq7\"\nCONFIDENTIAL\n", r.IntN(1e6))
		case 6:
			fmt.Fprintf(&b, "TLP:AMBER — NIR %s, SIREN 732 829 320\n", makeNIR(fmt.Sprintf("%d%02d%02d75%06d", 1+r.IntN(2), r.IntN(100), 1+r.IntN(12), r.IntN(1e6))))
		case 7:
			fmt.Fprintf(&b, "Card %s\n", luhnComplete(fmt.Sprintf("5%d%013d", 1+r.IntN(5), r.Int64N(1e13))))
		case 8:
			fmt.Fprintf(&b, "SSN %03d%02d%04d, tel (%d) 555-%04d, 0%d %02d %02d %02d %02d\n", r.IntN(900), r.IntN(100), r.IntN(10000), 200+r.IntN(800), r.IntN(10000), 1+r.IntN(9), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(100))
		case 9:
			fmt.Fprintf(&b, "version %d.%d.%d.%d released %04d-%02d-%02d, ip 10.%d.%d.%d\n", r.IntN(300), r.IntN(300), r.IntN(300), r.IntN(300), 1990+r.IntN(40), r.IntN(13), r.IntN(32), r.IntN(256), r.IntN(256), r.IntN(256))
		case 10:
			fmt.Fprintf(&b, "api_key: %s secret=short token = changeme\n", makeGitHub("gho", fmt.Sprintf("Zz9Yy8Xx7Ww6Vv5Uu4Tt%010d", r.Int64N(1e10)))[4:])
		default:
			b.WriteString("The quarterly figures were reviewed by the committee on Monday.\n")
		}
	}
	return b.Bytes()[:n]
}

// phoneCorpus writes phoneSamples' candidates with assorted separators and
// context words.
func phoneCorpus(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 5))
	samples := phoneSamples(4000, seed)
	seps := []string{" ", "-", ".", "", " ", "  ", ") "}
	lead := []string{"", "tel ", "Phone: ", "call ", "fax:", "n° ", "(", "ref "}
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		s := samples[i%len(samples)]
		b.WriteString(lead[r.IntN(len(lead))])
		if s.intl {
			b.WriteByte('+')
		}
		sep := seps[r.IntN(len(seps))]
		d := s.digits
		for len(d) > 0 {
			k := min(len(d), 1+r.IntN(4))
			b.WriteString(d[:k])
			d = d[k:]
			if len(d) > 0 {
				b.WriteString(sep)
			}
		}
		b.WriteString([]string{"\n", ", ", " ", ".\n", "x"}[r.IntN(5)])
	}
	return b.Bytes()
}

// mixedCorpus plants values of every built-in detector among prose.
func mixedCorpus(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 17))
	rnd := func(k int) string {
		const a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		var s strings.Builder
		for i := 0; i < k; i++ {
			s.WriteByte(a[r.IntN(len(a))])
		}
		return s.String()
	}
	gens := []func() string{
		func() string { return "NHS number " + makeNHS(fmt.Sprintf("%09d", r.IntN(1e9))) },
		func() string { return "BSN: " + makeBSN(fmt.Sprintf("%08d", r.IntN(1e8))) },
		func() string { return "DNI " + makeDNI(r.IntN(1e8)) },
		func() string { return "codice fiscale " + makeCF(fmt.Sprintf("RSSMRA%02dT10A562", r.IntN(100))) },
		func() string {
			return "NINO " + []string{"AB", "CE", "JK", "QQ", "ZZ"}[r.IntN(5)] + fmt.Sprintf(" %02d %02d %02d ", r.IntN(100), r.IntN(100), r.IntN(100)) + []string{"A", "B", "C", "D", "E"}[r.IntN(5)]
		},
		func() string { return "SIRET " + luhnComplete(fmt.Sprintf("7328293200%03d", r.IntN(1000))) },
		func() string {
			return "wallet " + makeBase58Check(0, []byte(rnd(20)))
		},
		func() string { return "eth " + makeEIP55(fmt.Sprintf("%040x", r.Uint64())) },
		func() string { return "IBAN " + makeIBAN("DE", fmt.Sprintf("5001051754%08d", r.IntN(1e8))) },
		func() string { return "GB iban " + groups4(makeIBAN("GB", fmt.Sprintf("NWBK601613%08d", r.IntN(1e8)))) },
		func() string {
			return fmt.Sprintf("ip 2a00:1450:4007:%x::%x and 192.0.2.%d", r.IntN(0xffff), r.IntN(0xffff), r.IntN(256))
		},
		func() string { return "key AKIA" + strings.ToUpper(rnd(16)) + " and AKIAIOSFODNN7EXAMPLE" },
		func() string { return "aws_secret_access_key = " + rnd(40) },
		func() string { return "gitlab glpat-" + rnd(20) },
		func() string { return "slack xoxb-" + fmt.Sprintf("%d", 100000+r.IntN(1e6)) + "-" + rnd(24) },
		func() string {
			return "https://hooks.slack.com/services/T" + strings.ToUpper(rnd(8)) + "/B" + strings.ToUpper(rnd(8)) + "/" + rnd(24)
		},
		func() string { return "sk_live_" + rnd(24) + " sk_test_4eC39HqLyjWDarjtT1zdp7dc" },
		func() string { return "sk-proj-" + rnd(20) + "T3BlbkFJ" + rnd(20) },
		func() string { return "sk-ant-api03-" + rnd(93) + "AA" },
		func() string { return "AIza" + rnd(35) },
		func() string { return "npm_" + rnd(36) },
		func() string { return "SG." + rnd(22) + "." + rnd(43) },
		func() string {
			return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + rnd(30)
		},
		func() string { return "postgres://admin:" + rnd(12) + "@db.acme.fr:5432/x" },
		func() string { return "mot_de_passe: " + rnd(14) + "\nclé = \"" + rnd(10) + "\"" },
		func() string {
			return "Classification: Diffusion restreinte\nSECRET//NOFORN\nstrictly confidential\nVERTRAULICH"
		},
		func() string { return "TLP:AMBER+STRICT tlp : green TLP:WHITE" },
		func() string {
			return fmt.Sprintf("mail %s.%s@%s.com, j.d@example.org, Tel: 01 %02d %02d %02d %02d", rnd(5), rnd(4), rnd(6), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(100))
		},
		func() string {
			return "Card " + luhnComplete(fmt.Sprintf("37%012d", r.Int64N(1e12))) + " test 4242 4242 4242 4242"
		},
		func() string {
			return fmt.Sprintf("SSN %03d-%02d-%04d social security", r.IntN(1000), r.IntN(100), r.IntN(10000))
		},
		func() string { return "NIR 2 69 05 2A 001 012 " + fmt.Sprintf("%02d", r.IntN(100)) },
		func() string {
			return `{"type": "service_account", "private_key_id": "` + fmt.Sprintf("%016x%016x%08x", r.Uint64(), r.Uint64(), r.Uint32()) + `"}`
		},
		func() string {
			return "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZWQyNTUxOQAAACBnZW5lcmF0ZWQgZm9yIGFpc2hpZWxkIHRlc3RzIG9ubHk=\n-----END OPENSSH PRIVATE KEY-----"
		},
	}
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(3) == 0 {
			b.WriteString("The committee reviewed the figures. ")
		}
		b.WriteString(gens[r.IntN(len(gens))]())
		b.WriteString([]string{"\n", " ", ", ", "; ", "\t"}[r.IntN(5)])
	}
	return b.Bytes()
}

// corrupt changes a fraction p of text's bytes: digits, separators,
// letters, deletions and invalid UTF-8.
func corrupt(text []byte, seed uint64, p float64) []byte {
	r := rand.New(rand.NewPCG(seed, 23))
	const repl = "0123456789 -.+()@:/_=aZ\n\xff\xc3"
	out := make([]byte, 0, len(text))
	for _, c := range text {
		if r.Float64() >= p {
			out = append(out, c)
			continue
		}
		switch r.IntN(4) {
		case 0: // delete
		case 1:
			out = append(out, c, repl[r.IntN(len(repl))])
		default:
			out = append(out, repl[r.IntN(len(repl))])
		}
	}
	return out
}

// listed are the inputs whose findings the dump lists one by one: the first
// seed of each generator. The others are summarised (their findings per
// detector and the SHA-256 of their lines), which keeps the golden file
// about a megabyte while a change still shows, finding by finding, in the
// listed inputs drawn from the same generators.
var listed = map[string]bool{"clean": true, "dense-seed1": true, "phones1": true, "corrupt1": true, "mixed1": true,
	"random1": true, "corrupt-mixed": true, "names": true, "people1": true, "corrupt-people1": true}

// dumpFindings writes the findings of the corpus to w: one line per
// finding (detector, byte span, line:column-end line, confidence, masked
// preview, the first 12 hex digits of the keyed hash) under a section
// header per input, reserved mode and scan mode, for the listed inputs, and
// a summary for the others. A chunked scan that finds
// what the whole scan finds, and a reserved=true scan that finds what the
// reserved=false one does, are written as "same as" lines.
func dumpFindings(t testing.TB, w *bytes.Buffer) {
	ctx := context.Background()
	plain := map[string]string{} // input name → its reserved=false whole lines
	for _, reserved := range []bool{false, true} {
		s, err := New(Options{HashKey: []byte("corpus"), IncludeReserved: reserved})
		if err != nil {
			t.Fatal(err)
		}
		small, _ := New(Options{HashKey: []byte("corpus"), IncludeReserved: reserved})
		small.chunk, small.overlap = 8192, 1024
		for i, in := range corpusInputs() {
			fs, err := s.Scan(ctx, in.text)
			if err != nil {
				t.Fatal(err)
			}
			lines := func(fs []Finding) string {
				var b strings.Builder
				for _, f := range fs {
					fmt.Fprintf(&b, "%s %d-%d %d:%d-%d %.2f %q %.12s\n", f.Detector, f.Start, f.End, f.Line, f.Column, f.EndLine, f.Confidence, f.Preview, f.Hash)
				}
				return b.String()
			}
			write := func(mode string, fs []Finding, body string) {
				fmt.Fprintf(w, "== %s reserved=%v %s: %d findings\n", in.name, reserved, mode, len(fs))
				if listed[in.name] {
					w.WriteString(body)
					return
				}
				counts := map[string]int{}
				for _, f := range fs {
					counts[f.Detector]++
				}
				for _, d := range slices.Sorted(maps.Keys(counts)) {
					fmt.Fprintf(w, "count %s %d\n", d, counts[d])
				}
				fmt.Fprintf(w, "sha256 %x\n", sha256.Sum256([]byte(body)))
			}
			whole := lines(fs)
			switch {
			case !reserved:
				plain[in.name] = whole
				write("whole", fs, whole)
			case plain[in.name] == whole:
				fmt.Fprintf(w, "== %s reserved=true whole: same as reserved=false\n", in.name)
			case listed[in.name]:
				// What reserving changes: the reserved values it finds too.
				fmt.Fprintf(w, "== %s reserved=true whole: %d findings, reserved=false and\n", in.name, len(fs))
				w.WriteString(lineDiff(plain[in.name], whole))
			default:
				write("whole", fs, whole)
			}
			if i%3 == 0 {
				cs, err := small.ScanReader(ctx, bytes.NewReader(in.text))
				if err != nil {
					t.Fatal(err)
				}
				if chunked := lines(cs); chunked == whole {
					fmt.Fprintf(w, "== %s reserved=%v chunked: same as whole\n", in.name, reserved)
				} else {
					write("chunked", cs, chunked)
				}
			}
		}
	}
}

// lineDiff lists the lines only b holds ("+ ") and only a holds ("- "),
// each kind in its order, counting repeated lines.
func lineDiff(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.SplitAfter(a, "\n") {
		count[l]++
	}
	var out strings.Builder
	for _, l := range strings.SplitAfter(b, "\n") {
		if count[l] > 0 {
			count[l]--
		} else if l != "" {
			out.WriteString("+ " + l)
		}
	}
	for _, l := range strings.SplitAfter(a, "\n") {
		if count[l] > 0 {
			count[l]--
			out.WriteString("- " + l)
		}
	}
	return out.String()
}

func TestFindingsCorpus(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("findings corpus: long")
	}
	var buf bytes.Buffer
	dumpFindings(t, &buf)
	const golden = "testdata/findings_corpus.golden"
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./classifiers -run TestFindingsCorpus -update writes it)", err)
	}
	if d := firstDiff(want, buf.Bytes(), 12); d != "" {
		t.Fatalf("findings of the corpus differ from %s (if intended, rewrite it with -update and review git diff):\n%s", golden, d)
	}
}

// firstDiff shows where got departs from want, line by line, in the
// corpus dump's format: the first line that differs, or when it is a
// section header (whose count changes with any finding of the section),
// both headers and then the first finding lines of the section that differ.
// Lines both sides share after the difference, up to the end of the
// section, are left out; at most limit lines of each side are shown. It
// returns "" when want and got are equal.
func firstDiff(want, got []byte, limit int) string {
	if bytes.Equal(want, got) {
		return ""
	}
	w := strings.SplitAfter(string(want), "\n")
	g := strings.SplitAfter(string(got), "\n")
	header := func(l string) bool { return strings.HasPrefix(l, "== ") }
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	var b strings.Builder
	show := func(sign string, lines []string) {
		for k, l := range lines {
			if k == limit {
				fmt.Fprintf(&b, "%s … %d more\n", sign, len(lines)-limit)
				break
			}
			fmt.Fprintf(&b, "%s %s\n", sign, strings.TrimSuffix(l, "\n"))
		}
	}
	if i < len(w) && i < len(g) && header(w[i]) && header(g[i]) {
		fmt.Fprintf(&b, "line %d:\n", i+1)
		show("-", w[i:i+1])
		show("+", g[i:i+1])
		i++
		for i < len(w) && i < len(g) && w[i] == g[i] && !header(w[i]) {
			i++
		}
	} else {
		for h := i - 1; h >= 0; h-- {
			if header(w[h]) {
				fmt.Fprintf(&b, "in %s", w[h])
				break
			}
		}
	}
	// The rest of the section on each side, less what both end with.
	ew, eg := i, i
	for ew < len(w) && !header(w[ew]) {
		ew++
	}
	for eg < len(g) && !header(g[eg]) {
		eg++
	}
	for ew > i && eg > i && w[ew-1] == g[eg-1] {
		ew, eg = ew-1, eg-1
	}
	if ew > i || eg > i {
		fmt.Fprintf(&b, "line %d:\n", i+1)
		show("-", w[i:ew])
		show("+", g[i:eg])
	}
	return b.String()
}

func TestFirstDiff(t *testing.T) {
	t.Parallel()
	const base = "== a: 2 findings\nx 1\nx 2\nx 3\n== b: 1 findings\ny 1\n"
	for _, tt := range []struct {
		name, want, got, diff string
	}{
		{"equal", base, base, ""},
		{"changed", base, strings.Replace(base, "x 2", "x 9", 1),
			"in == a: 2 findings\nline 3:\n- x 2\n+ x 9\n"},
		{"added", base, strings.Replace(base, "== a: 2 findings\nx 1\n", "== a: 3 findings\nx 1\nx 1.5\n", 1),
			"line 1:\n- == a: 2 findings\n+ == a: 3 findings\nline 3:\n+ x 1.5\n"},
		{"lost", base, strings.Replace(base, "== b: 1 findings\ny 1\n", "== b: 0 findings\n", 1),
			"line 5:\n- == b: 1 findings\n+ == b: 0 findings\nline 6:\n- y 1\n"},
		{"first of two changes", base, strings.Replace(strings.Replace(base, "x 1", "x 0", 1), "y 1", "y 0", 1),
			"in == a: 2 findings\nline 2:\n- x 1\n+ x 0\n"},
		{"cut at limit", "h\n", "1\n2\n3\n",
			"line 1:\n- h\n+ 1\n+ 2\n+ … 1 more\n"},
		{"no final newline", "a\nb", "a\nc",
			"line 2:\n- b\n+ c\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstDiff([]byte(tt.want), []byte(tt.got), 2); got != tt.diff {
				t.Errorf("firstDiff:\n%s\nwant:\n%s", got, tt.diff)
			}
		})
	}
}

package classifiers

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// cleanCorpus is about n bytes of prose and Go-like code without sensitive
// values (numbers, URLs, identifiers and punctuation included).
func cleanCorpus(n int) []byte {
	r := rand.New(rand.NewPCG(7, 7))
	words := []string{"the", "service", "returns", "a", "response", "when", "request", "is", "valid", "and", "cache",
		"pages", "are", "reused", "by", "scheduler", "token", "limit", "policy", "document", "review", "with", "for",
		"le", "rapport", "de", "la", "réunion", "équipe", "données", "version", "secret", "password", "config", "key"}
	code := []string{"func (s *Server) Handle(ctx context.Context, req *Request) error {\n", "\tif err != nil {\n\t\treturn fmt.Errorf(\"handle: %w\", err)\n\t}\n",
		"\tfor i := 0; i < len(items); i++ {\n", "\tx := math.Max(3.14, float64(n)*2)\n", "}\n", "// See https://go.dev/doc/effective_go#names for details.\n",
		"\tlog.Printf(\"took %v for %d items\", time.Since(start), 1024)\n", "\tpassword := cfg.Password\n", "\tconst timeout = 30 * time.Second\n"}
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(4) == 0 {
			b.WriteString(code[r.IntN(len(code))])
			continue
		}
		for i := 0; i < 12; i++ {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "in %d cases, %d.%d%%.\n", r.IntN(1000), r.IntN(100), r.IntN(10))
	}
	return b.Bytes()[:n]
}

// denseCorpus is about n bytes where every line carries a sensitive value.
func denseCorpus(n int) []byte {
	r := rand.New(rand.NewPCG(9, 9))
	var b bytes.Buffer
	for b.Len() < n {
		switch r.IntN(8) {
		case 0:
			fmt.Fprintf(&b, "Contact: user%d@acme-corp%d.fr, tel +33 6 %02d %02d %02d %02d\n", r.IntN(1e6), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(100), r.IntN(100))
		case 1:
			fmt.Fprintf(&b, "Card %s exp 12/27\n", groups4(luhnComplete(fmt.Sprintf("4970%011d", r.Int64N(1e11)))))
		case 2:
			fmt.Fprintf(&b, "IBAN %s\n", groups4(makeIBAN("FR", fmt.Sprintf("30004%05d%011d00", r.IntN(1e5), r.Int64N(1e11)))))
		case 3:
			fmt.Fprintf(&b, "SSN %03d-%02d-%04d from 81.%d.%d.%d\n", 100+r.IntN(500), 1+r.IntN(98), 1+r.IntN(9998), r.IntN(256), r.IntN(256), 1+r.IntN(254))
		case 4:
			fmt.Fprintf(&b, "GITHUB_TOKEN=%s\n", makeGitHub("ghp", fmt.Sprintf("aB3dE5fG7hJ9kL1mN3pQ%010d", r.Int64N(1e10))))
		case 5:
			fmt.Fprintf(&b, "password = \"Xk9#mP2$v%dLq7\"\nCONFIDENTIAL\n", r.IntN(1e6))
		case 6:
			fmt.Fprintf(&b, "TLP:AMBER — NIR %s, SIREN 732 829 320\n", makeNIR(fmt.Sprintf("1%02d%02d75%06d", r.IntN(100), 1+r.IntN(12), r.IntN(1e6))))
		default:
			b.WriteString("The quarterly figures were reviewed by the committee on Monday.\n")
		}
	}
	return b.Bytes()[:n]
}

func benchScan(b *testing.B, data []byte) {
	s, err := New(Options{HashKey: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var n int
	cpu := processCPU()
	for b.Loop() {
		fs, err := s.Scan(ctx, data)
		if err != nil {
			b.Fatal(err)
		}
		n = len(fs)
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(n), "findings")
}

func BenchmarkScanClean1MB(b *testing.B) { benchScan(b, cleanCorpus(1<<20)) }
func BenchmarkScanDense1MB(b *testing.B) { benchScan(b, denseCorpus(1<<20)) }

// namesCorpus is about n bytes of correspondence in title case where every
// line names people: a title and a surname, a given name and a surname, or
// both, among capitalised words that are not names (places, months,
// company words) and prose.
func namesCorpus(n int) []byte {
	r := rand.New(rand.NewPCG(11, 11))
	givens := strings.Fields(nameGivens)
	surnames := []string{"Renaud", "Fontaine", "Delacroix", "Okafor", "Nakamura", "van Dijk", "O'Neil", "García", "Rossi", "Müller", "Schmidt", "Nguyen"}
	var b bytes.Buffer
	for b.Len() < n {
		g := givens[r.IntN(len(givens))]
		g = strings.ToUpper(g[:1]) + g[1:]
		sn := surnames[r.IntN(len(surnames))]
		switch r.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "Dear Dr %s, thank you for the Report on Monday %d March.\n", sn, 1+r.IntN(28))
		case 1:
			fmt.Fprintf(&b, "Meeting with %s %s at the Paris Office of Acme Corp, Room %d.\n", g, sn, r.IntN(500))
		case 2:
			fmt.Fprintf(&b, "Signed: Mme %s %s, Director, North Street Branch.\n", g, sn)
		default:
			b.WriteString("The Quarterly Review was approved by the Board in New York and London.\n")
		}
	}
	return b.Bytes()[:n]
}

// BenchmarkScanNames1MB is the cost of the name detector where names are
// dense (11,822 per MiB), with every other detector on.
func BenchmarkScanNames1MB(b *testing.B) { benchScan(b, namesCorpus(1<<20)) }

func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		if _, err := New(Options{HashKey: []byte("k")}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

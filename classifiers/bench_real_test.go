package classifiers

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The real-text corpus is built at test time from files this machine has:
// licences, Debian package documentation and the Go distribution's sources
// and docs, with the names, e-mail addresses and numbers they contain as
// they are. Nothing of them is committed. The selection is deterministic for
// a given machine: each source's files are listed in sorted order, a fixed
// stride through the list spreads the picks over the whole tree, and each
// pick contributes at most its source's per-file share until the source's
// budget is spent.

const (
	realBudget  = 4 << 20
	realPerFile = 16 << 10
)

// realSource is one part of the corpus: a list of candidate files and the
// share of the budget it fills.
type realSource struct {
	name    string
	budget  int
	perFile int
	files   func() ([]string, error)
}

// goroot is the Go distribution's root as `go env GOROOT` gives it, or ""
// when the go command cannot say.
func goroot() string {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

func realSources() []realSource {
	root := goroot()
	return []realSource{
		{"licences", 192 << 10, 64 << 10, func() ([]string, error) {
			return listFiles("/usr/share/common-licenses", func(string) bool { return true })
		}},
		{"debian-docs", 1024 << 10, realPerFile, func() ([]string, error) {
			return listFiles("/usr/share/doc", func(p string) bool {
				b := filepath.Base(p)
				return !strings.HasSuffix(b, ".html") && !strings.HasSuffix(b, ".png") && !strings.HasSuffix(b, ".svg")
			})
		}},
		{"go-docs", 320 << 10, 512 << 10, func() ([]string, error) {
			if root == "" {
				return nil, os.ErrNotExist
			}
			fs, err := listFiles(filepath.Join(root, "doc"), func(string) bool { return true })
			if err != nil {
				return nil, err
			}
			return append([]string{filepath.Join(root, "LICENSE")}, fs...), nil
		}},
		{"go-source", 2560 << 10, realPerFile, func() ([]string, error) {
			if root == "" {
				return nil, os.ErrNotExist
			}
			return listFiles(filepath.Join(root, "src"), func(p string) bool {
				return strings.HasSuffix(p, ".go") && !strings.Contains(p, "/testdata/")
			})
		}},
	}
}

// listFiles returns the regular files under dir accepted by keep, sorted.
func listFiles(dir string, keep func(string) bool) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && keep(p) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, os.ErrNotExist
	}
	slices.Sort(out)
	return out, nil
}

// readText returns up to limit bytes of a text file, gunzipped when its name
// ends in .gz; it returns nil for files holding NUL bytes (binaries).
func readText(p string, limit int) []byte {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil
		}
		r = zr
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)))
	if err != nil || bytes.IndexByte(b, 0) >= 0 {
		return nil
	}
	return b
}

// fillFrom appends up to budget bytes of the files to dst, walking them with
// a stride that spreads the picks over the list, then any skipped ones.
func fillFrom(dst []byte, files []string, budget, perFile int) ([]byte, int) {
	stride := max(1, len(files)*perFile/(4*budget))
	got := 0
	for off := 0; off < stride && got < budget; off++ {
		for i := off; i < len(files) && got < budget; i += stride {
			b := readText(files[i], min(perFile, budget-got))
			if len(b) == 0 {
				continue
			}
			dst = append(dst, b...)
			if b[len(b)-1] != '\n' {
				dst = append(dst, '\n')
			}
			got += len(b)
		}
	}
	return dst, got
}

var realOnce = sync.OnceValues(buildRealCorpus)

// buildRealCorpus assembles the corpus or says which source is missing or
// too small.
func buildRealCorpus() ([]byte, string) {
	var out []byte
	for _, src := range realSources() {
		files, err := src.files()
		if err != nil {
			return nil, "real-text source " + src.name + " unavailable: " + err.Error()
		}
		var got int
		out, got = fillFrom(out, files, src.budget, src.perFile)
		if got < src.budget {
			return nil, "real-text source " + src.name + " holds too little text for its budget"
		}
	}
	return out, ""
}

// realCorpus returns the real-text corpus or skips the benchmark or test
// with the reason it cannot be built here.
func realCorpus(tb testing.TB) []byte {
	tb.Helper()
	b, why := realOnce()
	if why != "" {
		tb.Skip(why)
	}
	return b
}

// BenchmarkScanReal scans about 4 MiB of real text (licences, Debian docs,
// Go's docs and sources) and reports findings per MiB next to the speed.
func BenchmarkScanReal(b *testing.B) {
	data := realCorpus(b)
	s, err := New(Options{HashKey: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var n int
	cpu := processCPU()
	for b.Loop() {
		fs, err := s.Scan(b.Context(), data)
		if err != nil {
			b.Fatal(err)
		}
		n = len(fs)
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(n)/(float64(len(data))/(1<<20)), "findings/MiB")
}

func TestRealCorpusDeterministic(t *testing.T) {
	a, why := buildRealCorpus()
	if why != "" {
		t.Skip(why)
	}
	b, _ := buildRealCorpus()
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the real-text corpus differ")
	}
	if len(a) < realBudget {
		t.Fatalf("real-text corpus is %d bytes, want at least %d", len(a), realBudget)
	}
}

// adversarialInputs returns, by name, 1 MiB inputs built to be expensive:
// every Aho-Corasick pattern of s (detector keywords and context words)
// repeated, and structural repetitions (PEM headers, JWT starts, base64,
// hex and digit runs, '@', '%XX' and IPv6 runs, capitalised words).
// Each input is its unit repeated to adversarialSize bytes (see
// adversarialInput).
func adversarialInputs(s *Scanner) ([]string, map[string]string) {
	byName := map[string]string{}
	for _, p := range s.ac.patterns {
		byName["kw:"+p] = p
	}
	alnum := "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var b64 strings.Builder
	for i := 0; b64.Len() < 4096; i++ {
		b64.WriteByte(alnum[(i*37+i/62)%len(alnum)])
	}
	for name, unit := range map[string]string{
		"pem-rsa":       "-----BEGIN RSA PRIVATE KEY-----",
		"pem-rsa-lines": "-----BEGIN RSA PRIVATE KEY-----\n",
		"pem-begin-end": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n",
		"dashes":        "-",
		"eyJ":           "eyJ",
		"eyJ-dot":       "eyJhbGciOiJIUzI1NiJ9.",
		"base64":        b64.String(),
		"base64-lines":  b64.String()[:76] + "\n",
		"hex":           "0123456789abcdef",
		"digits":        "0123456789",
		"digit-groups":  "4970 1234 5678 ",
		"phone-like":    "+33 6 12 34 56 78 ",
		"at":            "@",
		"at-dots":       "a@b.",
		"email-like":    "user.name@acme-corp.fr ",
		"percent":       "%41",
		"ipv6":          "fe80::",
		"hex-colons":    "ab:",
		"ipv4":          "10.1.2.3.",
		"capitalised":   "John Smith ",
		"caps-run":      "Abcdef ",
		"assign":        "token=",
		"assign-quoted": "password = \"",
		"nonascii":      "é",
		"fullwidth":     "ｊ＠",
		"zero-width":    "a\u200b",
	} {
		byName[name] = unit
	}
	names := make([]string, 0, len(byName))
	for k := range byName {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, byName
}

const adversarialSize = 1 << 20

// adversarialInput is unit repeated to adversarialSize bytes.
func adversarialInput(unit string) []byte {
	return bytes.Repeat([]byte(unit), adversarialSize/len(unit)+1)[:adversarialSize]
}

// BenchmarkScanAdversarial scans each adversarial input and reports its
// CPU time per byte relative to real text's (x-real; the goal is at most 2).
// Run it with -benchtime 1x: there are several hundred inputs.
func BenchmarkScanAdversarial(b *testing.B) {
	real := realCorpus(b)
	s, err := New(Options{HashKey: []byte("bench")})
	if err != nil {
		b.Fatal(err)
	}
	// Costs are CPU time per byte (wall time where processCPU is not
	// measured), the least of three scans of the real text.
	clock := processCPU
	if clock() == 0 {
		clock = func() int64 { return time.Now().UnixNano() }
	}
	realPerByte := 0.0
	for range 3 {
		t0 := clock()
		if _, err := s.Scan(b.Context(), real); err != nil {
			b.Fatal(err)
		}
		d := float64(clock()-t0) / float64(len(real))
		if realPerByte == 0 || d < realPerByte {
			realPerByte = d
		}
	}
	b.Logf("real text: %.2f ns/B", realPerByte)
	names, units := adversarialInputs(s)
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			data := adversarialInput(units[name])
			b.SetBytes(int64(len(data)))
			t0 := clock()
			for b.Loop() {
				if _, err := s.Scan(b.Context(), data); err != nil {
					b.Fatal(err)
				}
			}
			perByte := float64(clock()-t0) / float64(b.N) / float64(len(data))
			b.ReportMetric(perByte, "cpu-ns/B")
			b.ReportMetric(perByte/realPerByte, "x-real")
		})
	}
}

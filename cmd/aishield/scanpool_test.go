package main

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// refRun runs "aishield scan FLAGS... ARGS..." the one-file-after-the-other
// way (scanref_test.go): every finding kept, the report written whole at
// the end. It returns the exit code and the standard output.
func refRun(t *testing.T, format, policy, dest, failOn string, allowUnscanned bool, args []string, stdin io.Reader) (int, string) {
	t.Helper()
	ctx := context.Background()
	sp := &scanPolicy{ref: policy, dest: dest, failOn: failOn}
	if err := sp.setup(ctx); err != nil {
		t.Fatal(err)
	}
	sc, err := sp.scanner(format)
	if err != nil {
		t.Fatal(err)
	}
	opts := scanOptions{keyed: sp.keyed, endColumns: format == "sarif"}
	rep := refRunScan(ctx, sc, args, opts, stdin, io.Discard, sp.refOnFile)
	var out bytes.Buffer
	switch format {
	case "json":
		err = refWriteJSON(&out, rep)
	case "sarif":
		err = sp.writeSARIF(&out, rep, allowUnscanned)
	default:
		if err = refWriteText(&out, rep); err == nil {
			err = sp.writeDecisions(&out, rep)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	switch {
	case rep.Errors > 0:
		code = 2
	case sp.destination != nil:
		for _, f := range rep.Files {
			if f.Decision != nil && f.Decision.Action != policies.ActionAllow {
				code = 1
			}
		}
	case sp.failOn != "":
		for _, f := range rep.Files {
			for _, x := range f.Findings {
				if _, rank, _ := sp.policy.LevelOf(x.Detector); rank >= sp.failRank {
					code = 1
				}
			}
		}
	case refFindings(rep) > 0:
		code = 1
	}
	if code == 0 && rep.unreadable() > 0 && sp.gates() && !allowUnscanned {
		code = 1
	}
	return code, out.String()
}

// scanArgs is the command line of refRun's options.
func scanArgs(format, policy, dest, failOn string, allowUnscanned bool, args []string) []string {
	out := []string{"scan", "--format", format}
	if policy != "" {
		out = append(out, "--policy", policy)
	}
	if dest != "" {
		out = append(out, "--destination", dest)
	}
	if failOn != "" {
		out = append(out, "--fail-on", failOn)
	}
	if allowUnscanned {
		out = append(out, "--allow-unscanned")
	}
	return append(out, args...)
}

// pieces of the generated files: values of several detectors and levels,
// prose, code, multi-byte runes, an allowed line.
var treePieces = []string{"the quarterly report ", "func main() {\n", "}\n", "nœud — 日本語 ", "\n", "\n\n",
	"jean.dupont@acme-corp.fr ", "+33 6 12 34 56 78 ", "AKIAZ7XQ4LMN2PQRST3U ", "CONFIDENTIAL\n", "TLP:RED ",
	"IBAN FR76 3000 4000 0312 3456 7890 143 ", "password = \"Xk9#mP2$vLq7\"\n", "SSN 536-22-1234 ", "<b>&amp;</b> ",
	"Dear Ottoline Vasquez,\n", "key = \"AKIAZ7XQ4LMN2PQRST3U\" # aishield:allow\n", "81.2.69.160 "}

func genText(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(treePieces[r.IntN(len(treePieces))])
	}
	return b.Bytes()
}

// genSparse is genText with about one value per KiB, between lines of
// prose: the density of real text.
func genSparse(r *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(24) == 0 {
			b.WriteString(treePieces[r.IntN(len(treePieces))])
		} else {
			b.WriteString("the quarterly figures were sent to the board on time, all is well."[:20+r.IntN(45)] + " nœud 日本\n")
		}
	}
	return b.Bytes()
}

// writeTree writes a directory of nfiles generated files in nested
// directories, with an archive, a binary, an empty file, a link (not
// followed) and a corrupt PDF (not scanned), and returns its path.
func writeTree(t *testing.T, r *rand.Rand, nfiles int) string {
	t.Helper()
	root := t.TempDir()
	for i := range nfiles {
		dir := filepath.Join(root, fmt.Sprintf("d%d", i%7), fmt.Sprintf("e%d", i%3))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		size := r.IntN(3000)
		text := genText(r, size)
		if i%60 == 0 {
			text = genSparse(r, 1<<20+r.IntN(1<<20)) // several chunks
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d <&>.txt", i)), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	for _, name := range []string{"a.txt", "b/c.txt"} {
		w, _ := zw.Create(name)
		w.Write(genText(r, 800))
	}
	zw.Close()
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("bundle.zip", zb.Bytes())
	write("app.bin", append([]byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00\x00\x00"), []byte("\x00\x00AKIAZ7XQ4LMN2PQRST3U\x00")...))
	write("empty.txt", nil)
	write("broken.pdf", []byte("%PDF-1.7\n1 0 obj << /Length 99999 >> stream\nxx"))
	if err := os.Symlink("empty.txt", filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	return root
}

// checkSame runs the command and the reference with the same options
// and compares exit codes and outputs byte for byte.
func checkSame(t *testing.T, format, policy, dest, failOn string, allowUnscanned bool, args []string, stdin []byte) {
	t.Helper()
	wantCode, want := refRun(t, format, policy, dest, failOn, allowUnscanned, args, bytes.NewReader(stdin))
	var out, errOut bytes.Buffer
	code := run(context.Background(), scanArgs(format, policy, dest, failOn, allowUnscanned, args), bytes.NewReader(stdin), &out, &errOut)
	if code != wantCode {
		t.Errorf("exit %d, want %d (stderr %s)", code, wantCode, errOut.String())
	}
	if got := out.String(); got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("output differs at line %d of %d/%d:\n got %q\nwant %q", i+1, len(gl), len(wl), gl[i], wl[i])
			}
		}
		t.Fatalf("output has %d lines, want %d", len(gl), len(wl))
	}
	if len(want) < 100 {
		t.Fatalf("reference output too short to test anything: %q", want)
	}
}

// TestScanPoolMatchesSerial: on a tree of files (several of them longer
// than a chunk), the pool's reports (text, JSON, SARIF; no policy,
// --destination, --fail-on) are byte for byte those of the serial scan,
// exit codes included.
func TestScanPoolMatchesSerial(t *testing.T) {
	t.Setenv(hashKeyEnv, "0123456789abcdef0123456789abcdef") // fingerprints compare across runs
	root := writeTree(t, rand.New(rand.NewPCG(15, 1)), 160)
	for _, c := range []struct {
		name                 string
		format, policy, dest string
		failOn               string
		allowUnscanned       bool
	}{
		{name: "text", format: "text"},
		{name: "json", format: "json"},
		{name: "sarif", format: "sarif"},
		{name: "destination local", format: "text", dest: "local"},
		{name: "destination openai json", format: "json", dest: "openai", allowUnscanned: true},
		{name: "fail-on restricted", format: "text", failOn: "restricted"},
		{name: "fail-on json", format: "json", policy: "strict", failOn: "confidential"},
		{name: "sarif destination", format: "sarif", dest: "anthropic"},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkSame(t, c.format, c.policy, c.dest, c.failOn, c.allowUnscanned, []string{root, filepath.Join(root, "d1")}, nil)
		})
	}
}

// TestScanLargeStreamed: inputs over maxWholeFile (a file and standard
// input) are streamed, their findings written as they come; the reports
// and decisions are those of the serial scan that kept every finding.
func TestScanLargeStreamed(t *testing.T) {
	if testing.Short() {
		t.Skip("scans 2 x 33 MiB several times")
	}
	t.Setenv(hashKeyEnv, "0123456789abcdef0123456789abcdef")
	dir := t.TempDir()
	big := genSparse(rand.New(rand.NewPCG(15, 2)), maxWholeFile+1<<20)
	path := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(small, genText(rand.New(rand.NewPCG(15, 3)), 5000), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, format, dest string
		args               []string
		stdin              []byte
	}{
		{"text", "text", "", []string{small, path}, nil},
		{"json", "json", "", []string{path, small}, nil},
		{"redact decision from counts", "json", "local", []string{path}, nil},
		{"capacity decision", "json", "openai", []string{path}, nil},
		{"stdin", "json", "", []string{"-"}, big},
	} {
		t.Run(c.name, func(t *testing.T) {
			checkSame(t, c.format, "", c.dest, "", false, c.args, c.stdin)
		})
	}
}

// TestStreamDecisionMatchesDecide: the decision made from counts and first
// findings is the one Policy.Decide makes from every finding, reasons,
// counts, messages, previews and redact positions included.
func TestStreamDecisionMatchesDecide(t *testing.T) {
	t.Parallel()
	sc, err := classifiers.New(classifiers.Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(15, 4))
	all, err := sc.Scan(context.Background(), genText(r, 20000))
	if err != nil || len(all) < 50 {
		t.Fatalf("%d findings, %v", len(all), err)
	}
	redacted := 0 // decisions to redact, with positions: the case the counts must get right
	defer func() {
		if redacted == 0 && !t.Failed() {
			t.Error("no decision to redact: the test did not test Redact")
		}
	}()
	for _, preset := range []string{"default", "strict", "gdpr", "pci", "secrets-only"} {
		p, err := policies.LoadRefContext(context.Background(), preset)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range p.Destinations {
			t.Run(preset+"/"+d.Name, func(t *testing.T) {
				for trial := range 20 {
					fs := all[:r.IntN(len(all)+1)]
					if trial%2 == 1 {
						fs = fs[r.IntN(len(fs)+1):]
					}
					sp := &scanPolicy{policy: p, destination: d}
					sd := sp.streamDecision()
					for rest := fs; len(rest) > 0; { // in chunks, as a stream gives them
						n := 1 + r.IntN(len(rest))
						sd.add(rest[:n])
						rest = rest[n:]
					}
					got := sd.decision()
					var want policies.Decision
					if d.MaxInputTokens > 0 {
						want = p.Decide(d, nil, d.MaxInputTokens+1)
						want.Reasons[0].Message = fmt.Sprintf("file larger than %d MiB, too large to count: treated as over the capacity of destination %s (max_input_tokens %d)", maxWholeFile>>20, d.Name, d.MaxInputTokens)
					} else {
						want = p.Decide(d, fs, 1)
					}
					if len(want.Redact) > 1 {
						redacted++
					}
					if !reflect.DeepEqual(*got, want) {
						t.Fatalf("%d findings:\n got %+v\nwant %+v", len(fs), *got, want)
					}
				}
			})
		}
	}
}

// TestJSONSinkMatchesEncoder: the JSON written a finding at a time is the
// document encoding/json writes for the whole report, for reports with
// and without files, findings, decisions and trailing fields.
func TestJSONSinkMatchesEncoder(t *testing.T) {
	t.Parallel()
	sc, err := classifiers.New(classifiers.Options{HashKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	p, err := policies.LoadRefContext(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	dest, _ := p.Lookup("local")
	r := rand.New(rand.NewPCG(15, 5))
	for trial := range 60 {
		rep := &scanReport{Keyed: trial%2 == 0}
		for i := range r.IntN(5) {
			fs, _ := sc.Scan(context.Background(), genText(r, r.IntN(1500)))
			f := fileResult{Path: fmt.Sprintf("dir/<%d>&\"é\".txt", i), Kind: "text", Findings: fs}
			if r.IntN(2) == 0 {
				d := p.Decide(dest, fs, 10)
				f.Decision = &d
			}
			if r.IntN(6) == 0 {
				f.Skipped, f.Note = true, "a <note>"
			}
			rep.Files = append(rep.Files, f)
		}
		if r.IntN(2) == 0 {
			rep.NotScanned = []notScanned{{Path: "x.pdf", Reason: "encrypted <PDF>", Unreadable: true}, {Path: "fifo", Reason: "named pipe"}}
		}
		if r.IntN(2) == 0 {
			rep.Inline, rep.Baselined = r.IntN(3), r.IntN(3)
		}
		if r.IntN(3) == 0 {
			rep.Ignored = 1 + r.IntN(4)
		}
		if r.IntN(3) == 0 {
			rep.Errors = 1
		}
		rep.Interrupted = r.IntN(4) == 0
		var want, got bytes.Buffer
		if err := refWriteJSON(&want, rep); err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriterSize(&got, 64)
		sink := &jsonSink{w: w, keyed: rep.Keyed}
		for i := range rep.Files {
			f := &rep.Files[i]
			if err := sink.beginFile(f); err != nil {
				t.Fatal(err)
			}
			for rest := f.Findings; len(rest) > 0; {
				n := 1 + r.IntN(len(rest))
				if err := sink.findings(f, rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest = rest[n:]
			}
			if err := sink.endFile(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.finish(rep); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		if got.String() != want.String() {
			t.Fatalf("trial %d:\n got %s\nwant %s", trial, got.String(), want.String())
		}
	}
}

// failWriter fails every write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestScanWriteErrorStops: a report that cannot be written ends the scan
// with exit 2 and says why.
func TestScanWriteErrorStops(t *testing.T) {
	t.Parallel()
	root := writeTree(t, rand.New(rand.NewPCG(15, 6)), 30)
	for _, format := range []string{"text", "json"} {
		var errOut bytes.Buffer
		code := run(context.Background(), []string{"scan", "--format", format, root}, nil, failWriter{}, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), "disk full") {
			t.Fatalf("%s: exit %d, stderr %q", format, code, errOut.String())
		}
	}
}

// TestScanPoolManyFiles: a tree of many small files, more batches than
// the pool holds ahead of the report, scanned on 1 to 4 workers while the
// walk goes on, with inputs that cannot be read named before, among and
// after the directories: the reports and exit codes are those of the
// serial scan.
func TestScanPoolManyFiles(t *testing.T) {
	t.Setenv(hashKeyEnv, "0123456789abcdef0123456789abcdef")
	r := rand.New(rand.NewPCG(15, 2))
	root := t.TempDir()
	for i := range 1500 {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%23))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d.txt", i)), genText(r, r.IntN(400)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{filepath.Join(root, "missing-1"), filepath.Join(root, "d03"), root, filepath.Join(root, "missing-2"), filepath.Join(root, "d07", "f0007.txt")}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, format := range []string{"text", "json", "sarif"} {
			t.Run(fmt.Sprintf("%s/%d", format, procs), func(t *testing.T) {
				checkSame(t, format, "", "", "", false, args, nil)
			})
		}
	}
}

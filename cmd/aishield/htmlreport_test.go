package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// hostile is markup a path, a preview, a detector ID or a reason could
// hold; a page must show it as text.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>`

// pageTag matches a tag of a page (every "<" followed by a letter is one:
// text and attribute values are escaped), pageAttr one of its attributes.
var (
	pageTag  = regexp.MustCompile(`<([a-zA-Z][a-zA-Z0-9]*)((?:\s+[a-zA-Z-]+(?:="[^"<>]*")?)*)\s*>`)
	pageAttr = regexp.MustCompile(`([a-zA-Z-]+)(?:="[^"]*")?`)
)

// pageElements are the elements the report pages are made of.
var pageElements = map[string]bool{"html": true, "head": true, "meta": true, "title": true, "style": true, "body": true, "h1": true,
	"h2": true, "h3": true, "p": true, "div": true, "b": true, "span": true, "section": true, "table": true, "thead": true,
	"tbody": true, "tr": true, "th": true, "td": true, "code": true, "ul": true, "li": true, "br": true}

// rawMarkup returns what in page is markup that is not the page's own: an
// element the pages do not use (a script, an image), an event handler
// attribute, a tag that does not parse; "" when there is none.
func rawMarkup(page string) string {
	opens := regexp.MustCompile(`<[a-zA-Z]`).FindAllStringIndex(page, -1)
	tags := pageTag.FindAllStringSubmatchIndex(page, -1)
	if len(opens) != len(tags) {
		for i, o := range opens {
			if i >= len(tags) || tags[i][0] != o[0] {
				return page[o[0]:min(len(page), o[0]+60)]
			}
		}
	}
	for _, m := range tags {
		name := strings.ToLower(page[m[2]:m[3]])
		if !pageElements[name] {
			return page[m[0]:m[1]]
		}
		for _, a := range pageAttr.FindAllStringSubmatch(page[m[4]:m[5]], -1) {
			if strings.HasPrefix(strings.ToLower(a[1]), "on") {
				return page[m[0]:m[1]]
			}
		}
	}
	return ""
}

// TestHTMLRawMarkupCheck: the check the page tests rely on finds markup
// that is not the pages' own, and passes what is.
func TestHTMLRawMarkupCheck(t *testing.T) {
	for _, c := range []struct {
		page string
		bad  bool
	}{
		{`<p class="x">a &lt;script&gt; b</p>`, false},
		{`<td data-label="path" data-path="a &lt;img src=x onerror=alert(1)&gt;"><code>x</code></td>`, false},
		{`<p>` + hostile + `</p>`, true},
		{`<p><script>alert(1)</script></p>`, true},
		{`<div onclick="x()">a</div>`, true},
		{`<div data-x="a" ONLOAD=x>a</div>`, true},
		{`<img src=x>`, true},
		{`<p title="a>b">x</p>`, true},
	} {
		if got := rawMarkup(c.page) != ""; got != c.bad {
			t.Errorf("rawMarkup(%q) = %q, want bad=%v", c.page, rawMarkup(c.page), c.bad)
		}
	}
}

// TestHTMLScanPageEscapes renders a page whose every text field holds
// markup: all of it is escaped, the CSP forbids every load, and no element
// but the page's own appears.
func TestHTMLScanPageEscapes(t *testing.T) {
	pol, err := policies.LoadRef("default")
	if err != nil {
		t.Fatal(err)
	}
	dest, err := pol.Lookup("openai")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	sink := newHTMLSink(w, &scanPolicy{policy: pol, destination: dest})
	sink.now = func() time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) }
	res := &fileResult{Path: "dir/" + hostile + ".txt", Kind: "text"}
	dec := &policies.Decision{Action: policies.ActionBlock, Level: hostile, Destination: "openai",
		Reasons: []policies.Reason{{Rule: "classify[0]", Message: "1 finding of " + hostile}}}
	steps := []func() error{
		func() error { return sink.beginFile(res) },
		func() error {
			return sink.findings(res, []classifiers.Finding{{Detector: hostile, Category: hostile, Line: 1, Column: 2, Preview: hostile, Encoding: hostile}})
		},
		func() error { res.Decision = dec; return sink.endFile(res) },
		func() error {
			return sink.finish(&scanReport{Files: []fileResult{*res}, Found: 1, WithFindings: 1,
				NotScanned: []notScanned{{Path: hostile, Reason: hostile, Unreadable: true}}})
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	page := buf.String()
	if m := rawMarkup(page); m != "" {
		t.Fatalf("the page holds raw markup %q:\n%s", m, page)
	}
	for _, want := range []string{
		`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'`,
		`<meta name="viewport" content="width=device-width, initial-scale=1">`,
		"&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	// Every hostile field shows: the path (3 times: decision, file heading,
	// data-path escaped differently), the preview, the detector, the reason,
	// the not-scanned path and reason.
	if n := strings.Count(page, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 8 {
		t.Errorf("hostile text shown %d times, want at least 8:\n%s", n, page)
	}
}

// scanFixture writes files holding the values of reportTrailValues, a
// file named with markup, a suppressed line, an ignored file, a file that
// cannot be scanned (a corrupt zip) and a FIFO, and returns its directory.
func scanFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	files := map[string]string{
		"notes.md":                               "Write to " + expEmail + " about host " + expIP + ".\nCONFIDENTIAL\n",
		"deploy/ci.env":                          "TOKEN=" + expSecret + "\nMAIL=" + expEmail + " # aishield:allow\n",
		hostile + ".txt":                         "ping " + expIP + "\n",
		"clean.txt":                              "nothing to see here\n",
		"broken.zip":                             "PK\x03\x04 not really a zip",
		"ignored/secret.env":                     "TOKEN=" + expSecret + "\n",
		".aishieldignore":                        "ignored/\n",
		strings.Repeat("long-", 40) + "name.txt": "mail " + expEmail + "\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// scanJSON is the part of the JSON scan report the pages are checked
// against.
type scanJSON struct {
	Files []struct {
		Path     string `json:"path"`
		Findings []struct {
			Detector string `json:"detector"`
			Category string `json:"category"`
		} `json:"findings"`
		Decision *policies.Decision `json:"decision"`
	} `json:"files"`
	NotScanned []notScanned    `json:"not_scanned"`
	Suppressed *jsonSuppressed `json:"suppressed"`
	Ignored    int             `json:"ignored"`
}

// wantScanCounts are the counts a scan page must show, from the JSON
// report of the same run: element id to count, and detector to count.
func wantScanCounts(t *testing.T, data []byte, decided bool) (map[string]int, map[string]int) {
	t.Helper()
	var rep scanJSON
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{"files": len(rep.Files), "not-scanned": len(rep.NotScanned), "ignored": rep.Ignored,
		"findings": 0, "with-findings": 0, "suppressed-inline": 0, "suppressed-baseline": 0}
	if rep.Suppressed != nil {
		ids["suppressed-inline"], ids["suppressed-baseline"] = rep.Suppressed.Inline, rep.Suppressed.Baseline
	}
	if decided {
		ids["dec-allow"], ids["dec-redact"], ids["dec-block"] = 0, 0, 0
	}
	dets := map[string]int{}
	for _, f := range rep.Files {
		ids["findings"] += len(f.Findings)
		if len(f.Findings) > 0 {
			ids["with-findings"]++
		}
		for _, x := range f.Findings {
			dets[x.Detector]++
		}
		if f.Decision != nil {
			ids["dec-"+string(f.Decision.Action)]++
		}
	}
	return ids, dets
}

// runScanFormats runs scan over dir in JSON and in HTML with args, and
// returns both reports.
func runScanFormats(t *testing.T, dir string, args ...string) (jsonOut, htmlOut []byte) {
	t.Helper()
	for _, format := range []string{"json", "html"} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append(append([]string{"scan", "--format", format}, args...), dir), strings.NewReader(""), &out, &errOut)
		if code != 1 {
			t.Fatalf("scan --format %s: exit %d, want 1: %s", format, code, errOut.String())
		}
		if format == "json" {
			jsonOut = out.Bytes()
		} else {
			htmlOut = out.Bytes()
		}
	}
	return jsonOut, htmlOut
}

// dataCount reads the data-count of the element with id in page.
func dataCount(page []byte, id string) (int, bool) {
	m := regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `" data-count="(\d+)"`).FindSubmatch(page)
	if m == nil {
		return 0, false
	}
	var n int
	fmt.Sscan(string(m[1]), &n)
	return n, true
}

// pageShowsCounts checks that a scan page shows the counts of ids and
// dets (wantScanCounts) and no other detector.
func pageShowsCounts(t *testing.T, page []byte, ids, dets map[string]int) {
	t.Helper()
	for id, want := range ids {
		if got, ok := dataCount(page, id); !ok || got != want {
			t.Errorf("#%s shows %d (found %v), the JSON %d", id, got, ok, want)
		}
	}
	for det, want := range dets {
		if !bytes.Contains(page, fmt.Appendf(nil, `data-detector="%s" data-count="%d"`, det, want)) {
			t.Errorf("detector %s: the page does not show %d", det, want)
		}
	}
	if n := bytes.Count(page, []byte(`data-detector=`)); n != len(dets) {
		t.Errorf("%d detectors shown, the JSON has %d", n, len(dets))
	}
}

// TestHTMLScanPageCounts: the page's counts are the JSON report's, with
// and without --destination; no value is in it.
func TestHTMLScanPageCounts(t *testing.T) {
	dir := scanFixture(t)
	for _, args := range [][]string{nil, {"--destination", "openai", "--allow-unscanned"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			js, page := runScanFormats(t, dir, args...)
			ids, dets := wantScanCounts(t, js, args != nil)
			if ids["findings"] == 0 || ids["not-scanned"] < 2 || ids["suppressed-inline"] != 1 || ids["ignored"] != 1 {
				t.Fatalf("the fixture does not exercise the page: %v", ids)
			}
			if args != nil {
				if ids["dec-block"] == 0 || ids["dec-allow"] == 0 {
					t.Fatalf("the fixture should give blocked and allowed files: %v", ids)
				}
			}
			pageShowsCounts(t, page, ids, dets)
			for _, v := range reportTrailValues {
				if bytes.Contains(page, []byte(v)) {
					t.Fatal("a raw value is in the page")
				}
			}
			if m := rawMarkup(string(page)); m != "" {
				t.Fatalf("raw markup %q in the page", m)
			}
		})
	}
}

// TestHTMLScanPageCap: a file with more findings than the cap lists the
// first htmlFindingsPerFile and says how many more; the counts are all of
// them. It logs the page's size.
func TestHTMLScanPageCap(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	const n = htmlFindingsPerFile + 234
	for i := range n {
		fmt.Fprintf(&b, "contact jean.dupont%d@acme-corp.fr today\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "many.txt"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, page := runScanFormats(t, dir)
	if got, _ := dataCount(page, "findings"); got != n {
		t.Errorf("findings %d, want %d", got, n)
	}
	if got := bytes.Count(page, []byte(`<tr class="finding">`)); got != htmlFindingsPerFile {
		t.Errorf("%d findings listed, want %d", got, htmlFindingsPerFile)
	}
	if !bytes.Contains(page, fmt.Appendf(nil, `data-more="%d">and %d more finding(s)`, n-htmlFindingsPerFile, n-htmlFindingsPerFile)) {
		t.Error("the page does not say how many findings are not listed")
	}
	if bytes.Contains(page, []byte("jean.dupont")) {
		t.Fatal("a raw value is in the page")
	}
	t.Logf("page of %d findings (%d listed): %d bytes", n, htmlFindingsPerFile, len(page))
}

package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// requireChromiumEnv makes a missing Chromium a failure instead of a skip
// (CI sets it).
const requireChromiumEnv = "AISHIELD_REQUIRE_CHROMIUM"

// chromiumPath finds Chromium, or skips the test (fails it when
// AISHIELD_REQUIRE_CHROMIUM is set).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv(requireChromiumEnv) != "" {
		t.Fatalf("chromium not found and %s is set (apt-get install -y chromium)", requireChromiumEnv)
	}
	t.Skipf("chromium not found (apt-get install -y chromium; %s=1 makes this a failure)", requireChromiumEnv)
	return ""
}

// pageView is what the browser made of a page.
type pageView struct {
	ScrollWidth int            `json:"scrollWidth"`
	InnerWidth  int            `json:"innerWidth"`
	Text        string         `json:"text"`
	Counts      map[string]int `json:"counts"`
	Detectors   map[string]int `json:"detectors"`
	// Mismatch lists the elements whose text is not their data-count.
	Mismatch []string `json:"mismatch"`
	// Foreign counts the elements a report must not hold.
	Foreign   int            `json:"foreign"`
	Integrity *pageIntegrity `json:"integrity"`
}

type pageIntegrity struct {
	OK         string  `json:"ok"`
	Text       string  `json:"text"`
	Top        float64 `json:"top"`
	SummaryTop float64 `json:"summaryTop"`
	Visible    bool    `json:"visible"`
}

// pageViewJS reads a page's figures: the data-count of every element with
// an id (checked against its text), the counts of the detector table, the
// destinations' figures, the rows marked in the timeline.
const pageViewJS = `(() => {
  const counts = {}, detectors = {}, mismatch = [];
  for (const e of document.querySelectorAll('[id][data-count]')) {
    counts[e.id] = +e.dataset.count;
    if (e.textContent.trim() !== e.dataset.count) mismatch.push(e.id);
  }
  for (const e of document.querySelectorAll('tr[data-detector]')) detectors[e.dataset.detector] = +e.dataset.count;
  for (const e of document.querySelectorAll('tr[data-destination]')) {
    for (const [k, a] of [['exchanges','exchanges'],['sent','sent'],['tokens-sent','tokensSent'],['blocked','blocked'],['refused','refused'],['redactions','redactions']]) {
      counts[e.dataset.destination + '/' + k] = +e.dataset[a];
    }
  }
  counts['timeline-refused'] = document.querySelectorAll('tr.exchange[data-refused]').length;
  counts['timeline-blocked'] = document.querySelectorAll('tr.exchange[data-blocked]').length;
  counts['timeline-events'] = document.querySelectorAll('tr.event').length;
  counts['quarantine-rows'] = document.querySelectorAll('tr.quarantine').length;
  const i = document.getElementById('integrity'), s = document.getElementById('summary');
  return {
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth,
    text: document.body.innerText, counts, detectors, mismatch,
    foreign: document.querySelectorAll('script,img,iframe,object,embed,link,form,svg,video,audio,base').length,
    integrity: i ? {ok: i.dataset.ok, text: i.innerText, top: i.getBoundingClientRect().top,
      summaryTop: s.getBoundingClientRect().top, visible: i.offsetHeight > 0} : null,
  };
})()`

// browser is one headless Chromium for the test, tabs opened by view.
type browser struct {
	ctx context.Context
}

func startBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	// The machine's network is closed: without these flags Chromium waits
	// on its background services.
	actx, acancel := chromedp.NewExecAllocator(ctx, chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(t.TempDir()))
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return &browser{ctx: bctx}
}

// view opens file in a new tab at a phone's width (375 px), and returns
// what the page shows. The test fails on any console error, exception,
// or request other than the file itself.
func (b *browser) view(t *testing.T, file string) *pageView {
	t.Helper()
	tctx, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	pageURL := (&url.URL{Scheme: "file", Path: file}).String()
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(tctx, func(ev any) {
		var p string
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				p = fmt.Sprintf("console %s", ev.Type)
			}
		case *runtime.EventExceptionThrown:
			p = "exception: " + ev.ExceptionDetails.Text
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				p = fmt.Sprintf("log %s (%s): %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text)
			}
		case *network.EventRequestWillBeSent:
			if ev.Request.URL != pageURL {
				p = "request to " + ev.Request.URL
			}
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tctx, chromedp.EmulateViewport(375, 812, chromedp.EmulateMobile), chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	v, err := chromedp.Run(tctx, chromedp.Evaluate[pageView](pageViewJS))
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Errorf("%s: %s", filepath.Base(file), p)
	}
	if v.InnerWidth != 375 || v.ScrollWidth > 375 {
		t.Errorf("%s at 375 px: scroll width %d (window %d)", filepath.Base(file), v.ScrollWidth, v.InnerWidth)
	}
	if v.Foreign != 0 {
		t.Errorf("%s holds %d script, image, frame or link elements", filepath.Base(file), v.Foreign)
	}
	if len(v.Mismatch) > 0 {
		t.Errorf("%s: the figures shown differ from their data-count: %v", filepath.Base(file), v.Mismatch)
	}
	return &v
}

// noValue fails when a raw value of the fixtures is in the page's text or
// its source.
func noValue(t *testing.T, v *pageView, source []byte) {
	t.Helper()
	for _, x := range reportTrailValues {
		if strings.Contains(v.Text, x) || bytes.Contains(source, []byte(x)) {
			t.Fatalf("a raw value is in the page (text or source)")
		}
	}
}

// viewShowsCounts checks that a scan page opened in the browser shows the
// counts of the JSON report js of the same run (with --destination).
func viewShowsCounts(t *testing.T, v *pageView, js []byte) {
	t.Helper()
	ids, dets := wantScanCounts(t, js, true)
	for id, want := range ids {
		if got, ok := v.Counts[id]; !ok || got != want {
			t.Errorf("#%s shows %d (present %v), the JSON %d", id, got, ok, want)
		}
	}
	if fmt.Sprint(v.Detectors) != fmt.Sprint(dets) {
		t.Errorf("detectors shown %v, the JSON %v", v.Detectors, dets)
	}
}

// TestHTMLReportsInChromium opens the scan, scan git and audit pages in headless
// Chromium at a phone's width: they load without console errors or
// requests, fit 375 px, show the JSON reports' counts, and no raw value;
// a tampered trail's page opens with its BROKEN banner.
func TestHTMLReportsInChromium(t *testing.T) {
	b := startBrowser(t)
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("scan", func(t *testing.T) {
		fixture := scanFixture(t)
		js, page := runScanFormats(t, fixture, "--destination", "openai", "--allow-unscanned")
		v := b.view(t, write("scan.html", page))
		viewShowsCounts(t, v, js)
		if !strings.Contains(v.Text, hostile+".txt") {
			t.Errorf("the path holding markup is not shown as text")
		}
		noValue(t, v, page)
	})

	t.Run("scan git", func(t *testing.T) {
		isolateGit(t)
		r := buildHistory(t)
		js, page := runScanGitFormats(t, 1, "--destination", "openai", "--allow-unscanned", r.dir)
		v := b.view(t, write("scan-git.html", page))
		viewShowsCounts(t, v, js)
		if want := "commit " + shortHash(r.commits["c2"]) + " · " + bobAuthor; !strings.Contains(v.Text, want) {
			t.Errorf("the page does not show %q", want)
		}
		for _, x := range []string{gitToken, gitEmail} {
			if strings.Contains(v.Text, x) || bytes.Contains(page, []byte(x)) {
				t.Fatal("a raw value is in the page (text or source)")
			}
		}
	})

	key, _ := hex.DecodeString(testAuditKeyHex)
	trail := writeReportTrail(t, t.TempDir(), key)
	t.Setenv(auditKeyEnv, testAuditKeyHex)

	t.Run("audit", func(t *testing.T) {
		code, js, errOut := runAuditReport(t, "--format", "json", trail)
		if code != 0 {
			t.Fatalf("json: exit %d: %s", code, errOut)
		}
		var rep auditReport
		if err := json.Unmarshal(js, &rep); err != nil {
			t.Fatal(err)
		}
		code, page, errOut := runAuditReport(t, "--format", "html", trail)
		if code != 0 {
			t.Fatalf("html: exit %d: %s", code, errOut)
		}
		v := b.view(t, write("audit.html", page))
		want := auditJSONCounts(t, &rep)
		if want["timeline-refused"] != 2 || want["timeline-blocked"] != 2 || want["quarantine-rows"] != 2 {
			t.Fatalf("the trail does not hold what the test needs: %v", want)
		}
		for k, n := range want {
			if got, ok := v.Counts[k]; !ok || got != n {
				t.Errorf("%s shows %d (present %v), the JSON %d", k, got, ok, n)
			}
		}
		if v.Integrity == nil || v.Integrity.OK != "true" || !strings.Contains(v.Integrity.Text, "chain intact, keyed") {
			t.Errorf("integrity %+v", v.Integrity)
		}
		for _, s := range []string{"refused: contaminated", "inbound.usage_mismatch", "quarantine.tripped", "quarantine.cleared"} {
			if !strings.Contains(v.Text, s) {
				t.Errorf("the page does not show %q", s)
			}
		}
		noValue(t, v, page)
	})

	t.Run("tampered", func(t *testing.T) {
		data, err := os.ReadFile(trail)
		if err != nil {
			t.Fatal(err)
		}
		tampered := bytes.Replace(data, []byte(`"verdict":"contaminated"`), []byte(`"verdict":"clean"`), 1)
		code, page, _ := runAuditReport(t, "--format", "html", write("tampered.jsonl", tampered))
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		v := b.view(t, write("tampered.html", page))
		if in := v.Integrity; in == nil || in.OK != "false" || !in.Visible || in.Top >= in.SummaryTop || !strings.HasPrefix(in.Text, "BROKEN TRAIL") {
			t.Errorf("integrity %+v", in)
		}
		noValue(t, v, page)
	})
}

package main

import (
	"bufio"
	"cmp"
	"embed"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// The HTML reports are single self-contained pages: the style sheet is
// inlined, there is no script, and a Content-Security-Policy meta forbids
// every load (page.html). html/template escapes every value, paths and
// masked previews included.
//
//go:embed htmlreport/*.html htmlreport/style.css
var htmlReportFS embed.FS

// htmlFindingsPerFile caps the findings a scan page lists per file; the
// rest are counted ("and N more"), so that a page stays small enough for
// a browser to open.
const htmlFindingsPerFile = 1000

// renderHTMLReport writes the page named page (scan.html, audit.html)
// with data: the page's "body" template inside page.html's frame.
func renderHTMLReport(w io.Writer, page string, data any) error {
	css, err := htmlReportFS.ReadFile("htmlreport/style.css")
	if err != nil {
		return err
	}
	t, err := template.New("page.html").Funcs(template.FuncMap{
		// The style sheet is a file of this package, not input.
		"css":   func() template.CSS { return template.CSS(css) },
		"time":  func(t time.Time) string { return textTime(t) },
		"lower": strings.ToLower,
		"short": shortHash,
	}).ParseFS(htmlReportFS, "htmlreport/page.html", "htmlreport/"+page)
	if err != nil {
		return err
	}
	return t.Execute(w, data)
}

// htmlCount is one row of a table of counts.
type htmlCount struct {
	Name  string
	Count int
}

// sortedCounts turns a map of counts into rows, highest count first, then
// by name.
func sortedCounts(m map[string]int) []htmlCount {
	out := make([]htmlCount, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, htmlCount{Name: k, Count: m[k]})
	}
	slices.SortStableFunc(out, func(a, b htmlCount) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// htmlFinding is one finding as the scan page lists it: its masked
// preview, never its value.
type htmlFinding struct {
	Line, Column int
	Detector     string
	Category     classifiers.Category
	Level        string
	Confidence   float64
	Preview      string
	Encoding     string
}

// htmlFile is one file of the scan page.
type htmlFile struct {
	Path     string
	Kind     string
	Count    int
	Findings []htmlFinding
	// More counts the findings beyond htmlFindingsPerFile, not listed.
	More     int
	Decision *policies.Decision
	// Commit is the commit of a file diff ("scan git"), else nil.
	Commit *gitOrigin
}

// htmlScanPage is what the scan page shows.
type htmlScanPage struct {
	Title string
	// Unit names what was scanned: "files", or "file diffs" for "scan
	// git" (a file changed by a commit, or staged).
	Unit      string
	Version   string
	Generated time.Time
	// Files counts the files scanned, WithFindings those with findings.
	Files, WithFindings, Findings int
	NotScanned                    []notScanned
	Unreadable                    int
	Inline, Baselined, Ignored    int
	Errors                        int
	Incomplete, Interrupted       bool
	// Policy names the policy (levels and decisions), "" without one.
	Policy     string
	ByDetector []htmlCount
	ByCategory []htmlCount
	ByLevel    []htmlCount
	// FileList holds the files with findings, in the order scanned.
	FileList []htmlFile
	Cap      int
	// Destination is set with --destination.
	Destination *htmlDestination
}

// htmlDestination is the policy decision for --destination over the run.
type htmlDestination struct {
	Name, Policy             string
	Allowed, Redact, Blocked int
	NotScanned               int
	// Files are the files not allowed as they are, or allowed with
	// reasons, with their decisions.
	Files []htmlFile
}

// htmlSink collects the scan page as the scan goes: every finding is
// counted, the first htmlFindingsPerFile of each file kept; the page is
// written by finish.
type htmlSink struct {
	w     *bufio.Writer
	git   bool // the inputs are file diffs of "scan git"
	sp    *scanPolicy
	limit int
	files []htmlFile // one per file begun, in rep.Files' order
	byDet map[string]int
	byCat map[string]int
	byLvl map[string]int
	now   func() time.Time
}

func newHTMLSink(w *bufio.Writer, sp *scanPolicy) *htmlSink {
	return &htmlSink{w: w, sp: sp, limit: htmlFindingsPerFile, byDet: map[string]int{}, byCat: map[string]int{}, byLvl: map[string]int{}, now: time.Now}
}

func (h *htmlSink) beginFile(res *fileResult) error {
	h.files = append(h.files, htmlFile{Path: res.Path, Kind: res.Kind, Commit: res.Git})
	return nil
}

func (h *htmlSink) findings(res *fileResult, fs []classifiers.Finding) error {
	f := &h.files[len(h.files)-1]
	for _, x := range fs {
		level := ""
		if h.sp.policy != nil {
			level, _, _ = h.sp.policy.LevelOf(x.Detector)
			h.byLvl[level]++
		}
		h.byDet[x.Detector]++
		h.byCat[string(x.Category)]++
		f.Count++
		if len(f.Findings) >= h.limit {
			f.More++
			continue
		}
		f.Findings = append(f.Findings, htmlFinding{Line: x.Line, Column: x.Column, Detector: x.Detector, Category: x.Category,
			Level: level, Confidence: x.Confidence, Preview: x.Preview, Encoding: x.Encoding})
	}
	return nil
}

func (h *htmlSink) endFile(res *fileResult) error {
	h.files[len(h.files)-1].Decision = res.Decision
	return nil
}

func (h *htmlSink) finish(rep *scanReport) error {
	page := h.page(rep)
	if err := renderHTMLReport(h.w, "scan.html", page); err != nil {
		return err
	}
	_, err := h.w.Write(nil)
	return err
}

// page builds the page of rep from what the sink collected.
func (h *htmlSink) page(rep *scanReport) *htmlScanPage {
	p := &htmlScanPage{Title: "aishield scan report", Unit: "files", Version: buildVersion(), Generated: h.now().UTC(),
		Files: len(rep.Files), WithFindings: rep.WithFindings, Findings: rep.Found,
		NotScanned: rep.NotScanned, Unreadable: rep.unreadable(), Inline: rep.Inline, Baselined: rep.Baselined,
		Ignored: rep.Ignored, Errors: rep.Errors, Interrupted: rep.Interrupted, Incomplete: rep.Errors > 0 || rep.Interrupted,
		ByDetector: sortedCounts(h.byDet), ByCategory: sortedCounts(h.byCat), Cap: h.limit}
	if h.git {
		p.Title, p.Unit = "aishield scan git report", "file diffs"
	}
	if pol := h.sp.policy; pol != nil {
		p.Policy = pol.Name
		// Levels from the highest down.
		for i := len(pol.Levels) - 1; i >= 0; i-- {
			if n := h.byLvl[pol.Levels[i]]; n > 0 {
				p.ByLevel = append(p.ByLevel, htmlCount{Name: pol.Levels[i], Count: n})
			}
		}
	}
	for _, f := range h.files {
		if f.Count > 0 {
			p.FileList = append(p.FileList, f)
		}
	}
	if d := h.sp.destination; d != nil {
		hd := &htmlDestination{Name: d.Name, Policy: h.sp.policy.Name, NotScanned: rep.unreadable()}
		for _, f := range h.files {
			if f.Decision == nil {
				continue
			}
			switch f.Decision.Action {
			case policies.ActionAllow:
				hd.Allowed++
			case policies.ActionRedact:
				hd.Redact++
			case policies.ActionBlock:
				hd.Blocked++
			}
			if f.Decision.Action != policies.ActionAllow || len(f.Decision.Reasons) > 0 {
				hd.Files = append(hd.Files, htmlFile{Path: f.Path, Decision: f.Decision, Commit: f.Commit})
			}
		}
		p.Destination = hd
	}
	return p
}

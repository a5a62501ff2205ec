package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
)

// runScanGitFormats runs scan git with args in JSON and in HTML and
// returns both reports; both must exit with code.
func runScanGitFormats(t *testing.T, code int, args ...string) (jsonOut, htmlOut []byte) {
	t.Helper()
	for _, format := range []string{"json", "html"} {
		var out, errOut bytes.Buffer
		got := run(context.Background(), append([]string{"scan", "git", "--format", format}, args...), strings.NewReader(""), &out, &errOut)
		if got != code {
			t.Fatalf("scan git --format %s: exit %d, want %d: %s", format, got, code, errOut.String())
		}
		if format == "json" {
			jsonOut = out.Bytes()
		} else {
			htmlOut = out.Bytes()
		}
	}
	return jsonOut, htmlOut
}

// TestHTMLScanGitPage: scan git's page shows the JSON report's counts,
// names the commit, author and date of each file diff with findings (or
// says it is staged), shows the decisions with their commits, and holds no
// raw value nor foreign markup.
func TestHTMLScanGitPage(t *testing.T) {
	isolateGit(t)
	r := buildHistory(t)
	c := r.commits
	tests := []struct {
		name    string
		args    []string
		decided bool
		// commits whose file diffs have findings, with their authors.
		commits map[string]string
		staged  bool
	}{
		{"history", []string{r.dir}, false, map[string]string{"c1": annAuthor, "c2": bobAuthor, "c3": annAuthor, "c5": bobAuthor, "c6": annAuthor}, false},
		{"destination", []string{"--destination", "openai", "--allow-unscanned", "--since", c["c1"], r.dir}, true, map[string]string{"c2": bobAuthor, "c3": annAuthor, "c5": bobAuthor, "c6": annAuthor}, false},
		{"staged", []string{"--staged", r.dir}, false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			js, page := runScanGitFormats(t, 1, tt.args...)
			ids, dets := wantScanCounts(t, js, tt.decided)
			if ids["findings"] == 0 {
				t.Fatalf("the history gives no finding: %v", ids)
			}
			pageShowsCounts(t, page, ids, dets)
			if !bytes.Contains(page, []byte("<h1>aishield scan git report</h1>")) || !bytes.Contains(page, []byte("file diffs scanned")) {
				t.Error("the page does not say it reports file diffs of scan git")
			}
			for name, author := range tt.commits {
				meta := fmt.Sprintf(`commit <code data-commit="%s">%s</code> · %s · `, c[name], shortHash(c[name]), author)
				if !bytes.Contains(page, []byte(meta)) {
					t.Errorf("commit %s by %s is not shown (%q)", name, author, meta)
				}
			}
			if n := bytes.Count(page, []byte(`data-commit="`)); n != len(tt.commits) {
				t.Errorf("%d file diffs name their commit, want %d", n, len(tt.commits))
			}
			if got := bytes.Contains(page, []byte("staged, not committed")); got != tt.staged {
				t.Errorf("staged shown %v, want %v", got, tt.staged)
			}
			if tt.decided {
				// The decisions table names each file diff's commit too.
				dec := page[bytes.Index(page, []byte(`id="decisions"`)):]
				dec = dec[:bytes.Index(dec, []byte("</table>"))]
				if !bytes.Contains(dec, []byte("commit <code>"+shortHash(c["c2"])+"</code>")) {
					t.Error("the decisions do not name the commits")
				}
			}
			for _, v := range []string{gitToken, gitEmail} {
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

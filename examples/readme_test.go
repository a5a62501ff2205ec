package examples

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// The README and docs/ show code and facts that live elsewhere; these tests
// keep them from drifting: the README's Go code is the marked regions of the
// examples, word for word; every relative link resolves; the detector and
// signal tables list what the packages have.

var (
	fenceRE  = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```\n")
	regionRE = regexp.MustCompile(`(?ms)^// README:begin\n(.*?)^// README:end\n`)
	linkRE   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeRE   = regexp.MustCompile("`[^`\n]*`")
)

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// docs returns README.md and docs/*.md, relative to the repository root.
func docs(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{filepath.Join("..", "README.md")}, files...)
}

// TestReadmeGoBlocks checks that every go block of the README is the
// README-marked region of an example (whose tests run it), and that every
// marked region is shown.
func TestReadmeGoBlocks(t *testing.T) {
	sources, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	regions := map[string]string{} // region text → file
	for _, f := range sources {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src := read(t, f)
		if strings.Count(src, "// README:begin") != strings.Count(src, "// README:end") {
			t.Errorf("%s: unbalanced README markers", f)
		}
		for _, m := range regionRE.FindAllStringSubmatch(src, -1) {
			regions[strings.Trim(m[1], "\n")+"\n"] = f
		}
	}
	if len(regions) == 0 {
		t.Fatal("no README-marked region in examples/*/*.go")
	}
	shown := map[string]bool{}
	blocks := 0
	for _, m := range fenceRE.FindAllStringSubmatch(read(t, filepath.Join("..", "README.md")), -1) {
		if m[1] != "go" {
			continue
		}
		blocks++
		if _, ok := regions[m[2]]; !ok {
			t.Errorf("README go block %d is no marked region of an example:\n%s", blocks, m[2])
			continue
		}
		shown[m[2]] = true
	}
	for r, f := range regions {
		if !shown[r] {
			t.Errorf("%s: its README region is not in README.md:\n%s", f, r)
		}
	}
}

// slug is GitHub's anchor for a heading.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ' || r == '-':
			b.WriteRune('-')
		case r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 0x7f:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the heading anchors of a Markdown document.
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	doc = fenceRE.ReplaceAllString(doc, "")
	for _, line := range strings.Split(doc, "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			out[slug(h)] = true
		}
	}
	return out
}

// TestDocLinks checks that every relative link of README.md and docs/*.md
// points to a file of the repository, and an anchor in a Markdown file to
// one of its headings.
func TestDocLinks(t *testing.T) {
	n := 0
	for _, doc := range docs(t) {
		text := read(t, doc)
		prose := codeRE.ReplaceAllString(fenceRE.ReplaceAllString(text, ""), "")
		for _, m := range linkRE.FindAllStringSubmatch(prose, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			file := doc
			if path != "" {
				file = filepath.Join(filepath.Dir(doc), filepath.FromSlash(path))
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: link %q: %v", doc, target, err)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchors(read(t, file))[anchor] {
				t.Errorf("%s: link %q: %s has no heading #%s", doc, target, file, anchor)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d relative links checked", n)
	}
}

// tableColumn returns the first cells of the rows of the Markdown tables
// whose header row starts with header (all of them: a long list may be
// split into tables by topic), without their backquotes.
func tableColumn(t *testing.T, doc, header string) map[string][]string {
	t.Helper()
	if !strings.Contains(doc, "\n"+header) {
		t.Fatalf("no table headed %q", header)
	}
	rows := map[string][]string{}
	for _, part := range strings.Split(doc, "\n"+header)[1:] {
		for _, line := range strings.Split(part, "\n")[2:] {
			if !strings.HasPrefix(line, "|") {
				break
			}
			cells := strings.Split(line, "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			rows[strings.Trim(cells[1], "`")] = cells[2:]
		}
	}
	return rows
}

// TestDocTables checks the README's detector families and inbound signals,
// and docs/detectors.md's and docs/inbound.md's tables, against the
// packages.
func TestDocTables(t *testing.T) {
	readme := read(t, filepath.Join("..", "README.md"))
	perFamily := map[string]int{}
	var ids []string
	for _, d := range classifiers.Builtins() {
		family, _, _ := strings.Cut(d.ID, ".")
		perFamily[family+".*"]++
		ids = append(ids, d.ID)
	}
	families := tableColumn(t, readme, "| family | detectors |")
	for family, n := range perFamily {
		if row, ok := families[family]; !ok || row[0] != fmt.Sprint(n) {
			t.Errorf("README: family %s should show %d detectors, shows %v", family, n, row)
		}
	}
	listed := tableColumn(t, read(t, filepath.Join("..", "docs", "detectors.md")), "| ID |")
	for _, id := range ids {
		if _, ok := listed[id]; !ok {
			t.Errorf("docs/detectors.md does not list %s", id)
		}
	}
	for id := range listed {
		if !slices.Contains(ids, id) {
			t.Errorf("docs/detectors.md lists %s, which is no built-in detector", id)
		}
	}
	if total := strings.Count(read(t, filepath.Join("..", "docs", "detectors.md")), fmt.Sprintf("%d built-in detectors", len(ids))); total == 0 {
		t.Errorf("docs/detectors.md does not say %d built-in detectors", len(ids))
	}

	for _, c := range []struct{ doc, header string }{
		{readme, "| signal | fires when |"},
		{read(t, filepath.Join("..", "docs", "inbound.md")), "| signal | fires when |"},
	} {
		rows := tableColumn(t, c.doc, c.header)
		var got []string
		for id := range rows {
			got = append(got, id)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(policies.Signals()))
		if !slices.Equal(got, want) {
			t.Errorf("signal table %q lists %v, want %v", c.header, got, want)
		}
	}
}

package main

import (
	"encoding/json"
	"path"
	"strings"
	"testing"

	"github.com/aishield/aishield/classifiers"
)

func TestIgnoreMatcher(t *testing.T) {
	t.Parallel()
	rules := strings.Join([]string{
		"# comment",
		"",
		"*.log",
		"!keep.log",
		"fixtures/",
		"/build",
		"docs/**/draft-?.md",
		"**/secrets/*.env",
		"a/**",
		`\#literal`,
		"trailing   ",
		"[ab]x.txt",
	}, "\n")
	m, err := parseIgnore("rules", rules)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path  string
		dir   bool
		want  bool
		about string
	}{
		{"app.log", false, true, "glob at the root"},
		{"x/y/app.log", false, true, "a pattern without / matches at any depth"},
		{"keep.log", false, false, "! re-includes"},
		{"x/keep.log", false, false, "! re-includes at any depth"},
		{"fixtures", true, true, "dir-only pattern, a directory"},
		{"fixtures", false, false, "dir-only pattern, a file"},
		{"src/fixtures/a.txt", false, true, "inside an ignored directory"},
		{"build", true, true, "anchored"},
		{"build/out.txt", false, true, "inside an anchored directory"},
		{"src/build", false, false, "anchored: not below the root"},
		{"docs/draft-1.md", false, true, "** matches zero segments"},
		{"docs/a/b/draft-2.md", false, true, "** matches several segments"},
		{"docs/draft-10.md", false, false, "? is one character"},
		{"x/secrets/prod.env", false, true, "leading **/"},
		{"secrets/prod.env", false, true, "leading **/ at the root"},
		{"a/b/c", false, true, "trailing /**"},
		{"#literal", false, true, `escaped #`},
		{"trailing", false, true, "trailing spaces trimmed"},
		{"bx.txt", false, true, "character class"},
		{"cx.txt", false, false, "character class, no match"},
		{"notes.txt", false, false, "no rule"},
		{"logs.txt", false, false, "*.log is not a prefix"},
	}
	for _, c := range cases {
		if got := m.ignored(c.path, c.dir); got != c.want {
			t.Errorf("%s (dir %v): ignored %v, want %v (%s)", c.path, c.dir, got, c.want, c.about)
		}
	}
	var none *ignoreMatcher
	if none.ignored("a", false) {
		t.Error("a nil matcher ignores")
	}
}

func TestParseIgnoreErrors(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"ok\n[unbalanced", "x/[a-/y", `tail\`} {
		_, err := parseIgnore("f", text)
		if err == nil || !strings.HasPrefix(err.Error(), "f:") || strings.Contains(err.Error(), "unbalanced\n") {
			t.Errorf("parseIgnore(%q) = %v", text, err)
		}
	}
}

// globRef matches path segments against pattern segments by plain
// recursion (exponential, fine for short inputs): the reference of
// globSegs.
func globRef(pat, segs []string) bool {
	if len(pat) == 0 {
		return len(segs) == 0
	}
	if pat[0] == "**" {
		for k := 0; k <= len(segs); k++ {
			if globRef(pat[1:], segs[k:]) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	ok, _ := pathMatch(pat[0], segs[0])
	return ok && globRef(pat[1:], segs[1:])
}

func FuzzIgnore(f *testing.F) {
	f.Add("*.log\n!keep.log\nfixtures/\n/build\n**/x/**/y", "a/x/b/y/c.log", true)
	f.Add("[a-c]?/**", "b1/z", false)
	f.Fuzz(func(t *testing.T, rules, path string, dir bool) {
		m, err := parseIgnore("f", rules)
		if err != nil {
			if strings.Contains(err.Error(), rules) && len(rules) > 8 {
				t.Fatalf("error quotes the rules: %v", err)
			}
			return
		}
		segs := strings.Split(path, "/")
		if len(segs) > 8 {
			return
		}
		for _, r := range m.rules {
			if len(r.segs) <= 8 && globSegs(r.segs, segs) != globRef(r.segs, segs) {
				t.Fatalf("globSegs(%q, %q) disagrees with the reference", r.segs, segs)
			}
		}
		_ = m.ignored(path, dir)
	})
}

func TestSuppressInline(t *testing.T) {
	t.Parallel()
	text := "a = 1 # aishield:allow\nb = 2\n<!-- aishield:allow -->\nc\n-----BEGIN\nkey // aishield:allow\n"
	fs := []classifiers.Finding{
		{Detector: "x", Line: 1, EndLine: 1},
		{Detector: "y", Line: 2, EndLine: 2},
		{Detector: "z", Line: 3, EndLine: 3},
		{Detector: "w", Line: 4, EndLine: 4},
		{Detector: "pem", Line: 5, EndLine: 6},
	}
	got, n := suppressInline(text, fs)
	if n != 3 || len(got) != 2 || got[0].Detector != "y" || got[1].Detector != "w" {
		t.Fatalf("kept %+v, suppressed %d", got, n)
	}
	if got, n := suppressInline("nothing", []classifiers.Finding{{Line: 1, EndLine: 1}}); n != 0 || len(got) != 1 {
		t.Fatal("suppressed without a marker")
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	f := classifiers.Finding{Detector: "secret.github_token", Hash: "abc", Start: 3, Line: 1}
	moved := f
	moved.Start, moved.Line = 300, 20
	other := f
	other.Detector = "secret.generic"
	a := findingFingerprint("repo/a.txt", f)
	if !isFingerprint(a) {
		t.Fatalf("fingerprint %q", a)
	}
	if findingFingerprint("repo/a.txt", moved) != a {
		t.Error("a value that moves within its file changes fingerprint")
	}
	if findingFingerprint("repo/b.txt", f) == a || findingFingerprint("repo/a.txt", other) == a {
		t.Error("path or detector not in the fingerprint")
	}
	g := f
	g.Hash = "abd"
	if findingFingerprint("repo/a.txt", g) == a {
		t.Error("value hash not in the fingerprint")
	}
}

func TestParseBaseline(t *testing.T) {
	t.Parallel()
	fp1, fp2 := strings.Repeat("a1", 16), strings.Repeat("0f", 16)
	report, _ := json.Marshal(map[string]any{"files": []any{map[string]any{"path": "a", "findings": []any{map[string]any{"detector": "x", "fingerprint": fp1}, map[string]any{"fingerprint": fp2}}}}})
	cases := []struct {
		name, data string
		want       []string
		err        string
	}{
		{"report", string(report), []string{fp1, fp2}, ""},
		{"array", `["` + fp1 + `"]`, []string{fp1}, ""},
		{"lines", "# c\n\n" + fp1 + "\n" + fp2 + "\r\n", []string{fp1, fp2}, ""},
		{"empty", "  \n", nil, ""},
		{"unkeyed report", `{"files":[{"findings":[{"detector":"x"}]}]}`, nil, "no fingerprint"},
		{"bad json", `{"files":`, nil, "invalid JSON"},
		{"bad element", `["` + fp1 + `", "nope"]`, nil, "element 1"},
		{"upper case", strings.ToUpper(fp1), nil, "line 1"},
		{"bad line", fp1 + "\nghp_secretvalue", nil, "line 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := parseBaseline([]byte(c.data))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				if strings.Contains(err.Error(), "ghp_") || strings.Contains(err.Error(), "nope") {
					t.Fatalf("error quotes the file: %v", err)
				}
				return
			}
			if err != nil || len(b) != len(c.want) {
				t.Fatalf("baseline %v, err %v", b, err)
			}
			for _, w := range c.want {
				if !b[w] {
					t.Errorf("%s missing", w)
				}
			}
		})
	}
}

func FuzzBaseline(f *testing.F) {
	f.Add([]byte(`{"files":[{"findings":[{"fingerprint":"` + strings.Repeat("ab", 16) + `"}]}]}`))
	f.Add([]byte(`["` + strings.Repeat("ab", 16) + `"]`))
	f.Add([]byte("# x\n" + strings.Repeat("ab", 16)))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := parseBaseline(data)
		if err != nil {
			if len(data) > 40 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("error quotes the input: %v", err)
			}
			return
		}
		for fp := range b {
			if !isFingerprint(fp) {
				t.Fatalf("accepted %q", fp)
			}
		}
	})
}

var pathMatch = path.Match

package policies

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestLintPositions: every diagnostic carries the line and column of its
// field, in YAML (block and flow), JSON and TOML; whole-file problems
// are at line 1, column 1 unless the parser names a line.
func TestLintPositions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, format, src string
		want              []string // code@line:column
	}{
		{"yaml block", "yaml", "levels: [public, internal]\ndefault:\n  max_level: secret\ndestinations:\n  - name: x\n    provider: openai\n    max_level: internal\n    Colour: blue\n",
			[]string{"undeclared-level@3:3", "unknown-field@8:5"}},
		{"yaml flow", "yaml", "levels: [a]\ndestinations:\n  - {name: x, provider: p, max_level: zz}\n",
			[]string{"undeclared-level@3:28"}},
		{"missing field at its parent", "yaml", "levels: [a]\ndestinations:\n  - name: x\n    provider: p\n",
			[]string{"required@3:5"}},
		{"type error and the rest", "yaml", "levels: [a]\ndestinations:\n  - name: x\n    provider: p\n    max_level: zz\n    max_input_tokens: many\n",
			[]string{"undeclared-level@5:5", "invalid-type@6:5"}},
		{"lint rule", "yaml", "levels: [public, internal, secret]\ndefault: {max_level: secret}\n",
			[]string{"open-default@2:11"}},
		{"json", "json", "{\n  \"levels\": [\"a\"],\n  \"destinations\": [\n    {\"name\": \"x\", \"provider\": \"p\", \"max_level\": \"zz\"}\n  ]\n}\n",
			[]string{"undeclared-level@4:36"}},
		{"toml", "toml", "levels = [\"a\"]\n[[destinations]]\nname = \"x\"\nprovider = \"p\"\nmax_level = \"zz\"\n",
			[]string{"undeclared-level@5:1"}},
		{"toml tables", "toml", "levels = [\"a\", \"b\"]\n\n[[destinations]]\nname = \"x\"\nprovider = \"p\"\nmax_level = \"a\"\n\n[[destinations]]\n  name = \"y\"\n  provider = \"q\"\n  max_level = \"zz\"\n  [destinations.quarantine]\n  colour = \"red\"\n[redaction]\nstyle = 'blur'\n",
			[]string{"undeclared-level@11:3", "unknown-field@13:3", "unknown-redaction-style@15:1"}},
		{"toml multi-line", "toml", "levels = [\n  \"a\",\n  \"b = c\",\n]\nnote = \"\"\"\nmax_level = 1\n\"\"\"\n[default]\nmax_level = \"zz\"\n",
			[]string{"invalid-value@1:1", "unknown-field@5:1", "undeclared-level@9:1"}},
		{"yaml syntax", "yaml", "levels: [a]\ndefault:\n  max_level: a\n bad: [\n",
			[]string{"syntax@3:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := lintData(context.Background(), []byte(tt.src), tt.format, "p."+tt.format, LintOptions{})
			var got []string
			for _, d := range ds {
				got = append(got, fmt.Sprintf("%s@%d:%d", d.Code, d.Line, d.Column))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v\n%v", got, tt.want, ds)
			}
		})
	}
}

// TestLintPreset: a preset's diagnostics are placed in its YAML.
func TestLintPreset(t *testing.T) {
	t.Parallel()
	for _, name := range Presets() {
		for _, d := range LintPreset(context.Background(), name, LintOptions{}) {
			if d.Line < 1 || d.Column < 1 || d.File != "preset:"+name {
				t.Errorf("preset %s: %+v", name, d)
			}
		}
	}
	if ds := LintPreset(context.Background(), "nope", LintOptions{}); len(ds) != 1 || ds[0].Code != "io" {
		t.Errorf("unknown preset: %v", ds)
	}
}

// FuzzPositions: mapping fields to positions never panics, and every
// position is inside the file (a line that exists, a column at least 1);
// linting any input places every diagnostic.
func FuzzPositions(f *testing.F) {
	for _, name := range Presets() {
		src, _ := PresetSource(name)
		f.Add(src, "destinations[1].max_level", uint8(0))
	}
	f.Add([]byte("a: &x [*x]\n"), "a[0]", uint8(0))
	f.Add([]byte(`{"levels": ["a"], "default": {"max_level": "b"}}`), "default.max_level", uint8(1))
	f.Add([]byte("levels:\n\t- a\n"), "levels[0]", uint8(0))
	f.Add([]byte("? [a]\n: b\n"), "[a]", uint8(0))
	formats := []string{"yaml", "json", "toml"}
	f.Fuzz(func(t *testing.T, data []byte, field string, fi uint8) {
		format := formats[int(fi)%len(formats)]
		lines := bytes.Count(data, []byte("\n")) + 1
		ps := positionsOf(data, format)
		for k, p := range ps {
			if p.Line < 1 || p.Line > lines || p.Column < 1 {
				t.Fatalf("field %q at %d:%d, outside %d lines", k, p.Line, p.Column, lines)
			}
		}
		if p := ps.lookup(field); p.Line < 1 || p.Column < 1 || p.Line > lines {
			t.Fatalf("lookup(%q) = %+v", field, p)
		}
		for _, d := range lintData(context.Background(), data, format, "f", LintOptions{ProbeTimeout: 5e6}) {
			if d.Line < 1 || d.Column < 1 {
				t.Fatalf("diagnostic without a position: %+v", d)
			}
		}
	})
}

// TestDiscover: the policy file is looked for from a directory up to the
// repository root (a .git directory or file), or the file system root.
func TestDiscover(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(path, content string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if content != "" {
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("above.yaml", "x")
	mk(".aishield.yaml", "outside every repository")
	mk("repo/.git/HEAD", "ref")
	mk("repo/aishield.yaml", "repo")
	mk("repo/a/b/c/.keep", "x")
	mk("repo/a/.aishield.toml", "a")
	mk("repo/a/aishield.yaml", "a, plain name")
	mk("wt/.git", "gitdir: elsewhere") // a worktree: .git is a file
	mk("wt/sub/.keep", "x")
	mk("bad/.aishield.yaml/.keep", "x") // a directory by that name
	for _, tt := range []struct {
		from, want string
		err        bool
	}{
		{"repo/a/b/c", "repo/a/.aishield.toml", false},
		{"repo/a", "repo/a/.aishield.toml", false},
		{"repo", "repo/aishield.yaml", false},
		{"wt/sub", "", false}, // stops at the worktree's root
		{"", ".aishield.yaml", false},
		{"bad", "", true},
	} {
		got, err := Discover(filepath.Join(root, tt.from))
		want := ""
		if tt.want != "" {
			want = filepath.Join(root, tt.want)
		}
		if got != want || (err != nil) != tt.err {
			t.Errorf("Discover(%s) = %q, %v; want %q, error %v", tt.from, got, err, want, tt.err)
		}
	}
}

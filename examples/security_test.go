package examples

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// testFuncRE finds the test and fuzz functions of a Go test file.
var testFuncRE = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)\w+)\(`)

// TestSecurityCases keeps docs/security.md true: every case of the table
// names regression tests that exist, every TestHardeningNN test of the
// repository is listed under its case NN, and every fuzz target it names
// exists.
func TestSecurityCases(t *testing.T) {
	funcs := map[string]string{} // test or fuzz function -> file
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFuncRE.FindAllStringSubmatch(string(data), -1) {
			funcs[m[1]] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := read(t, filepath.Join("..", "docs", "security.md"))
	rows := tableColumn(t, doc, "| case | tried | held | tests |")
	listed := map[string]string{} // test -> case
	for n := 1; n <= 17; n++ {
		row, ok := rows[fmt.Sprint(n)]
		if !ok {
			t.Errorf("docs/security.md: no row for case %d", n)
			continue
		}
		names := codeRE.FindAllString(row[2], -1) // tried, held, tests
		if len(names) == 0 {
			t.Errorf("docs/security.md: case %d names no test", n)
		}
		for _, name := range names {
			name = strings.Trim(name, "`")
			if _, ok := funcs[name]; !ok {
				t.Errorf("docs/security.md: case %d names %s, which no test file defines", n, name)
			}
			listed[name] = fmt.Sprint(n)
		}
	}
	for name := range funcs {
		var nn int
		if _, err := fmt.Sscanf(strings.TrimPrefix(name, "TestHardening"), "%02d", &nn); err != nil || !strings.HasPrefix(name, "TestHardening") {
			continue
		}
		if c, ok := listed[name]; !ok || c != fmt.Sprint(nn) {
			t.Errorf("%s (%s) is not listed under case %d of docs/security.md", name, funcs[name], nn)
		}
	}
	i := strings.Index(doc, "native fuzz target")
	if i < 0 {
		t.Fatal("docs/security.md does not list the fuzz targets")
	}
	end := strings.Index(doc[i:], "\n\n")
	var fuzz []string
	for _, name := range codeRE.FindAllString(doc[i:i+end], -1) {
		name = strings.Trim(name, "`")
		fuzz = append(fuzz, name)
		if _, ok := funcs[name]; !ok || !strings.HasPrefix(name, "Fuzz") {
			t.Errorf("docs/security.md lists fuzz target %s, which no test file defines", name)
		}
	}
	if len(fuzz) == 0 {
		t.Error("docs/security.md lists no fuzz target")
	}
}

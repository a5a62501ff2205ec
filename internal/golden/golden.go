// Package golden compares test output with files under testdata, for the
// tests of the packages that keep golden files. Run the tests with -update
// to rewrite the files, then review git diff.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of the test binaries that import this package.
var update = flag.Bool("update", false, "rewrite golden files")

// Check compares got with testdata/name, or rewrites that file with
// -update. A difference fails the test with both versions.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

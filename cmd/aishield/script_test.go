package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the testscript scripts under testdata/script run the real
// aishield command in a subprocess as "aishield".
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"aishield": func() { os.Exit(runMain()) },
	})
}

// TestScripts runs every testdata/script/*.txtar file: each is a small shell
// session with the files it needs and the output it expects.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: false,
	})
}

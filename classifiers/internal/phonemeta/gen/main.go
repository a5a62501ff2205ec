// Command gen writes classifiers/phonemeta_gen.go (run by go generate in
// the classifiers package directory).
package main

import (
	"fmt"
	"os"

	"github.com/aishield/aishield/classifiers/internal/phonemeta"
)

func main() {
	src, err := phonemeta.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(phonemeta.FileName, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

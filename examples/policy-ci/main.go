// Command policy-ci does in Go what the example workflow (workflow.yml)
// does with the CLI: lint the team's policy and run its test cases, exiting
// like `aishield policy test` (0 pass, 1 error, 2 failure).
//
//	go run ./examples/policy-ci examples/policy-ci/aishield
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/policies/policytest"
)

func main() {
	dir := "aishield"
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	os.Exit(run(context.Background(), dir, os.Stdout, os.Stderr))
}

func run(ctx context.Context, dir string, stdout, stderr io.Writer) int {
	diags := policies.LintFile(ctx, filepath.Join(dir, "policy.yaml"), policies.LintOptions{})
	errs := 0
	for _, d := range diags {
		fmt.Fprintln(stdout, d)
		if d.Severity == policies.SeverityError {
			errs++
		}
	}
	if errs > 0 {
		return 1
	}
	rep, err := policytest.Run(ctx, []string{dir}, policytest.Options{})
	if err != nil {
		fmt.Fprintln(stderr, "policy-ci:", err)
		return 1
	}
	if err := rep.WritePretty(stdout, true); err != nil {
		fmt.Fprintln(stderr, "policy-ci:", err)
		return 1
	}
	return rep.ExitCode()
}

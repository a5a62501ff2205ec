// Command aishield keeps an organisation's data where it belongs when it
// talks to AI providers: it scans and redacts what leaves, verifies what comes
// back, and ships a local paged-KV-cache server that reproduces the 2026
// cross-tenant leak so a setup can be proven to catch it.
//
// The command is a thin layer over the packages of this module; every
// subcommand is built by a constructor in this directory and registered in
// newRootCmd.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() { os.Exit(runMain()) }

// runMain runs the command line of the process. SIGINT and SIGTERM cancel
// the context every command runs under, and commands stop promptly (a
// read waiting on a pipe or a terminal included); once one has arrived the
// handler is removed, so a second signal ends the process at once.
func runMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop)
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// exitError carries a process exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err so that run exits with code. A nil err with a non-zero
// code exits silently with that code (the command has already reported).
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// run executes the CLI and returns the process exit code: 0 success, 1 when a
// command reports a finding or failure of the checked thing, 2 on usage or
// input errors.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmdFor(args, stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "aishield:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "aishield:", err)
	return 2
}

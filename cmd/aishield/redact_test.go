package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aishield/aishield/sdk"
)

// TestRedactRestorePipe runs "redact --vault v | restore --vault v" as a
// shell runs a pipe: both commands at once, restore first, with a vault
// left by an earlier run in place. Restore must wait for its input (and so
// for the vault redact writes before its output) and restore this run's
// values, not fail on a missing vault or read the stale one.
func TestRedactRestorePipe(t *testing.T) {
	t.Parallel()
	const doc = "Write to quentin.arnaud@sfr.fr or call +33 6 12 34 56 78 about the invoice.\n"
	for _, stale := range []bool{false, true} {
		vault := filepath.Join(t.TempDir(), "v.json")
		if stale {
			old, err := sdk.ReadVault(strings.NewReader(`{"version":1,"placeholders":{"[[PII_EMAIL_00000000]]":"old@example.org"}}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := writeVault(vault, old); err != nil {
				t.Fatal(err)
			}
		}
		pr, pw := io.Pipe()
		var out, restoreErr, redactErr bytes.Buffer
		done := make(chan int, 1)
		go func() {
			code := run(context.Background(), []string{"restore", "--vault", vault}, pr, &out, &restoreErr)
			pr.Close() // a restore that gave up must not leave redact blocked
			done <- code
		}()
		time.Sleep(20 * time.Millisecond) // let restore start first, as it may in a shell
		code := run(context.Background(), []string{"redact", "--policy", "default", "--destination", "openai", "--vault", vault},
			strings.NewReader(doc), pw, &redactErr)
		pw.Close()
		restoreCode := <-done
		if code != 0 {
			t.Fatalf("redact exited %d: %s; restore exited %d: %s", code, redactErr.String(), restoreCode, restoreErr.String())
		}
		if code := restoreCode; code != 0 || out.String() != doc {
			t.Errorf("stale vault %v: restore exited %d with %q (%s), want the original text", stale, code, out.String(), restoreErr.String())
		}
		if fi, err := os.Stat(vault); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("vault mode %v, %v", fi.Mode(), err)
		}
		if tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(vault), ".*tmp")); len(tmps) > 0 {
			t.Errorf("temporary files left: %v", tmps)
		}
	}

	// Nothing on standard input and no vault (redact refused the text):
	// a clear error, exit 2.
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"restore", "--vault", filepath.Join(t.TempDir(), "none.json")}, strings.NewReader(""), &out, &errb)
	if code != 2 || !strings.Contains(errb.String(), "did redact refuse the text?") {
		t.Errorf("restore without input nor vault: exit %d, %q", code, errb.String())
	}
}

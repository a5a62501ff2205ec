//go:build unix

package sdk_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aishield/aishield/sdk"
)

// TestHardening12OpenAuditLogSpecialFiles: the trail is appended to a
// regular file only; a FIFO (which would hold the reading of its last
// line forever), a device and a directory are refused at once.
func TestHardening12OpenAuditLogSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, os.DevNull, dir} {
		if _, _, err := sdk.OpenAuditLog(p); err == nil {
			t.Errorf("%s: opened as an audit trail", p)
		}
	}
	if st, err := os.Lstat(fifo); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the FIFO was replaced: %v %v", st.Mode(), err)
	}
}

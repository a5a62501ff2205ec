//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const redactDoc = "Write to quentin.arnaud@sfr.fr about the invoice.\n"

// TestHardening12VaultPath: redact --vault writes only to a regular file
// or a new path. A FIFO, a symlink (to a file or to /dev/null) and a
// device are refused with exit 2, nothing on standard output, and the path
// is left as it was; a regular vault is replaced by a 0600 file.
func TestHardening12VaultPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "target.json")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	nullLink := filepath.Join(dir, "null.json")
	if err := os.Symlink(os.DevNull, nullLink); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	rows := []struct{ name, path, kind string }{
		{"fifo", fifo, "named pipe"},
		{"symlink to a file", link, "symbolic link"},
		{"symlink to /dev/null", nullLink, "symbolic link"},
		{"directory", sub, "directory"},
		{"/dev/null", os.DevNull, "character device"},
	}
	// A copy of /dev/null's device node (major 1, minor 3) where this
	// process may make one (root): the reproduction.
	node := filepath.Join(dir, "null-node")
	if err := syscall.Mknod(node, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		rows = append(rows, struct{ name, path, kind string }{"device node", node, "character device"})
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			before, err := os.Lstat(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"redact", "--vault", tc.path}, strings.NewReader(redactDoc), &out, &errb)
			if code != 2 || out.Len() > 0 || !strings.Contains(errb.String(), "refusing to write") || !strings.Contains(errb.String(), tc.kind) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2, nothing written, a refusal naming %s", code, out.String(), errb.String(), tc.kind)
			}
			after, err := os.Lstat(tc.path)
			if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
				t.Errorf("%s changed: %v -> %v (%v)", tc.path, before.Mode(), after.Mode(), err)
			}
		})
	}
	if data, _ := os.ReadFile(target); string(data) != "keep me" {
		t.Errorf("the symlink's target was written: %q", data)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".*tmp")); len(tmps) > 0 {
		t.Errorf("temporary files left: %v", tmps)
	}

	// A regular file is replaced (a new inode, 0600), a new path created.
	for _, p := range []string{target, filepath.Join(dir, "new.json")} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{"redact", "--vault", p}, strings.NewReader(redactDoc), &out, &errb); code != 0 {
			t.Fatalf("regular vault %s: exit %d: %s", p, code, errb.String())
		}
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
			t.Errorf("vault %s: %v, %v; want a regular 0600 file", p, st.Mode(), err)
		}
		if data, _ := os.ReadFile(p); !bytes.Contains(data, []byte("placeholders")) {
			t.Errorf("vault %s holds %q", p, data)
		}
	}
}

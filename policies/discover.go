package policies

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ConfigNames are the names of the policy file Discover looks for in each
// directory, in order of preference.
func ConfigNames() []string {
	return []string{
		".aishield.yaml", ".aishield.yml", ".aishield.json", ".aishield.toml",
		"aishield.yaml", "aishield.yml", "aishield.json", "aishield.toml",
	}
}

// Discover looks for a policy file named as [ConfigNames] says in dir,
// then in each parent of dir, and stops after the repository root (the
// first directory holding a .git entry, a directory or, for worktrees and
// submodules, a file) or at the file system root. It returns the path of
// the first regular file found, "" when there is none. A candidate that
// exists but is not a regular file (a directory, a FIFO) is an error, as
// is a directory that cannot be read.
func Discover(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		for _, name := range ConfigNames() {
			p := filepath.Join(dir, name)
			st, err := os.Stat(p)
			switch {
			case err == nil && st.Mode().IsRegular():
				return p, nil
			case err == nil:
				return "", fmt.Errorf("policy file %s is not a regular file", p)
			case !errors.Is(err, fs.ErrNotExist):
				return "", fmt.Errorf("looking for a policy file: %w", err)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			return "", nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

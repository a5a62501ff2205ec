package main

import (
	"fmt"
	"path"
	"strings"
)

// ignoreFileName is the ignore file read at the root of every directory
// scanned (and in the working directory for files named directly).
const ignoreFileName = ".aishieldignore"

// ignoreRule is one line of an ignore file.
type ignoreRule struct {
	segs     []string // glob segments; "**" matches any number of them
	negate   bool     // "!pattern" re-includes
	dirOnly  bool     // "pattern/" matches directories only
	anchored bool     // a "/" at the start or inside: relative to the root
}

// ignoreMatcher decides which paths under a root are ignored, with the
// syntax of .gitignore: blank lines and "#" comments skipped, "!"
// re-includes, a trailing "/" matches directories only, a pattern with a
// "/" at its start or inside is relative to the root and one without
// matches a name at any depth, "*", "?" and "[...]" match within a path
// segment and "**" across segments. The last matching rule decides. A
// nil *ignoreMatcher ignores nothing. Safe for concurrent use (never
// modified after parseIgnore).
type ignoreMatcher struct {
	rules []ignoreRule
}

// parseIgnore compiles the lines of an ignore file; name is used in
// errors, which quote the line number, not the pattern.
func parseIgnore(name, text string) (*ignoreMatcher, error) {
	m := &ignoreMatcher{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.HasSuffix(line, "\\ ") {
			line = strings.TrimRight(line[:len(line)-2], " ") + " "
		} else {
			line = strings.TrimRight(line, " \t")
		}
		if line == "" || line[0] == '#' {
			continue
		}
		var r ignoreRule
		if line[0] == '!' {
			r.negate = true
			line = line[1:]
		} else if line[0] == '\\' && len(line) > 1 && (line[1] == '#' || line[1] == '!') {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			r.dirOnly = true
			line = strings.TrimRight(line, "/")
		}
		if strings.Contains(line, "/") {
			r.anchored = true
			line = strings.TrimLeft(line, "/")
		}
		if line == "" {
			continue
		}
		for _, s := range strings.Split(line, "/") {
			if s == "" {
				continue
			}
			if s != "**" {
				if _, err := path.Match(s, ""); err != nil {
					return nil, fmt.Errorf("%s:%d: bad pattern (unbalanced [ or trailing \\)", name, i+1)
				}
			}
			r.segs = append(r.segs, s)
		}
		if !r.anchored {
			r.segs = append([]string{"**"}, r.segs...)
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

// ignored reports whether the slash-separated path rel (relative to the
// root, no leading "./") is ignored, itself or through one of its parent
// directories: a path inside an ignored directory cannot be re-included.
func (m *ignoreMatcher) ignored(rel string, isDir bool) bool {
	if m == nil || len(m.rules) == 0 {
		return false
	}
	segs := strings.Split(rel, "/")
	for i := 1; i < len(segs); i++ {
		if m.matchOne(segs[:i], true) {
			return true
		}
	}
	return m.matchOne(segs, isDir)
}

// matchOne applies the rules to one path, parents aside.
func (m *ignoreMatcher) matchOne(segs []string, isDir bool) bool {
	out := false
	for _, r := range m.rules {
		if r.negate != out || (r.dirOnly && !isDir) {
			continue // cannot change the outcome
		}
		if globSegs(r.segs, segs) {
			out = !r.negate
		}
	}
	return out
}

// globSegs matches path segments against pattern segments, "**"
// matching zero or more segments, in O(len(pat)·len(segs)).
func globSegs(pat, segs []string) bool {
	// ok[j] says pat[:i] matches segs[:j], row by row.
	ok := make([]bool, len(segs)+1)
	ok[0] = true
	for _, p := range pat {
		next := make([]bool, len(segs)+1)
		if p == "**" {
			any := false
			for j := range ok {
				any = any || ok[j]
				next[j] = any
			}
		} else {
			for j := 1; j <= len(segs); j++ {
				if ok[j-1] {
					if matched, _ := path.Match(p, segs[j-1]); matched {
						next[j] = true
					}
				}
			}
		}
		ok = next
	}
	return ok[len(segs)]
}

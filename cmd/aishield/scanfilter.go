package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/aishield/aishield/classifiers"
)

// allowMarker on a line suppresses the findings on that line, whatever
// the comment syntax around it (# aishield:allow, // aishield:allow,
// <!-- aishield:allow -->).
const allowMarker = "aishield:allow"

// maxBaselineSize bounds the baseline file read.
const maxBaselineSize = 64 << 20

// findingFingerprint identifies a finding across runs: the path as scanned
// (forward slashes), the detector ID and the keyed hash of the value,
// hashed together. The same value in two files, or found by two
// detectors, has two fingerprints; a value that moves within its file
// keeps its fingerprint. It is stable across runs only when the hash key
// is (AISHIELD_HASH_KEY).
func findingFingerprint(path string, f classifiers.Finding) string {
	h := sha256.New()
	h.Write([]byte(filepath.ToSlash(path)))
	h.Write([]byte{0})
	h.Write([]byte(f.Detector))
	h.Write([]byte{0})
	h.Write([]byte(f.Hash))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// allowedLines returns the 1-based numbers of the lines of text holding
// allowMarker, in one pass.
func allowedLines(text string) map[int]bool {
	var out map[int]bool
	line, from := 1, 0
	for {
		i := strings.Index(text[from:], allowMarker)
		if i < 0 {
			return out
		}
		line += strings.Count(text[from:from+i], "\n")
		if out == nil {
			out = map[int]bool{}
		}
		out[line] = true
		from += i + len(allowMarker)
	}
}

// suppressInline drops the findings on a line holding allowMarker (the
// first or the last line of a finding that spans several) and returns
// how many it dropped.
func suppressInline(text string, fs []classifiers.Finding) ([]classifiers.Finding, int) {
	if len(fs) == 0 || !strings.Contains(text, allowMarker) {
		return fs, 0
	}
	lines := allowedLines(text)
	out := fs[:0]
	n := 0
	for _, f := range fs {
		if lines[f.Line] || lines[f.EndLine] {
			n++
			continue
		}
		out = append(out, f)
	}
	return out, n
}

// baseline is a set of finding fingerprints to suppress.
type baseline map[string]bool

// errBaselineUnkeyed is a baseline whose findings carry no fingerprint:
// it was written without a hash key.
var errBaselineUnkeyed = errors.New("the baseline's findings have no fingerprint: write it with AISHIELD_HASH_KEY set, as the scan that reads it")

// parseBaseline reads a baseline: a "scan --format json" report (the
// fingerprint of each of its findings), a JSON array of fingerprints, or
// text with one fingerprint a line ("#" comments and blank lines
// skipped). Errors never quote the file's content.
func parseBaseline(data []byte) (baseline, error) {
	trimmed := bytes.TrimSpace(data)
	b := baseline{}
	switch {
	case len(trimmed) == 0:
		return b, nil
	case trimmed[0] == '{':
		var rep struct {
			Files []struct {
				Findings []struct {
					Fingerprint string `json:"fingerprint"`
				} `json:"findings"`
			} `json:"files"`
		}
		if err := json.Unmarshal(trimmed, &rep); err != nil {
			return nil, errors.New("not a scan JSON report (invalid JSON)")
		}
		missing := 0
		for _, f := range rep.Files {
			for _, x := range f.Findings {
				if x.Fingerprint == "" {
					missing++
					continue
				}
				if !isFingerprint(x.Fingerprint) {
					return nil, errors.New("a finding's fingerprint is not 32 hex digits")
				}
				b[x.Fingerprint] = true
			}
		}
		if missing > 0 {
			return nil, errBaselineUnkeyed
		}
	case trimmed[0] == '[':
		var list []string
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, errors.New("not a JSON array of fingerprints")
		}
		for i, fp := range list {
			if !isFingerprint(fp) {
				return nil, fmt.Errorf("element %d is not a fingerprint (32 hex digits)", i)
			}
			b[fp] = true
		}
	default:
		for i, line := range strings.Split(string(trimmed), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || line[0] == '#' {
				continue
			}
			if !isFingerprint(line) {
				return nil, fmt.Errorf("line %d is not a fingerprint (32 hex digits)", i+1)
			}
			b[line] = true
		}
	}
	return b, nil
}

func isFingerprint(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// loadBaseline reads the baseline file at path.
func loadBaseline(path string) (baseline, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("--baseline-path %s: not a regular file", path)
	}
	if st.Size() > maxBaselineSize {
		return nil, fmt.Errorf("--baseline-path %s: over %d MiB", path, maxBaselineSize>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxBaselineSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxBaselineSize {
		return nil, fmt.Errorf("--baseline-path %s: over %d MiB", path, maxBaselineSize>>20)
	}
	b, err := parseBaseline(data)
	if err != nil {
		return nil, fmt.Errorf("--baseline-path %s: %w", path, err)
	}
	return b, nil
}

// Package sarif writes scan findings as SARIF 2.1.0, the format GitHub code
// scanning reads: a rule per detector (with the policy's level when a
// policy is given), results with file, line and column spans, and never a
// value, not even a masked preview. A finding's keyed hash is published as
// a partial fingerprint only when asked (Options.Fingerprints), since a
// hash under a known key would let a reader confirm a guessed value.
package sarif

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
)

// File is one scanned file for Write.
type File struct {
	// Path is the file's path relative to the repository root; it is
	// written with forward slashes.
	Path string
	// Findings are the file's findings.
	Findings []classifiers.Finding
	// EndColumns, when not nil, holds the 1-based column (in code points)
	// just past each finding's last character (EndColumns[i] for
	// Findings[i]). Without it a finding on one line ends at its column
	// plus its length in bytes (exact for ASCII values), and one over
	// several lines at the start of the line after its last.
	EndColumns []int
	// Fingerprints, when not nil, holds a fingerprint per finding
	// (Fingerprints[i] for Findings[i]) that identifies it across runs;
	// written with Options.Fingerprints under FindingFingerprintKey.
	Fingerprints []string
	// Commit, when set, is the commit that added the file's findings
	// (aishield scan git): written in each result's properties and as the
	// commitSha partial fingerprint.
	Commit *Commit
}

// Commit names the commit of a File's findings.
type Commit struct {
	SHA, Author, Email, Date string
}

// NotScanned is a file that could not be scanned, with the reason.
type NotScanned struct {
	Path   string
	Reason string
}

// Options configures Write.
type Options struct {
	// ToolVersion is the aishield version written as the driver version.
	ToolVersion string
	// Policy, when set, gives each finding its level; Destination, when
	// also set, makes findings the destination may not receive errors and
	// the rest notes.
	Policy      *policies.Policy
	Destination *policies.Destination
	// Fingerprints publishes each finding's keyed hash as a partial
	// fingerprint, so code scanning tracks a value across runs. Set it only
	// when the hashes are keyed by a secret: with a known key, a reader of
	// the report could confirm a guessed low-entropy value from its hash.
	Fingerprints bool
	// NotScanned lists the files that could not be scanned: each is a
	// tool execution notification (level error when Incomplete, warning
	// otherwise) of the run's invocation, and Incomplete marks the
	// invocation not successful.
	NotScanned []NotScanned
	Incomplete bool
}

// sarif types: the subset of SARIF 2.1.0 GitHub code scanning reads.
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool        sarifTool         `json:"tool"`
		Invocations []sarifInvocation `json:"invocations,omitempty"`
		ColumnKind  string            `json:"columnKind"`
		Results     []sarifResult     `json:"results"`
	}
	sarifInvocation struct {
		ExecutionSuccessful        bool                `json:"executionSuccessful"`
		ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications"`
	}
	sarifNotification struct {
		Level     string          `json:"level"`
		Message   sarifText       `json:"message"`
		Locations []sarifLocation `json:"locations"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		Version        string      `json:"version,omitempty"`
		InformationURI string      `json:"informationUri"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID                   string            `json:"id"`
		Name                 string            `json:"name"`
		ShortDescription     sarifText         `json:"shortDescription"`
		FullDescription      sarifText         `json:"fullDescription"`
		Help                 sarifText         `json:"help"`
		DefaultConfiguration sarifRuleConfig   `json:"defaultConfiguration"`
		Properties           sarifRuleProperty `json:"properties"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifRuleConfig struct {
		Level string `json:"level"`
	}
	sarifRuleProperty struct {
		Tags             []string `json:"tags"`
		SecuritySeverity string   `json:"security-severity"`
		Precision        string   `json:"precision"`
	}
	sarifResult struct {
		RuleID              string            `json:"ruleId"`
		RuleIndex           int               `json:"ruleIndex"`
		Level               string            `json:"level"`
		Message             sarifText         `json:"message"`
		Locations           []sarifLocation   `json:"locations"`
		PartialFingerprints map[string]string `json:"partialFingerprints,omitempty"`
		Properties          *sarifCommitProps `json:"properties,omitempty"`
	}
	sarifCommitProps struct {
		CommitSha string `json:"commitSha"`
		Author    string `json:"author"`
		Email     string `json:"email"`
		Date      string `json:"date"`
	}
	sarifLocation struct {
		PhysicalLocation sarifPhysical `json:"physicalLocation"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           *sarifRegion  `json:"region,omitempty"`
	}
	sarifArtifact struct {
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId"`
	}
	sarifRegion struct {
		StartLine   int `json:"startLine"`
		StartColumn int `json:"startColumn"`
		EndLine     int `json:"endLine"`
		EndColumn   int `json:"endColumn"`
	}
)

// FingerprintKey is the partialFingerprints key under which each
// result carries its finding's keyed hash. Hashes are stable across runs only
// when the scanner's hash key is.
const FingerprintKey = "aishieldValueHash/v1"

// FindingFingerprintKey is the partialFingerprints key under which each
// result carries File.Fingerprints' entry for its finding.
const FindingFingerprintKey = "aishieldFinding/v1"

// LocationFingerprintKey is the partialFingerprints key of every result's
// location fingerprint: a hash of its path, rule, start line and start
// column, which holds nothing of the value.
const LocationFingerprintKey = "aishieldLocation/v1"

// CommitFingerprintKey is the partialFingerprints key under which each
// result of a File with a Commit carries the commit's hash, as gitleaks
// names it.
const CommitFingerprintKey = "commitSha"

// Write writes a SARIF 2.1.0 log of files' findings that GitHub code
// scanning accepts: one rule per detector of the run (every detector the
// policy enables and its custom rules, or every built-in without a policy,
// whether it found anything or not, with the level the policy gives it),
// one result per finding with its region (start and end line and column,
// in code points) and partial fingerprints: its location's (path, rule,
// line, column) always, and with Options.Fingerprints the finding's keyed
// hash and File.Fingerprints' entry. No value, not even a masked preview,
// is written. Output is deterministic for equal input.
func Write(w io.Writer, files []File, opts Options) error {
	descs := map[string]classifiers.DetectorInfo{}
	for _, b := range classifiers.Builtins() {
		descs[b.ID] = b
	}
	if opts.Policy != nil {
		for _, c := range opts.Policy.Custom {
			descs[c.ID] = classifiers.DetectorInfo{ID: c.ID, Category: classifiers.CategoryCustom, Description: c.Description}
		}
	}
	sorted := slices.Clone(files)
	slices.SortStableFunc(sorted, func(a, b File) int { return strings.Compare(a.Path, b.Path) })

	ruleIndex := map[string]int{}
	var ids []string
	if opts.Policy != nil {
		ids = opts.Policy.DetectorIDs()
	} else {
		for _, b := range classifiers.Builtins() {
			ids = append(ids, b.ID)
		}
	}
	cats := map[string]classifiers.Category{}
	for _, id := range ids {
		ruleIndex[id] = -1
		cats[id] = descs[id].Category
	}
	for _, f := range sorted {
		for _, fd := range f.Findings {
			if _, ok := ruleIndex[fd.Detector]; !ok {
				ruleIndex[fd.Detector] = -1
				ids = append(ids, fd.Detector)
				cats[fd.Detector] = fd.Category
			}
		}
	}
	slices.Sort(ids)
	rules := make([]sarifRule, 0, len(ids))
	for i, id := range ids {
		ruleIndex[id] = i
		info, ok := descs[id]
		if !ok {
			info = classifiers.DetectorInfo{ID: id, Category: cats[id]}
		}
		if info.Description == "" {
			info.Description = "Sensitive data found by " + id
		}
		level, sev := sarifLevel(opts, id, info.Category)
		help := fmt.Sprintf("aishield detector %s (%s). %s.", id, info.Category, strings.TrimSuffix(info.Description, "."))
		if opts.Policy != nil {
			l, _, _ := opts.Policy.LevelOf(id)
			help += fmt.Sprintf(" Policy %s classifies it as %s.", opts.Policy.Name, l)
		}
		rules = append(rules, sarifRule{
			ID: id, Name: ruleName(id),
			ShortDescription:     sarifText{Text: info.Description},
			FullDescription:      sarifText{Text: info.Description},
			Help:                 sarifText{Text: help},
			DefaultConfiguration: sarifRuleConfig{Level: level},
			Properties:           sarifRuleProperty{Tags: []string{"security", string(info.Category)}, SecuritySeverity: sev, Precision: "high"},
		})
	}

	results := []sarifResult{}
	for _, f := range sorted {
		uri := filepath.ToSlash(f.Path)
		order := make([]int, len(f.Findings))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int {
			a, b := f.Findings[i], f.Findings[j]
			return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.End, b.End), strings.Compare(a.Detector, b.Detector))
		})
		for _, k := range order {
			fd := f.Findings[k]
			level, _ := sarifLevel(opts, fd.Detector, fd.Category)
			region := findingRegion(fd, f.EndColumns, k)
			r := sarifResult{
				RuleID: fd.Detector, RuleIndex: ruleIndex[fd.Detector], Level: level,
				Message: sarifText{Text: sarifMessage(opts, fd)},
				Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{
					ArtifactLocation: sarifArtifact{URI: uri, URIBaseID: "%SRCROOT%"},
					Region:           region,
				}}},
				PartialFingerprints: map[string]string{LocationFingerprintKey: locationFingerprint(uri, fd.Detector, region)},
			}
			if opts.Fingerprints && fd.Hash != "" {
				r.PartialFingerprints[FingerprintKey] = fd.Hash
				if k < len(f.Fingerprints) && f.Fingerprints[k] != "" {
					r.PartialFingerprints[FindingFingerprintKey] = f.Fingerprints[k]
				}
			}
			if c := f.Commit; c != nil && c.SHA != "" {
				r.PartialFingerprints[CommitFingerprintKey] = c.SHA
				r.Properties = &sarifCommitProps{CommitSha: c.SHA, Author: c.Author, Email: c.Email, Date: c.Date}
			}
			results = append(results, r)
		}
	}
	log := sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs: []sarifRun{{
			Tool: sarifTool{Driver: sarifDriver{
				Name: "aishield", Version: opts.ToolVersion,
				InformationURI: "https://github.com/aishield/aishield", Rules: rules,
			}},
			ColumnKind: "unicodeCodePoints",
			Results:    results,
		}},
	}
	if len(opts.NotScanned) > 0 {
		inv := sarifInvocation{ExecutionSuccessful: !opts.Incomplete, ToolExecutionNotifications: []sarifNotification{}}
		level := "warning"
		if opts.Incomplete {
			level = "error"
		}
		for _, n := range opts.NotScanned {
			inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{
				Level: level, Message: sarifText{Text: "not scanned: " + n.Reason},
				Locations: []sarifLocation{{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: filepath.ToSlash(n.Path), URIBaseID: "%SRCROOT%"}}}},
			})
		}
		log.Runs[0].Invocations = []sarifInvocation{inv}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

// findingRegion is the region of fd, the k-th finding of a file whose end
// columns are ends (nil when unknown; see File.EndColumns).
func findingRegion(fd classifiers.Finding, ends []int, k int) *sarifRegion {
	r := &sarifRegion{StartLine: max(fd.Line, 1), StartColumn: max(fd.Column, 1)}
	r.EndLine = max(fd.EndLine, r.StartLine)
	switch {
	case k < len(ends) && ends[k] > 0:
		r.EndColumn = ends[k]
	case r.EndLine == r.StartLine:
		r.EndColumn = r.StartColumn + max(fd.End-fd.Start, 1)
	default:
		r.EndLine, r.EndColumn = r.EndLine+1, 1
	}
	if r.EndLine == r.StartLine && r.EndColumn <= r.StartColumn {
		r.EndColumn = r.StartColumn + 1
	}
	return r
}

// locationFingerprint identifies a result by its path, rule and start.
func locationFingerprint(uri, rule string, r *sarifRegion) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d:%d", uri, rule, r.StartLine, r.StartColumn))
	return hex.EncodeToString(h[:16])
}

// sarifLevel gives a detector's SARIF level and GitHub security severity.
func sarifLevel(opts Options, id string, cat classifiers.Category) (level, severity string) {
	p := opts.Policy
	if p == nil {
		switch cat {
		case classifiers.CategorySecret:
			return "error", "9.0"
		case classifiers.CategoryPII:
			return "warning", "6.0"
		}
		return "note", "3.0"
	}
	_, rank, _ := p.LevelOf(id)
	sev := "3.0"
	if n := len(p.Levels); n > 1 {
		sev = fmt.Sprintf("%.1f", 1+8*float64(max(rank, 0))/float64(n-1))
	}
	if d := opts.Destination; d != nil {
		if p.ActionFor(d, id) != policies.ActionAllow {
			return "error", sev
		}
		return "note", sev
	}
	switch {
	case rank == len(p.Levels)-1:
		return "error", sev
	case rank > 0:
		return "warning", sev
	}
	return "note", sev
}

func sarifMessage(opts Options, fd classifiers.Finding) string {
	p := opts.Policy
	if p == nil {
		return fmt.Sprintf("%s: %s value found (confidence %.2f); the value is not reproduced here.", fd.Detector, fd.Category, fd.Confidence)
	}
	level, _, _ := p.LevelOf(fd.Detector)
	if d := opts.Destination; d != nil {
		switch a := p.ActionFor(d, fd.Detector); a {
		case policies.ActionAllow:
			return fmt.Sprintf("%s (%s) may be sent to %s (max level %s).", fd.Detector, level, d.Name, d.MaxLevel)
		default:
			return fmt.Sprintf("%s (%s) may not be sent to %s (max level %s): %s.", fd.Detector, level, d.Name, d.MaxLevel, a)
		}
	}
	return fmt.Sprintf("%s (%s under policy %s); the value is not reproduced here.", fd.Detector, level, p.Name)
}

// ruleName turns "secret.github_token" into "SecretGithubToken".
func ruleName(id string) string {
	var b strings.Builder
	up := true
	for _, r := range id {
		if r == '.' || r == '_' || r == '-' {
			up = true
			continue
		}
		if up && r >= 'a' && r <= 'z' {
			r -= 'a' - 'A'
		}
		up = false
		b.WriteRune(r)
	}
	return b.String()
}

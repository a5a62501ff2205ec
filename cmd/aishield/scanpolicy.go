package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/classifiers"
	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/policies/sarif"
)

// hashKeyEnv names the environment variable holding the key of finding
// hashes (hex, or any string) so SARIF fingerprints are stable across runs
// without being guessable.
const hashKeyEnv = "AISHIELD_HASH_KEY"

// scanPolicy holds the policy flags of "aishield scan": --policy,
// --destination and --fail-on, and the policy-aware parts of the scan.
type scanPolicy struct {
	ref, dest, failOn string
	// choice is where ref came from (resolve).
	choice policyChoice

	policy      *policies.Policy
	destination *policies.Destination
	failRank    int
	eval        *policies.Evaluator
	// keyed reports that finding hashes are keyed by a caller-provided
	// secret (hashKeyEnv), so they may be published as SARIF fingerprints.
	keyed bool
}

func addScanPolicyFlags(cmd *cobra.Command) *scanPolicy {
	sp := &scanPolicy{}
	f := cmd.Flags()
	addPolicyFlag(f, &sp.ref, "giving levels and custom rules (without a policy, every built-in detector runs; --destination and --fail-on need one)")
	f.StringVar(&sp.dest, "destination", "", "decide, per file, whether it may be sent to this destination of the policy: exit 0 allow, 1 (--exit-code) redact or block, 2 error")
	f.StringVar(&sp.failOn, "fail-on", "", "exit 1 (--exit-code) only for findings at or above this policy level (with --destination, both apply)")
	return sp
}

// resolve chooses the policy (choosePolicy; without one, the default
// preset when --destination or --fail-on needs a policy, else none).
func (sp *scanPolicy) resolve(cmd *cobra.Command) error {
	fallback := ""
	if sp.dest != "" || sp.failOn != "" {
		fallback = "default"
	}
	choice, err := choosePolicy(cmd, fallback)
	if err != nil {
		return err
	}
	sp.ref, sp.choice = choice.Ref, choice
	return nil
}

// setup loads the policy and checks the flags; errors are usage errors.
func (sp *scanPolicy) setup(ctx context.Context) error {
	if sp.ref == "" && (sp.dest != "" || sp.failOn != "") {
		sp.ref = "default"
	}
	if sp.ref == "" {
		return nil
	}
	sp.choice.Ref = sp.ref
	p, err := sp.choice.load(ctx)
	if err != nil {
		return err
	}
	sp.policy = p
	if sp.dest != "" {
		if sp.destination, err = p.Lookup(sp.dest); err != nil {
			return err
		}
	}
	if sp.failOn != "" {
		if sp.failRank = p.Rank(sp.failOn); sp.failRank < 0 {
			return fmt.Errorf("--fail-on %q is not a level of policy %s (%s)", sp.failOn, p.Name, strings.Join(p.Levels, ", "))
		}
	}
	return nil
}

// scanner builds the scanner: the policy's (built-ins it enables plus its
// custom rules) or every built-in. SARIF output needs a stable hash key.
func (sp *scanPolicy) scanner(format string) (*classifiers.Scanner, error) {
	var key []byte
	if v := os.Getenv(hashKeyEnv); v != "" {
		if b, err := hex.DecodeString(v); err == nil && len(b) >= 16 {
			key = b
		} else {
			key = []byte(v)
		}
		sp.keyed = true
	}
	// Without a secret key the scanner draws a random one: a fixed public
	// key would let anyone holding a report confirm a guessed low-entropy
	// value (a phone number, say) from its hash.
	if sp.policy == nil {
		return classifiers.New(classifiers.Options{HashKey: key})
	}
	sc, err := sp.policy.NewScanner(key)
	if err != nil {
		return nil, err
	}
	if sp.destination != nil {
		// The guard's evaluation: capacity first, then the decision.
		if sp.eval, err = policies.NewEvaluator(sp.policy, policies.EvaluatorOptions{Classifier: sc}); err != nil {
			return nil, err
		}
	}
	return sc, nil
}

// onFile decides a file held whole for the destination while its text is
// at hand, as the guard decides a request holding it. It is called by the
// scan's workers, concurrently.
func (sp *scanPolicy) onFile(ctx context.Context, res *fileResult) error {
	if sp.destination == nil || res.Skipped {
		return nil
	}
	in := policies.Input{Texts: []string{res.text}, Findings: [][]classifiers.Finding{res.Findings}}
	ev, err := sp.eval.Evaluate(ctx, sp.destination, in)
	if err != nil {
		return err
	}
	res.Decision = &ev.Decision
	return nil
}

// streamDecision decides a file too large to hold (streamed) for the
// destination from its findings as they pass, keeping what the decision
// needs and not the findings: the first finding of each detector (its
// preview is the reason's), the count of each, and the positions of those
// to redact. When the destination has a token limit such a file is
// blocked as over capacity without being counted. Nil without a
// destination.
func (sp *scanPolicy) streamDecision() *streamDecision {
	if sp.destination == nil {
		return nil
	}
	return &streamDecision{policy: sp.policy, dest: sp.destination, counts: map[string]int{}, acts: map[string]policies.Action{}}
}

// streamDecision is the state of scanPolicy.streamDecision.
type streamDecision struct {
	policy *policies.Policy
	dest   *policies.Destination
	first  []classifiers.Finding // one per detector, in order of appearance
	counts map[string]int
	acts   map[string]policies.Action
	redact []int
	n      int
}

// add takes the next findings of the file.
func (d *streamDecision) add(fs []classifiers.Finding) {
	if d == nil || d.dest.MaxInputTokens > 0 {
		return
	}
	for _, f := range fs {
		act, ok := d.acts[f.Detector]
		if !ok {
			act = d.policy.ActionFor(d.dest, f.Detector)
			d.acts[f.Detector] = act
			d.first = append(d.first, f)
		}
		d.counts[f.Detector]++
		if act == policies.ActionRedact {
			d.redact = append(d.redact, d.n)
		}
		d.n++
	}
}

// decision is the policy's decision over every finding added, as
// Policy.Decide makes it given them all (without a token count).
func (d *streamDecision) decision() *policies.Decision {
	if d == nil {
		return nil
	}
	if limit := d.dest.MaxInputTokens; limit > 0 {
		dec := d.policy.Decide(d.dest, nil, limit+1)
		dec.Reasons[0].Message = fmt.Sprintf("file larger than %d MiB, too large to count: treated as over the capacity of destination %s (max_input_tokens %d)",
			maxWholeFile>>20, d.dest.Name, limit)
		return &dec
	}
	// Decide groups findings by detector (each detector has one rule and
	// one level): given the first of each, its reasons differ from those
	// of every finding only by their counts, and its Redact by the
	// positions.
	dec := d.policy.Decide(d.dest, d.first, 1)
	for i := range dec.Reasons {
		r := &dec.Reasons[i]
		if r.Detector == "" || r.Count != 1 {
			continue
		}
		if c := d.counts[r.Detector]; c != 1 {
			r.Count = c
			r.Message = strings.Replace(r.Message, "1 finding of ", fmt.Sprintf("%d findings of ", c), 1)
		}
	}
	if dec.Action == policies.ActionRedact {
		dec.Redact = d.redact
	}
	return &dec
}

// failsOn reports whether one of fs is at or above --fail-on's level.
func (sp *scanPolicy) failsOn(fs []classifiers.Finding) bool {
	if sp.failOn == "" {
		return false
	}
	for _, x := range fs {
		if _, rank, _ := sp.policy.LevelOf(x.Detector); rank >= sp.failRank {
			return true
		}
	}
	return false
}

// gates reports whether the scan gates on the policy (--fail-on or
// --destination), so that a file it could not scan fails the run.
func (sp *scanPolicy) gates() bool { return sp.failOn != "" || sp.destination != nil }

// fails reports whether the scan fails on its findings once inputs were
// read without error: with --destination, a file must be redacted or is
// blocked; with --fail-on, a finding is at or above its level (both apply
// when both are given); with neither, anything was found.
func (sp *scanPolicy) fails(rep *scanReport) bool {
	if sp.destination == nil && sp.failOn == "" {
		return rep.Found > 0
	}
	if sp.failOn != "" && rep.FailOn {
		return true
	}
	if sp.destination != nil {
		for _, f := range rep.Files {
			if f.Decision != nil && f.Decision.Action != policies.ActionAllow {
				return true
			}
		}
	}
	return false
}

// writeDecisions appends the per-file decisions to the text report.
func (sp *scanPolicy) writeDecisions(w io.Writer, rep *scanReport) error {
	if sp.destination == nil {
		return nil
	}
	var b strings.Builder
	counts := map[policies.Action]int{}
	for _, f := range rep.Files {
		if f.Decision == nil {
			continue
		}
		d := f.Decision
		counts[d.Action]++
		if d.Action == policies.ActionAllow && len(d.Reasons) == 0 {
			continue
		}
		level := d.Level
		if level == "" {
			level = "nothing found"
		}
		fmt.Fprintf(&b, "%s: %s for %s (%s)\n", f.Path, d.Action, d.Destination, level)
		for _, r := range d.Reasons {
			fmt.Fprintf(&b, "  %s\n", r.Message)
		}
	}
	fmt.Fprintf(&b, "destination %s under policy %s: %d allowed, %d to redact, %d blocked",
		sp.destination.Name, sp.policy.Name, counts[policies.ActionAllow], counts[policies.ActionRedact], counts[policies.ActionBlock])
	if n := rep.unreadable(); n > 0 {
		fmt.Fprintf(&b, ", %d not scanned", n)
	}
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSARIF writes the report as SARIF 2.1.0, paths relative to the
// working directory when they are inside it. Files that could not be
// scanned are tool execution notifications, errors when they fail the
// run.
func (sp *scanPolicy) writeSARIF(w io.Writer, rep *scanReport, allowUnscanned bool) error {
	wd, _ := os.Getwd()
	rel := func(path string) string {
		if path == "-" {
			return "stdin"
		}
		if abs, err := filepath.Abs(path); err == nil && wd != "" {
			if r, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(r, "..") {
				return r
			}
		}
		return path
	}
	var files []sarif.File
	for _, f := range rep.Files {
		if f.Skipped {
			continue
		}
		sf := sarif.File{Path: rel(f.Path), Findings: f.Findings, EndColumns: f.endCols}
		if rep.Keyed {
			for _, x := range f.Findings {
				sf.Fingerprints = append(sf.Fingerprints, findingFingerprint(f.Path, x))
			}
		}
		files = append(files, sf)
	}
	var unscanned []sarif.NotScanned
	for _, x := range rep.NotScanned {
		if x.Unreadable {
			unscanned = append(unscanned, sarif.NotScanned{Path: rel(x.Path), Reason: x.Reason})
		}
	}
	return sarif.Write(w, files, sarif.Options{ToolVersion: buildVersion(), Policy: sp.policy, Destination: sp.destination, Fingerprints: sp.keyed,
		NotScanned: unscanned, Incomplete: len(unscanned) > 0 && sp.gates() && !allowUnscanned})
}

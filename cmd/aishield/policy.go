package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/aishield/aishield/policies"
	"github.com/aishield/aishield/policies/policytest"
)

// newPolicyCmd builds "aishield policy" and its subcommands.
func newPolicyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Lint, explain and test policy files",
		Long: `Policy files say what may be sent to which AI destination. These commands
check them (lint), show what a destination receives (explain), run policy
test cases in CI (test), and print the JSON Schema for editors (schema).

A policy argument is a file (.yaml, .yml, .json, .toml) or a preset name:
` + strings.Join(policies.Presets(), ", ") + `.`,
	}
	cmd.AddCommand(newPolicyLintCmd(), newPolicyExplainCmd(), newPolicyTestCmd(), newPolicyWhichCmd(), newPolicySchemaCmd(), newPolicyPresetsCmd())
	return cmd
}

func newPolicyLintCmd() *cobra.Command {
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "lint [FILE|PRESET...]",
		Short: "Check policy files; exit 0 clean (warnings allowed), 1 errors found, 2 unreadable input",
		Long: `lint checks policy files and reports every diagnostic of every file, errors and
warnings, each as FILE:LINE:COLUMN: SEVERITY[CODE]: FIELD: MESSAGE (and with its
line and column in --format json). Without an argument it lints the policy the
other commands would use (see "aishield policy which"). A file that cannot be
read is an error on standard error, and the run exits 2 after linting the others.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return of.run(cmd, func(out io.Writer) error { return runPolicyLint(cmd, args, of.format, out) })
		},
	}
	of = addOutputFlags(cmd, "text", "text", "json")
	return cmd
}

// runPolicyLint lints the policies args names (the chosen policy when
// none) and writes the diagnostics to out in format; files that cannot be
// read are reported on standard error.
func runPolicyLint(cmd *cobra.Command, args []string, format string, out io.Writer) error {
	if len(args) == 0 {
		c, err := choosePolicy(cmd, "default")
		if err != nil {
			return withCode(2, err)
		}
		args = []string{c.Ref}
	}
	var all []policies.Diagnostic
	unreadable := 0
	for _, a := range args {
		var ds []policies.Diagnostic
		if _, err := os.Stat(a); err != nil && slices.Contains(policies.Presets(), a) {
			ds = policies.LintPreset(cmd.Context(), a, policies.LintOptions{})
		} else {
			ds = policies.LintFile(cmd.Context(), a, policies.LintOptions{})
		}
		if cmd.Context().Err() != nil {
			return withCode(2, fmt.Errorf("policy lint %s: %w", a, errInterrupted))
		}
		for _, d := range ds {
			if d.Code == "io" {
				unreadable++
				fmt.Fprintln(cmd.ErrOrStderr(), "aishield: policy lint:", d.Message)
				continue
			}
			all = append(all, d)
		}
	}
	errs, warns := 0, 0
	for _, d := range all {
		if d.Severity == policies.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	if unreadable == len(args) {
		return withCode(2, nil) // nothing was linted: no report
	}
	var err error
	if format == "json" {
		if all == nil {
			all = []policies.Diagnostic{}
		}
		err = writeJSON(out, map[string]any{"diagnostics": all, "errors": errs, "warnings": warns})
	} else {
		w := bufio.NewWriter(out)
		for _, d := range all {
			fmt.Fprintln(w, d)
		}
		fmt.Fprintf(w, "%d file(s): %d error(s), %d warning(s)\n", len(args)-unreadable, errs, warns)
		err = w.Flush()
	}
	switch {
	case err != nil, unreadable > 0:
		return withCode(2, err)
	case errs > 0:
		return withCode(1, nil)
	}
	return nil
}

func newPolicyExplainCmd() *cobra.Command {
	var dest string
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "explain [--destination NAME] [FILE|PRESET]",
		Short: "Show what a destination may receive under a policy, and why",
		Long: `explain shows what a destination may receive under a policy, and why. Without
an argument it explains the policy the other commands would use (see "aishield
policy which").`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return of.run(cmd, func(out io.Writer) error {
				var p *policies.Policy
				var err error
				if len(args) == 1 {
					p, err = policies.LoadRefContext(cmd.Context(), args[0])
				} else {
					p, err = loadPolicy(cmd)
				}
				if err != nil {
					return withCode(2, err)
				}
				e, err := p.Explain(dest)
				if err != nil {
					return withCode(2, err)
				}
				if of.format == "json" {
					err = e.WriteJSON(out)
				} else {
					err = e.WriteText(out)
				}
				if err != nil {
					return withCode(2, err)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&dest, "destination", "default", "destination name (\"default\" for anything unmatched)")
	of = addOutputFlags(cmd, "text", "text", "json")
	return cmd
}

func newPolicyTestCmd() *cobra.Command {
	var of *outputFlags
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test [DIR|FILE...]",
		Short: "Run policy test cases (*_test.yaml); exit 0 pass, 1 error, 2 failure",
		Long: `Run policy test cases. Directories are searched for *_test.yaml files; files
given by name run whatever their name. Each test file names a policy (a file
relative to it, or a preset) and lists cases: an input text or file, a
destination, and the expected action, level and detectors.

Exit codes follow opa test: 0 every case passed, 1 a file or case could not
run (an unknown --format too), 2 a case failed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return of.run(cmd, func(out io.Writer) error {
				rep, err := policytest.Run(cmd.Context(), args, policytest.Options{})
				if err != nil {
					return withCode(1, err)
				}
				if of.format == "json" {
					err = rep.WriteJSON(out)
				} else {
					err = rep.WritePretty(out, verbose)
				}
				if err != nil {
					return withCode(1, err)
				}
				if code := rep.ExitCode(); code != 0 {
					return withCode(code, nil)
				}
				return nil
			})
		},
	}
	of = addOutputFlags(cmd, "pretty", "pretty", "json")
	of.errCode = 1
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list passing cases too")
	return cmd
}

func newPolicyWhichCmd() *cobra.Command {
	var of *outputFlags
	var ref string
	cmd := &cobra.Command{
		Use:   "which",
		Short: "Print the policy the commands use, and why",
		Long: `which prints the policy every command taking --policy uses when run here, and
where it came from, in this order: --policy; $` + policyEnv + `; the first of
` + strings.Join(policies.ConfigNames(), ", ") + ` found in the working
directory or a parent, up to the repository root (the first directory holding
.git); the default preset. (scan without --destination or --fail-on runs every
built-in detector instead of the default preset.) The policy is loaded to check
it: exit 0 it loads, 2 it does not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return of.run(cmd, func(out io.Writer) error {
				c, err := choosePolicy(cmd, "default")
				if err != nil {
					return withCode(2, err)
				}
				p, err := c.load(cmd.Context())
				if err != nil {
					return withCode(2, err)
				}
				if of.format == "json" {
					return writeJSON(out, struct {
						policyChoice
						Name string `json:"name"`
					}{c, p.Name})
				}
				_, err = fmt.Fprintf(out, "%s (policy %s) from %s: %s\n", c.Ref, p.Name, c.Source, c.Reason)
				return err
			})
		},
	}
	addPolicyFlag(cmd.Flags(), &ref, "to check")
	of = addOutputFlags(cmd, "text", "text", "json")
	return cmd
}

func newPolicySchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of policy files",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := cmd.OutOrStdout().Write(policies.Schema())
			return err
		},
	}
}

func newPolicyPresetsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "presets [NAME]",
		Short: "List the embedded presets, or print one's YAML to start a policy from",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if len(args) == 1 {
				src, err := policies.PresetSource(args[0])
				if err != nil {
					return withCode(2, err)
				}
				_, err = out.Write(src)
				return err
			}
			for _, name := range policies.Presets() {
				p, err := policies.Preset(name)
				if err != nil {
					return withCode(2, errors.Join(fmt.Errorf("preset %s", name), err))
				}
				fmt.Fprintf(out, "%-13s %s\n", name, p.Description)
			}
			return nil
		},
	}
}

package main

import (
	"encoding/json"
	"errors"
	"fmt"
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
	cmd.AddCommand(newPolicyLintCmd(), newPolicyExplainCmd(), newPolicyTestCmd(), newPolicySchemaCmd(), newPolicyPresetsCmd())
	return cmd
}

func newPolicyLintCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "lint FILE|PRESET...",
		Short: "Check policy files; exit 0 clean (warnings allowed), 1 errors found, 2 unreadable input",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return withCode(2, fmt.Errorf("--format must be text or json, not %q", format))
			}
			var all []policies.Diagnostic
			for _, a := range args {
				if _, err := os.Stat(a); err != nil && slices.Contains(policies.Presets(), a) {
					p, err := policies.Preset(a)
					if err != nil {
						return withCode(2, err)
					}
					all = append(all, policies.Lint(cmd.Context(), p, policies.LintOptions{})...)
					continue
				}
				all = append(all, policies.LintFile(cmd.Context(), a, policies.LintOptions{})...)
				if cmd.Context().Err() != nil {
					return withCode(2, fmt.Errorf("policy lint %s: %w", a, errInterrupted))
				}
			}
			errs, warns, io := 0, 0, false
			for _, d := range all {
				if d.Severity == policies.SeverityError {
					errs++
				} else {
					warns++
				}
				io = io || d.Code == "io"
			}
			out := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if all == nil {
					all = []policies.Diagnostic{}
				}
				if err := enc.Encode(map[string]any{"diagnostics": all, "errors": errs, "warnings": warns}); err != nil {
					return withCode(2, err)
				}
			} else {
				for _, d := range all {
					fmt.Fprintln(out, d)
				}
				fmt.Fprintf(out, "%d file(s): %d error(s), %d warning(s)\n", len(args), errs, warns)
			}
			switch {
			case io:
				return withCode(2, nil)
			case errs > 0:
				return withCode(1, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func newPolicyExplainCmd() *cobra.Command {
	var dest, format string
	cmd := &cobra.Command{
		Use:   "explain --destination NAME FILE|PRESET",
		Short: "Show what a destination may receive under a policy, and why",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return withCode(2, fmt.Errorf("--format must be text or json, not %q", format))
			}
			p, err := policies.LoadRefContext(cmd.Context(), args[0])
			if err != nil {
				return withCode(2, err)
			}
			e, err := p.Explain(dest)
			if err != nil {
				return withCode(2, err)
			}
			if format == "json" {
				err = e.WriteJSON(cmd.OutOrStdout())
			} else {
				err = e.WriteText(cmd.OutOrStdout())
			}
			if err != nil {
				return withCode(2, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dest, "destination", "default", "destination name (\"default\" for anything unmatched)")
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or json")
	return cmd
}

func newPolicyTestCmd() *cobra.Command {
	var format string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "test [DIR|FILE...]",
		Short: "Run policy test cases (*_test.yaml); exit 0 pass, 1 error, 2 failure",
		Long: `Run policy test cases. Directories are searched for *_test.yaml files; files
given by name run whatever their name. Each test file names a policy (a file
relative to it, or a preset) and lists cases: an input text or file, a
destination, and the expected action, level and detectors.

Exit codes follow opa test: 0 every case passed, 1 a file or case could not
run, 2 a case failed.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "pretty" && format != "json" {
				return withCode(1, fmt.Errorf("--format must be pretty or json, not %q", format))
			}
			rep, err := policytest.Run(cmd.Context(), args, policytest.Options{})
			if err != nil {
				return withCode(1, err)
			}
			if format == "json" {
				err = rep.WriteJSON(cmd.OutOrStdout())
			} else {
				err = rep.WritePretty(cmd.OutOrStdout(), verbose)
			}
			if err != nil {
				return withCode(1, err)
			}
			if code := rep.ExitCode(); code != 0 {
				return withCode(code, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "pretty", "output format: pretty or json")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "list passing cases too")
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

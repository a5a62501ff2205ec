package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/aishield/aishield/policies"
)

// envAnnotation is the command annotation of commands whose flags read
// the environment (bindEnv).
const envAnnotation = "aishield_env"

// policyEnv names the environment variable of --policy.
const policyEnv = "AISHIELD_POLICY"

// envName is the environment variable of a flag: AISHIELD_ and its name
// in upper case, dashes as underscores.
func envName(flag string) string {
	return "AISHIELD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// envBound reports whether flag f of a command bound by bindEnv reads the
// environment: every visible flag but --help and --policy (whose
// resolution is choosePolicy's).
func envBound(f *pflag.Flag) bool {
	return f.Name != "help" && f.Name != "policy" && !f.Hidden
}

// bindEnv makes every flag of cmd that envBound accepts read
// AISHIELD_<FLAG> when it is not given on the command line (applyEnv),
// and its help say so. The help text is written when help is asked for,
// so that building the command tree stays cheap.
func bindEnv(cmd *cobra.Command) {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[envAnnotation] = "flags"
	help := cmd.HelpFunc()
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if envBound(f) {
				f.Usage += " [env " + envName(f.Name) + "]"
			}
		})
		help(c, args)
	})
}

// applyEnv sets each flag of cmd bound by bindEnv and not given on the
// command line from its environment variable, when that is set and not
// empty. An invalid value is an error naming the variable and the flag,
// never the value (a Redis URL may hold a password).
func applyEnv(cmd *cobra.Command) error {
	if cmd.Annotations[envAnnotation] == "" {
		return nil
	}
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || !envBound(f) {
			return
		}
		name := envName(f.Name)
		v := os.Getenv(name)
		if v == "" {
			return
		}
		if cmd.Flags().Set(f.Name, v) != nil {
			err = withCode(2, fmt.Errorf("%s: not a valid value for --%s (%s)", name, f.Name, f.Value.Type()))
			return
		}
		err = cmd.Flags().SetAnnotation(f.Name, fromEnvAnnotation, []string{name})
	})
	return err
}

// fromEnvAnnotation marks a flag applyEnv set: its value is the named
// variable's.
const fromEnvAnnotation = "aishield_from_env"

// flagValue names flag name of fs and its value shown, for an error about
// a value the flag's own parser accepted: `--format "xml"`; or, when
// applyEnv set it, the variable and the flag without the value, as
// applyEnv's own errors do: "$AISHIELD_FORMAT (--format)".
func flagValue(fs *pflag.FlagSet, name, shown string) string {
	if f := fs.Lookup(name); f != nil {
		if v := f.Annotations[fromEnvAnnotation]; len(v) == 1 {
			return "$" + v[0] + " (--" + name + ")"
		}
	}
	return "--" + name + " " + shown
}

// policyChoice is the policy a command uses, and why.
type policyChoice struct {
	// Ref is the policy file or preset; empty when the command runs
	// without a policy (scan without --destination or --fail-on).
	Ref string `json:"policy"`
	// Source is flag, env, file, default or none.
	Source string `json:"source"`
	// Reason says where Ref came from in words.
	Reason string `json:"reason"`
}

// addPolicyFlag registers --policy, whose value choosePolicy resolves.
func addPolicyFlag(f *pflag.FlagSet, ref *string, what string) {
	f.StringVar(ref, "policy", "", "policy file or preset ("+strings.Join(policies.Presets(), ", ")+") "+what+
		"; default: $"+policyEnv+", else the first of "+strings.Join(policies.ConfigNames()[:2], ", ")+"… found from the working directory up to the repository root, else the default preset")
}

// choosePolicy resolves the policy of cmd: --policy, else
// AISHIELD_POLICY, else a policy file found from the working directory up
// to the repository root (policies.Discover), else fallback (a preset
// name; "" for none).
func choosePolicy(cmd *cobra.Command, fallback string) (policyChoice, error) {
	if f := cmd.Flags().Lookup("policy"); f != nil && f.Changed && f.Value.String() != "" {
		return policyChoice{Ref: f.Value.String(), Source: "flag", Reason: "--policy"}, nil
	}
	if v := os.Getenv(policyEnv); v != "" {
		return policyChoice{Ref: v, Source: "env", Reason: "$" + policyEnv}, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return policyChoice{}, fmt.Errorf("looking for a policy file: %w", err)
	}
	path, err := policies.Discover(wd)
	if err != nil {
		return policyChoice{}, err
	}
	if path != "" {
		return policyChoice{Ref: path, Source: "file", Reason: "found from " + wd + " upward"}, nil
	}
	if fallback == "" {
		return policyChoice{Source: "none", Reason: "no --policy, $" + policyEnv + " nor policy file: every built-in detector, no levels"}, nil
	}
	return policyChoice{Ref: fallback, Source: "default", Reason: "no --policy, $" + policyEnv + " nor policy file: the " + fallback + " preset"}, nil
}

// load loads the chosen policy; its errors say where the policy came from
// unless that was --policy.
func (c policyChoice) load(ctx context.Context) (*policies.Policy, error) {
	p, err := policies.LoadRefContext(ctx, c.Ref)
	switch {
	case err != nil && c.Source == "env":
		return nil, fmt.Errorf("the policy of %s: %w", c.Reason, err)
	case err != nil && c.Source == "file":
		return nil, fmt.Errorf("the policy %s: %w", c.Reason, err)
	}
	return p, err
}

// loadPolicy resolves and loads the policy of cmd, falling back to the
// default preset; errors carry exit status 2.
func loadPolicy(cmd *cobra.Command) (*policies.Policy, error) {
	c, err := choosePolicy(cmd, "default")
	if err != nil {
		return nil, withCode(2, err)
	}
	p, err := c.load(cmd.Context())
	if err != nil {
		return nil, withCode(2, err)
	}
	return p, nil
}

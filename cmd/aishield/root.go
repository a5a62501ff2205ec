package main

import (
	"io"

	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree. Every subcommand writes results to out
// and diagnostics to errOut, so tests can run the CLI in process.
func newRootCmd(in io.Reader, out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "aishield",
		Short:         "Keep your data where it belongs when you talk to AI providers",
		SilenceUsage:  true,
		SilenceErrors: true,
		// Flags bound to environment variables (bindEnv) take their
		// values before any command runs: flag > env > file or default.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return applyEnv(cmd) },
	}
	setVersion(root)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	root.AddCommand(
		newVersionCmd(),
		newCacheServerCmd(),
		newVerifyCmd(),
		newPolicyCmd(),
		newScanCmd(),
		newDemoCmd(),
		newProxyCmd(),
		newRedactCmd(),
		newRestoreCmd(),
		newAuditCmd(),
		newQuarantineCmd(),
	)
	return root
}

package main

import (
	"io"

	"github.com/spf13/cobra"
)

// subcommands are the commands of the tree by name, in the order help
// lists them, each with its constructor.
var subcommands = []struct {
	name string
	make func() *cobra.Command
}{
	{"version", newVersionCmd},
	{"cache-server", newCacheServerCmd},
	{"verify", newVerifyCmd},
	{"policy", newPolicyCmd},
	{"scan", newScanCmd},
	{"demo", newDemoCmd},
	{"proxy", newProxyCmd},
	{"redact", newRedactCmd},
	{"restore", newRestoreCmd},
	{"audit", newAuditCmd},
	{"quarantine", newQuarantineCmd},
}

// newRootCmd builds the command tree. Every subcommand writes results to out
// and diagnostics to errOut, so tests can run the CLI in process.
func newRootCmd(in io.Reader, out, errOut io.Writer) *cobra.Command {
	return newRootCmdFor(nil, in, out, errOut)
}

// newRootCmdFor builds the command tree for the command line args: when
// args name a command of the tree, only that command's branch is built
// (a run does not pay for the flags of all the others), and none for
// --version alone; otherwise (no command, help, completion, an unknown
// name) the whole tree is.
func newRootCmdFor(args []string, in io.Reader, out, errOut io.Writer) *cobra.Command {
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
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-v") {
		return root // the root's own flag: no command runs
	}
	if len(args) > 0 {
		for _, c := range subcommands {
			if c.name == args[0] {
				root.AddCommand(c.make())
				return root
			}
		}
	}
	for _, c := range subcommands {
		root.AddCommand(c.make())
	}
	return root
}

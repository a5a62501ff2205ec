package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time with -ldflags "-X main.version=v1.2.3"; when it
// is empty the module version from the build info is used.
var version string

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

func newVersionCmd() *cobra.Command {
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the aishield version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return of.run(cmd, func(out io.Writer) error {
				if of.format == "json" {
					return writeJSON(out, map[string]string{"version": buildVersion(), "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
				}
				_, err := fmt.Fprintf(out, "aishield %s %s %s/%s\n",
					buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return err
			})
		},
	}
	of = addOutputFlags(cmd, "text", "text", "json")
	return cmd
}

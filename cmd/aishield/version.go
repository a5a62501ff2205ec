package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at link time with -ldflags "-X main.version=v1.2.3" (the
// Dockerfile passes its VERSION build argument); when it is empty the
// version comes from the build information (see versionOf).
var version string

// versionInfo is what `aishield version` reports.
type versionInfo struct {
	// Version is the stamped version, else the module version (a release
	// tag for `go install ...@vX.Y.Z`, a pseudo-version that Go derives from
	// the commit when it builds a clone), else "devel-" and the short VCS
	// revision, else "(devel)" when the build has no VCS information either.
	Version string `json:"version"`
	// Source tells where Version came from: "ldflags", "module", "vcs" or
	// "none".
	Source string `json:"source"`
	// Revision (12 hex digits), Time (RFC 3339) and Modified (uncommitted
	// changes) describe the commit the binary was built from, when the
	// build recorded it.
	Revision  string `json:"revision,omitempty"`
	Time      string `json:"time,omitempty"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// versionOf resolves the version from the link-time stamp and the build
// information (nil when the binary has none).
func versionOf(stamped string, bi *debug.BuildInfo) versionInfo {
	v := versionInfo{GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	module := ""
	if bi != nil {
		module = bi.Main.Version
		if bi.GoVersion != "" {
			v.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value[:min(12, len(s.Value))]
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case stamped != "":
		v.Version, v.Source = stamped, "ldflags"
	case module != "" && module != "(devel)":
		v.Version, v.Source = module, "module"
	case v.Revision != "":
		v.Version, v.Source = "devel-"+v.Revision, "vcs"
		if v.Modified {
			v.Version += "+dirty"
		}
	default:
		v.Version, v.Source = "(devel)", "none"
	}
	return v
}

// buildVersion is this binary's version (the root command's --version).
func buildVersion() string { return currentVersion().Version }

func currentVersion() versionInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionOf(version, bi)
}

// String is the one-line form: "aishield v1.2.3 (commit 0123456789ab+dirty,
// 2026-12-02T03:35:00Z) go1.26.8 linux/amd64".
func (v versionInfo) String() string {
	s := "aishield " + v.Version
	if v.Revision != "" {
		s += " (commit " + v.Revision
		if v.Modified {
			s += "+dirty"
		}
		if v.Time != "" {
			s += ", " + v.Time
		}
		s += ")"
	}
	return s + " " + v.GoVersion + " " + v.Platform
}

// setVersion gives root its --version flag, which prints "aishield " and
// the version, the first words of what `aishield version` prints.
func setVersion(root *cobra.Command) {
	root.Version = buildVersion()
	root.SetVersionTemplate("aishield {{.Version}}\n")
}

func newVersionCmd() *cobra.Command {
	var of *outputFlags
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the aishield version",
		Long: `version prints the version stamped at build time (-ldflags "-X main.version=..."),
else the module version, else the commit the binary was built from.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := currentVersion()
			return of.run(cmd, func(out io.Writer) error {
				if of.format == "json" {
					return writeJSON(out, v)
				}
				_, err := fmt.Fprintln(out, v)
				return err
			})
		},
	}
	of = addOutputFlags(cmd, "text", "text", "json")
	return cmd
}

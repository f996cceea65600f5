package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Stamped at link time by the Makefile and goreleaser:
//
//	-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339 UTC>
//
// Left empty, buildInfo fills them from what the Go toolchain recorded
// (module version for `go install ...@v1.2.3`, vcs.revision/vcs.time for a
// build inside a git checkout).
var (
	version string
	commit  string
	date    string
)

// versionInfo is the output of `rdmactl version`; the JSON keys are stable.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// buildInfo combines the link-time stamps with the toolchain's build
// information; stamps win.
func buildInfo() versionInfo {
	v := versionInfo{
		Version:   version,
		Commit:    commit,
		Date:      date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fillFromBuildInfo(&v, bi)
	}
	if v.Version == "" {
		v.Version = "dev"
	}
	if v.Commit == "" {
		v.Commit = "unknown"
	}
	if v.Date == "" {
		v.Date = "unknown"
	}
	return v
}

func fillFromBuildInfo(v *versionInfo, bi *debug.BuildInfo) {
	// "(devel)" is what a build from a checkout reports: not a version.
	if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			if v.Commit == "" {
				v.Commit = s.Value
			}
		case "vcs.time":
			if v.Date == "" {
				v.Date = s.Value
			}
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && v.Commit != "" && commit == "" {
		v.Commit += "-dirty"
	}
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rdmactl's version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		Example: `  rdmactl version
  rdmactl -j version`,
		RunE: func(c *cobra.Command, args []string) error {
			v := buildInfo()
			if a.opts.json {
				return a.printJSON(v)
			}
			_, err := fmt.Fprintf(a.stdout, "rdmactl %s\ncommit:   %s\ndate:     %s\ngo:       %s %s\n",
				v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
			return err
		},
	}
}

func init() {
	commandFactories = append(commandFactories, newVersionCmd)
	// This file sorts after the command files, so its init runs after theirs:
	// the place to give every registered command dynamic completion
	// (see withCompletions in complete.go).
	withCompletions()
}

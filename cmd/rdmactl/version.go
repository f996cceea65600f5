package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
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
	// Kernel: with -d, what the kernel offers where kernels differ.
	Kernel *kernelInfo `json:"kernel,omitempty"`
}

// kernelInfo is what `version -d` found of the running kernel.
type kernelInfo struct {
	Release string `json:"release"`
	// ProbedDevice is the RDMA device the uverbs probes used ("" without one).
	ProbedDevice string         `json:"probed_device"`
	Features     []featureState `json:"features"`
}

// featureState is one kernel feature as `version -d` reports it. State is
// "present", "absent", "forced_absent" (RDMACTL_KERNEL_ABSENT) or
// "unknown" (nothing to probe it with: no RDMA device, no RDMA netlink).
type featureState struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Detail string `json:"detail"`
}

// probeKernel asks the inventory to probe every kernel feature.
func probeKernel() *kernelInfo {
	k := inventory.ProbeKernel()
	out := &kernelInfo{Release: k.Release, ProbedDevice: k.ProbedDevice}
	for _, f := range k.Features {
		out.Features = append(out.Features, featureState{Name: f.Name, State: f.State, Detail: f.Detail})
	}
	return out
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

// versionLines is what 'rdmactl version' and 'rdmactl --version' print.
func versionLines(v versionInfo) string {
	return fmt.Sprintf("rdmactl %s\ncommit:   %s\ndate:     %s\ngo:       %s %s\n",
		v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
}

// versionText is --version's text.
func versionText() string { return versionLines(buildInfo()) }

func newVersionCmd(a *App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rdmactl's version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		Long: `Print rdmactl's version, commit, build date and Go version.

With -d it also probes the running kernel where kernels differ (the uverbs
ioctl methods, the RDMA netlink system settings)
and lists what it found; RDMACTL_KERNEL_ABSENT=name,... forces features
absent, to try the paths older kernels take.`,
		Example: `  rdmactl version
  rdmactl -j version
  rdmactl version -d                                        # what this kernel offers
  RDMACTL_KERNEL_ABSENT=query_gid_table rdmactl gids        # GIDs as on a kernel without QUERY_GID_TABLE`,
		RunE: func(c *cobra.Command, args []string) error {
			v := buildInfo()
			if a.Opts.Details {
				v.Kernel = probeKernel()
			}
			if a.Opts.JSON {
				return a.PrintJSON(v)
			}
			_, err := io.WriteString(a.Stdout, versionLines(v))
			if err != nil || v.Kernel == nil {
				return err
			}
			k := v.Kernel
			dev := k.ProbedDevice
			if dev == "" {
				dev = "no device"
			}
			fmt.Fprintf(a.Stdout, "kernel:   %s\nfeatures (probed on %s; see docs/kernels.md):\n", k.Release, dev)
			tw := render.NewTable(a.Stdout, "  FEATURE", "STATE", "HOW")
			for _, f := range k.Features {
				tw.Row("  "+f.Name, f.State, f.Detail)
			}
			return tw.Flush()
		},
	}
}

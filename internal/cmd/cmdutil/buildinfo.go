package cmdutil

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// Stamp is what the build stamped into the binary at link time (main's
// version, commit and date variables, set with -X by the Makefile and
// goreleaser); Info fills what is empty from what the Go toolchain
// recorded (the module version for `go install ...@v1.2.3`,
// vcs.revision/vcs.time for a build inside a git checkout).
type Stamp struct{ Version, Commit, Date string }

// VersionInfo is the output of `rdmactl version`; the JSON keys are stable.
type VersionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
	// Kernel: with -d, what the kernel offers where kernels differ.
	Kernel *KernelInfo `json:"kernel,omitempty"`
}

// KernelInfo is what `version -d` found of the running kernel.
type KernelInfo struct {
	Release string `json:"release"`
	// ProbedDevice is the RDMA device the uverbs probes used ("" without one).
	ProbedDevice string         `json:"probed_device"`
	Features     []FeatureState `json:"features"`
}

// FeatureState is one kernel feature as `version -d` reports it. State is
// "present", "absent", "forced_absent" (RDMACTL_KERNEL_ABSENT) or
// "unknown" (nothing to probe it with: no RDMA device, no RDMA netlink).
type FeatureState struct {
	Name   string `json:"name"`
	State  string `json:"state"`
	Detail string `json:"detail"`
}

// ProbeKernel asks the inventory to probe every kernel feature.
func ProbeKernel() *KernelInfo {
	k := inventory.ProbeKernel()
	out := &KernelInfo{Release: k.Release, ProbedDevice: k.ProbedDevice}
	for _, f := range k.Features {
		out.Features = append(out.Features, FeatureState{Name: f.Name, State: f.State, Detail: f.Detail})
	}
	return out
}

// Info combines the link-time stamps with the toolchain's build
// information; stamps win.
func (s Stamp) Info() VersionInfo {
	v := VersionInfo{
		Version:   s.Version,
		Commit:    s.Commit,
		Date:      s.Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		fillFromBuildInfo(&v, bi, s.Commit != "")
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

// fillFromBuildInfo fills what the stamps left empty from bi; a commit
// from a checkout with changes gets "-dirty", a stamped one is as given.
func fillFromBuildInfo(v *VersionInfo, bi *debug.BuildInfo, stampedCommit bool) {
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
	if dirty && v.Commit != "" && !stampedCommit {
		v.Commit += "-dirty"
	}
}

// VersionLines is what 'rdmactl version' and 'rdmactl --version' print.
func VersionLines(v VersionInfo) string {
	return fmt.Sprintf("rdmactl %s\ncommit:   %s\ndate:     %s\ngo:       %s %s\n",
		v.Version, v.Commit, v.Date, v.GoVersion, v.Platform)
}

// Text is --version's text.
func (s Stamp) Text() string { return VersionLines(s.Info()) }

package inventory

import (
	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/kfeat"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
)

// Kernel is what the running kernel offers where kernels differ
// (rdmactl version -d).
type Kernel struct {
	Release string // uname -r
	// ProbedDevice is the RDMA device the uverbs probes used ("" without one).
	ProbedDevice string
	Features     []Feature // in kfeat.Known's order
}

// Feature is one kernel feature: State is kfeat.State's ("present",
// "absent", "forced_absent" or "unknown"), Detail how that was decided.
type Feature struct {
	Name   string
	State  string
	Detail string
}

// ProbeKernel runs every feature probe once: netlink's (SYS_GET), and the
// uverbs ones on the first device that opens; kfeat records the answers.
func ProbeKernel() *Kernel {
	k := &Kernel{}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		k.Release = unix.ByteSliceToString(u.Release[:])
	}
	// One socket: the SYS_GET probes (nldev_sys, nldev_notify), then the
	// devices with netlink's driver ids (else sysfs's guess).
	var devs []verbs.Device
	if c, err := nldev.Dial(); err == nil {
		_, _ = c.System()
		_ = c.Notifies()
		devs, _ = Live(c).VerbsDevices()
		c.Close()
	} else {
		devs, _ = provider.All().Devices()
	}
	for _, d := range devs {
		ctx, err := verbs.OpenDevice(d, verbs.Options{})
		if err != nil {
			continue
		}
		ctx.ProbeKernel()
		ctx.Close()
		k.ProbedDevice = d.Name
		break
	}
	for _, n := range kfeat.Known {
		f := Feature{Name: n}
		f.State, f.Detail = kfeat.State(n)
		k.Features = append(k.Features, f)
	}
	return k
}

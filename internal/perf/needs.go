package perf

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// DeviceNeeds are perftest options rdmactl perf does not run whose
// refusal depends on the device and kernel. Where they lack what the
// option needs, the refusal says so and wraps verbs.ErrUnsupported (exit
// 5, as perftest also fails there); where they have it, rdmactl is what
// lacks it: a RefusedError (exit 2).
type DeviceNeeds struct {
	XRC      bool // -c XRC
	DualPort bool // -O/--dualport (and --report-per-port)
	TPH      bool // --tph_mem, --cpu_id, --ph
}

// Any says whether there is anything to check.
func (n DeviceNeeds) Any() bool { return n.XRC || n.DualPort || n.TPH }

// Option names the first option n holds, as its refusal does.
func (n DeviceNeeds) Option() string {
	switch {
	case n.XRC:
		return "-c XRC"
	case n.DualPort:
		return "-O"
	case n.TPH:
		return "--ph"
	}
	return ""
}

// deviceCapXRC is IB_UVERBS_DEVICE_XRC in device_cap_flags
// (include/uapi/rdma/ib_user_verbs.h).
const deviceCapXRC = 1 << 20

// dualPort2 is the second port of a dual-port run: perftest's
// DEF_IB_PORT2 (src/perftest_parameters.h), which it never changes.
const dualPort2 = 2

// CheckDeviceNeeds opens d, asks it and the kernel for what n's options
// need, and returns the refusal of the first option (nil only when
// !n.Any()). The context is closed before it returns.
func CheckDeviceNeeds(d verbs.Device, n DeviceNeeds) error {
	ctx, err := verbs.OpenDevice(d, verbs.Options{})
	if err != nil {
		return err
	}
	defer ctx.Close()
	return checkDeviceNeeds(ctx, n)
}

// needsQuerier is what checkDeviceNeeds asks (a *verbs.Context).
type needsQuerier interface {
	Device() verbs.Device
	QueryDevice() (*verbs.DeviceAttr, error)
	HasDMAHandles() (bool, error)
}

func checkDeviceNeeds(c needsQuerier, n DeviceNeeds) error {
	name := c.Device().Name
	if n.XRC || n.DualPort {
		a, err := c.QueryDevice()
		if err != nil {
			return err
		}
		if n.XRC {
			if a.DeviceCapFlags&deviceCapXRC == 0 {
				return fmt.Errorf("-c XRC: %s has no XRC (its device capabilities lack it); run with -c RC: %w", name, verbs.ErrUnsupported)
			}
			return &RefusedError{fmt.Errorf("-c XRC: %s has XRC, but rdmactl perf has no XRC transport (XRC domains, XRC SRQs, INI and TGT QPs); run with -c RC", name)}
		}
		if a.PhysPortCnt < dualPort2 {
			return fmt.Errorf("-O: %s has %d port; a dual-port run uses ports 1 and %d of one device: %w", name, a.PhysPortCnt, dualPort2, verbs.ErrUnsupported)
		}
		return &RefusedError{fmt.Errorf("-O: %s has %d ports, but rdmactl perf runs on one port: dual-port runs are not implemented", name, a.PhysPortCnt)}
	}
	if n.TPH {
		has, err := c.HasDMAHandles()
		if err != nil {
			return err
		}
		if !has {
			return fmt.Errorf("--ph: this kernel has no DMA handles for %s (UVERBS_OBJECT_DMAH, Linux 6.17, with a driver that has them), which TPH hints are registered with: %w", name, verbs.ErrUnsupported)
		}
		return &RefusedError{fmt.Errorf("--ph: this kernel has DMA handles for %s, but rdmactl perf does not register memory with TPH hints", name)}
	}
	return nil
}

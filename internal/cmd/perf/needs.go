package perf

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// perftest's options rdmactl perf does not run but whose refusal depends
// on the device and kernel (perf.DeviceNeeds): -c XRC, -O/--dualport with
// --report-per-port, and the TPH hints --tph_mem, --cpu_id and --ph. They
// are parsed and checked as perftest checks them (src/perftest_parameters.c),
// then refused once the device is known: exit 5 where it or the kernel
// lacks what the option needs (rxe has no XRC and one port; Debian 12's
// kernels have no DMA handles), else exit 2.

// deviceNeedFlags are those options as given.
type deviceNeedFlags struct {
	dualport      bool
	reportPerPort bool
	tphMem        string
	cpuID         int
	ph            int
}

func addDeviceNeedFlags(fs *pflag.FlagSet, f *perfFlags) {
	d := &f.dn
	fs.BoolVarP(&d.dualport, "dualport", "O", false, "run on ports 1 and 2 of the device, as perftest: refused (exit 5 on a device with one port)")
	fs.BoolVar(&d.reportPerPort, "report-per-port", false, "with -O and -D, each port's bandwidth, as perftest: refused with -O")
	fs.StringVar(&d.tphMem, "tph_mem", "", "PCIe TPH memory type, volatile (vm) or persistent (pm), with --cpu_id and --ph, as perftest: refused (exit 5 where the kernel has no DMA handles)")
	fs.IntVar(&d.cpuID, "cpu_id", -1, "CPU that handles the TPH requests, with --tph_mem and --ph: refused as --tph_mem")
	fs.IntVar(&d.ph, "ph", -1, "TPH processing hint 0 to 3, as perftest: refused (exit 5 where the kernel has no DMA handles)")
}

// parseDeviceNeeds checks the options as perftest's parser does and
// records what the device must be asked (f.needs; -c XRC is recorded
// where -c is parsed). Call it once -c, -D, --lat and -g are parsed.
func parseDeviceNeeds(f *perfFlags) error {
	d, p := &f.dn, &f.p
	if f.needs.XRC && p.RDMACM {
		return cmdutil.UsageErrorf("-c XRC: XRC does not support RDMA_CM (as perftest)")
	}
	if d.dualport {
		// perftest: "Dual-port mode only supports BW tests." and
		// "Dual-port mode not supported in multicast feature".
		if p.Test != perf.TestBW {
			return cmdutil.UsageErrorf("-O/--dualport: dual-port mode only supports bandwidth tests (as perftest)")
		}
		if p.Mcast {
			return cmdutil.UsageErrorf("-O/--dualport: dual-port mode is not supported with multicast (as perftest)")
		}
		f.needs.DualPort = true
	}
	if d.reportPerPort && (f.duration == 0 || !d.dualport) {
		return cmdutil.UsageErrorf("--report-per-port: works only with -D and -O (as perftest)")
	}
	tph, cpu, ph := f.fs.Changed("tph_mem"), f.fs.Changed("cpu_id"), f.fs.Changed("ph")
	if tph {
		switch strings.ToLower(d.tphMem) {
		case "volatile", "vm", "persistent", "pm":
		default:
			return cmdutil.UsageErrorf("--tph_mem %q: volatile (vm) or persistent (pm) (as perftest)", d.tphMem)
		}
	}
	if cpu && d.cpuID < 0 {
		return cmdutil.UsageErrorf("--cpu_id %d: a CPU number, 0 or more", d.cpuID)
	}
	if ph && (d.ph < 0 || d.ph > 3) {
		return cmdutil.UsageErrorf("--ph %d: a processing hint from 0 to 3 (as perftest)", d.ph)
	}
	switch {
	case tph && !cpu:
		return cmdutil.UsageErrorf("--tph_mem: needs --cpu_id (as perftest)")
	case cpu && !tph:
		return cmdutil.UsageErrorf("--cpu_id: needs --tph_mem (as perftest)")
	case (tph || cpu) && !ph:
		return cmdutil.UsageErrorf("--tph_mem and --cpu_id: need --ph (as perftest)")
	}
	f.needs.TPH = ph
	if f.needs.Any() && p.RDMACM {
		// The device is known only once the RDMA CM resolved the route,
		// after the peer was reached: refuse before that.
		return cmdutil.UsageErrorf("%s with -R: rdmactl perf does not run it (without -R it says whether the device could)", f.needs.Option())
	}
	return nil
}

// checkDeviceNeeds refuses needs on vd: exit 5 where the device or
// kernel lacks them, exit 2 where rdmactl does.
func checkDeviceNeeds(vd verbs.Device, needs perf.DeviceNeeds) error {
	err := perf.CheckDeviceNeeds(vd, needs)
	if re := (*perf.RefusedError)(nil); errors.As(err, &re) {
		return cmdutil.WithCode(cmdutil.ExitUsage, err)
	}
	return err
}

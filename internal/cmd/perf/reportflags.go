package perf

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/placement"
)

// perftest's report and run-shape options with perftest's letters
// (src/perftest_parameters.c): -N, --output, --out_json, --out_json_file,
// --cpu_util, --report-both, -f, -F, --perform_warm_up, --wait_destroy,
// --latency_gap, --cqe_poll, --disable_dynamic_polling, --pin_cores,
// --disable_numa, --disable_pcie_relaxed, --use_hugepages, --odp, the
// rate limiter's and -V.

type reportFlags struct {
	rateLimit   float64
	rateType    string
	rateUnits   string
	burstSize   int
	pinCores    string
	pinSet      *unix.CPUSet // --pin_cores, parsed
	noNUMA      bool
	numaNode    int
	cqePoll     int
	noDynPoll   bool
	latencyGap  int64
	waitDestroy uint32
	outJSON     bool
	outJSONFile string
	output      string
	margin      int
	cpuFreq     bool
	version     bool
}

func addReportFlags(fs *pflag.FlagSet, f *perfFlags) {
	fs.BoolVarP(&f.p.Report.NoPeak, "noPeak", "N", false, "bw: report the BW peak as 0, as perftest's -N (the average and message rate are unchanged)")
	fs.StringVar(&f.rep.output, "output", "", "print only one figure per row, as perftest: bandwidth or message_rate (bw; the average), latency (--lat; the average)")
	fs.IntVarP(&f.rep.margin, "margin", "f", 0, "with -D: seconds left out of the results at the start and at the end (default 2, at most a quarter of -D)")
	fs.BoolVarP(&f.rep.cpuFreq, "CPU-freq", "F", false, "accepted, as perftest's -F (do not warn about CPU frequency scaling): rdmactl times with the kernel's clock, not CPU cycles, and never warns")
	fs.BoolVar(&f.rep.outJSON, "out_json", false, "also write perftest 6.06's report file (its key: value text, not JSON; -j is rdmactl's JSON)")
	fs.StringVar(&f.rep.outJSONFile, "out_json_file", perf.DefaultOutJSONFile, "the file --out_json writes (perftest's default, in the working directory)")
	fs.BoolVar(&f.p.Report.CPUUtil, "cpu_util", false, "-D: add perftest's CPU_Util[%] column: the machine's user CPU ticks over user+idle in the measured window, from /proc/stat (JSON: cpu_util_pct); without -D a warning and no column, as perftest")
	fs.BoolVar(&f.p.Report.Both, "report-both", false, "-b: after the sum, print this side's and the peer's figures, as perftest (JSON: report_both)")
	fs.BoolVar(&f.p.WarmUp, "perform_warm_up", false, "write and read bw: before each measurement, post a send queue's worth of WRs per QP and wait for them, as perftest (which takes it in every test and ignores it in send bw and the latency tests)")
	fs.StringVar(&f.rep.pinCores, "pin_cores", "", "run on these CPUs only, as perftest 6.29: 0, 0,1,2, 0-3 or 0-3,8,12-15 (every thread of the process)")
	fs.BoolVar(&f.rep.noNUMA, "disable_numa", false, "do not run on the device's NUMA node (by default, as perftest 6.29, a device with a node runs the benchmark on that node's CPUs and memory)")
	fs.IntVar(&f.rep.numaNode, "numa_node", -1, "run on this NUMA node's CPUs, with the buffer in its memory, as perftest 6.29 (not with --pin_cores)")
	fs.BoolVar(&f.p.NoRelaxedOrdering, "disable_pcie_relaxed", false, "register the memory without PCIe relaxed ordering (by default it has it, as perftest's, but in write_lat; devices without it ignore it)")
	fs.BoolVar(&f.p.MRPerQP, "mr_per_qp", false, "register a memory region for each QP, as perftest (each QP's work requests and key record use its own keys)")
	fs.BoolVar(&f.p.ODP, "odp", false, "register the memory with On-Demand Paging, as perftest; a device or kernel without ODP refuses it (exit 5)")
	fs.BoolVar(&f.p.Reversed, "reversed", false, "swap the roles, as perftest: the side without SERVER sends (writes, reads, sends) and the one with it waits; give it on both sides")
	fs.StringVar(&f.payloadFile, "payload_file_path", "", "fill the buffer with this payload, repeated: a text file of 32-bit words, 0xaabbccdd,0x11223344,... (stored little endian), as perftest 6.29")
	fs.StringVar(&f.p.MmapFile, "mmap", "", "the buffer is this file's pages, mapped shared (a regular file large enough, e.g. in /dev/shm), as perftest")
	fs.Int64Var(&f.p.MmapOffset, "mmap-offset", 0, "--mmap: map the file from this offset (a multiple of the page size)")
	fs.BoolVar(&f.p.HugePages, "use_hugepages", false, "take the buffer from huge pages (reserved with sysctl vm.nr_hugepages; exit 5 without enough free), as perftest")
	fs.Float64Var(&f.rep.rateLimit, "rate_limit", 0, "send at most this rate (--rate_units); alone, perftest's HW limiter: the QPs' static rate on InfiniBand (2.5, 5, 10 ... 300 Gb/s), software pacing (SW) on RoCE")
	fs.StringVar(&f.rep.rateType, "rate_limit_type", "", "SW: limit in the sending loop, bursts of --burst_size then a gap; HW: the QPs' static rate (InfiniBand only; refused on RoCE); as perftest (PP is refused)")
	fs.StringVar(&f.rep.rateUnits, "rate_units", "g", "--rate_limit's unit: M (MiB/s), g (Gbit/s) or p (packets/s)")
	fs.IntVar(&f.rep.burstSize, "burst_size", 0, "--rate_limit_type SW: messages per burst (default: TX depth)")
	fs.IntVar(&f.rep.cqePoll, "cqe_poll", 64, "bw: completions asked for per poll of a CQ, 1..65535 (perftest 6.29's option)")
	fs.BoolVar(&f.rep.noDynPoll, "disable_dynamic_polling", false, "accepted, as perftest 6.29's: rdmactl's poll batch (--cqe_poll) never adapts")
	fs.Int64Var(&f.rep.latencyGap, "latency_gap", 0, "--lat: spin this many usec before each post, as perftest (the gap is in the samples, as in perftest's)")
	fs.Uint32Var(&f.rep.waitDestroy, "wait_destroy", 0, "after the run, keep the QPs, CQs and memory this many seconds before releasing them (to inspect them), as perftest")
	fs.BoolVarP(&f.rep.version, "version", "V", false, "print \"Version: V\" as perftest, V being the perftest version rdmactl claims to its peer (\""+perf.OurVersion+"\"), and exit")
}

// applyReportFlags moves them into Params (ranges: Params.Validate).
func applyReportFlags(f *perfFlags) error {
	if f.fs.Changed("output") {
		o, err := perf.ParseOutput(f.rep.output)
		if err != nil {
			return cmdutil.UsageErrorf("--output %v", err)
		}
		f.p.Report.Output = o
	}
	switch {
	case f.rep.outJSON && f.rep.outJSONFile == "":
		return cmdutil.UsageErrorf("--out_json_file: give a file name")
	case f.rep.outJSON:
		f.p.Report.OutJSON = f.rep.outJSONFile
	case f.fs.Changed("out_json_file"):
		return cmdutil.UsageErrorf("--out_json_file names the file --out_json writes: give --out_json too (perftest writes nothing without it)")
	}
	if err := applyRateLimitFlags(f); err != nil {
		return err
	}
	if f.fs.Changed("pin_cores") {
		set, err := placement.ParseCPUList(f.rep.pinCores, placement.System.NumCPUsConf())
		if err != nil {
			return cmdutil.UsageErrorf("--pin_cores %s: %v", f.rep.pinCores, err)
		}
		f.rep.pinSet = &set
	}
	if f.fs.Changed("numa_node") {
		if err := checkNUMANode(placement.System, f.rep.numaNode, f.rep.pinSet != nil); err != nil {
			return err
		}
	}
	if f.fs.Changed("cqe_poll") {
		if f.rep.cqePoll < 1 || f.rep.cqePoll > 65535 {
			return cmdutil.UsageErrorf("--cqe_poll %d: 1..65535 completions per poll (as perftest)", f.rep.cqePoll)
		}
		f.p.CQEPoll = f.rep.cqePoll
	}
	if f.rep.latencyGap < 0 || f.rep.latencyGap > maxPerfSeconds*1_000_000 {
		return cmdutil.UsageErrorf("--latency_gap %d: the gap is 0..%d usec", f.rep.latencyGap, int64(maxPerfSeconds)*1_000_000)
	}
	f.p.LatencyGap = time.Duration(f.rep.latencyGap) * time.Microsecond
	if f.rep.waitDestroy > maxPerfSeconds {
		return cmdutil.UsageErrorf("--wait_destroy %d: at most %d seconds (a year)", f.rep.waitDestroy, maxPerfSeconds)
	}
	f.p.WaitDestroy = time.Duration(f.rep.waitDestroy) * time.Second
	if f.fs.Changed("margin") {
		if f.rep.margin < 0 || f.rep.margin > maxPerfSeconds {
			return cmdutil.UsageErrorf("-f %d: the margin is 0..%d seconds", f.rep.margin, maxPerfSeconds)
		}
		f.p.Report.UserMargin = true
		f.p.Margin = time.Duration(f.rep.margin) * time.Second
	}
	return nil
}

// applyRateLimitFlags reads the rate limiter's options as perftest's
// parser does: --rate_limit alone means the HW limiter.
func applyRateLimitFlags(f *perfFlags) error {
	rl, fs := &f.p.RateLimit, f.fs
	if fs.Changed("rate_limit") {
		if f.rep.rateLimit <= 0 {
			return cmdutil.UsageErrorf("--rate_limit %v: the rate must be positive (as perftest)", f.rep.rateLimit)
		}
		rl.Rate, rl.Type = f.rep.rateLimit, perf.RateLimitHW
		// HW finds its rate by the text, as perftest (2.5, 5, ... 300).
		rl.Text = fs.Lookup("rate_limit").Value.String()
	}
	if fs.Changed("rate_limit_type") {
		t, err := perf.ParseRateLimitType(f.rep.rateType)
		if err != nil {
			return cmdutil.UsageErrorf("--rate_limit_type %v", err)
		}
		rl.Type, rl.Explicit = t, true
	}
	u, err := perf.ParseRateUnits(f.rep.rateUnits)
	if err != nil {
		return cmdutil.UsageErrorf("--rate_units %v", err)
	}
	rl.Units = u
	if fs.Changed("burst_size") {
		if f.rep.burstSize < 0 {
			return cmdutil.UsageErrorf("--burst_size %d: must not be negative", f.rep.burstSize)
		}
		rl.Burst = f.rep.burstSize
	}
	if rl.Type == perf.RateLimitNone && (fs.Changed("rate_units") || fs.Changed("burst_size")) {
		return cmdutil.UsageErrorf("--rate_units and --burst_size apply to the rate limiter: give --rate_limit and --rate_limit_type SW")
	}
	return nil
}

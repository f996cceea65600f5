package perf

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/placement"
	"github.com/rdmactl/rdmactl/internal/rdmacm"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// rdmactl perf send|write|read: perftest's ib_{send,write,read}_{bw,lat},
// wire-compatible with perftest (exchange >= 5.70; tested against 6.06).
//
// perftest's letters clash with the root's persistent -d (--details) and
// -p (--pretty): cobra panics when a subcommand's local flag reuses a
// persistent shorthand ("unable to redefine 'd' shorthand"). So the perf
// subcommands parse their own arguments (DisableFlagParsing) with a pflag
// set of their own, where -d is the device and -p the TCP port, and accept
// the global -j/--json, --pretty and --details there too.

const perfExample = `  # bandwidth, like ib_write_bw: start the server, then the client
  rdmactl perf write -d rxe0
  rdmactl perf write -d rxe1 10.77.0.1
  # latency, like ib_send_lat, 4 KiB messages, 10 s, as JSON
  rdmactl perf send --lat -d rxe0
  rdmactl -j perf send --lat -d rxe1 -s 4K -D 10 10.77.0.1
  # against a stock perftest server
  ib_read_bw -d rxe0 &
  rdmactl perf read -d rxe1 10.77.0.1
  # lossless RoCE class (DSCP 26: traffic class 104) and SL 3; for CI,
  # exit 7 when the average is below 9000 MiB/s
  rdmactl perf write -d rxe1 --tclass 104 -S 3 -w 9000 10.77.0.1
  # latency gate: exit 7 when the 99th percentile exceeds 25 usec
  rdmactl perf send --lat -d rxe1 --limit_lat 25 --limit_lat_pct 99 10.77.0.1`

func NewCmd(a *cmdutil.App) *cobra.Command {
	c := &cobra.Command{
		Use:   "perf",
		Short: "Benchmark RDMA bandwidth and latency, wire-compatible with perftest",
		Long: `rdmactl perf runs perftest's benchmarks (ib_send_bw, ib_write_bw, ib_read_bw, ib_atomic_bw and
their _lat counterparts with --lat). It speaks perftest's TCP exchange, so either
side may be a stock perftest (exchange version 5.70 or newer), and prints
perftest's report layout, or JSON with -j.`,
		Example: perfExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cmdutil.UsageErrorf("'rdmactl perf' needs a test: send, write, read or atomic (e.g. 'rdmactl perf write -d rxe0')")
		},
	}
	for _, v := range []perf.Verb{perf.VerbSend, perf.VerbWrite, perf.VerbRead, perf.VerbAtomic} {
		c.AddCommand(newPerfVerbCmd(a, v))
	}
	c.AddCommand(newMeshCmd(a))
	return c
}

// perfFlags are one invocation's parsed options.
type perfFlags struct {
	p      perf.Params
	lat    bool
	size   string
	conn   string
	inline int
	// --force-link's text (perf.Params.ForceLink once parsed)
	forceLink string
	// --payload_file_path (perf.Params.Payload once read)
	payloadFile string
	duration    int
	interval    int
	loop        string
	json        bool
	pretty      bool
	help        bool
	fs          *pflag.FlagSet
	ops         perfOpsFlags  // perf_ops.go: -A, --use-srq
	rep         reportFlags   // reportflags.go
	ev          perfEventOpts // perf_events.go
	// QoS/path options and thresholds (perf_qos.go).
	qos qosFlags
	// Options refused once the device is known (needs.go).
	dn    deviceNeedFlags
	needs perf.DeviceNeeds
}

func perfFlagSet(f *perfFlags, verb perf.Verb) *pflag.FlagSet {
	fs := pflag.NewFlagSet("perf "+verb.String(), pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.SortFlags = false
	p := &f.p
	fs.BoolVar(&f.lat, "lat", false, "measure latency (ib_"+verb.String()+"_lat) instead of bandwidth")
	fs.StringVarP(&p.Device, "ib-dev", "d", "", "RDMA device (default: the first one)")
	fs.IntVarP(&p.IBPort, "ib-port", "i", 1, "device port")
	fs.IntVarP(&p.GIDIndex, "gid-index", "x", 0, "GID index (default: perftest's choice, the IPv4 RoCE v2 GID)")
	fs.BoolVar(&p.IPv6, "ipv6", false, "without -x: choose an IPv6 GID rather than the IPv4 one, as perftest")
	fs.BoolVar(&p.IPv6Addr, "ipv6-addr", false, "run the TCP exchange over IPv6 only (both sides), as perftest's")
	fs.StringVar(&f.forceLink, "force-link", "", "run as if the port's link layer were IB or Ethernet, as perftest (Ethernet on InfiniBand: with a GRH; IB on RoCE: refused)")
	fs.StringVarP(&f.size, "size", "s", "", "message size, with K/M suffix (default 65536 for bw, 2 for --lat)")
	fs.BoolVarP(&p.AllSizes, "all", "a", false, "run all sizes from 2 to 8M")
	fs.Uint64VarP(&p.Iters, "iters", "n", 0, "iterations (default 5000 for write bw, else 1000)")
	fs.IntVarP(&f.duration, "duration", "D", 0, "run for this many seconds instead of -n")
	fs.IntVarP(&p.QPs, "qp", "q", 1, "number of QPs")
	fs.IntVarP(&p.TxDepth, "tx-depth", "t", 0, "send queue depth (default 128 for bw, 1 for --lat)")
	fs.IntVarP(&p.RxDepth, "rx-depth", "r", 0, "receive queue depth (default 512 for send, else 1)")
	fs.IntVarP(&f.inline, "inline_size", "I", -1, "max inline payload in bytes; -1: perftest's choice for the device (latency on ConnectX: 220 write, 236 send, 188 UD send; else 0)")
	fs.IntVarP(&p.PostList, "post_list", "l", 1, "post this many WRs per post call")
	fs.IntVar(&p.RecvPostList, "recv_post_list", 1, "post receives this many per post call, a list once all of it completed (bandwidth tests; -n a multiple of it)")
	fs.IntVarP(&p.CQMod, "cq-mod", "Q", 0, "signal every Nth WR (default 100; 1 above 8 KiB)")
	fs.IntVarP(&p.MTU, "mtu", "m", 0, "path MTU 256, 512, 1024, 2048 or 4096 (default: the port's; the smaller side wins; another value: the port's, with a warning, as perftest)")
	fs.BoolVarP(&p.Bidir, "bidirectional", "b", false, "traffic both ways (bw): each side sends and receives, both print the sum")
	fs.IntVarP(&p.OutReads, "outs", "o", 0, "RDMA READs in flight (default: device max)")
	fs.BoolVar(&p.Gbits, "report_gbits", false, "report Gb/s instead of MiB/s")
	fs.IntVar(&f.interval, "interval", 0, "print a bandwidth row every N seconds during the run")
	fs.BoolVarP(&p.Histogram, "histogram", "H", false, "print a latency histogram")
	fs.BoolVarP(&p.Unsorted, "report-unsorted", "U", false, "print every latency sample in the order taken, as perftest's -U (JSON: unsorted_usec)")
	fs.StringVar(&f.loop, "loop", "", "how the measurement loops run: detached (off the Go scheduler, on rxe), plain (a locked thread), auto (default: $"+rtloop.EnvVar+", else detached where it works)")
	fs.IntVarP(&p.Port, "port", "p", 18515, "TCP port of the exchange")
	fs.StringVar(&p.Bind, "bind", "", "server: listen on this address (default: all); client with -R: the source address the RDMA CM resolves from")
	fs.StringVarP(&f.conn, "connection", "c", "RC", "transport: RC, UC, or UD (send only)")
	addRDMACMFlag(fs, &f.p)
	addQoSFlags(fs, f)
	fs.BoolVarP(&f.json, "json", "j", false, "print JSON instead of perftest's table")
	fs.BoolVar(&f.pretty, "pretty", false, "indent JSON")
	fs.Bool("details", false, "accepted for symmetry with other commands")
	perfEventFlags(fs, f)
	addReportFlags(fs, f)
	fs.BoolVarP(&f.help, "help", "h", false, "show this help")
	addPerfOpsFlags(fs, f, verb)
	addDeviceNeedFlags(fs, f)
	addRefusedFlags(fs)
	fs.SetNormalizeFunc(perftestAliases)
	f.fs = fs
	return fs
}

// perftestAliases maps perftest's long names that rdmactl spells
// otherwise to rdmactl's: perftest's --report-histogrm (sic,
// src/perftest_parameters.c) is --histogram.
func perftestAliases(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	if name == "report-histogrm" {
		name = "histogram"
	}
	return pflag.NormalizedName(name)
}

// parsePerfArgs turns the command line of 'perf <verb>' into Params.
func parsePerfArgs(verb perf.Verb, args []string) (*perfFlags, error) {
	f := &perfFlags{}
	fs := perfFlagSet(f, verb)
	args, err := expandLongPrefixes(fs, args)
	if err != nil {
		return f, err
	}
	err = fs.Parse(args)
	if rerr := refused(fs, args); rerr != nil {
		return f, rerr
	}
	if err != nil {
		return f, cmdutil.UsageErrorf("%v (see 'rdmactl perf %s --help')", err, verb)
	}
	if f.help || f.rep.version {
		return f, nil
	}
	p := &f.p
	p.Verb = verb
	p.Test = perf.TestBW
	if f.lat {
		p.Test = perf.TestLat
	}
	p.UserGID = fs.Changed("gid-index")
	if fs.Changed("force-link") {
		// perftest's str_link_layer: the first 2 or 8 letters, any case.
		switch l := strings.ToLower(f.forceLink); {
		case strings.HasPrefix(l, "ib"):
			p.ForceLink = vocab.LinkLayerInfiniBand
		case strings.HasPrefix(l, "ethernet"):
			p.ForceLink = vocab.LinkLayerEthernet
		default:
			return f, cmdutil.UsageErrorf("--force-link %q: IB or Ethernet (as perftest)", f.forceLink)
		}
	}
	if err := transportRefusal(f.conn); err != nil {
		return f, err
	}
	conn := f.conn
	if strings.EqualFold(conn, "XRC") {
		// Refused once the device is known (needs.go).
		f.needs.XRC, conn = true, "RC"
	}
	if p.Conn, err = perf.ParseTransport(conn); err != nil {
		return f, cmdutil.UsageErrorf("-c: %v", err)
	}
	if f.size != "" {
		if p.Size, err = perf.ParseSize(f.size); err != nil {
			return f, cmdutil.UsageErrorf("-s: %v", err)
		}
	}
	p.Inline = f.inline
	if err := parsePerfOpsFlags(f); err != nil {
		return f, err
	}
	if p.Loop, err = rtloop.ParseMode(f.loop); err != nil {
		return f, cmdutil.UsageErrorf("--loop: %v", err)
	}
	if f.duration < 0 || f.interval < 0 {
		return f, cmdutil.UsageErrorf("-D and --interval take a positive number of seconds")
	}
	if f.duration > maxPerfSeconds {
		return f, cmdutil.UsageErrorf("-D %d: at most %d seconds (a year)", f.duration, maxPerfSeconds)
	}
	if f.interval > maxPerfSeconds {
		return f, cmdutil.UsageErrorf("--interval %d: at most %d seconds (a year)", f.interval, maxPerfSeconds)
	}
	if err := checkGivenZeros(fs, p); err != nil {
		return f, err
	}
	if err := applyQoSFlags(f); err != nil {
		return f, err
	}
	p.Duration = time.Duration(f.duration) * time.Second
	p.Interval = time.Duration(f.interval) * time.Second
	if err := applyPerfEventFlags(f); err != nil {
		return f, err
	}
	if err := applyReportFlags(f); err != nil {
		return f, err
	}
	if err := parseDeviceNeeds(f); err != nil {
		return f, err
	}
	rest := fs.Args()
	switch len(rest) {
	case 0:
		p.Server = true
	case 1:
		p.Host = rest[0]
	default:
		return f, cmdutil.UsageErrorf("too many arguments %q: give at most the server's address", rest)
	}
	p.Defaults()
	if f.payloadFile != "" {
		if err := p.LoadPayload(f.payloadFile); err != nil {
			return f, cmdutil.UsageErrorf("--payload_file_path: %v", err)
		}
	}
	if err := p.Validate(); err != nil {
		return f, cmdutil.UsageErrorf("%v", err)
	}
	if p.MmapFile != "" {
		// Before any device is opened; mapping checks it again, and
		// its size (verbs.NewFileBuffer).
		if st, err := os.Stat(p.MmapFile); err != nil {
			return f, cmdutil.UsageErrorf("--mmap: %v", err)
		} else if !st.Mode().IsRegular() {
			return f, cmdutil.UsageErrorf("--mmap %s: not a regular file", p.MmapFile)
		}
	}
	return f, nil
}

func newPerfVerbCmd(a *cmdutil.App, verb perf.Verb) *cobra.Command {
	name := verb.String()
	c := &cobra.Command{
		Use:                name + " [flags] [SERVER]",
		Short:              fmt.Sprintf("RDMA %s bandwidth or latency (ib_%s_bw, ib_%s_lat)", strings.ToUpper(name), name, name),
		Example:            perfExample,
		DisableFlagParsing: true,
		RunE: func(c *cobra.Command, args []string) error {
			pf, err := parsePerfArgs(verb, args)
			if pf.help {
				fmt.Fprintf(a.Stdout, "%s\n\nUsage:\n  rdmactl perf %s [flags] [SERVER]\n\nFlags:\n%s\nExamples:\n%s\n", c.Short, name, pf.fs.FlagUsages(), perfExample)
				return nil
			}
			if err == nil && pf.rep.version {
				// perftest's -V: "Version: %s" with the version it
				// exchanges (user_param->version), then exit.
				fmt.Fprintf(a.Stdout, "Version: %s\n", perf.OurVersion)
				if a.Tool != "" {
					// Under its name, as perftest: its parser's
					// VERSION_EXIT makes main return FAILURE.
					return cmdutil.Quiet(cmdutil.ExitFailure)
				}
				return nil
			}
			if err != nil {
				return err
			}
			if pf.rep.pinSet != nil {
				if err := applyPinCores(pf.rep.pinCores, *pf.rep.pinSet); err != nil {
					return err
				}
			}
			autoNUMA := !pf.rep.noNUMA && pf.rep.pinSet == nil && !pf.fs.Changed("numa_node")
			if pf.fs.Changed("numa_node") {
				if _, err := placeOnNode(placement.System, pf.rep.numaNode, true); err != nil {
					return err
				}
				pf.p.OnNUMANode, pf.p.NUMANode = true, pf.rep.numaNode
			}
			pf.p.Report.AsPerftest = a.Tool != ""
			if pf.qos.slIgnored && a.Tool == "" {
				fmt.Fprintln(a.Stderr, "rdmactl: perf: -S is ignored with -R: the RDMA CM's path sets the service level (as perftest)")
			}
			if pf.json {
				a.Opts.JSON = true
			}
			if pf.pretty {
				a.Opts.Pretty = true
			}
			return runPerf(cmdutil.Watching(c), a, &pf.p, pf.needs, autoNUMA)
		},
	}
	a.LazyLong(c, func() string {
		return fmt.Sprintf(`Without SERVER, wait for one client (like 'ib_%[1]s_bw -d DEV'); with SERVER,
connect to it and run. Either side may be perftest's ib_%[1]s_bw/_lat.

perftest's options that rdmactl does not implement are refused in one line
saying why: exit 2, or 5 for a vendor extension rdmactl's driver path lacks
or, for -c XRC, -O and the TPH options, asked of the device first, for what
the device or kernel lacks (docs/perftest-options.md lists them all).

Flags (perftest's letters; here -d is the device and -p the TCP port):
%[2]s`, name, perfFlagSet(&perfFlags{}, verb).FlagUsages())
	})
	return c
}

// runPerf runs p's benchmark; autoNUMA places it on the device's NUMA
// node (placement.go) once the device is known. Options the device must
// be asked about (needs) are refused there, before anything else.
func runPerf(ctx context.Context, a *cmdutil.App, p *perf.Params, needs perf.DeviceNeeds, autoNUMA bool) error {
	if p.RDMACM {
		return runPerfSession(ctx, a, p, nil)
	}
	var vd verbs.Device
	if p.Device == "" {
		devs, err := inventory.LiveVerbsDevices()
		if err != nil || len(devs) == 0 {
			return inventory.ErrNoVerbsDevice
		}
		vd = devs[0]
		p.Device = vd.Name
	} else {
		var err error
		if vd, err = inventory.LiveVerbsDevice(p.Device); err != nil {
			return err
		}
	}
	if needs.Any() {
		return checkDeviceNeeds(vd, needs)
	}
	if autoNUMA && !placement.System.AffinityLimited() {
		if node := placement.System.DeviceNode(vd.Name); node >= 0 {
			if bound, _ := placeOnNode(placement.System, node, false); bound {
				p.OnNUMANode, p.NUMANode = true, node
			}
		}
	}
	dev, err := perf.OpenDevice(vd, p.IBPort)
	if err != nil {
		return err
	}
	return runPerfSession(ctx, a, p, dev)
}

// runPerfSession runs the session on dev (nil with -R: the RDMA CM's
// route names the device).
func runPerfSession(ctx context.Context, a *cmdutil.App, p *perf.Params, dev perf.Device) error {
	s := &perf.Session{P: p, Dev: dev, SoleSession: a.SoleSession}
	if p.RDMACM || p.CommCM {
		s.CMDevice = cmRouteDevice
	}
	if p.CounterDeltas {
		s.Counters = &perfCounterWatch{a: a, p: p}
	}
	s.Notes = a.Stderr
	if !a.Opts.JSON {
		s.Out = a.Stdout
	}
	if cmdutil.IsTerminal(a.Stderr) {
		s.Progress = a.Stderr
	}
	res, err := s.Run(ctx)
	if err == nil {
		err = s.OutJSONErr() // after the report, as perftest's "failed to open"
	}
	if ue := (*rdmacm.UnsupportedError)(nil); errors.As(err, &ue) {
		err = cmdutil.WithCode(cmdutil.ExitUnsupported, err) // no rdma_cm device: modprobe rdma_ucm
	}
	if re := (*perf.RefusedError)(nil); errors.As(err, &re) {
		err = cmdutil.WithCode(cmdutil.ExitUsage, err) // what rdmactl perf does not do on this port
	}
	if a.Opts.JSON && res != nil {
		if jerr := a.PrintJSON(res); jerr != nil && err == nil {
			err = jerr
		}
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w (results so far printed; all resources released)", ctx.Err())
	}
	return err
}

// addRDMACMFlag registers perftest's -R/--rdma_cm and -z/--comm_rdma_cm.
func addRDMACMFlag(fs *pflag.FlagSet, p *perf.Params) {
	fs.BoolVarP(&p.RDMACM, "rdma_cm", "R", false, "connect through the RDMA CM (/dev/infiniband/rdma_cm), as perftest's -R: the exchange and the QPs; the device is the one the address resolves to (RC only)")
	fs.BoolVarP(&p.CommCM, "comm_rdma_cm", "z", false, "exchange through the RDMA CM as -R does, but connect -d's QPs from the exchanged keys, as perftest's -z")
}

// cmRouteDevice is the uverbs device of an RDMA CM route: the device
// whose netlink index the kernel reported, else the one with its node
// GUID (kernels that do not report the index).
func cmRouteDevice(r rdmacm.Route) (verbs.Device, error) {
	var index *uint32
	if r.IBDevIndex != rdmacm.NoIBDevIndex {
		index = &r.IBDevIndex
	}
	d, err := inventory.LiveVerbsDeviceAt(index, r.NodeGUID)
	if err != nil {
		return verbs.Device{}, fmt.Errorf("-R: the device of the RDMA CM's route: %w", err)
	}
	return d, nil
}

// maxPerfSeconds bounds -D and --interval: a year, far above any soak, and
// far below where seconds overflow a time.Duration.
const maxPerfSeconds = 365 * 24 * 3600

// checkGivenZeros refuses a 0 typed for an option whose 0 means "the
// default" inside Params (Defaults fills it in): -n 0 or -t 0 given on the
// command line is a mistake to name, not a request for the default.
func checkGivenZeros(fs *pflag.FlagSet, p *perf.Params) error {
	for _, c := range []struct {
		name, short string
		zero        bool
		want        string
	}{
		{"iters", "n", p.Iters == 0, "at least 5 iterations (as perftest)"},
		{"qp", "q", p.QPs == 0, "number of QPs must be 1..16384"},
		{"tx-depth", "t", p.TxDepth == 0, "TX depth must be 1..16384"},
		{"rx-depth", "r", p.RxDepth == 0, "RX depth must be 1..16384"},
		{"cq-mod", "Q", p.CQMod == 0, "CQ moderation must be 1..1024"},
		{"port", "p", p.Port == 0, "TCP port must be 1..65535"},
		{"ib-port", "i", p.IBPort == 0, "device ports are numbered 1..255"},
	} {
		if c.zero && fs.Changed(c.name) {
			return cmdutil.UsageErrorf("-%s 0: %s", c.short, c.want)
		}
	}
	return nil
}

// Command rdmactl inspects RDMA devices and benchmarks RDMA fabrics without
// libibverbs: it talks to the kernel over RDMA netlink, sysfs and the uverbs
// character devices.
package main

import (
	"context"
	"fmt"
	"github.com/rdmactl/rdmactl/internal/complete"
	"io"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/rdmagrammar"
	"github.com/spf13/cobra"
)

// Options are the global flags, shared by every command.
type Options struct {
	JSON          bool
	Pretty        bool
	Details       bool
	DriverDetails bool // -dd, as rdma: details plus the driver's own (res)
	Raw           bool // -r, as rdma: raw resource dumps (res only)
	SysfsRoot     string
}

// DetailsFlag is -d/--details: a bool that, given twice (-dd, -d -d), also
// sets driverDetails, as rdma's -dd does.
type DetailsFlag struct{ o *Options }

func (f DetailsFlag) String() string { return strconv.FormatBool(f.o != nil && f.o.Details) }
func (f DetailsFlag) Type() string   { return "bool" }
func (f DetailsFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	f.o.DriverDetails = on && f.o.Details
	f.o.Details = on
	return nil
}

// App is what every command gets: global options and where to write.
type App struct {
	Opts   Options
	Stdout io.Writer
	Stderr io.Writer
	lazy   []func()        // fill the long help texts lazyLong deferred
	Ctx    context.Context // run's; a write looks at it to catch signals (openWrite)
	// SoleSession: a perf command is the only benchmark in the process,
	// as in the binary (main sets it); tests that run both sides of a
	// benchmark in one process leave it false (perf.Session.SoleSession).
	SoleSession bool
}

// LazyLong gives c the long help build returns, built when c's help is
// shown or the manual is generated (expandHelp) instead of at every start:
// perf's four flag tables cost 8 of the 46 ms of CPU every rdmactl run
// took to start (TCG guest, perf stat).
func (a *App) LazyLong(c *cobra.Command, build func() string) {
	fill := func() {
		if c.Long == "" {
			c.Long = build()
		}
	}
	a.lazy = append(a.lazy, fill)
	c.SetHelpFunc(func(c *cobra.Command, args []string) {
		fill()
		c.Parent().HelpFunc()(c, args) // cobra's own help, as for every other command
	})
}

// ExpandHelp fills every long help lazyLong deferred (the manual needs
// them all).
func (a *App) ExpandHelp() {
	for _, f := range a.lazy {
		f()
	}
}

// commands are rdmactl's top-level commands. A new command is added here:
// one explicit list instead of init() registration, so that nothing depends
// on the order in which the compiler sees the files. Help lists commands
// sorted by name (cobra's default), whatever the order here.
var commands = []func(*App) *cobra.Command{
	newDevCmd,
	newLinkCmd,
	newGIDsCmd,
	newCountersCmd,
	newTopCmd,
	newResCmd,
	newPerfCmd,
	newCaptureCmd,
	newMonitorCmd,
	newDoctorCmd,
	newExporterCmd,
	newVersionCmd,
	newCompletionCmd,
	newSystemCmd,
	newStatisticCmd,
}

// devSubcommands are the children of "rdmactl dev".
var devSubcommands = []func(*App) *cobra.Command{
	newDevShowCmd,
	newDevQueryCmd,
	newDevHCACapsCmd,
	newDevSetCmd,
}

func newRootCmd(a *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "rdmactl",
		Short: "Inspect RDMA devices and benchmark RDMA fabrics, without libibverbs",
		Long: `rdmactl inspects RDMA devices (like rdma, ibv_devinfo, ibstat and show_gids)
and benchmarks RDMA fabrics (like perftest's ib_{send,write,read}_{bw,lat}).
It is one static binary that talks to the kernel directly: RDMA netlink,
/sys/class/infiniband and /dev/infiniband/uverbsN.`,
		Example: `  rdmactl link show
  rdmactl -j dev show rxe0
  rdmactl gids --type v2 --ipv4`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	// --version, which people type first: the same lines as 'rdmactl
	// version' (cobra enables the flag when Version is set; the text is
	// made only when asked).
	root.Version = "set"
	cobra.AddTemplateFunc("rdmactlVersion", versionText)
	root.SetVersionTemplate(`{{rdmactlVersion}}`)
	pf := root.PersistentFlags()
	pf.BoolVarP(&a.Opts.JSON, "json", "j", false, "print JSON instead of a table")
	pf.BoolVarP(&a.Opts.Pretty, "pretty", "p", false, "indent JSON output (implies nothing without -j)")
	pf.VarPF(DetailsFlag{&a.Opts}, "details", "d", "print more details; twice (-dd) adds what the driver itself reports: of resources, as rdma -dd, and (link show) each port's MTUs as the device answers").NoOptDefVal = "true"
	pf.BoolVarP(&a.Opts.Raw, "raw", "r", false, "res qp|cq|mr|srq: the driver's raw image of each object, as rdma -r")
	pf.StringVar(&a.Opts.SysfsRoot, "sysfs-root", "", "read a capture (rdmactl capture: a directory or .tar.gz bundle) at `PATH` instead of the live /sys and netlink")
	// -r is global as in rdma (where it goes before the object), but only
	// res has raw dumps.
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if a.Opts.Raw && c.Name() != "res" {
			return UsageErrorf("-r (raw) applies to res qp, cq, mr and srq only, not to '%s'", c.CommandPath())
		}
		return a.CheckNeeds(c)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})

	for _, f := range commands {
		root.AddCommand(f(a))
	}
	return root
}

// newDevCmd is "rdmactl dev", the parent of devSubcommands.
func newDevCmd(a *App) *cobra.Command {
	dev := &cobra.Command{
		Use:   "dev",
		Short: "RDMA devices: show, query",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return UsageErrorf("'rdmactl dev' needs a subcommand: try 'rdmactl dev show' (as in 'rdma dev show') or 'rdmactl dev query' (as ibv_devinfo -v)")
		},
	}
	for _, f := range devSubcommands {
		dev.AddCommand(f(a))
	}
	return dev
}

// run executes rdmactl with args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runApp(&App{Stdout: stdout, Stderr: stderr, Ctx: ctx}, args)
}

// runApp is run with the app given: its writers, context and soleSession.
func runApp(a *App, args []string) int {
	stderr, ctx := a.Stderr, a.Ctx
	root := newRootCmd(a)
	// rdma's grammar too; "res show NAME" depends on this host's devices.
	cargs := rdmagrammar.Translate(args, inventory.LiveDeviceExists)
	if complete.Requested(cargs) {
		// Device, port and GID completion for every command, chosen from
		// its usage line and flag names (internal/complete).
		complete.Attach(root)
	}
	root.SetArgs(cargs)
	err := rdmagrammar.OptionError(args)
	if err != nil {
		err = UsageErrorf("%v", err)
	} else {
		err = root.ExecuteContext(ctx)
	}
	code, msg := ExitStatus(err)
	if code != ExitOK {
		fmt.Fprintf(stderr, "rdmactl: %s\n", msg)
	}
	return code
}

func main() {
	ctx := &signalContext{}
	code := runApp(&App{Stdout: os.Stdout, Stderr: os.Stderr, Ctx: ctx, SoleSession: true}, os.Args[1:])
	ctx.stop()
	os.Exit(code)
}

// signalContext is canceled by SIGINT or SIGTERM, and asks for those
// signals when a command first looks at it (Done, Err; deriving a context
// from it calls Done). Catching signals costs the runtime a locked thread
// and another to start it: 5 of the 51 ms of CPU a 4-device link show
// took (TCG guest, perf stat). The inspection commands never look, so a ^C
// ends them the default way, as it ends rdma; perf, top, monitor, the
// exporter and counters --watch look before they start work and end
// cleanly (exit 130), and the writes look so that they run to their end.
type signalContext struct {
	once  sync.Once
	ctx   context.Context
	cease context.CancelFunc
}

func (s *signalContext) start() {
	s.once.Do(func() { s.ctx, s.cease = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM) })
}

func (s *signalContext) Deadline() (time.Time, bool) { return time.Time{}, false }
func (s *signalContext) Done() <-chan struct{}       { s.start(); return s.ctx.Done() }
func (s *signalContext) Err() error                  { s.start(); return s.ctx.Err() }
func (s *signalContext) Value(key any) any           { return nil }

// Watching is c's context with SIGINT and SIGTERM caught from now on
// (signalContext asks for them when first looked at), for the commands
// that run until interrupted and then end cleanly: perf, top, monitor,
// the exporter, counters --watch.
func Watching(c *cobra.Command) context.Context {
	ctx := c.Context()
	_ = ctx.Done()
	return ctx
}

// stop gives the signals back, if they were asked for.
func (s *signalContext) stop() {
	if s.cease != nil {
		s.cease()
	}
}

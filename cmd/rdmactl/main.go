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
	"sync"
	"syscall"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/rdmagrammar"
	"github.com/spf13/cobra"
)

// commands are rdmactl's top-level commands. A new command is added here:
// one explicit list instead of init() registration, so that nothing depends
// on the order in which the compiler sees the files. Help lists commands
// sorted by name (cobra's default), whatever the order here.
var commands = []func(*cmdutil.App) *cobra.Command{
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
var devSubcommands = []func(*cmdutil.App) *cobra.Command{
	newDevShowCmd,
	newDevQueryCmd,
	newDevHCACapsCmd,
	newDevSetCmd,
}

func newRootCmd(a *cmdutil.App) *cobra.Command {
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
	cobra.AddTemplateFunc("rdmactlVersion", a.Stamp.Text)
	root.SetVersionTemplate(`{{rdmactlVersion}}`)
	pf := root.PersistentFlags()
	pf.BoolVarP(&a.Opts.JSON, "json", "j", false, "print JSON instead of a table")
	pf.BoolVarP(&a.Opts.Pretty, "pretty", "p", false, "indent JSON output (implies nothing without -j)")
	pf.VarPF(cmdutil.NewDetailsFlag(&a.Opts), "details", "d", "print more details; twice (-dd) adds what the driver itself reports: of resources, as rdma -dd, and (link show) each port's MTUs as the device answers").NoOptDefVal = "true"
	pf.BoolVarP(&a.Opts.Raw, "raw", "r", false, "res qp|cq|mr|srq: the driver's raw image of each object, as rdma -r")
	pf.StringVar(&a.Opts.SysfsRoot, "sysfs-root", "", "read a capture (rdmactl capture: a directory or .tar.gz bundle) at `PATH` instead of the live /sys and netlink")
	// -r is global as in rdma (where it goes before the object), but only
	// res has raw dumps.
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if a.Opts.Raw && c.Name() != "res" {
			return cmdutil.UsageErrorf("-r (raw) applies to res qp, cq, mr and srq only, not to '%s'", c.CommandPath())
		}
		return a.CheckNeeds(c)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cmdutil.UsageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})

	for _, f := range commands {
		root.AddCommand(f(a))
	}
	return root
}

// newDevCmd is "rdmactl dev", the parent of devSubcommands.
func newDevCmd(a *cmdutil.App) *cobra.Command {
	dev := &cobra.Command{
		Use:   "dev",
		Short: "RDMA devices: show, query",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cmdutil.UsageErrorf("'rdmactl dev' needs a subcommand: try 'rdmactl dev show' (as in 'rdma dev show') or 'rdmactl dev query' (as ibv_devinfo -v)")
		},
	}
	for _, f := range devSubcommands {
		dev.AddCommand(f(a))
	}
	return dev
}

// run executes rdmactl with args and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runApp(&cmdutil.App{Stdout: stdout, Stderr: stderr, Ctx: ctx}, args)
}

// runApp is run with the app given: its writers, context and soleSession.
func runApp(a *cmdutil.App, args []string) int {
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
		err = cmdutil.UsageErrorf("%v", err)
	} else {
		err = root.ExecuteContext(ctx)
	}
	code, msg := cmdutil.ExitStatus(err)
	if code != cmdutil.ExitOK {
		fmt.Fprintf(stderr, "rdmactl: %s\n", msg)
	}
	return code
}

func main() {
	ctx := &signalContext{}
	code := runApp(&cmdutil.App{Stdout: os.Stdout, Stderr: os.Stderr, Ctx: ctx, SoleSession: true}, os.Args[1:])
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

// stop gives the signals back, if they were asked for.
func (s *signalContext) stop() {
	if s.cease != nil {
		s.cease()
	}
}

// Package root is rdmactl's root command: the global flags, the one
// check of what a command needs, rdma's grammar, and the one place an
// error becomes an exit code and a line on stderr.
package root

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/complete"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/rdmagrammar"
	"github.com/spf13/cobra"
)

// New is the root command with the global flags and cmds, rdmactl's
// commands (or, in a command's tests, some of them).
func New(a *cmdutil.App, cmds []func(*cmdutil.App) *cobra.Command) *cobra.Command {
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

	for _, f := range cmds {
		root.AddCommand(f(a))
	}
	return root
}

// Run executes rdmactl's cmds with args and returns the process exit
// code, after printing the one line that explains it on a's Stderr.
func Run(a *cmdutil.App, cmds []func(*cmdutil.App) *cobra.Command, args []string) int {
	stderr, ctx := a.Stderr, a.Ctx
	root := New(a, cmds)
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
	if code != cmdutil.ExitOK && msg != "" {
		name := "rdmactl"
		if a.Tool != "" {
			name = a.Tool
		}
		fmt.Fprintf(stderr, "%s: %s\n", name, msg)
	}
	return code
}

// Main is rdmactl's main: cmds run with the process's arguments, writers
// and signals, the binary's build stamp, as the only benchmark in the
// process. It returns the exit code.
func Main(stamp cmdutil.Stamp, cmds []func(*cmdutil.App) *cobra.Command) int {
	return MainAs(stamp, cmds, "", os.Args[1:])
}

// MainAs is Main for rdmactl run under a reference tool's name (tool,
// cmdutil.App.Tool) with args, the rdmactl command line that tool's
// command line stands for (internal/dropin).
func MainAs(stamp cmdutil.Stamp, cmds []func(*cmdutil.App) *cobra.Command, tool string, args []string) int {
	ctx := &signalContext{}
	code := Run(&cmdutil.App{Stdout: os.Stdout, Stderr: os.Stderr, Ctx: ctx, SoleSession: true, Stamp: stamp, Tool: tool}, cmds, args)
	ctx.stop()
	return code
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

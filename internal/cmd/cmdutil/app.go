package cmdutil

import (
	"context"
	"io"
	"strconv"

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
// sets DriverDetails, as rdma's -dd does.
type DetailsFlag struct{ o *Options }

// NewDetailsFlag is -d/--details over o.
func NewDetailsFlag(o *Options) DetailsFlag { return DetailsFlag{o} }

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
	lazy   []func()        // fill the long help texts LazyLong deferred
	Ctx    context.Context // run's; a write looks at it to catch signals (OpenWrite)
	// SoleSession: a perf command is the only benchmark in the process,
	// as in the binary (root.Main sets it); tests that run both sides of a
	// benchmark in one process leave it false (perf.Session.SoleSession).
	SoleSession bool
	// Stamp is what the build stamped into the binary (version, commit).
	Stamp Stamp
	// Tool is the reference tool rdmactl runs as (ib_write_bw...: a
	// link of that name, internal/dropin), "" for rdmactl's own name:
	// the command prints what that tool prints where it differs, and
	// its error lines start with the tool's name.
	Tool string
}

// LazyLong gives c the long help build returns, built when c's help is
// shown or the manual is generated (ExpandHelp) instead of at every start:
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

// ExpandHelp fills every long help LazyLong deferred (the manual needs
// them all).
func (a *App) ExpandHelp() {
	for _, f := range a.lazy {
		f()
	}
}

// Watching is c's context with SIGINT and SIGTERM caught from now on
// (signalContext asks for them when first looked at), for the commands
// that run until interrupted and then end cleanly: perf, top, monitor,
// the exporter, counters --watch.
func Watching(c *cobra.Command) context.Context {
	ctx := c.Context()
	_ = ctx.Done()
	return ctx
}

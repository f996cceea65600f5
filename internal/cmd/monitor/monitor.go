package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/monitor"
)

func NewCmd(a *cmdutil.App) *cobra.Command {
	var poll string
	c := &cobra.Command{
		Use:   "monitor",
		Short: "Print RDMA device events as they happen: added, removed, renamed, netdev attached/detached, port state",
		Long: `monitor prints one line per event (one JSON object per line with -j) until
Ctrl-C, which ends it with exit status 0.

Events come from two sources, each event once, its "source" saying which
saw it:

  kernel  the RDMA netlink notify group (Linux 6.12+): a device registered
          or removed, a port's netdev attached or detached; renames from 6.13.
  poll    --poll INTERVAL: the inventory compared every INTERVAL with the
          last one. It sees what the kernel does not send (port state and
          physical state on every kernel, renames before 6.13) and, on
          kernels without the notify group (before 6.12), everything.

The kernel announces a device only after it shows in the inventory (and
its removal after it is gone): a poll that sees such a change first waits
up to 1 s for the kernel's event, so that the source of what the kernel
sends is "kernel" whichever saw it first.

Once it watches, monitor says what on stderr (one line: kernel events,
the poll interval); stdout has only the events. Without the notify group
and without --poll there is nothing to watch: monitor says so and exits
with status 5. With --sysfs-root, --poll
compares the captured tree (which a script may change) with itself.

Event types: device_added, device_removed, device_renamed, netdev_attached,
netdev_detached, netdev_renamed, port_state_changed, phys_state_changed.
A device that appears with a netdev is device_added then netdev_attached,
whichever source saw it.`,
		Example: `  rdmactl monitor
  rdmactl monitor --poll 1s
  rdmactl -j monitor --poll 500ms | jq -c 'select(.type == "port_state_changed")'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			var iv time.Duration
			if c.Flags().Changed("poll") {
				var err error
				if iv, err = cmdutil.ParseInterval(poll); err != nil {
					return cmdutil.UsageErrorf("--poll %s: want an interval from 10ms to 24h, such as --poll 1s", poll)
				}
			}
			return runMonitor(cmdutil.Watching(c), a, iv)
		},
	}
	c.Flags().StringVar(&poll, "poll", "", "also compare the inventory every `INTERVAL` (500ms, 2s...): port state, and everything on kernels without events")
	return c
}

// runMonitor prints events until ctx is done (Ctrl-C: status 0).
func runMonitor(ctx context.Context, a *cmdutil.App, poll time.Duration) error {
	if a.Opts.SysfsRoot != "" && poll == 0 {
		return cmdutil.UsageErrorf("a captured tree (--sysfs-root) sends no events: add --poll INTERVAL to compare it with itself")
	}
	cfg, how, closeSrc, err := monitor.Open(a.Opts.SysfsRoot, poll)
	if errors.Is(err, monitor.ErrNoEvents) {
		return cmdutil.Unsupportedf("%v: add --poll INTERVAL to compare the devices every INTERVAL instead", err)
	}
	if err != nil {
		return err
	}
	defer closeSrc()
	cfg.Emit = func(e monitor.Event) error { return printEvent(a, e) }
	cfg.Warn = func(err error) { fmt.Fprintf(a.Stderr, "rdmactl: %s\n", cmdutil.ErrorLine(err)) }
	// What is watched goes to stderr, as tcpdump says "listening on": stdout
	// stays events only, and a script knows when changes start to count.
	cfg.Ready = func() { fmt.Fprintf(a.Stderr, "rdmactl: monitoring RDMA devices: %s; Ctrl-C to stop\n", how) }
	return monitor.Run(ctx, cfg)
}

// printEvent writes one event: a JSON object on its own line with -j,
// else a line of text.
func printEvent(a *cmdutil.App, e monitor.Event) error {
	if a.Opts.JSON {
		return a.PrintJSON(e)
	}
	_, err := io.WriteString(a.Stdout, eventLine(time.Now(), e))
	return err
}

// eventLine is an event as text: time, source, type, what.
//
//	08:10:18.562  kernel  device_added        mon0 (index 2)
//	08:10:18.709  kernel  netdev_attached     mon0/1  mva (ifindex 8)
//	08:10:20.113  poll    port_state_changed  mon1/1  ACTIVE -> DOWN
func eventLine(now time.Time, e monitor.Event) string {
	what := e.Ifname
	if e.Port != 0 {
		what = fmt.Sprintf("%s/%d", e.Ifname, e.Port)
	}
	switch e.Type {
	case inventory.DeviceAdded, inventory.DeviceRemoved:
		if e.Ifindex != nil {
			what += fmt.Sprintf(" (index %d)", *e.Ifindex)
		}
	case inventory.NetdevAttached, inventory.NetdevDetached:
		nd := e.New + e.Old // one of them
		if nd == "" {
			nd = "-"
		}
		what += "  " + nd
		if e.NetdevIndex != nil {
			what += fmt.Sprintf(" (ifindex %d)", *e.NetdevIndex)
		}
	default:
		what += fmt.Sprintf("  %s -> %s", dash(e.Old), dash(e.New))
	}
	return fmt.Sprintf("%s  %-6s  %-18s  %s\n", now.Format("15:04:05.000"), e.Source, e.Type, what)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package top

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/top"
	"github.com/spf13/cobra"
)

// topJSON is `rdmactl -j top`: one snapshot of the rates over one
// interval. ports and processes are top.Row and top.Proc; a figure the
// device does not count is null.
type topJSON struct {
	Time      time.Time  `json:"time"`
	IntervalS float64    `json:"interval_s"`
	Ports     []top.Row  `json:"ports"`
	Processes []top.Proc `json:"processes"`
	Events    []string   `json:"events"`
	// ProcessesError says why processes is empty: a captured tree has no
	// resources.
	ProcessesError string `json:"processes_error,omitempty"`
}

type topFlags struct {
	interval string
	frames   int
	batch    bool
	sort     string
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	var fl topFlags
	c := &cobra.Command{
		Use:   "top [DEV[/PORT]]",
		Short: "Live view of every port's traffic, errors and congestion, and the processes holding RDMA resources",
		Long: `A live view, refreshed every interval: one row per port with its state,
link rate, TX and RX (Gb/s and share of the link where the device counts
bytes, packets/s where it counts packets only, as rxe), and per second its
errors, discards, retransmissions, out-of-sequence and RNR events, CNPs and
ECN marks, from the port's counters/, hw_counters/ and NLDEV statistics
(the counter categories of 'rdmactl counters'). Below, the processes that
hold QPs, CQs and MRs (NLDEV resources), with their traffic where QP
counters are bound to them (rdma statistic qp, automatic mode).

Keys: < > sort column, t r e n sort by TX, RX, errors, name, i invert,
/ device filter, space pause, h help, q or Ctrl-C quit. NO_COLOR turns
colors off.

Flags: -i/--interval (top's -d is rdmactl's --details), -n frames then exit,
-b plain text frames (top -b) for logs and pipes, -j one JSON snapshot of
the rates over one interval. Devices that appear, vanish or are renamed
are followed; counter wraps and resets are handled as in counters --watch.`,
		Example: `  rdmactl top
  rdmactl top rxe0 -i 2s
  rdmactl top -b -n 3 --sort tx
  rdmactl -j top -i 5s | jq '.ports[] | {ifname, tx_packets_per_s}'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			iv, err := parseTopInterval(fl.interval)
			if err != nil {
				return err
			}
			if fl.frames < 0 {
				return cmdutil.UsageErrorf("-n %d: want a number of frames from 1 (0: until q)", fl.frames)
			}
			col := top.ColumnByKey(fl.sort)
			if col < 0 {
				return cmdutil.UsageErrorf("--sort %q: want one of %s", fl.sort, strings.Join(top.SortKeys(), ", "))
			}
			dev, port, err := cmdutil.ParseDevPort(arg)
			if err != nil {
				return err
			}
			s, closeSrc, err := topSampler(a, dev, port)
			if err != nil {
				return err
			}
			defer closeSrc()
			view := top.View{SortCol: col}
			switch {
			case a.Opts.JSON:
				return topSnapshot(cmdutil.Watching(c), a, s, iv)
			case fl.batch:
				return topBatch(cmdutil.Watching(c), a, s, view, iv, fl.frames)
			}
			if !cmdutil.IsTerminal(a.Stdout) || !cmdutil.IsTerminal(os.Stdin) {
				return cmdutil.UsageErrorf("top needs a terminal: use -b for text frames or -j for a JSON snapshot")
			}
			return top.RunScreen(cmdutil.Watching(c), a.Stdout, s, view, iv, fl.frames)
		},
	}
	f := c.Flags()
	f.StringVarP(&fl.interval, "interval", "i", "1s", "refresh every `INTERVAL` (1s, 500ms, 2)")
	f.IntVarP(&fl.frames, "frames", "n", 0, "exit after `N` frames (0: until q)")
	f.BoolVarP(&fl.batch, "batch", "b", false, "print plain text frames, no terminal UI (as top -b)")
	f.StringVar(&fl.sort, "sort", "dev", "sort by `KEY`: "+strings.Join(top.SortKeys(), ", "))
	return c
}

// parseTopInterval is parseInterval with the message naming --interval.
func parseTopInterval(s string) (time.Duration, error) {
	d, err := cmdutil.ParseInterval(s)
	if err != nil {
		return 0, cmdutil.UsageErrorf("--interval=%s: want an interval from 10ms to 24h, such as -i 2s", s)
	}
	return d, nil
}

// topSampler reads over one RDMA netlink socket for the whole run, with a
// fresh inventory each frame; --sysfs-root reads the captured tree.
func topSampler(a *cmdutil.App, dev string, port uint32) (*top.Sampler, func(), error) {
	s := &top.Sampler{Dev: dev, Port: port}
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return nil, nil, err
	}
	s.Open = func() (top.Inventory, error) { return src.Fresh(), nil }
	return s, closeSrc, nil
}

// sampleAfter waits iv (or until ctx is done) and samples.
func sampleAfter(ctx context.Context, s *top.Sampler, iv time.Duration) (*top.Frame, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(iv):
	}
	return s.Sample()
}

// topSnapshot prints one JSON document: the rates over one interval.
func topSnapshot(ctx context.Context, a *cmdutil.App, s *top.Sampler, iv time.Duration) error {
	if _, err := s.Sample(); err != nil {
		return err
	}
	f, err := sampleAfter(ctx, s, iv)
	if err != nil {
		return err // Ctrl-C before the interval is over: exit 130
	}
	out := topJSON{Time: f.Time, IntervalS: f.Interval.Seconds(), Ports: f.Rows, Processes: f.Procs,
		Events: f.Events, ProcessesError: f.ProcErr}
	if out.Ports == nil {
		out.Ports = []top.Row{}
	}
	if out.Processes == nil {
		out.Processes = []top.Proc{}
	}
	if out.Events == nil {
		out.Events = []string{}
	}
	return a.PrintJSON(out)
}

// topBatch prints a plain text frame every interval (the first after one
// interval: a frame without rates says nothing), n frames or until Ctrl-C.
func topBatch(ctx context.Context, a *cmdutil.App, s *top.Sampler, v top.View, iv time.Duration, n int) error {
	if _, err := s.Sample(); err != nil {
		return err
	}
	for i := 0; n == 0 || i < n; i++ {
		f, err := sampleAfter(ctx, s, iv)
		if err != nil {
			if ctx.Err() != nil {
				return nil // Ctrl-C ends a batch run normally
			}
			return err
		}
		if i > 0 {
			fmt.Fprintln(a.Stdout)
		}
		if _, err := fmt.Fprint(a.Stdout, top.Render(f, v, top.Plain, 0, 0)); err != nil {
			return err
		}
	}
	return nil
}

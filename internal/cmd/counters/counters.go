package counters

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/vocab"
	"github.com/spf13/cobra"
)

// Counter sources, the "source" key of the JSON.
const (
	srcCounters   = "counters"    // ports/N/counters/ (PMA PortCounters, via a MAD)
	srcHWCounters = "hw_counters" // ports/N/hw_counters/ and device-level hw_counters/
	srcNetlink    = "netlink"     // RDMA_NLDEV_CMD_STAT_GET, what "rdma statistic show" prints
)

// counterJSON is one counter in `rdmactl -j counters`: a flat list of
//
//	{"ifname":"mlx5_0","port":1,"source":"counters","name":"port_xmit_data",
//	 "value":20000000000,"unit":"bytes","category":"traffic_bytes","raw":5000000000}
//
// One object per counter rather than rdma -j statistic's one object per
// port with a key per counter: counter names differ between drivers, and a
// list with fixed keys is easier to filter (jq 'select(.name=="...")') and
// to type in other languages.
//
//   - source: "counters" (sysfs PMA counters/), "hw_counters" (sysfs
//     hw_counters/) or "netlink" (NLDEV statistics, as rdma statistic show).
//     The netlink and hw_counters values of a port are the same kernel
//     counters read two ways: by default a port's are listed once, from
//     netlink, else (offline, no NLDEV statistics) from hw_counters;
//     --source names the ways to read explicitly.
//   - port: 0 for device-level hw_counters (not per port).
//   - value: a number. port_xmit_data and port_rcv_data count 4-byte words
//     in sysfs; value is converted to bytes, unit says "bytes" and raw keeps
//     the sysfs number. Every other counter has unit "count" and no raw.
//   - category: what the counter's movement means, from one table of every
//     counter name rdmactl knows (internal/vocab): "traffic_bytes",
//     "traffic_packets", "errors", "discards", "retransmissions",
//     "out_of_sequence", "rnr", "congestion", or "other" (also for a name
//     the table lacks).
type counterJSON struct {
	Ifname   string  `json:"ifname"`
	Port     uint32  `json:"port"`
	Source   string  `json:"source"`
	Name     string  `json:"name"`
	Value    uint64  `json:"value"`
	Unit     string  `json:"unit"`
	Category string  `json:"category"`
	Raw      *uint64 `json:"raw,omitempty"`
}

// counterRateJSON is one line item of `rdmactl -j counters --watch`: every
// interval one JSON array (one line unless -p) of the counters that moved,
// with the per-second rate over the interval. value is the new value,
// delta the increase, rate = delta / interval_s; units as in counterJSON
// (bytes/s for port_xmit_data and port_rcv_data).
//
// wrapped, reset and saturated are present (true) only when they apply:
// the counter went past its width (delta counts across the wrap), went
// down (a reset: delta counts from 0, a lower bound), or is a PMA counter
// stuck at its maximum (delta is a lower bound).
type counterRateJSON struct {
	counterJSON
	Delta     uint64  `json:"delta"`
	Rate      float64 `json:"rate"`
	IntervalS float64 `json:"interval_s"`
	Wrapped   bool    `json:"wrapped,omitempty"`
	Reset     bool    `json:"reset,omitempty"`
	Saturated bool    `json:"saturated,omitempty"`
}

type countersFlags struct {
	nonzero bool
	watch   string
	sources []string
	// warned remembers the ports whose netlink failure was already reported,
	// so that --watch says it once, not every interval.
	warned map[string]bool
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	var fl countersFlags
	c := &cobra.Command{
		Use:   "counters [DEV[/PORT]]",
		Short: "Show port counters: counters/, hw_counters/ and rdma statistic (netlink); --watch for rates",
		Long: `Show the counters of every RDMA port, or of DEV or DEV/PORT:
  counters     ports/N/counters/ (PMA PortCounters; absent on rxe)
  hw_counters  ports/N/hw_counters/ and the device-level hw_counters/ (PORT 0)
  netlink      the NLDEV statistics "rdma statistic show" prints (not with --sysfs-root)

A port's hw_counters files and its netlink statistics are the same kernel
counters: by default they are shown once, from netlink, and from the
hw_counters files only where netlink does not answer (--sysfs-root, a kernel
without NLDEV statistics). --source hw_counters reads the files.

port_xmit_data and port_rcv_data count 4-byte words in sysfs; they are shown
in bytes (UNIT column, JSON "unit": "bytes" with the sysfs number in "raw").
JSON "category" sorts each counter by what it counts: traffic_bytes,
traffic_packets, errors, discards, retransmissions, out_of_sequence, rnr,
congestion, or other (also for names rdmactl does not know).

--watch[=INTERVAL] (default 1s) prints, every interval, the per-second rate
of each counter that moved, until Ctrl-C. A counter that went down is a
reset (its delta counts from 0), one that passed its width wrapped, a PMA
counter at its maximum is saturated (NOTE column; JSON reset, wrapped,
saturated). Ports that appear or vanish meanwhile are said on a line.`,
		Example: `  rdmactl counters
  rdmactl counters mlx5_0/1 --nonzero
  rdmactl -j counters rxe0 | jq '.[] | select(.name=="rcvd_pkts")'
  rdmactl counters rxe0 --source hw_counters
  rdmactl counters --watch
  rdmactl counters mlx5_0/1 --watch=5s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			for _, s := range fl.sources {
				if s != srcCounters && s != srcHWCounters && s != srcNetlink {
					return cmdutil.UsageErrorf("--source %q: want counters, hw_counters or netlink", s)
				}
			}
			if c.Flags().Changed("watch") {
				iv, err := cmdutil.ParseInterval(fl.watch)
				if err != nil {
					return err
				}
				return watchCounters(cmdutil.Watching(c), a, arg, &fl, iv)
			}
			rows, err := collectCounters(a, arg, &fl)
			if err != nil {
				return err
			}
			return printCounters(a, rows)
		},
	}
	f := c.Flags()
	f.BoolVar(&fl.nonzero, "nonzero", false, "hide counters that are 0")
	f.StringVar(&fl.watch, "watch", "", "print per-second rates of the counters that move, every `INTERVAL` (default 1s), until Ctrl-C")
	f.Lookup("watch").NoOptDefVal = "1s"
	f.StringSliceVar(&fl.sources, "source", nil, "only these sources: counters, hw_counters, netlink (comma-separated)")
	return c
}

// toJSON converts a counter, turning 4-byte words into bytes.
func toJSON(dev string, port uint32, src, name string, value uint64) counterJSON {
	r := counterJSON{Ifname: dev, Port: port, Source: src, Name: name, Value: value, Unit: "count",
		Category: vocab.Counter(name).Category.String()}
	if m, unit := inventory.CounterUnit(src, name); m != 1 {
		raw := value
		r.Value, r.Unit, r.Raw = raw*m, unit, &raw
	}
	return r
}

// snapshotCounters reads every selected counter once. A netlink failure
// (sysfs answered) is said once per port, not every --watch interval.
func snapshotCounters(a *cmdutil.App, arg string, fl *countersFlags) (*inventory.CounterSnapshot, error) {
	dev, port, err := cmdutil.ParseDevPort(arg)
	if err != nil {
		return nil, err
	}
	src, closeSrc, err := a.OpenInventory(true)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	targets, err := src.Targets(dev, port)
	if err != nil {
		return nil, err
	}
	snap, err := src.CounterSnapshot(targets, fl.sources)
	if err != nil {
		return nil, err
	}
	for _, set := range snap.Sets {
		if set.Err == nil {
			continue
		}
		key := fmt.Sprintf("%s/%d", set.Dev, set.Port)
		if fl.warned[key] {
			continue
		}
		if fl.warned == nil {
			fl.warned = map[string]bool{}
		}
		fl.warned[key] = true
		fmt.Fprintf(a.Stderr, "rdmactl: netlink statistics of %s/%d: %v (showing sysfs only)\n", set.Dev, set.Port, cmdutil.ErrorLine(set.Err))
	}
	return snap, nil
}

// collectCounters reads every selected counter once. --nonzero is applied.
func collectCounters(a *cmdutil.App, arg string, fl *countersFlags) ([]counterJSON, error) {
	snap, err := snapshotCounters(a, arg, fl)
	if err != nil {
		return nil, err
	}
	var rows []counterJSON
	for _, set := range snap.Sets {
		for _, c := range set.Counters {
			if fl.nonzero && c.Value == 0 {
				continue
			}
			rows = append(rows, toJSON(set.Dev, set.Port, set.Source, c.Name, c.Value))
		}
	}
	return rows, nil
}

func printCounters(a *cmdutil.App, rows []counterJSON) error {
	if a.Opts.JSON {
		return cmdutil.PrintList(a, rows)
	}
	tb := render.NewTable(a.Stdout, "DEV", "PORT", "SOURCE", "COUNTER", "VALUE", "UNIT")
	for _, r := range rows {
		var port any = r.Port
		if r.Port == 0 {
			port = nil // device-level
		}
		tb.Row(r.Ifname, port, r.Source, r.Name, r.Value, r.Unit)
	}
	return tb.Flush()
}

// watchCounters samples every interval and prints the per-second rate of
// each counter that moved (inventory.Rates: wraps counted across, resets
// and saturation said), until ctx is cancelled (Ctrl-C), then returns nil:
// stopping a watch is the normal way to end it.
func watchCounters(ctx context.Context, a *cmdutil.App, arg string, fl *countersFlags, iv time.Duration) error {
	prev, err := snapshotCounters(a, arg, fl)
	if err != nil {
		return err
	}
	if !a.Opts.JSON {
		fmt.Fprintf(a.Stdout, "watching counters every %v; Ctrl-C to stop\n", iv)
	}
	tick := time.NewTicker(iv)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		cur, err := snapshotCounters(a, arg, fl)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		rep, err := inventory.Rates(prev, cur)
		if err != nil {
			continue // no time passed (a clock step): wait for the next tick
		}
		prev = cur
		secs := rep.Interval.Seconds()
		var out []counterRateJSON
		for _, r := range rep.Rates {
			if !r.Moved() {
				continue
			}
			m, _ := inventory.CounterUnit(r.Source, r.Name)
			d := r.Delta * m
			out = append(out, counterRateJSON{counterJSON: toJSON(r.Dev, r.Port, r.Source, r.Name, r.Value), Delta: d, Rate: float64(d) / secs,
				IntervalS: secs, Wrapped: r.Wrapped, Reset: r.Reset, Saturated: r.Saturated})
		}
		if err := printRates(a, cur.Time, rep, out); err != nil {
			return err
		}
	}
}

// note is what the NOTE column says of a rate.
func (r counterRateJSON) note() string {
	var n []string
	if r.Wrapped {
		n = append(n, "wrapped")
	}
	if r.Reset {
		n = append(n, "reset: delta counts from 0")
	}
	if r.Saturated {
		n = append(n, "saturated: delta is a lower bound")
	}
	return strings.Join(n, "; ")
}

// printRates prints one interval. Counter sets that appeared or vanished
// are said on a line each (on stderr with -j, where stdout is one JSON
// array of rates per interval).
func printRates(a *cmdutil.App, now time.Time, rep *inventory.RateReport, out []counterRateJSON) error {
	stamp := now.Format("15:04:05")
	var events []string
	for _, k := range rep.Vanished {
		events = append(events, fmt.Sprintf("%s/%d %s counters vanished", k.Dev, k.Port, k.Source))
	}
	for _, k := range rep.Appeared {
		events = append(events, fmt.Sprintf("%s/%d %s counters appeared", k.Dev, k.Port, k.Source))
	}
	if a.Opts.JSON {
		for _, e := range events {
			fmt.Fprintf(a.Stderr, "rdmactl: %s\n", e)
		}
		return cmdutil.PrintList(a, out)
	}
	for _, e := range events {
		fmt.Fprintf(a.Stdout, "%s  %s\n", stamp, e)
	}
	if len(out) == 0 {
		fmt.Fprintf(a.Stdout, "%s  no counter moved\n", stamp)
		return nil
	}
	notes := false
	for _, r := range out {
		notes = notes || r.note() != ""
	}
	header := []string{"TIME", "DEV", "PORT", "SOURCE", "COUNTER", "RATE/S", "UNIT", "DELTA"}
	if notes {
		header = append(header, "NOTE")
	}
	tb := render.NewTable(a.Stdout, header...)
	for _, r := range out {
		var port any = r.Port
		if r.Port == 0 {
			port = nil
		}
		cells := []any{stamp, r.Ifname, port, r.Source, r.Name, strconv.FormatFloat(r.Rate, 'f', 1, 64), r.Unit, r.Delta}
		if notes {
			cells = append(cells, r.note())
		}
		tb.Row(cells...)
	}
	return tb.Flush()
}

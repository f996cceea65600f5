package perf

import (
	"fmt"
	"slices"

	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// perf's event and counter options: -e, --run_infinitely, -W and
// --counters (kept apart from perf.go's flag list so that additions to
// either merge cleanly).

// perfEventOpts are their raw values.
type perfEventOpts struct {
	counterList string
}

func perfEventFlags(fs *pflag.FlagSet, f *perfFlags) {
	p := &f.p
	fs.BoolVarP(&p.UseEvent, "events", "e", false, "wait for completions on a completion channel instead of polling (rxe; mlx5 checked to the ABI only)")
	fs.IntVarP(&p.CompVector, "vector", "X", 0, "with -e: the CQs' completion vector, below the device's num_comp_vectors (exit 5 otherwise), as perftest")
	fs.BoolVar(&p.RunInfinitely, "run_infinitely", false, "bw: run -D periods (default 5 s), a row each, until Ctrl-C (both sides)")
	fs.StringVarP(&f.ev.counterList, "report-counters", "W", "", "print the change of these port counter files after each row, as perftest (e.g. counters/port_xmit_data,hw_counters/rcvd_seq_err)")
	fs.BoolVar(&p.CounterDeltas, "counters", false, "report the port's retransmission, sequence, congestion, RNR, error and discard counters' change over the run")
}

// applyPerfEventFlags moves the raw values into Params.
func applyPerfEventFlags(f *perfFlags) error {
	if f.fs.Changed("vector") && !f.p.UseEvent {
		return cmdutil.UsageErrorf("-X needs -e: the vector is where completion events go (as perftest)")
	}
	if f.fs.Changed("report-counters") {
		l, err := perf.ParseCounterList(f.ev.counterList)
		if err != nil {
			return cmdutil.UsageErrorf("%v", err)
		}
		f.p.ReportCounters = l
	}
	return nil
}

// badRunCategories are the counter categories --counters reports.
var badRunCategories = map[vocab.Category]bool{
	vocab.CategoryRetransmissions: true, vocab.CategoryOutOfSequence: true, vocab.CategoryCongestion: true,
	vocab.CategoryRNR: true, vocab.CategoryErrors: true, vocab.CategoryDiscards: true,
}

// perfCounterWatch is perf's CounterWatch over the inventory: counter
// snapshots of the run's port before and after, compared by
// inventory.Rates (resets and wraps handled there).
type perfCounterWatch struct {
	a    *cmdutil.App
	p    *perf.Params // its device is known at the start (with -R, from the CM's route)
	prev *inventory.CounterSnapshot
}

func (w *perfCounterWatch) snapshot() (*inventory.CounterSnapshot, error) {
	src, closeSrc, err := w.a.OpenInventory(true)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	if w.p.Device == "" {
		return nil, fmt.Errorf("no device to read counters of")
	}
	targets, err := src.Targets(w.p.Device, uint32(w.p.IBPort))
	if err != nil {
		return nil, err
	}
	return src.CounterSnapshot(targets, nil)
}

func (w *perfCounterWatch) Start() (err error) {
	w.prev, err = w.snapshot()
	return err
}

func (w *perfCounterWatch) Deltas() ([]perf.CounterDelta, error) {
	if w.prev == nil {
		return nil, fmt.Errorf("no counter snapshot at the start")
	}
	cur, err := w.snapshot()
	if err != nil {
		return nil, err
	}
	rep, err := inventory.Rates(w.prev, cur)
	if err != nil {
		return nil, err
	}
	return badRunDeltas(rep, uint32(w.p.IBPort)), nil
}

// badRunDeltas picks the port's counters in badRunCategories, one row
// per counter name (the first source in the inventory's order: a
// counter rxe shows in hw_counters and over netlink is listed once),
// device-level counters excluded.
func badRunDeltas(rep *inventory.RateReport, port uint32) []perf.CounterDelta {
	var out []perf.CounterDelta
	seen := map[string]bool{}
	for _, r := range rep.Rates {
		info := vocab.Counter(r.Name)
		if r.Port != port || !badRunCategories[info.Category] || seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		out = append(out, perf.CounterDelta{Dev: r.Dev, Port: r.Port, Source: r.Source, Counter: r.Name,
			Category: info.Category.String(), Unit: info.Unit.String(), Delta: r.Delta, Reset: r.Reset})
	}
	slices.SortStableFunc(out, func(x, y perf.CounterDelta) int {
		if x.Category != y.Category {
			return cmpCategory(x.Category, y.Category)
		}
		return 0
	})
	return out
}

// cmpCategory orders --counters' rows: what a lossy run moves first.
func cmpCategory(x, y string) int {
	order := map[string]int{"retransmissions": 0, "out_of_sequence": 1, "rnr": 2, "congestion": 3, "discards": 4, "errors": 5}
	return order[x] - order[y]
}

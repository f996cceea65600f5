package top

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Proc is one process's hold on one device: how many QPs, CQs and MRs
// (NLDEV resources), and, where QP counters are bound to it, its traffic.
type Proc struct {
	PID  uint32 `json:"pid"`
	Comm string `json:"comm"`
	Dev  string `json:"ifname"`
	QPs  int    `json:"qps"`
	CQs  int    `json:"cqs"`
	MRs  int    `json:"mrs"`
	// Traffic: the rates of the QP counters bound to the process on this
	// device (rdma statistic qp, automatic mode), summed as a port's are;
	// nil where none is bound (rxe cannot bind QP counters) or on the
	// first frame.
	Traffic *Rates `json:"traffic"`
}

// Holdings are the resources Procs counts: kernel-owned objects (no PID)
// are left out, the pane is about processes.
type Holdings struct {
	QPs []inventory.QP
	CQs []inventory.CQ
	MRs []inventory.MR
}

// BoundCounter is one QP counter bound to a process: what `rdma statistic
// qp show` lists in automatic mode (a counter per process and port, its
// QPs bound to it), with the counter's values.
type BoundCounter struct {
	Dev      string
	DevIndex *uint32 // NLDEV index (live), so that a renamed device keeps its rates
	Port     uint32
	ID       uint32 // the counter's id on the port
	PID      uint32
	Comm     string
	Counters []sysfs.Counter
}

// QPCounterSource lists the bound QP counters with their values. The
// inventory has no QP counter model yet; cmd passes nil (no per-process
// traffic) until it has one, and the unit tests a fake.
type QPCounterSource interface {
	BoundCounters() ([]BoundCounter, error)
}

// qpCounterSource starts the Source of a QP counter's set.
const qpCounterSource = "qp_counter "

// QPCounterSnapshot is the bound QP counters at one time, as an inventory
// CounterSnapshot (one set per counter, Source "qp_counter N"), so that
// inventory.Rates handles their wraps, resets and appearances.
func QPCounterSnapshot(bcs []BoundCounter, at time.Time) (*inventory.CounterSnapshot, map[inventory.SetKey]BoundCounter) {
	snap := &inventory.CounterSnapshot{Time: at}
	owners := map[inventory.SetKey]BoundCounter{}
	for _, b := range bcs {
		src := fmt.Sprintf("%s%d", qpCounterSource, b.ID)
		cs := slices.Clone(b.Counters)
		slices.SortFunc(cs, func(x, y sysfs.Counter) int { return cmp.Compare(x.Name, y.Name) })
		snap.Sets = append(snap.Sets, inventory.CounterSet{Dev: b.Dev, Port: b.Port, Source: src, Counters: cs})
		if b.DevIndex != nil {
			if snap.Index == nil {
				snap.Index = map[string]uint32{}
			}
			snap.Index[b.Dev] = *b.DevIndex
		}
		owners[inventory.SetKey{Dev: b.Dev, Port: b.Port, Source: src}] = b
	}
	return snap, owners
}

// procKey is one process on one device.
type procKey struct {
	pid uint32
	dev string
}

// Procs counts the holdings of each process per device and adds the
// traffic of its bound QP counters (rep: rates between two
// QPCounterSnapshots, owners from the newer; nil for none). A process
// with bound counters but no resources listed (it exited meanwhile) still
// gets its row. Sorted by QPs, then CQs, MRs (most first), then PID, device.
func Procs(h Holdings, rep *inventory.RateReport, owners map[inventory.SetKey]BoundCounter) []Proc {
	m := map[procKey]*Proc{}
	get := func(o inventory.Owner, dev string) *Proc {
		if o.PID == nil || o.Kernel {
			return nil
		}
		k := procKey{*o.PID, dev}
		p := m[k]
		if p == nil {
			p = &Proc{PID: *o.PID, Comm: o.Comm, Dev: dev}
			m[k] = p
		}
		return p
	}
	for _, q := range h.QPs {
		if p := get(q.Owner, q.DevName); p != nil {
			p.QPs++
		}
	}
	for _, c := range h.CQs {
		if p := get(c.Owner, c.DevName); p != nil {
			p.CQs++
		}
	}
	for _, r := range h.MRs {
		if p := get(r.Owner, r.DevName); p != nil {
			p.MRs++
		}
	}
	if rep != nil {
		per := map[procKey][]inventory.Rate{}
		var keys []procKey
		for _, r := range rep.Rates {
			b, ok := owners[inventory.SetKey{Dev: r.Dev, Port: r.Port, Source: r.Source}]
			if !ok {
				continue
			}
			k := procKey{b.PID, r.Dev}
			if per[k] == nil {
				keys = append(keys, k)
				pid := b.PID
				get(inventory.Owner{PID: &pid, Comm: b.Comm}, r.Dev)
			}
			per[k] = append(per[k], r)
		}
		for _, k := range keys {
			t := RatesOf(per[k], nil)
			m[k].Traffic = &t
		}
	}
	out := make([]Proc, 0, len(m))
	for _, p := range m {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Proc) int {
		return cmp.Or(cmp.Compare(b.QPs, a.QPs), cmp.Compare(b.CQs, a.CQs), cmp.Compare(b.MRs, a.MRs),
			cmp.Compare(a.PID, b.PID), cmp.Compare(a.Dev, b.Dev))
	})
	return out
}

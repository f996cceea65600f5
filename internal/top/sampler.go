package top

import (
	"fmt"
	"maps"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// Inventory is what a frame reads; *inventory.Source has it.
type Inventory interface {
	Offline() bool
	Ports(dev string, port uint32, o inventory.PortOptions) ([]inventory.Port, error)
	CounterSnapshot(refs []inventory.PortRef, only []string) (*inventory.CounterSnapshot, error)
	ResSummaries(dev string) ([]nldev.Summary, error)
	QPs(f inventory.ResFilter) ([]inventory.QP, error)
	CQs(f inventory.ResFilter) ([]inventory.CQ, error)
	MRs(f inventory.ResFilter) ([]inventory.MR, error)
}

// Sampler makes frames: each Sample reads the ports, their counters and
// the resources once, and compares with the previous Sample.
type Sampler struct {
	// Open gives a fresh inventory for each frame: an inventory caches
	// what it read (devices, ports), and a frame must see devices that
	// appeared, vanished or were renamed since the last.
	Open func() (Inventory, error)
	Dev  string // "" all devices; else only this one (and Port, 0: all)
	Port uint32
	QPC  QPCounterSource // nil: no per-process traffic

	prev    *inventory.CounterSnapshot
	prevQPC *inventory.CounterSnapshot
	res     map[string]*devHoldings // by device name
	rates   map[string]*float64     // link rate by "index/port"
	frames  int
}

// ports reads the ports from netlink every frame, and the link rates
// (a sysfs file per port, a third of a frame's cost at 128 devices) only
// for ports not seen before and every rateRefresh frames.
func (s *Sampler) ports(inv Inventory) ([]inventory.Port, error) {
	ps, err := inv.Ports(s.Dev, s.Port, inventory.PortOptions{NetlinkOnly: !inv.Offline()})
	if err != nil || inv.Offline() {
		return ps, err
	}
	key := func(p inventory.Port) string {
		if p.DevIndex != nil {
			return fmt.Sprintf("%d/%d", *p.DevIndex, p.Port)
		}
		return p.Dev + "/" + fmt.Sprint(p.Port)
	}
	fresh := s.frames%rateRefresh == 0
	for _, p := range ps {
		if _, ok := s.rates[key(p)]; !ok {
			fresh = true
		}
	}
	if fresh {
		full, err := inv.Ports(s.Dev, s.Port, inventory.PortOptions{})
		if err != nil {
			return nil, err
		}
		s.rates = map[string]*float64{}
		for _, p := range full {
			s.rates[key(p)] = p.RateGbps
		}
	}
	for i := range ps {
		ps[i].RateGbps = s.rates[key(ps[i])]
	}
	return ps, nil
}

const rateRefresh = 10

// devHoldings caches one device's resource lists: they are dumped again
// only when the device's QP/CQ/MR counts (one RES_GET dump for every
// device) changed, and else one device per frame in turn (the one dumped
// longest ago: the counts can stay while owners change), so that a frame
// over many idle devices costs one summary dump and three more, not three
// per device.
type devHoldings struct {
	counts map[string]uint64
	at     int // the frame it was dumped at
	h      Holdings
}

// Sample makes the next frame. The first has no rates (Interval 0).
func (s *Sampler) Sample() (*Frame, error) {
	inv, err := s.Open()
	if err != nil {
		return nil, err
	}
	ports, err := s.ports(inv)
	if err != nil {
		if s.frames == 0 || !inventory.IsNotFound(err) {
			return nil, err
		}
		ports = nil // the named device went away: keep running, show it gone
	}
	refs := make([]inventory.PortRef, 0, len(ports))
	for _, p := range ports {
		refs = append(refs, inventory.PortRef{Dev: p.Dev, Port: p.Port, Index: p.DevIndex})
	}
	// The counters were read between t0 and now, not at the moment the
	// inventory stamps (after the reads, which take a while at 128
	// devices): the middle is the better estimate, and the rates of a
	// traffic that changes come out right.
	t0 := time.Now()
	snap, err := inv.CounterSnapshot(refs, nil)
	if err == nil && snap.Time.After(t0) {
		snap.Time = t0.Add(snap.Time.Sub(t0) / 2)
	}
	if err != nil {
		if s.frames == 0 || !inventory.IsNotFound(err) {
			return nil, err
		}
		snap = &inventory.CounterSnapshot{Time: time.Now()} // vanished between the two reads
	}
	f := &Frame{Time: snap.Time}
	var rep *inventory.RateReport
	if s.prev != nil {
		if rep, err = inventory.Rates(s.prev, snap); err != nil {
			rep = nil // a clock step: no rates this frame
		} else {
			f.Interval = rep.Interval
		}
	}
	f.Rows = Rows(ports, rep)
	f.Events = Events(s.prev, snap, rep)
	if s.Dev != "" && len(ports) == 0 {
		f.Events = append(f.Events, s.Dev+" is gone")
	}
	s.prev = snap

	h, perr := s.holdings(inv)
	if perr != nil {
		f.ProcErr = "no process pane: " + perr.Error()
	}
	var qrep *inventory.RateReport
	var owners map[inventory.SetKey]BoundCounter
	if s.QPC != nil {
		bcs, err := s.QPC.BoundCounters()
		if err == nil {
			var qs *inventory.CounterSnapshot
			qs, owners = QPCounterSnapshot(bcs, snap.Time)
			if s.prevQPC != nil {
				qrep, _ = inventory.Rates(s.prevQPC, qs)
			}
			s.prevQPC = qs
		}
	}
	f.Procs = Procs(h, qrep, owners)
	s.frames++
	return f, nil
}

// holdings lists every process-owned QP, CQ and MR of the selected
// devices, re-dumping only the devices whose counts changed.
func (s *Sampler) holdings(inv Inventory) (Holdings, error) {
	if inv.Offline() {
		return Holdings{}, inventory.ErrNeedsLive
	}
	sums, err := inv.ResSummaries(s.Dev)
	if err != nil {
		if inventory.IsNotFound(err) {
			return Holdings{}, nil
		}
		return Holdings{}, err
	}
	stalest, oldest := "", s.frames
	for _, sum := range sums {
		if d := s.res[sum.DevName]; d != nil && d.at < oldest {
			stalest, oldest = sum.DevName, d.at
		}
	}
	next := map[string]*devHoldings{}
	var out Holdings
	for _, sum := range sums {
		counts := map[string]uint64{"qp": sum.Counts["qp"], "cq": sum.Counts["cq"], "mr": sum.Counts["mr"]}
		d := s.res[sum.DevName]
		if d == nil || !maps.Equal(d.counts, counts) || sum.DevName == stalest {
			h, err := dump(inv, sum.DevName)
			if err != nil {
				if inventory.IsNotFound(err) {
					continue // vanished since the summary
				}
				return Holdings{}, fmt.Errorf("resources of %s: %w", sum.DevName, err)
			}
			d = &devHoldings{counts: counts, at: s.frames, h: h}
		}
		next[sum.DevName] = d
		out.QPs = append(out.QPs, d.h.QPs...)
		out.CQs = append(out.CQs, d.h.CQs...)
		out.MRs = append(out.MRs, d.h.MRs...)
	}
	s.res = next
	return out, nil
}

// dump lists the process-owned QPs, CQs and MRs of one device.
func dump(inv Inventory, dev string) (Holdings, error) {
	f := inventory.ResFilter{Dev: dev}
	var h Holdings
	qps, err := inv.QPs(f)
	if err != nil {
		return h, err
	}
	cqs, err := inv.CQs(f)
	if err != nil {
		return h, err
	}
	mrs, err := inv.MRs(f)
	if err != nil {
		return h, err
	}
	user := func(o inventory.Owner) bool { return o.PID != nil && !o.Kernel }
	for _, q := range qps {
		if user(q.Owner) {
			h.QPs = append(h.QPs, q)
		}
	}
	for _, c := range cqs {
		if user(c.Owner) {
			h.CQs = append(h.CQs, c)
		}
	}
	for _, m := range mrs {
		if user(m.Owner) {
			h.MRs = append(h.MRs, m)
		}
	}
	return h, nil
}

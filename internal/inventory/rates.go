package inventory

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Counter rates: two CounterSnapshots and what happened between them.
//
// How a counter behaves at its limit depends on where it comes from:
//
//   - counters/ (SrcCounters) are the IBA PMA PortCounters. They saturate:
//     at all ones they stop (IBA 16.1.3.5), they never wrap. Their width is
//     the kernel's (drivers/infiniband/core/sysfs.c): 4, 8 or 16 bits for
//     the error counters, 32 for data and packets (64 where the port has
//     the extended PortCountersExtended set, which also adds the
//     unicast_/multicast_ counters). A value at all ones is Saturated: the
//     delta is a lower bound. A value that went down was reset (perfquery
//     -R, a port reset): PMA counters have no other way down.
//   - hw_counters/ and netlink (SrcHWCounters, SrcNetlink) are the driver's
//     rdma_hw_stats, u64 in the kernel and on the wire. Drivers fill some
//     from 32-bit hardware counters that wrap at 2^32 (mlx5's queue
//     counters), others keep 64 bits. A value that went down is taken as a
//     wrap when the counter can have that width (a previous value below
//     2^32 for a 32-bit wrap) and the wrapped delta is less than half the
//     range (2^31, 2^63): the counter moved forward by less than half its
//     range in one interval. Anything else is a reset (the driver was
//     reloaded; a device re-created under the same name has a new NLDEV
//     index and is a vanished and an appeared device instead).
//
// Live snapshots carry the NLDEV device index: counters are matched by
// index, so a renamed device keeps its rates (under its new name) and a
// device re-created under an old name is not compared with its
// predecessor. Offline snapshots match by name.

// CounterSnapshot is every counter of some ports at one time.
type CounterSnapshot struct {
	Time  time.Time
	Sets  []CounterSet
	Index map[string]uint32 // device name -> NLDEV index (live only)
}

// CounterSnapshot reads the counters of refs (as Counters does) and stamps
// them with the time and the devices' NLDEV indexes.
func (s *Source) CounterSnapshot(refs []PortRef, only []string) (*CounterSnapshot, error) {
	sets, err := s.Counters(refs, only)
	if err != nil {
		return nil, err
	}
	snap := &CounterSnapshot{Time: time.Now(), Sets: sets}
	for _, r := range refs {
		if r.Index != nil {
			if snap.Index == nil {
				snap.Index = map[string]uint32{}
			}
			snap.Index[r.Dev] = *r.Index
		}
	}
	return snap, nil
}

// CounterKey names one counter.
type CounterKey struct {
	Dev    string
	Port   uint32 // 0: device-level hw_counters
	Source string
	Name   string
}

// SetKey names one counter set (the counters of a port from one source).
type SetKey struct {
	Dev    string
	Port   uint32
	Source string
}

func (k SetKey) String() string { return fmt.Sprintf("%s/%d %s", k.Dev, k.Port, k.Source) }

// Rate is one counter over an interval. Value, Prev and Delta are in the
// counter's own unit (port_xmit_data counts 4-byte words: CounterUnit).
type Rate struct {
	CounterKey        // as in the newer snapshot
	Prev       uint64 // the older value
	Value      uint64 // the newer value
	// Delta is the increase. After a wrap it counts across the wrap; after
	// a reset it is the count since the reset (Value), a lower bound; at
	// saturation it is a lower bound.
	Delta  uint64
	PerSec float64 // Delta / the interval
	// Width is the counter's width in bits as far as it is known: the
	// kernel's PMA width for counters/, 32 or 64 after a wrap, else 64.
	Width     uint8
	Wrapped   bool // went past 2^Width-1 and started again from 0
	Reset     bool // went down: cleared, not wrapped
	Saturated bool // a PMA counter stuck at its all-ones value
}

// Moved reports whether the rate says something happened: an increase,
// a wrap or a reset.
func (r Rate) Moved() bool { return r.Delta > 0 || r.Wrapped || r.Reset }

// RateReport is what happened between two snapshots.
type RateReport struct {
	Interval time.Duration
	// Rates has one entry for each counter in both snapshots, in the newer
	// snapshot's order.
	Rates []Rate
	// Appeared and Vanished are the counter sets in only the newer or only
	// the older snapshot: a device or port added, removed or re-created, or
	// a source that started or stopped answering. Sets that failed (Err)
	// are in neither.
	Appeared []SetKey
	Vanished []SetKey
}

// ErrInterval: the newer snapshot is not later than the older one.
var ErrInterval = errors.New("counter snapshots: the interval is not positive")

// Rates compares two snapshots of the same ports.
func Rates(prev, cur *CounterSnapshot) (*RateReport, error) {
	iv := cur.Time.Sub(prev.Time)
	if iv <= 0 {
		return nil, fmt.Errorf("%w (%v)", ErrInterval, iv)
	}
	rep := &RateReport{Interval: iv}
	matched := make([]bool, len(prev.Sets))
	for _, c := range cur.Sets {
		if c.Err != nil {
			continue
		}
		i := findSet(prev, cur, c)
		if i < 0 {
			rep.Appeared = append(rep.Appeared, SetKey{c.Dev, c.Port, c.Source})
			continue
		}
		matched[i] = true
		p := prev.Sets[i]
		old := make(map[string]uint64, len(p.Counters))
		for _, x := range p.Counters {
			old[x.Name] = x.Value
		}
		ext := c.Source == SrcCounters && hasCounter(c, "unicast_xmit_packets")
		for _, x := range c.Counters {
			pv, ok := old[x.Name]
			if !ok {
				continue // a counter new in a known set: nothing to compare
			}
			r := rateOf(c.Source, x.Name, ext, pv, x.Value)
			r.CounterKey = CounterKey{c.Dev, c.Port, c.Source, x.Name}
			r.PerSec = float64(r.Delta) / iv.Seconds()
			rep.Rates = append(rep.Rates, r)
		}
	}
	for i, p := range prev.Sets {
		if !matched[i] && p.Err == nil {
			rep.Vanished = append(rep.Vanished, SetKey{p.Dev, p.Port, p.Source})
		}
	}
	return rep, nil
}

// findSet is the index in prev of the set c of cur: by NLDEV device index
// when both snapshots know the device's, else by name.
func findSet(prev, cur *CounterSnapshot, c CounterSet) int {
	ci, cok := cur.Index[c.Dev]
	for i, p := range prev.Sets {
		if p.Err != nil || p.Port != c.Port || p.Source != c.Source {
			continue
		}
		pi, pok := prev.Index[p.Dev]
		if cok && pok {
			if pi == ci {
				return i
			}
			continue
		}
		if p.Dev == c.Dev {
			return i
		}
	}
	return -1
}

func hasCounter(s CounterSet, name string) bool {
	for _, c := range s.Counters {
		if c.Name == name {
			return true
		}
	}
	return false
}

// pmaWidth is the width of a counters/ file (sysfs.c's PORT_PMA_ATTR
// table); 0 for a name the kernel does not have.
func pmaWidth(name string, ext bool, v uint64) uint8 {
	switch name {
	case "local_link_integrity_errors", "excessive_buffer_overrun_errors":
		return 4
	case "link_error_recovery", "link_downed", "port_xmit_constraint_errors", "port_rcv_constraint_errors":
		return 8
	case "symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
		"port_xmit_discards", "VL15_dropped":
		return 16
	case "port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets":
		// 64 with the extended set. Ports with the extended widths but
		// not the IETF counters (pma_attrs_noietf) look like the basic
		// set: a value above 32 bits shows it.
		if ext || v > math.MaxUint32 {
			return 64
		}
		return 32
	case "port_xmit_wait":
		return 32
	case "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets":
		return 64
	}
	return 0
}

func allOnes(w uint8) uint64 {
	if w >= 64 {
		return math.MaxUint64
	}
	return 1<<w - 1
}

// rateOf is the delta of one counter from pv to v.
func rateOf(source, name string, ext bool, pv, v uint64) Rate {
	r := Rate{Prev: pv, Value: v, Width: 64}
	if source == SrcCounters {
		// PMA: saturates, never wraps.
		w := pmaWidth(name, ext, max(pv, v))
		if w != 0 {
			r.Width = w
		}
		r.Saturated = v == allOnes(r.Width) || v == math.MaxUint64
		if v < pv {
			r.Reset, r.Delta = true, v
		} else {
			r.Delta = v - pv
		}
		return r
	}
	if v >= pv {
		r.Delta = v - pv
		return r
	}
	// Went down: a wrap if the counter can be that wide and moved less
	// than half its range, else a reset.
	if pv <= math.MaxUint32 {
		if d := v + (1 << 32) - pv; d < 1<<31 {
			r.Width, r.Wrapped, r.Delta = 32, true, d
			return r
		}
	}
	if d := v - pv; d < 1<<63 { // unsigned: wraps at 2^64
		r.Wrapped, r.Delta = true, d
		return r
	}
	r.Reset, r.Delta = true, v
	return r
}

// CounterUnit is the unit of a counter and how many of it one count is:
// the PMA data counters count 4-byte words (IBA 16.1.3.5), shown as bytes;
// everything else counts events.
func CounterUnit(source, name string) (mult uint64, unit string) {
	if source == SrcCounters {
		if vocab.Counter(name).PMAWords {
			return vocab.PMAWordBytes, "bytes"
		}
	}
	return 1, "count"
}

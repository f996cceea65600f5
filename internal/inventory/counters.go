package inventory

import (
	"slices"
	"strings"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Counter sources, as the counters command names them.
const (
	SrcCounters   = "counters"    // sysfs ports/N/counters (PMA)
	SrcHWCounters = "hw_counters" // sysfs hw_counters, of the port or (port 0) the device
	SrcNetlink    = "netlink"     // NLDEV STAT_GET, what rdma statistic show prints
)

// CounterSet is the counters of one port (Port 0: the device-level
// hw_counters) from one source, sorted by name.
type CounterSet struct {
	Dev      string
	Port     uint32
	Source   string
	Counters []sysfs.Counter
	Err      error // SrcNetlink only: why netlink did not answer (sysfs did)
}

// Counters reads the counters of each of refs from the sources in only,
// in the order device hw_counters (once per device, as port 0), counters,
// hw_counters, netlink. The netlink statistics come over the source's one
// socket with one STAT_GET per port; offline from the capture's NLDEV dump,
// if it has one.
//
// only nil is the default: every source, but a port's hw_counters are read
// once. Its netlink statistics and its sysfs hw_counters are the same
// kernel counters (rdma_counter_get_hwstat_value and the sysfs show both
// read the driver's hw_stats; netlink also has the optional counters sysfs
// leaves out), so sysfs is read only where netlink does not answer: offline,
// or on a kernel or port without NLDEV statistics. That is one request per
// port instead of a file per counter (about 30 on rxe, 100 on mlx5).
func (s *Source) Counters(refs []PortRef, only []string) ([]CounterSet, error) {
	// Ports in parallel (live: nlFanout, each worker its own socket for
	// STAT_GET), results kept in refs' order.
	devFirst := make([]bool, len(refs))
	seen := map[string]bool{}
	for i, r := range refs {
		devFirst[i], seen[r.Dev] = !seen[r.Dev], true
	}
	sets := make([][]CounterSet, len(refs))
	errs := make([]error, len(refs))
	s.b.portFanout(len(refs), func(nl NL, i int) {
		sets[i], errs[i] = s.portCounters(nl, refs[i], devFirst[i], only)
	})
	var out []CounterSet
	for i := range refs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out = append(out, sets[i]...)
	}
	return out, nil
}

// portCounters is Counters for one port, with the device's own
// hw_counters before it where devFirst.
func (s *Source) portCounters(nlc NL, r PortRef, devFirst bool, only []string) ([]CounterSet, error) {
	want := func(src string) bool { return only == nil || slices.Contains(only, src) }
	listed := s.b.listed(r)
	var out []CounterSet
	if devFirst && want(SrcHWCounters) {
		cs, err := s.readCounters(r, listed, 0, true)
		if err != nil {
			return nil, err
		}
		out = append(out, CounterSet{Dev: r.Dev, Source: SrcHWCounters, Counters: cs})
	}
	if want(SrcCounters) {
		cs, err := s.readCounters(r, listed, r.Port, false)
		if err != nil {
			return nil, err
		}
		out = append(out, CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcCounters, Counters: cs})
	}
	var nl *CounterSet
	if want(SrcNetlink) {
		nl = s.b.statistics(nlc, r) // live: STAT_GET; a capture: its dump's, or nil
	}
	if want(SrcHWCounters) && (only != nil || nl == nil || nl.Err != nil) {
		cs, err := s.readCounters(r, listed, r.Port, true)
		if err != nil {
			return nil, err
		}
		out = append(out, CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcHWCounters, Counters: cs})
	}
	if nl != nil {
		out = append(out, *nl)
	}
	return out, nil
}

// readCounters reads one sysfs counter directory of r's device (port 0)
// or port. A listed port (live: from the kernel's netlink list) is not
// checked first; otherwise an unknown name is a *sysfs.NotFoundError.
func (s *Source) readCounters(r PortRef, listed bool, port uint32, hw bool) ([]sysfs.Counter, error) {
	if listed {
		k := absentDir{*r.Index, r.Dev, port, hw}
		s.absentMu.Lock()
		_, known := s.absent[k]
		s.absentMu.Unlock()
		if known {
			return []sysfs.Counter{}, nil
		}
		cs, absent := s.fs.KnownPortCounters(r.Dev, port, hw)
		if absent && s.absent != nil {
			s.absentMu.Lock()
			s.absent[k] = struct{}{}
			s.absentMu.Unlock()
		}
		return cs, nil
	}
	if hw {
		return s.fs.HWCounters(r.Dev, port)
	}
	return s.fs.Counters(r.Dev, port)
}

// AbsentDirs remembers, from one Source to the next, the sysfs counter
// directories a device lacks: rxe has no PMA counters/, most devices no
// device-level hw_counters/. The kernel creates them when the device
// registers, so one missing stays missing until the device registers
// anew, under a new NLDEV index, which is part of the key. The exporter
// keeps one across scrapes (at 64 rxe devices it saves 128 failing opens
// a scrape); a one-shot command has no use for it.
type AbsentDirs map[absentDir]struct{}

type absentDir struct {
	index uint32
	dev   string
	port  uint32 // 0: the device's own hw_counters
	hw    bool
}

// Keep forgets the directories of every device for which alive (NLDEV
// index and name) is false: devices that left or registered anew.
func (a AbsentDirs) Keep(alive func(index uint32, dev string) bool) {
	for k := range a {
		if !alive(k.index, k.dev) {
			delete(a, k)
		}
	}
}

// UseAbsentDirs has the live source skip, and record, the counter
// directories in a (nil: read every one, as by default).
func (s *Source) UseAbsentDirs(a AbsentDirs) { s.absent = a }

// HWCounterNames are the names of a port's hw_counters (port 0: the
// device's), without their values: what shell completion offers.
func (s *Source) HWCounterNames(dev string, port uint32) []string {
	return s.fs.HWCounterNames(dev, port)
}

// sortCounters sorts a counter set by name.
func sortCounters(cs []sysfs.Counter) {
	slices.SortFunc(cs, func(x, y sysfs.Counter) int { return strings.Compare(x.Name, y.Name) })
}

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

// Counters reads, for each of refs, the sources want says (nil: all), in
// the order device hw_counters (once per device, as port 0), counters,
// hw_counters, netlink. The netlink statistics come over the source's one
// socket with one STAT_GET per port; offline there are none.
func (s *Source) Counters(refs []PortRef, want func(src string) bool) ([]CounterSet, error) {
	if want == nil {
		want = func(string) bool { return true }
	}
	var out []CounterSet
	seen := map[string]bool{}
	for _, r := range refs {
		if !seen[r.Dev] && want(SrcHWCounters) {
			seen[r.Dev] = true
			cs, err := s.fs.HWCounters(r.Dev, 0)
			if err != nil {
				return nil, err
			}
			out = append(out, CounterSet{Dev: r.Dev, Source: SrcHWCounters, Counters: cs})
		}
		if want(SrcCounters) {
			cs, err := s.fs.Counters(r.Dev, r.Port)
			if err != nil {
				return nil, err
			}
			out = append(out, CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcCounters, Counters: cs})
		}
		if want(SrcHWCounters) {
			cs, err := s.fs.HWCounters(r.Dev, r.Port)
			if err != nil {
				return nil, err
			}
			out = append(out, CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcHWCounters, Counters: cs})
		}
		if want(SrcNetlink) && !s.Offline() && r.Index != nil {
			set := CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcNetlink}
			ns, err := s.nl.PortStatistics(*r.Index, r.Port)
			if err != nil {
				set.Err = err
			} else {
				for _, c := range ns {
					set.Counters = append(set.Counters, sysfs.Counter{Name: c.Name, Value: c.Value})
				}
				slices.SortFunc(set.Counters, func(x, y sysfs.Counter) int { return strings.Compare(x.Name, y.Name) })
			}
			out = append(out, set)
		}
	}
	return out, nil
}

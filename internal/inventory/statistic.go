package inventory

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// Counter modes and bindings: what "rdma statistic qp|mode|mr" show, per
// port, from the running kernel only (a captured tree has none of it).

// StatNL is the part of the NLDEV client the counter models need;
// *nldev.Client has it (asked of the Source's NL by type assertion, as
// ResNL).
type StatNL interface {
	QPCounterMode(dev, port uint32) (*nldev.QPMode, error)
	QPCounters(dev, port uint32) ([]nldev.QPCounter, error)
	CounterStatus(dev, port uint32) ([]nldev.CounterStatus, error)
	MRStatistics(dev uint32) ([]nldev.MRStat, error)
}

func (s *Source) statNL(what string) (*live, StatNL, error) {
	l, err := s.b.running(what)
	if err != nil {
		return nil, nil, err
	}
	n, ok := l.nl.(StatNL)
	if !ok {
		return nil, nil, fmt.Errorf("%s: %w", what, ErrNeedsLive)
	}
	return l, n, nil
}

// StatValue is one hardware counter of a QP counter or an MR, by the
// kernel's name, in the kernel's order.
type StatValue struct {
	Name  string
	Value uint64
}

// QPCounterMode is a port's QP counter mode.
type QPCounterMode struct {
	DevIndex uint32
	Dev      string
	Port     uint32
	Mode     string   // "none", "auto" or "manual"
	Auto     []string // auto mode's criteria: "type", "pid"
	// OptionalCounters: auto mode also enables the optional counters on
	// each QP counter; nil where the kernel does not say (before 6.11).
	OptionalCounters *bool
}

// CounterModeName names an rdma_nl_counter_mode.
func CounterModeName(m uint32) string {
	switch m {
	case nldev.CounterModeNone:
		return "none"
	case nldev.CounterModeAuto:
		return "auto"
	case nldev.CounterModeManual:
		return "manual"
	}
	return "unknown"
}

// AutoCriteria names the bits of an auto-mode mask as rdma does, in its
// order ("type", "pid").
func AutoCriteria(mask uint32) []string {
	var out []string
	if mask&nldev.CounterMaskQPType != 0 {
		out = append(out, "type")
	}
	if mask&nldev.CounterMaskPID != 0 {
		out = append(out, "pid")
	}
	return out
}

// AutoMask is the mask of rdma's criteria names; an unknown name is an
// error naming the valid ones.
func AutoMask(names []string) (uint32, error) {
	var m uint32
	for _, n := range names {
		switch n {
		case "type":
			m |= nldev.CounterMaskQPType
		case "pid":
			m |= nldev.CounterMaskPID
		default:
			return 0, fmt.Errorf("unknown auto-mode criterion %q (criteria: type, pid)", n)
		}
	}
	return m, nil
}

// QPCounterModes reads the QP counter mode of each port of dev ("" every
// device; port 0 every port).
func (s *Source) QPCounterModes(dev string, port uint32) ([]QPCounterMode, error) {
	_, n, err := s.statNL("QP counter modes")
	if err != nil {
		return nil, err
	}
	refs, err := s.Targets(dev, port)
	if err != nil {
		return nil, err
	}
	var out []QPCounterMode
	for _, r := range refs {
		m, err := n.QPCounterMode(*r.Index, r.Port)
		if err != nil {
			return nil, fmt.Errorf("%s/%d: %w", r.Dev, r.Port, err)
		}
		v := QPCounterMode{DevIndex: *r.Index, Dev: r.Dev, Port: r.Port, Mode: CounterModeName(m.Mode)}
		if m.Mode == nldev.CounterModeAuto {
			if m.Mask != nil {
				v.Auto = AutoCriteria(*m.Mask)
			}
			v.OptionalCounters = m.OptCounters
		}
		out = append(out, v)
	}
	return out, nil
}

// QPCounter is one QP counter: the QPs bound to it and its values.
type QPCounter struct {
	DevIndex uint32
	Dev      string
	Port     uint32
	ID       uint32 // cntn
	QPType   string // auto mode by type: the QP type it counts ("RC")
	Owner           // auto mode by PID: the process
	LQPNs    []uint32
	Counters []StatValue
}

// QPCounterFilter selects QP counters as rdma's filters do: zero fields
// match everything.
type QPCounterFilter struct {
	LQPN *uint32 // counters with this QP bound
	PID  *uint32
	CntN *uint32
}

func (f QPCounterFilter) match(q QPCounter) bool {
	if f.CntN != nil && q.ID != *f.CntN {
		return false
	}
	if f.PID != nil && (q.PID == nil || *q.PID != *f.PID) {
		return false
	}
	if f.LQPN != nil {
		for _, n := range q.LQPNs {
			if n == *f.LQPN {
				return true
			}
		}
		return false
	}
	return true
}

// QPCounters lists the QP counters of each port of dev ("" every device;
// port 0 every port), those f selects.
func (s *Source) QPCounters(dev string, port uint32, f QPCounterFilter) ([]QPCounter, error) {
	_, n, err := s.statNL("QP counters")
	if err != nil {
		return nil, err
	}
	refs, err := s.Targets(dev, port)
	if err != nil {
		return nil, err
	}
	out := []QPCounter{}
	for _, r := range refs {
		cs, err := n.QPCounters(*r.Index, r.Port)
		if err != nil {
			return nil, fmt.Errorf("%s/%d: %w", r.Dev, r.Port, err)
		}
		for _, c := range cs {
			q := QPCounter{DevIndex: c.DevIndex, Dev: c.DevName, Port: r.Port, ID: *c.ID, LQPNs: c.LQPNs}
			if c.Port != nil {
				q.Port = *c.Port
			}
			if c.QPType != nil {
				q.QPType = nldev.QPTypeName(*c.QPType)
			}
			q.Owner = s.owner(c.Owner)
			for _, v := range c.Counters {
				q.Counters = append(q.Counters, StatValue{Name: v.Name, Value: v.Value})
			}
			if f.match(q) {
				out = append(out, q)
			}
		}
	}
	return out, nil
}

// OptionalCounters are a port's optional counters ("rdma statistic mode
// supported"): Supported all of them, Enabled those on.
type OptionalCounters struct {
	DevIndex  uint32
	Dev       string
	Port      uint32
	Supported []string
	Enabled   []string
	NoStatus  bool // the driver refused STAT_GET_STATUS (EOPNOTSUPP): none
	index     map[string]uint32
}

// Index is the kernel's index of optional counter name (what STAT_SET
// takes), false when the port has no such optional counter.
func (o OptionalCounters) Index(name string) (uint32, bool) {
	i, ok := o.index[name]
	return i, ok
}

// OptionalCounters reads the optional counters of each port of dev (""
// every device; port 0 every port).
func (s *Source) OptionalCounters(dev string, port uint32) ([]OptionalCounters, error) {
	_, n, err := s.statNL("optional counters")
	if err != nil {
		return nil, err
	}
	refs, err := s.Targets(dev, port)
	if err != nil {
		return nil, err
	}
	var out []OptionalCounters
	for _, r := range refs {
		o := OptionalCounters{DevIndex: *r.Index, Dev: r.Dev, Port: r.Port, Supported: []string{}, Enabled: []string{}, index: map[string]uint32{}}
		st, err := n.CounterStatus(*r.Index, r.Port)
		if errors.Is(err, syscall.EOPNOTSUPP) {
			// Drivers without optional counters (rxe) refuse the
			// request; rdma shows such a port as having none.
			o.NoStatus = true
			out = append(out, o)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s/%d: %w", r.Dev, r.Port, err)
		}
		for _, c := range st {
			if !c.Optional {
				continue
			}
			o.Supported = append(o.Supported, c.Name)
			o.index[c.Name] = c.Index
			if c.Enabled {
				o.Enabled = append(o.Enabled, c.Name)
			}
		}
		out = append(out, o)
	}
	return out, nil
}

// MRStat is one memory region with the driver's per-MR counters (none on
// drivers without them, such as rxe).
type MRStat struct {
	DevIndex uint32
	Dev      string
	MRN      *uint32
	Counters []StatValue
}

// MRStatistics lists the MRs of dev ("" every device) with their counters.
func (s *Source) MRStatistics(dev string) ([]MRStat, error) {
	l, n, err := s.statNL("MR statistics")
	if err != nil {
		return nil, err
	}
	devs, err := l.nlDevicesNamed(dev)
	if err != nil {
		return nil, err
	}
	out := []MRStat{}
	for _, d := range devs {
		ms, err := n.MRStatistics(d.Index)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Name, err)
		}
		for _, m := range ms {
			v := MRStat{DevIndex: d.Index, Dev: d.Name, MRN: m.MRN}
			for _, c := range m.Counters {
				v.Counters = append(v.Counters, StatValue{Name: c.Name, Value: c.Value})
			}
			out = append(out, v)
		}
	}
	return out, nil
}

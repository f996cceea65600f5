package sysfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Counter is one statistics counter read from sysfs.
type Counter struct {
	Name  string
	Value uint64
}

// Counters reads the port's PMA counters (ports/N/counters/*: symbol_error,
// port_xmit_data, ...). Each read makes the kernel send a PerfMgt MAD, so a
// device without MAD support (rxe) has no counters/ directory: that gives an
// empty list, not an error. Counters that cannot be read or parsed are left
// out. The result is sorted by name.
//
// port_xmit_data and port_rcv_data count 4-byte words (IBA PortCounters),
// see vocab.Counter's Scale.
func (f *FS) Counters(dev string, port uint32) ([]Counter, error) {
	if err := f.checkPort(dev, port); err != nil {
		return nil, err
	}
	cs, _ := readCounterDir(filepath.Join(f.portDir(dev, port), "counters"))
	return cs, nil
}

// HWCounters reads hw_counters/ of a port, or of the device itself when
// port is 0 (device-level counters, e.g. mlx5 in switchdev mode). These are
// the counters "rdma statistic show" gets over netlink. The "lifespan" file
// is a setting (how many ms the kernel caches the values), not a counter,
// and is left out. A missing directory gives an empty list.
func (f *FS) HWCounters(dev string, port uint32) ([]Counter, error) {
	var dir string
	if port == 0 {
		if err := f.checkDevice(dev); err != nil {
			return nil, err
		}
		dir = filepath.Join(f.devDir(dev), "hw_counters")
	} else {
		if err := f.checkPort(dev, port); err != nil {
			return nil, err
		}
		dir = filepath.Join(f.portDir(dev, port), "hw_counters")
	}
	cs, _ := hwCounters(dir)
	return cs, nil
}

// KnownPortCounters is Counters and HWCounters (port 0: the device's) of a
// port the caller already knows exists, such as one the kernel listed over
// netlink: without the stat of the device and port directories that tell
// an unknown name from a missing directory (for counters at 128 rxe ports,
// 3 of the 5 sysfs calls per port). A missing directory is an empty list
// with absent true.
func (f *FS) KnownPortCounters(dev string, port uint32, hw bool) (cs []Counter, absent bool) {
	dir := f.devDir(dev)
	if port != 0 {
		dir = f.portDir(dev, port)
	}
	if hw {
		return hwCounters(filepath.Join(dir, "hw_counters"))
	}
	if port == 0 {
		return nil, false
	}
	return readCounterDir(filepath.Join(dir, "counters"))
}

func hwCounters(dir string) ([]Counter, bool) {
	cs, absent := readCounterDir(dir)
	return slices.DeleteFunc(cs, func(c Counter) bool { return c.Name == "lifespan" }), absent
}

// HWCounterNames lists the counters of a port's hw_counters/ (port 0:
// the device's) without reading them, sorted, lifespan left out; nil if
// there is no such directory. Shell completion offers them.
func (f *FS) HWCounterNames(dev string, port uint32) []string {
	dir := f.devDir(dev)
	if port != 0 {
		dir = f.portDir(dev, port)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "hw_counters"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Name() != "lifespan" {
			out = append(out, e.Name())
		}
	}
	return out // os.ReadDir sorts by name
}

// HWCountersLifespan is hw_counters/lifespan in milliseconds (how long the
// kernel caches hw counter values, so reads within it repeat the value);
// nil if absent. port 0 means the device-level directory.
func (f *FS) HWCountersLifespan(dev string, port uint32) *uint32 {
	dir := f.devDir(dev)
	if port != 0 {
		dir = f.portDir(dev, port)
	}
	v, _ := parseU32(readOpt(filepath.Join(dir, "hw_counters", "lifespan")))
	return v
}

// readCounterDir reads every counter file of dir; absent is true when dir
// does not exist (not when it cannot be read for another reason).
func readCounterDir(dir string) (cs []Counter, absent bool) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []Counter{}, true
	}
	cs = make([]Counter, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s, ok := readString(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		if v, ok := parseCounter(s); ok {
			cs = append(cs, Counter{Name: e.Name(), Value: v})
		}
	}
	slices.SortFunc(cs, func(a, b Counter) int { return strings.Compare(a.Name, b.Name) })
	return cs, false
}

// Package inventory gathers what rdmactl's inspection commands show
// (devices, ports, GID tables, counters; live only: resources and system
// settings) from one Source over one of two backends: the live system
// (live.go: RDMA netlink, sysfs, uverbs) or a captured sysfs tree
// (captured.go: --sysfs-root, with the capture's NLDEV dump where it has
// one). It also compares: counter rates
// between two CounterSnapshots (rates.go) and the events between two
// inventory Snapshots (diff.go). Commands go flags -> inventory -> render
// and read nothing themselves.
//
// Each fact is gathered once per run and only when asked for: the live
// source makes one NLDEV device dump, one port dump per device and asks
// GET_CHARDEV once per device (the per-device requests on up to four
// sockets in parallel, fanout.go), reads only the sysfs files of
// the facts the caller wants, and reads GID tables with one uverbs
// QUERY_GID_TABLE per device where the kernel has it. The cost therefore
// grows linearly with the number of devices (hosts with 64-256 SR-IOV
// functions exist).
package inventory

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
)

// NL is the part of the NLDEV client a live Source uses; *nldev.Client
// has it (tests build one over an nltest fake with nldev.NewClient).
type NL interface {
	Devices() ([]nldev.Device, error)
	PortsOf(dev uint32) ([]nldev.Port, error)
	Chardev(dev uint32, typ string) (*nldev.Chardev, error)
	System() (*nldev.System, error)
	PortStatistics(devIndex, port uint32) ([]nldev.Counter, error)
}

// Source is where an inventory comes from: a backend, the running system
// (live.go) or a captured tree (captured.go), and what is the same for
// both (the GID tables, counters, host facts and resources read through
// it).
type Source struct {
	tree
	b      backend
	absent AbsentDirs // counter directories known missing (counters.go)
	// absentMu guards absent (Counters reads ports in parallel).
	absentMu sync.Mutex
	res      resState // resources.go
}

// backend is what the running system and a captured tree answer each in
// their own way. Each keeps what it gathered for its Source's run, so that
// a fact is fetched at most once.
type backend interface {
	deviceNames() ([]string, error)
	targets(dev string, port uint32) ([]PortRef, error)
	devices(name string, o DeviceOptions) ([]Device, error)
	ports(dev string, port uint32, o PortOptions) ([]Port, error)
	// snapshotPorts is every port with what a Snapshot compares.
	snapshotPorts() ([]Port, error)
	system() (*System, error)
	// verbsDevices is every uverbs device by name; the map is the
	// backend's own, not to be changed.
	verbsDevices() (map[string]verbs.Device, error)
	// gidTable is dev's populated GID slots by port (refs: the ports
	// asked for), or nil for GIDs to read the tree.
	gidTable(dev string, refs []PortRef) map[uint32][]sysfs.GID
	// listed: r's counter directories need no check (counters.go).
	listed(r PortRef) bool
	// portFanout runs f(nl, i) for each of n ports; statistics is r's
	// NLDEV statistics (nl: f's), nil if there are none.
	portFanout(n int, f func(nl NL, i int))
	statistics(nl NL, r PortRef) *CounterSet
	// bundle fills in what a support bundle says of its source and gives
	// the NLDEV dump to write with it, or nil.
	bundle(info *BundleInfo) *NLDump
	// running is the live backend, for what only the running system has
	// (resources, counter modes, the process's limits); a captured tree
	// answers ErrNeedsLive, what: the request.
	running(what string) (*live, error)
	fresh() backend
	close() error
}

// Live is the running system: nl for RDMA netlink and /sys.
func Live(nl NL) *Source { return newLive(nl, sysfs.New("")) }

// LiveWith is Live reading sysfs under root instead of /sys (tests).
func LiveWith(nl NL, root string) *Source { return newLive(nl, sysfs.New(root)) }

// Captured is a captured sysfs tree (rdmactl --sysfs-root): no netlink, no
// uverbs. What only netlink knows (device index, protocol, caps, netns
// mode, NLDEV statistics) comes from the capture's NLDEV dump
// (bundle.go) where it has one, else is absent; an unreadable dump counts
// as none.
func Captured(root string) *Source { return sourceOf(newCaptured(root)) }

func sourceOf(c *captured) *Source { return &Source{tree: c.tree, b: c} }

// SetWarn sends the captured tree's warnings (entries skipped) to warn.
func (s *Source) SetWarn(warn func(string)) { s.fs.Warn = warn }

// Offline reports whether the source is a captured tree.
func (s *Source) Offline() bool {
	_, ok := s.b.(*captured)
	return ok
}

// Sysfs is the tree the source reads.
func (s *Source) Sysfs() *sysfs.FS { return s.fs }

// NotFoundError is an unknown device or port, with what exists.
type NotFoundError = nldev.NotFoundError

// selectDevs picks the named device (all for ""), or a *NotFoundError.
func selectDevs(devs []nldev.Device, name string) ([]nldev.Device, error) {
	if name == "" {
		return devs, nil
	}
	d, err := nldev.FindDevice(devs, name)
	if err != nil {
		return nil, err
	}
	return []nldev.Device{*d}, nil
}

// PortRef names one port.
type PortRef struct {
	Dev   string
	Port  uint32
	Index *uint32 // NLDEV device index (live only)
}

// Targets expands "" (every port), "DEV" or "DEV/PORT" (port 0: all of
// DEV) into ports that exist. Unknown names give a *NotFoundError (of
// nldev live, of sysfs offline) listing what exists.
func (s *Source) Targets(dev string, port uint32) ([]PortRef, error) { return s.b.targets(dev, port) }

// tree is the sysfs tree a Source and its backend read: the live /sys or
// a captured one.
type tree struct{ fs *sysfs.FS }

// readAttr is one sysfs attribute of the source's tree, trimmed; "" when
// missing or unreadable. Reads are bounded (sysfs.ReadBounded).
func (t tree) readAttr(parts ...string) string {
	b, err := sysfs.ReadBounded(filepath.Join(append([]string{t.fs.Root()}, parts...)...))
	if err != nil {
		return ""
	}
	return sysfs.TrimAttr(b)
}

func (t tree) portAttr(dev string, port uint32, name string) string {
	return t.readAttr("class", "infiniband", dev, "ports", strconv.FormatUint(uint64(port), 10), name)
}

// IsNotFound reports an unknown device or port from either source.
func IsNotFound(err error) bool {
	var a *nldev.NotFoundError
	var b *sysfs.NotFoundError
	return errors.As(err, &a) || errors.As(err, &b) || errors.Is(err, fs.ErrNotExist)
}

// VerbsDevices is the uverbs device of every RDMA device that has one, in
// one pass: the NLDEV device dump and one GET_CHARDEV per device on the
// source's one socket (rdma-core's way, which also gives the driver id),
// else, where netlink does not answer, sysfs (verbs.Devices).
func (s *Source) VerbsDevices() ([]verbs.Device, error) {
	vdevs, err := s.b.verbsDevices()
	if err != nil {
		return nil, err
	}
	out := make([]verbs.Device, 0, len(vdevs))
	for _, d := range vdevs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b verbs.Device) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// VerbsDevice is the uverbs device of name, or a *verbs.DeviceNotFoundError.
func (s *Source) VerbsDevice(name string) (verbs.Device, error) {
	vdevs, err := s.b.verbsDevices()
	if err != nil {
		return verbs.Device{}, err
	}
	if d, ok := vdevs[name]; ok {
		return d, nil
	}
	var known []string
	for n := range vdevs {
		known = append(known, n)
	}
	slices.Sort(known)
	return verbs.Device{}, &verbs.DeviceNotFoundError{Name: name, Known: known}
}

// addSysfsVerbs adds to m the uverbs devices sysfs shows that m lacks
// (verbs.Devices: infiniband_verbs, three reads per device).
func addSysfsVerbs(m map[string]verbs.Device) error {
	sys, err := provider.All().Devices()
	if err != nil {
		return err
	}
	for _, d := range sys {
		if _, ok := m[d.Name]; !ok {
			m[d.Name] = d
		}
	}
	return nil
}

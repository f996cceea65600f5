// Package inventory gathers what rdmactl's inspection commands show
// (devices, ports, GID tables, counters; live only: resources and system
// settings) from one Source: the live system (RDMA netlink, sysfs, uverbs)
// or a captured sysfs tree (--sysfs-root). It also compares: counter rates
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
	"fmt"
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

// Source is where an inventory comes from.
type Source struct {
	nl NL // nil: offline, a captured tree
	tree
	// Netlink facts, each fetched at most once.
	devs    []nldev.Device
	devsErr error
	devsOK  bool
	ports   map[uint32][]nldev.Port
	chardev map[uint32]*nldev.Chardev
	vdevs   map[string]verbs.Device
	mtus    map[uint32]uint32           // netdev MTUs by ifindex read ahead (port.go)
	ifs     *ifSocket                   // live: the netdev ioctl socket (port.go)
	rates   map[portKey]string          // sysfs port rates read ahead (port.go)
	answers map[portKey]*verbs.PortAttr // QUERY_PORT answers read ahead (port.go)
	asked   map[string]bool             // devices whose context the prefetch tried
	absent  AbsentDirs                  // counter directories known missing (counters.go)
	// absentMu guards absent (Counters reads ports in parallel).
	absentMu sync.Mutex
	res      resState // resources.go
	sys      sysState // system.go
	dump     *NLDump  // offline: a bundle's NLDEV dumps (bundle.go), or nil
	origin   string   // offline: the bundle file unpacked into fs's root
	cleanup  func()   // removes the unpacked bundle (Close)
}

// Live is the running system: nl for RDMA netlink and /sys.
func Live(nl NL) *Source { return &Source{nl: nl, tree: tree{sysfs.New("")}, ifs: &ifSocket{}} }

// LiveWith is Live reading sysfs under root instead of /sys (tests).
func LiveWith(nl NL, root string) *Source {
	return &Source{nl: nl, tree: tree{sysfs.New(root)}, ifs: &ifSocket{}}
}

// Captured is a captured sysfs tree (rdmactl --sysfs-root): no netlink, no
// uverbs. What only netlink knows (device index, protocol, caps, netns
// mode, NLDEV statistics) comes from the capture's NLDEV dump
// (bundle.go) where it has one, else is absent; an unreadable dump counts
// as none.
func Captured(root string) *Source {
	d, _ := LoadNLDump(root)
	return &Source{tree: tree{sysfs.New(root)}, dump: d}
}

// SetWarn sends the captured tree's warnings (entries skipped) to warn.
func (s *Source) SetWarn(warn func(string)) { s.fs.Warn = warn }

// Offline reports whether the source is a captured tree.
func (s *Source) Offline() bool { return s.nl == nil }

// Sysfs is the tree the source reads.
func (s *Source) Sysfs() *sysfs.FS { return s.fs }

// NotFoundError is an unknown device or port, with what exists.
type NotFoundError = nldev.NotFoundError

func (s *Source) nlDevices() ([]nldev.Device, error) {
	if !s.devsOK {
		s.devs, s.devsErr = s.nl.Devices()
		s.devsOK = true
	}
	return s.devs, s.devsErr
}

func (s *Source) nlPorts(idx uint32) ([]nldev.Port, error) {
	if ps, ok := s.ports[idx]; ok {
		return ps, nil
	}
	ps, err := s.nl.PortsOf(idx)
	if err != nil {
		return nil, err
	}
	if s.ports == nil {
		s.ports = map[uint32][]nldev.Port{}
	}
	s.ports[idx] = ps
	return ps, nil
}

// prefetchNLPorts asks for the ports of the devices not asked yet: each
// worker (nlChunks) its range of devices, in one batch where the client
// batches (PortsOfEach), and then also(i) for each device i of its range
// (nil: nothing) with device i's ports as far as they are known, as
// prefetchChardevs does; with chardevs, GET_CHARDEV of the range too, in
// the same worker, and also gets device i's answer (nil without chardevs,
// or if it has none). A device whose answer failed is
// left for nlPorts to ask again and report.
func (s *Source) prefetchNLPorts(devs []nldev.Device, chardevs bool, also func(i int, ps []nldev.Port, ch *nldev.Chardev)) {
	todo := 0
	for _, d := range devs {
		if _, ok := s.ports[d.Index]; !ok {
			todo++
		}
		if _, ok := s.chardev[d.Index]; chardevs && !ok {
			todo++
		}
	}
	if todo == 0 || (todo == 1 && also == nil) {
		if also != nil {
			fanout(len(devs), func(i int) {
				var ch *nldev.Chardev
				if chardevs {
					ch = s.chardev[devs[i].Index]
				}
				also(i, s.ports[devs[i].Index], ch)
			})()
		}
		return
	}
	ports := make([][]nldev.Port, len(devs))
	got := make([]bool, len(devs))
	var chs []*nldev.Chardev
	var asked []bool
	if chardevs {
		chs, asked = make([]*nldev.Chardev, len(devs)), make([]bool, len(devs))
	}
	s.nlChunks(len(devs), func(nl NL, lo, hi int) {
		var ask []int
		for i := lo; i < hi; i++ {
			if _, ok := s.ports[devs[i].Index]; !ok {
				ask = append(ask, i)
			}
		}
		askPorts(nl, devs, ask, ports, got)
		if chardevs {
			s.askChardevs(nl, devs, lo, hi, chs, asked)
		}
		if also != nil {
			for i := lo; i < hi; i++ {
				ps := ports[i]
				if !got[i] {
					ps = s.ports[devs[i].Index] // cached before, or nil
				}
				var ch *nldev.Chardev
				switch {
				case !chardevs:
				case asked[i]:
					ch = chs[i]
				default:
					ch = s.chardev[devs[i].Index] // read only while the workers run
				}
				also(i, ps, ch)
			}
		}
	})
	s.cachePorts(devs, ports, got)
	if chardevs {
		s.keepChardevs(devs, chs, asked)
	}
}

// eacher is an NLDEV client that batches requests (*nldev.Client).
type eacher interface {
	PortsOfEach(devs []nldev.Device) ([][]nldev.Port, []error)
	ChardevEach(idxs []uint32, typ string) ([]*nldev.Chardev, []error)
}

// askPorts asks nl for the ports of devs[i] for each i of ask, into
// ports[i], got[i] where it answered.
func askPorts(nl NL, devs []nldev.Device, ask []int, ports [][]nldev.Port, got []bool) {
	b, ok := nl.(eacher)
	if !ok {
		for _, i := range ask {
			var err error
			ports[i], err = nl.PortsOf(devs[i].Index)
			got[i] = err == nil
		}
		return
	}
	sub := make([]nldev.Device, len(ask))
	for j, i := range ask {
		sub[j] = devs[i]
	}
	ps, errs := b.PortsOfEach(sub)
	for j, i := range ask {
		ports[i], got[i] = ps[j], errs[j] == nil
	}
}

// cachePorts keeps the port dumps that succeeded (got[i]) of devs.
func (s *Source) cachePorts(devs []nldev.Device, ports [][]nldev.Port, got []bool) {
	for i, d := range devs {
		if !got[i] {
			continue
		}
		if s.ports == nil {
			s.ports = map[uint32][]nldev.Port{}
		}
		s.ports[d.Index] = ports[i]
	}
}

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
func (s *Source) Targets(dev string, port uint32) ([]PortRef, error) {
	if s.Offline() {
		return s.sysfsTargets(dev, port)
	}
	all, err := s.nlDevices()
	if err != nil {
		return nil, err
	}
	devs, err := selectDevs(all, dev)
	if err != nil {
		return nil, err
	}
	s.prefetchNLPorts(devs, false, nil)
	var out []PortRef
	for _, d := range devs {
		ps, err := s.nlPorts(d.Index)
		if err != nil {
			if s.gone(d, err) { // removed since the device dump (resources.go)
				if dev == "" {
					continue
				}
				return nil, &nldev.NotFoundError{Kind: "device", Name: d.Name, Exists: s.stillThere()}
			}
			return nil, fmt.Errorf("ports of %s: %w", d.Name, err)
		}
		found := false
		for _, p := range ps {
			if port != 0 && p.Port != port {
				continue
			}
			found = true
			idx := d.Index
			out = append(out, PortRef{Dev: d.Name, Port: p.Port, Index: &idx})
		}
		if port != 0 && !found {
			have := make([]string, 0, len(ps))
			for _, p := range ps {
				have = append(have, fmt.Sprintf("%s/%d", d.Name, p.Port))
			}
			return nil, &nldev.NotFoundError{Kind: "port", Name: fmt.Sprintf("%s/%d", d.Name, port), Exists: have}
		}
	}
	return out, nil
}

func (s *Source) sysfsTargets(dev string, port uint32) ([]PortRef, error) {
	var devs []string
	if dev == "" {
		names, err := s.fs.Devices()
		if err != nil {
			return nil, err
		}
		devs = names
	} else {
		devs = []string{dev}
	}
	var out []PortRef
	for _, d := range devs {
		if port != 0 {
			if err := s.fs.CheckPort(d, port); err != nil {
				return nil, err
			}
			out = append(out, PortRef{Dev: d, Port: port, Index: s.dumpIndex(d)})
			continue
		}
		ps, err := s.fs.PortNumbers(d)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			out = append(out, PortRef{Dev: d, Port: p, Index: s.dumpIndex(d)})
		}
	}
	return out, nil
}

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
	if s.vdevs == nil {
		if err := s.loadVerbs(); err != nil {
			return nil, err
		}
	}
	out := make([]verbs.Device, 0, len(s.vdevs))
	for _, d := range s.vdevs {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b verbs.Device) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// VerbsDevice is the uverbs device of name, or a *verbs.DeviceNotFoundError.
func (s *Source) VerbsDevice(name string) (verbs.Device, error) {
	if s.vdevs == nil {
		if err := s.loadVerbs(); err != nil {
			return verbs.Device{}, err
		}
	}
	if d, ok := s.vdevs[name]; ok {
		return d, nil
	}
	var known []string
	for n := range s.vdevs {
		known = append(known, n)
	}
	slices.Sort(known)
	return verbs.Device{}, &verbs.DeviceNotFoundError{Name: name, Known: known}
}

func (s *Source) loadVerbs() error {
	s.vdevs = map[string]verbs.Device{}
	// Live: netlink's GET_CHARDEV names every node (rdma-core's way, which
	// also gives the driver id); sysfs's infiniband_verbs, three reads per
	// device, only when a device's answer is missing or incomplete.
	if s.nl != nil {
		if devs, err := s.nlDevices(); err == nil {
			// The global ABI, where sysfs shows it (GET_CHARDEV gives each
			// device's).
			if _, err := verbs.CheckABI(); err != nil {
				return err
			}
			s.prefetchChardevs(devs, nil)
			complete := true
			for _, d := range devs {
				vd, ok := verbsDeviceOf(d.Name, s.chardevOf(d.Index))
				if !ok {
					complete = false
					continue
				}
				s.vdevs[d.Name] = vd
			}
			if complete {
				return nil
			}
		}
	}
	sys, err := provider.All().Devices()
	if err != nil {
		return err
	}
	for _, d := range sys {
		if _, ok := s.vdevs[d.Name]; !ok {
			s.vdevs[d.Name] = d
		}
	}
	return nil
}

// verbsDeviceOf is device name's uverbs device as its GET_CHARDEV answer
// describes it; false if the answer is missing or incomplete (older
// kernels), for the sysfs lookup to fill in.
func verbsDeviceOf(name string, ch *nldev.Chardev) (verbs.Device, bool) {
	if ch == nil || ch.ABI == nil || ch.Major == nil || ch.Minor == nil || ch.DriverID == nil || ch.Name == "" {
		return verbs.Device{}, false
	}
	return provider.All().NewDevice(name, ch.Name, uint32(*ch.ABI), *ch.Major, *ch.Minor, *ch.DriverID), true
}

// chardevOf is GET_CHARDEV "uverbs" of device idx, asked once; nil if none.
func (s *Source) chardevOf(idx uint32) *nldev.Chardev {
	if ch, ok := s.chardev[idx]; ok {
		return ch
	}
	ch := askChardev(s.nl, idx)
	s.keepChardev(idx, ch)
	return ch
}

// prefetchChardevs asks GET_CHARDEV of the devices not asked yet, in
// parallel ranges as prefetchNLPorts, batched where the client batches
// (ChardevEach), and runs also(i) for each device i in the same worker
// (nil: nothing).
func (s *Source) prefetchChardevs(devs []nldev.Device, also func(i int)) {
	todo := 0
	for _, d := range devs {
		if _, ok := s.chardev[d.Index]; !ok {
			todo++
		}
	}
	if todo == 0 {
		if also != nil {
			fanout(len(devs), also)()
		}
		return
	}
	chs := make([]*nldev.Chardev, len(devs))
	asked := make([]bool, len(devs))
	s.nlChunks(len(devs), func(nl NL, lo, hi int) {
		s.askChardevs(nl, devs, lo, hi, chs, asked)
		if also != nil {
			for i := lo; i < hi; i++ {
				also(i)
			}
		}
	})
	s.keepChardevs(devs, chs, asked)
}

// askChardevs asks nl for GET_CHARDEV "uverbs" of devs[lo:hi] not known
// yet, batched where nl batches, into chs[i], asked[i].
func (s *Source) askChardevs(nl NL, devs []nldev.Device, lo, hi int, chs []*nldev.Chardev, asked []bool) {
	var ask []int
	for i := lo; i < hi; i++ {
		if _, ok := s.chardev[devs[i].Index]; !ok {
			ask = append(ask, i)
			asked[i] = true
		}
	}
	b, ok := nl.(eacher)
	if !ok {
		for _, i := range ask {
			chs[i] = askChardev(nl, devs[i].Index)
		}
		return
	}
	idxs := make([]uint32, len(ask))
	for j, i := range ask {
		idxs[j] = devs[i].Index
	}
	got, _ := b.ChardevEach(idxs, "uverbs")
	for j, i := range ask {
		chs[i] = got[j]
	}
}

// keepChardevs keeps the answers askChardevs got.
func (s *Source) keepChardevs(devs []nldev.Device, chs []*nldev.Chardev, asked []bool) {
	for i, d := range devs {
		if asked[i] {
			s.keepChardev(d.Index, chs[i])
		}
	}
}

// askChardev is the device's uverbs char device, nil if nl has none.
func askChardev(nl NL, idx uint32) *nldev.Chardev {
	ch, err := nl.Chardev(idx, "uverbs")
	if err != nil {
		return nil
	}
	return ch
}

func (s *Source) keepChardev(idx uint32, ch *nldev.Chardev) {
	if s.chardev == nil {
		s.chardev = map[uint32]*nldev.Chardev{}
	}
	s.chardev[idx] = ch
}

package inventory

import (
	"fmt"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
	"github.com/rdmactl/rdmactl/internal/vocab"
	"io"
	"strings"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"golang.org/x/sys/unix"
)

// live is the running system's backend: RDMA netlink (the NLDEV device
// dump, a port dump and GET_CHARDEV per device, fanout.go), the live /sys
// and uverbs. It keeps each netlink answer for the Source's run.
type live struct {
	tree
	nl        NL
	ifs       *ifSocket // the netdev ioctl socket (port.go)
	devs      []nldev.Device
	devsErr   error
	devsOK    bool
	portDumps map[uint32][]nldev.Port // by device index
	chardev   map[uint32]*nldev.Chardev
	vdevs     map[string]verbs.Device
	mtus      map[uint32]uint32           // netdev MTUs by ifindex read ahead (port.go)
	rates     map[portKey]string          // sysfs port rates read ahead (port.go)
	answers   map[portKey]*verbs.PortAttr // QUERY_PORT answers read ahead (port.go)
	asked     map[string]bool             // devices whose context the prefetch tried
	sys       sysState                    // system.go
	recheck   []nldev.Device              // the device dump made by gone (resources.go)
}

func newLive(nl NL, fs *sysfs.FS) *Source {
	t := tree{fs}
	return &Source{tree: t, b: &live{tree: t, nl: nl, ifs: &ifSocket{}}}
}

func (l *live) fresh() backend { return &live{tree: l.tree, nl: l.nl, ifs: l.ifs} }

func (l *live) close() error {
	l.ifs.close()
	if c, ok := l.nl.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (l *live) running(string) (*live, error) { return l, nil }

func (l *live) deviceNames() ([]string, error) {
	devs, err := l.nlDevices()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, d.Name)
	}
	return names, nil
}

// system is one SYS_GET, asked once.
func (l *live) system() (*System, error) {
	if l.sys.done {
		return l.sys.v, l.sys.err
	}
	l.sys.done = true
	st, err := l.nl.System()
	if err != nil {
		l.sys.err = err
		return nil, err
	}
	l.sys.v = systemOf(st)
	return l.sys.v, nil
}

func (l *live) verbsDevices() (map[string]verbs.Device, error) {
	if l.vdevs == nil {
		if err := l.loadVerbs(); err != nil {
			return nil, err
		}
	}
	return l.vdevs, nil
}

// verbsDevice is the uverbs device of name, false if there is none.
func (l *live) verbsDevice(name string) (verbs.Device, bool) {
	m, err := l.verbsDevices()
	if err != nil {
		return verbs.Device{}, false
	}
	d, ok := m[name]
	return d, ok
}

// listed: a port of the kernel's own list (Targets), whose sysfs
// directories need no check before they are read.
func (l *live) listed(r PortRef) bool { return r.Index != nil }

// portFanout runs f(nl, i) for i in [0, n), each call with a socket no
// other running call uses (nlFanout).
func (l *live) portFanout(n int, f func(nl NL, i int)) { l.nlFanout(n, f) }

// statistics is one STAT_GET of r over nl, sorted by name; nil for a
// port without an NLDEV index.
func (l *live) statistics(nl NL, r PortRef) *CounterSet {
	if r.Index == nil {
		return nil
	}
	set := CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcNetlink}
	ns, err := nl.PortStatistics(*r.Index, r.Port)
	if err != nil {
		set.Err = err
	} else {
		for _, c := range ns {
			set.Counters = append(set.Counters, sysfs.Counter{Name: c.Name, Value: c.Value})
		}
		sortCounters(set.Counters)
	}
	return &set
}

// bundle describes the running kernel in info and asks for the NLDEV
// dump now; nil (and the reason in info) if netlink does not answer.
func (l *live) bundle(info *BundleInfo) *NLDump {
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		info.KernelRelease = unix.ByteSliceToString(u.Release[:])
		info.KernelVersion = unix.ByteSliceToString(u.Version[:])
		info.Machine = unix.ByteSliceToString(u.Machine[:])
	}
	d, err := l.nlDump()
	if err != nil {
		msg := strings.SplitN(strings.TrimSpace(err.Error()), "\n", 2)[0]
		info.NLDev = "none: " + msg
		info.Warnings = append(info.Warnings, "RDMA netlink: "+msg)
	}
	return d
}

// nlDevicesNamed is the device called name in the NLDEV device dump
// (every device for ""), or a *NotFoundError.
func (l *live) nlDevicesNamed(name string) ([]nldev.Device, error) {
	all, err := l.nlDevices()
	if err != nil {
		return nil, err
	}
	return selectDevs(all, name)
}

// nlDevices is the NLDEV device dump, made once.
func (l *live) nlDevices() ([]nldev.Device, error) {
	if !l.devsOK {
		l.devs, l.devsErr = l.nl.Devices()
		l.devsOK = true
	}
	return l.devs, l.devsErr
}

// nlPorts is the port dump of device idx, kept once it answered.
func (l *live) nlPorts(idx uint32) ([]nldev.Port, error) {
	if ps, ok := l.portDumps[idx]; ok {
		return ps, nil
	}
	ps, err := l.nl.PortsOf(idx)
	if err != nil {
		return nil, err
	}
	if l.portDumps == nil {
		l.portDumps = map[uint32][]nldev.Port{}
	}
	l.portDumps[idx] = ps
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
func (l *live) prefetchNLPorts(devs []nldev.Device, chardevs bool, also func(i int, ps []nldev.Port, ch *nldev.Chardev)) {
	todo := 0
	for _, d := range devs {
		if _, ok := l.portDumps[d.Index]; !ok {
			todo++
		}
		if _, ok := l.chardev[d.Index]; chardevs && !ok {
			todo++
		}
	}
	if todo == 0 || (todo == 1 && also == nil) {
		if also != nil {
			fanout(len(devs), func(i int) {
				var ch *nldev.Chardev
				if chardevs {
					ch = l.chardev[devs[i].Index]
				}
				also(i, l.portDumps[devs[i].Index], ch)
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
	l.nlChunks(len(devs), func(nl NL, lo, hi int) {
		var ask []int
		for i := lo; i < hi; i++ {
			if _, ok := l.portDumps[devs[i].Index]; !ok {
				ask = append(ask, i)
			}
		}
		askPorts(nl, devs, ask, ports, got)
		if chardevs {
			l.askChardevs(nl, devs, lo, hi, chs, asked)
		}
		if also != nil {
			for i := lo; i < hi; i++ {
				ps := ports[i]
				if !got[i] {
					ps = l.portDumps[devs[i].Index] // cached before, or nil
				}
				var ch *nldev.Chardev
				switch {
				case !chardevs:
				case asked[i]:
					ch = chs[i]
				default:
					ch = l.chardev[devs[i].Index] // read only while the workers run
				}
				also(i, ps, ch)
			}
		}
	})
	l.cachePorts(devs, ports, got)
	if chardevs {
		l.keepChardevs(devs, chs, asked)
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
func (l *live) cachePorts(devs []nldev.Device, ports [][]nldev.Port, got []bool) {
	for i, d := range devs {
		if !got[i] {
			continue
		}
		if l.portDumps == nil {
			l.portDumps = map[uint32][]nldev.Port{}
		}
		l.portDumps[d.Index] = ports[i]
	}
}

// targets is Targets from the device dump and the port dumps.
func (l *live) targets(dev string, port uint32) ([]PortRef, error) {
	devs, err := l.nlDevicesNamed(dev)
	if err != nil {
		return nil, err
	}
	l.prefetchNLPorts(devs, false, nil)
	var out []PortRef
	for _, d := range devs {
		ps, err := l.nlPorts(d.Index)
		if err != nil {
			if l.gone(d, err) { // removed since the device dump (resources.go)
				if dev == "" {
					continue
				}
				return nil, &nldev.NotFoundError{Kind: "device", Name: d.Name, Exists: l.stillThere()}
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

// loadVerbs finds the uverbs devices: netlink's GET_CHARDEV names every
// node (rdma-core's way, which also gives the driver id); sysfs's
// infiniband_verbs, three reads per device, only when a device's answer
// is missing or incomplete.
func (l *live) loadVerbs() error {
	l.vdevs = map[string]verbs.Device{}
	if devs, err := l.nlDevices(); err == nil {
		// The global ABI, where sysfs shows it (GET_CHARDEV gives each
		// device's).
		if _, err := verbs.CheckABI(); err != nil {
			return err
		}
		l.prefetchChardevs(devs, nil)
		complete := true
		for _, d := range devs {
			vd, ok := verbsDeviceOf(d.Name, l.chardevOf(d.Index))
			if !ok {
				complete = false
				continue
			}
			l.vdevs[d.Name] = vd
		}
		if complete {
			return nil
		}
	}
	return addSysfsVerbs(l.vdevs)
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
func (l *live) chardevOf(idx uint32) *nldev.Chardev {
	if ch, ok := l.chardev[idx]; ok {
		return ch
	}
	ch := askChardev(l.nl, idx)
	l.keepChardev(idx, ch)
	return ch
}

// prefetchChardevs asks GET_CHARDEV of the devices not asked yet, in
// parallel ranges as prefetchNLPorts, batched where the client batches
// (ChardevEach), and runs also(i) for each device i in the same worker
// (nil: nothing).
func (l *live) prefetchChardevs(devs []nldev.Device, also func(i int)) {
	todo := 0
	for _, d := range devs {
		if _, ok := l.chardev[d.Index]; !ok {
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
	l.nlChunks(len(devs), func(nl NL, lo, hi int) {
		l.askChardevs(nl, devs, lo, hi, chs, asked)
		if also != nil {
			for i := lo; i < hi; i++ {
				also(i)
			}
		}
	})
	l.keepChardevs(devs, chs, asked)
}

// askChardevs asks nl for GET_CHARDEV "uverbs" of devs[lo:hi] not known
// yet, batched where nl batches, into chs[i], asked[i].
func (l *live) askChardevs(nl NL, devs []nldev.Device, lo, hi int, chs []*nldev.Chardev, asked []bool) {
	var ask []int
	for i := lo; i < hi; i++ {
		if _, ok := l.chardev[devs[i].Index]; !ok {
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
func (l *live) keepChardevs(devs []nldev.Device, chs []*nldev.Chardev, asked []bool) {
	for i, d := range devs {
		if asked[i] {
			l.keepChardev(d.Index, chs[i])
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

func (l *live) keepChardev(idx uint32, ch *nldev.Chardev) {
	if l.chardev == nil {
		l.chardev = map[uint32]*nldev.Chardev{}
	}
	l.chardev[idx] = ch
}

// devices is Devices from the device dump, GET_CHARDEV and sysfs.
func (l *live) devices(name string, o DeviceOptions) ([]Device, error) {
	devs, err := l.nlDevicesNamed(name)
	if err != nil {
		return nil, err
	}
	out := make([]Device, len(devs))
	for i, d := range devs {
		idx := d.Index
		r := Device{Index: &idx, Name: d.Name, FW: d.FW, Protocol: d.Protocol, DIM: d.DIM, Caps: d.Caps, NumPorts: d.NumPorts}
		if d.NodeType != nil {
			r.NodeType = nldev.NodeTypeName(*d.NodeType)
		}
		if d.NodeGUID != nil {
			r.NodeGUID = vocab.GUID(*d.NodeGUID).String()
		}
		if d.SysImageGUID != nil {
			r.SysImageGUID = vocab.GUID(*d.SysImageGUID).String()
		}
		out[i] = r
	}
	// Devices in parallel: each one's GET_CHARDEV (on the worker's own
	// socket, nlFanout) and its sysfs facts; the two fill different fields.
	sysfsToo := o.Sysfs || o.Board || o.Details
	if !o.Chardev {
		if sysfsToo {
			fanout(len(out), func(i int) { l.deviceSysfs(&out[i], o) })()
		}
		return out, nil
	}
	var also func(i int)
	if sysfsToo {
		also = func(i int) { l.deviceSysfs(&out[i], o) }
	}
	l.prefetchChardevs(devs, also)
	for i, d := range devs {
		if ch := l.chardevOf(d.Index); ch != nil {
			r := &out[i]
			r.Uverbs, r.UverbsMajor, r.UverbsMinor, r.UverbsABI, r.DriverID = ch.Name, ch.Major, ch.Minor, ch.ABI, ch.DriverID
		}
	}
	return out, nil
}

// ports is Ports from the port dumps, with the sysfs and netdev facts
// read ahead in the same workers (prefetchPorts).
func (l *live) ports(dev string, port uint32, o PortOptions) ([]Port, error) {
	l.prefetchPorts(dev, port, o)
	refs, err := l.targets(dev, port)
	if err != nil {
		return nil, err
	}
	all, _ := l.nlDevices()
	byIdx := make(map[uint32]nldev.Device, len(all))
	for _, d := range all {
		byIdx[d.Index] = d
	}
	out := make([]Port, 0, len(refs))
	for _, r := range refs {
		d := byIdx[*r.Index]
		ps, _ := l.nlPorts(d.Index)
		for _, p := range ps {
			if p.Port == r.Port {
				out = append(out, l.livePort(d, p, o.NetlinkOnly, o.QueryPort))
			}
		}
	}
	if o.QueryPort {
		l.queryPorts(out)
	}
	return out, nil
}

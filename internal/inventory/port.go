package inventory

import (
	"encoding/binary"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/rdmactl/rdmactl/internal/netdev"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Port is one port of a device.
type Port struct {
	DevIndex     *uint32 // NLDEV device index (live only)
	Dev          string
	Port         uint32
	State        string // rdma's names: ACTIVE, DOWN...
	PhysState    string // LINK_UP, DISABLED...
	LinkLayer    string // "InfiniBand", "Ethernet"
	SubnetPrefix string
	LID          *uint32
	SMLID        *uint32
	LMC          *uint32
	Caps         *uint64 // port capability bits (live only, InfiniBand)
	Netdev       string
	NetdevIndex  *uint32
	// RateGbps, Width and Speed are ports/N/rate's, or with
	// PortOptions.QueryPort derived from the device's answer as the
	// kernel derives that file (vocab.RateOf).
	RateGbps *float64
	Width    string // "4X"
	Speed    string // "EDR"; "" where ports/N/rate names none (SDR on older kernels)
	// ActiveMTU is in bytes: the device's answer with PortOptions.QueryPort,
	// else for Ethernet derived from the netdev MTU (RoCEMTU).
	ActiveMTU *uint32
	MaxMTU    *uint32 // bytes; only with PortOptions.QueryPort
}

// PortOptions say which facts to gather beyond netlink's.
type PortOptions struct {
	// QueryPort asks each device (uverbs QUERY_PORT, one context per
	// device) for its ports' active and max MTU, and takes the rate from
	// the same answer instead of reading ports/N/rate (whose read makes the
	// kernel ask the device again); best effort: a port the device does not
	// answer for gets the sysfs rate and, on Ethernet, the netdev's MTU.
	QueryPort bool
	// NetlinkOnly leaves out the sysfs reads of a live port (link rate,
	// netdev MTU): rdmactl top asks every second and reads those rarely.
	NetlinkOnly bool
}

// Ports gathers the ports of every device, of dev, or dev/port (port 0:
// every port of dev).
func (s *Source) Ports(dev string, port uint32, o PortOptions) ([]Port, error) {
	if s.Offline() {
		return s.sysfsPorts(dev, port)
	}
	s.prefetchPorts(dev, port, o)
	refs, err := s.Targets(dev, port)
	if err != nil {
		return nil, err
	}
	all, _ := s.nlDevices()
	byIdx := make(map[uint32]nldev.Device, len(all))
	for _, d := range all {
		byIdx[d.Index] = d
	}
	out := make([]Port, 0, len(refs))
	for _, r := range refs {
		d := byIdx[*r.Index]
		ps, _ := s.nlPorts(d.Index)
		for _, p := range ps {
			if p.Port == r.Port {
				out = append(out, s.livePort(d, p, o.NetlinkOnly, o.QueryPort))
			}
		}
	}
	if o.QueryPort {
		s.queryPorts(out)
	}
	return out, nil
}

// livePort merges the netlink port with the few sysfs files netlink lacks
// (rate; link_layer on kernels without the device protocol) and, on
// Ethernet, the netdev's MTU. With query, rate and MTU are left to
// queryPorts, which asks the device.
func (s *Source) livePort(d nldev.Device, p nldev.Port, nlOnly, query bool) Port {
	idx := d.Index
	r := Port{DevIndex: &idx, Dev: d.Name, Port: p.Port, LID: p.LID, SMLID: p.SMLID, Caps: p.Caps,
		Netdev: p.NetdevName, NetdevIndex: p.NetdevIndex}
	if p.SubnetPrefix != nil {
		r.SubnetPrefix = vocab.GUID(*p.SubnetPrefix).String()
	}
	if p.LMC != nil {
		v := uint32(*p.LMC)
		r.LMC = &v
	}
	if p.State != nil {
		r.State = vocab.PortState(*p.State).String()
	}
	if p.PhysState != nil {
		r.PhysState = vocab.PhysState(*p.PhysState).String()
	}
	r.LinkLayer = s.linkLayer(d, p.Port)
	if nlOnly || query {
		return r
	}
	s.sysfsRateMTU(&r)
	return r
}

// sysfsRateMTU sets the port's rate from ports/N/rate and, on Ethernet,
// its active MTU from the netdev's.
func (s *Source) sysfsRateMTU(r *Port) {
	if rt, ok := vocab.ParseRate(s.portRate(r.Dev, r.Port)); ok {
		r.RateGbps, r.Width, r.Speed = &rt.Gbps, rt.Width, rt.Speed
	}
	if r.LinkLayer == "Ethernet" && r.Netdev != "" {
		if m, ok := s.netdevMTU(r.Netdev, r.NetdevIndex); ok {
			if v := RoCEMTU(m); v != 0 {
				r.ActiveMTU = &v
			}
		}
	}
}

// netdevMTU is a netdev's MTU: read ahead by the port workers, else on
// the live /sys by ioctl (SIOCGIFMTU), else its sysfs mtu file.
func (s *Source) netdevMTU(name string, index *uint32) (uint32, bool) {
	if index != nil {
		if m, ok := s.mtus[*index]; ok {
			return m, true
		}
	}
	if m, ok := s.ioctlMTU(name); ok {
		return m, true
	}
	m, err := strconv.ParseUint(s.readAttr("class", "net", name, "mtu"), 10, 32)
	return uint32(m), err == nil
}

// ifSocket is a live Source's netdev ioctl socket, opened on first use
// and shared with its Fresh copies; the original's Close closes it.
type ifSocket struct {
	once sync.Once
	s    *netdev.Socket // nil if it could not be opened
}

func (f *ifSocket) get() *netdev.Socket {
	f.once.Do(func() { f.s, _ = netdev.Open() })
	return f.s
}

func (f *ifSocket) close() {
	if f == nil {
		return
	}
	f.once.Do(func() {}) // none opened from here on
	if f.s != nil {
		_ = f.s.Close()
		f.s = nil
	}
}

// ioctlMTU asks the kernel for netdev name's MTU, on the live /sys only (a
// captured tree's netdevs are not this host's). Safe for concurrent use.
func (s *Source) ioctlMTU(name string) (uint32, bool) {
	if s.ifs == nil || s.fs.Root() != "/sys" || name == "" {
		return 0, false
	}
	sock := s.ifs.get()
	if sock == nil {
		return 0, false
	}
	m, err := sock.MTU(name)
	return m, err == nil
}

// linkLayer: the device's protocol gives it without a sysfs read (ib ->
// InfiniBand, roce and iw -> Ethernet, as rdma_port_get_link_layer answers
// for these devices); sysfs only on kernels without it.
func (s *Source) linkLayer(d nldev.Device, port uint32) string {
	switch d.Protocol {
	case "ib", "opa":
		return "InfiniBand"
	case "roce", "iw":
		return "Ethernet"
	}
	return s.portAttr(d.Name, port, "link_layer")
}

// queryPorts gives each port its device's QUERY_PORT answer (active and
// max MTU, rate): asked by the port workers where the prefetch could
// (prefetchPorts), else here, a uverbs context per device, devices in
// parallel (fanout). A port the device does not answer for gets what
// sysfs and the netdev give (sysfsRateMTU).
func (s *Source) queryPorts(ports []Port) {
	answered := make([]bool, len(ports))
	for i := range ports {
		if pa := s.answers[portKey{ports[i].Dev, ports[i].Port}]; pa != nil {
			setQueried(&ports[i], pa)
			answered[i] = true
		}
	}
	type group struct {
		dev verbs.Device
		idx []int // indexes into ports of the device's unanswered ports
	}
	var groups []group
	for i := 0; i < len(ports); {
		j := i
		var idx []int
		for ; j < len(ports) && ports[j].Dev == ports[i].Dev; j++ {
			if !answered[j] {
				idx = append(idx, j)
			}
		}
		if len(idx) > 0 && !s.asked[ports[i].Dev] {
			if d, err := s.VerbsDevice(ports[i].Dev); err == nil {
				groups = append(groups, group{d, idx})
			}
		}
		i = j
	}
	fanout(len(groups), func(g int) {
		nums := make([]uint32, len(groups[g].idx))
		for k, i := range groups[g].idx {
			nums[k] = ports[i].Port
		}
		for k, pa := range askDevice(groups[g].dev, nums) {
			if pa != nil {
				i := groups[g].idx[k]
				setQueried(&ports[i], pa)
				answered[i] = true
			}
		}
	})()
	for i := range ports {
		if !answered[i] {
			s.sysfsRateMTU(&ports[i])
		}
	}
}

// askDevice opens d's uverbs context and asks QUERY_PORT of each of
// ports: out[k] is ports[k]'s answer, nil where there is none.
func askDevice(d verbs.Device, ports []uint32) []*verbs.PortAttr {
	out := make([]*verbs.PortAttr, len(ports))
	ctx, err := verbs.OpenDevice(d, verbs.Options{})
	if err != nil {
		return out
	}
	defer ctx.Close()
	for k, p := range ports {
		if p == 0 || p > 255 {
			continue // QUERY_PORT's port number is a u8
		}
		if pa, err := ctx.QueryPort(uint8(p)); err == nil {
			out[k] = pa
		}
	}
	return out
}

// setQueried sets the port's rate and MTUs from its QUERY_PORT answer.
func setQueried(r *Port, pa *verbs.PortAttr) {
	if rt, ok := pa.Rate(); ok {
		r.RateGbps, r.Width, r.Speed = &rt.Gbps, rt.Width, rt.Speed
	}
	if v := pa.ActiveMTU.Bytes(); v != 0 {
		r.ActiveMTU = &v
	}
	if v := pa.MaxMTU.Bytes(); v != 0 {
		r.MaxMTU = &v
	}
}

type portKey struct {
	dev  string
	port uint32
}

// prefetchPorts gathers ahead what Ports needs of every port of dev (all
// devices for ""), or of dev/port, as the device dump numbers them: each
// device's NLDEV ports, then its ports' sysfs rate files and netdev MTUs
// (or QUERY_PORT answers), devices in parallel (nlChunks). Nothing here
// fails: what it did not get (a request that failed, a port the NLDEV
// answers number otherwise, a netdev the ioctl did not find) Targets,
// livePort and queryPorts ask the plain way, with their errors.
func (s *Source) prefetchPorts(dev string, port uint32, o PortOptions) {
	all, err := s.nlDevices()
	if err != nil {
		return
	}
	devs, err := selectDevs(all, dev)
	if err != nil {
		return
	}
	// The worker of device i reads its ports' rate files and asks their
	// netdevs' MTUs (RoCE; by ioctl: a link dump would describe every link
	// of the namespace), or with QueryPort opens the device (GET_CHARDEV
	// answered in the same worker) and asks QUERY_PORT, alongside the other
	// workers' netlink requests. Each read is kept with its port.
	type portRead struct {
		key  portKey
		rate string
		attr *verbs.PortAttr
	}
	reads := make([][]portRead, len(devs))
	mtus := make([][][2]uint32, len(devs)) // ifindex, MTU
	asked := make([]bool, len(devs))
	var also func(int, []nldev.Port, *nldev.Chardev)
	switch {
	case o.NetlinkOnly:
	case o.QueryPort:
		if ok, err := verbs.CheckABI(); !ok || err != nil {
			break // queryPorts tries by name and falls back to sysfs
		}
		also = func(i int, _ []nldev.Port, ch *nldev.Chardev) {
			vd, ok := verbsDeviceOf(devs[i].Name, ch)
			ps := portNumbers(devs[i], port)
			if !ok || len(ps) == 0 {
				return
			}
			asked[i] = true
			for k, pa := range askDevice(vd, ps) {
				if pa != nil {
					reads[i] = append(reads[i], portRead{key: portKey{devs[i].Name, ps[k]}, attr: pa})
				}
			}
		}
	default:
		also = func(i int, ps []nldev.Port, _ *nldev.Chardev) {
			for _, p := range portNumbers(devs[i], port) {
				reads[i] = append(reads[i], portRead{key: portKey{devs[i].Name, p}, rate: s.portAttr(devs[i].Name, p, "rate")})
			}
			switch devs[i].Protocol {
			case "ib", "opa":
				return // no netdev MTU in what they print
			}
			for _, p := range ps {
				if (port == 0 || p.Port == port) && p.NetdevIndex != nil {
					if m, ok := s.ioctlMTU(p.NetdevName); ok {
						mtus[i] = append(mtus[i], [2]uint32{*p.NetdevIndex, m})
					}
				}
			}
		}
	}
	s.prefetchNLPorts(devs, o.QueryPort, also)
	for i, d := range devs {
		for _, r := range reads[i] {
			switch {
			case r.attr != nil:
				if s.answers == nil {
					s.answers = make(map[portKey]*verbs.PortAttr)
				}
				s.answers[r.key] = r.attr
			default:
				if s.rates == nil {
					s.rates = make(map[portKey]string)
				}
				s.rates[r.key] = r.rate
			}
		}
		for _, m := range mtus[i] {
			if s.mtus == nil {
				s.mtus = make(map[uint32]uint32)
			}
			s.mtus[m[0]] = m[1]
		}
		if asked[i] {
			if s.asked == nil {
				s.asked = make(map[string]bool)
			}
			s.asked[d.Name] = true
		}
	}
}

// portNumbers are the ports of d the prefetch reads ahead (port 0: all,
// else that one): none if the device dump gave no count, or an absurd one
// (livePort reads what the port answers list).
func portNumbers(d nldev.Device, port uint32) []uint32 {
	if d.NumPorts == nil || *d.NumPorts > nldev.MaxEachPorts {
		return nil
	}
	if port != 0 {
		if port <= *d.NumPorts {
			return []uint32{port}
		}
		return nil
	}
	ps := make([]uint32, *d.NumPorts)
	for k := range ps {
		ps[k] = uint32(k) + 1
	}
	return ps
}

// portRate is the port's sysfs rate, from the prefetch where it has it.
func (s *Source) portRate(dev string, port uint32) string {
	if v, ok := s.rates[portKey{dev, port}]; ok {
		return v
	}
	return s.portAttr(dev, port, "rate")
}

func (s *Source) sysfsPorts(dev string, port uint32) ([]Port, error) {
	refs, err := s.sysfsTargets(dev, port)
	if err != nil {
		return nil, err
	}
	var out []Port
	for _, t := range refs {
		p, err := s.fs.Port(t.Dev, t.Port)
		if err != nil {
			return nil, err
		}
		r := Port{Dev: t.Dev, Port: t.Port, LinkLayer: p.LinkLayer, RateGbps: p.RateGbps, Width: p.Width, Speed: p.Speed}
		if p.StateNum != nil {
			r.State = vocab.PortState(*p.StateNum).String()
		}
		if p.PhysStateNum != nil {
			r.PhysState = vocab.PhysState(*p.PhysStateNum).String()
		}
		if p.LinkLayer == "InfiniBand" {
			r.LID, r.SMLID, r.LMC = p.LID, p.SMLID, p.LMC
			r.SubnetPrefix = s.sysfsSubnetPrefix(t.Dev, t.Port)
		}
		s.dumpPortFacts(&r)
		r.Netdev = s.sysfsNetdev(t.Dev, t.Port, p.LinkLayer)
		if r.Netdev != "" {
			nd := s.fs.Netdev(r.Netdev)
			r.NetdevIndex = nd.Ifindex
			if p.LinkLayer == "Ethernet" && nd.MTU != nil {
				if v := RoCEMTU(*nd.MTU); v != 0 {
					r.ActiveMTU = &v
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// sysfsNetdev is the port's netdev as a captured tree holds it: the
// device's parent (rxe, siw), else, on Ethernet, the netdev of GID slot 0.
// The kernel reserves the first slots for the port's default GIDs and binds
// them to the port's netdev (roce_gid_mgmt.c enum_netdev_default_gids,
// with the netdev ib_device_get_netdev gives, which is also what netlink
// reports live). Hardware RoCE devices have no parent, so without slot 0
// their netdev would be missing offline.
func (s *Source) sysfsNetdev(dev string, port uint32, linkLayer string) string {
	if nd := s.readAttr("class", "infiniband", dev, "parent"); nd != "" || linkLayer != "Ethernet" {
		return nd
	}
	return s.readAttr("class", "infiniband", dev, "ports", strconv.FormatUint(uint64(port), 10), "gid_attrs", "ndevs", "0")
}

// sysfsSubnetPrefix is an InfiniBand port's subnet prefix as a captured
// tree holds it: the upper half of GID 0, which is how the kernel fills it
// when the driver does not (ib_query_port), and GID 0 is by definition
// the subnet prefix and the port GUID. Like netlink, which sends the
// prefix of every InfiniBand port, an all-zero GID 0 gives zeros; ""
// only when gids/0 is unreadable or not a GID.
func (s *Source) sysfsSubnetPrefix(dev string, port uint32) string {
	a, err := netip.ParseAddr(s.portAttr(dev, port, filepath.Join("gids", "0")))
	if err != nil || !a.Is6() {
		return ""
	}
	b := a.As16()
	return vocab.GUID(binary.BigEndian.Uint64(b[:8])).String()
}

// RoCEMTU is the RoCE path MTU the kernel derives from a netdev MTU:
// iboe_get_mtu() (include/rdma/ib_addr.h) subtracts the largest RoCE
// headers (GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4 =
// 96 bytes) and rounds down to an IB MTU; 0 below 256. rxe computes its
// own (netdev MTU - 80, at least 256), which agrees with this for common
// MTUs (1500 -> 1024, 9000 -> 4096) but not for every value; -d asks the
// device instead.
func RoCEMTU(netdevMTU uint32) uint32 {
	if netdevMTU < 96 {
		return 0
	}
	m := netdevMTU - 96
	for _, v := range []uint32{4096, 2048, 1024, 512, 256} {
		if m >= v {
			return v
		}
	}
	return 0
}

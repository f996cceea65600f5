package inventory

import (
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
	return s.b.ports(dev, port, o)
}

// livePort merges the netlink port with the few sysfs files netlink lacks
// (rate; link_layer on kernels without the device protocol) and, on
// Ethernet, the netdev's MTU. With query, rate and MTU are left to
// queryPorts, which asks the device.
func (l *live) livePort(d nldev.Device, p nldev.Port, nlOnly, query bool) Port {
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
	r.LinkLayer = l.linkLayer(d, p.Port)
	if nlOnly || query {
		return r
	}
	l.sysfsRateMTU(&r)
	return r
}

// sysfsRateMTU sets the port's rate from ports/N/rate and, on Ethernet,
// its active MTU from the netdev's.
func (l *live) sysfsRateMTU(r *Port) {
	if rt, ok := vocab.ParseRate(l.portRate(r.Dev, r.Port)); ok {
		r.RateGbps, r.Width, r.Speed = &rt.Gbps, rt.Width, rt.Speed
	}
	if r.LinkLayer == "Ethernet" && r.Netdev != "" {
		if m, ok := l.netdevMTU(r.Netdev, r.NetdevIndex); ok {
			if v := RoCEMTU(m); v != 0 {
				r.ActiveMTU = &v
			}
		}
	}
}

// netdevMTU is a netdev's MTU: read ahead by the port workers, else on
// the live /sys by ioctl (SIOCGIFMTU), else its sysfs mtu file.
func (l *live) netdevMTU(name string, index *uint32) (uint32, bool) {
	if index != nil {
		if m, ok := l.mtus[*index]; ok {
			return m, true
		}
	}
	if m, ok := l.ioctlMTU(name); ok {
		return m, true
	}
	m, err := strconv.ParseUint(l.readAttr("class", "net", name, "mtu"), 10, 32)
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
func (l *live) ioctlMTU(name string) (uint32, bool) {
	if l.ifs == nil || l.fs.Root() != "/sys" || name == "" {
		return 0, false
	}
	sock := l.ifs.get()
	if sock == nil {
		return 0, false
	}
	m, err := sock.MTU(name)
	return m, err == nil
}

// linkLayer: the device's protocol gives it without a sysfs read (ib ->
// InfiniBand, roce and iw -> Ethernet, as rdma_port_get_link_layer answers
// for these devices); sysfs only on kernels without it.
func (l *live) linkLayer(d nldev.Device, port uint32) string {
	switch d.Protocol {
	case "ib", "opa":
		return "InfiniBand"
	case "roce", "iw":
		return "Ethernet"
	}
	return l.portAttr(d.Name, port, "link_layer")
}

// queryPorts gives each port its device's QUERY_PORT answer (active and
// max MTU, rate): asked by the port workers where the prefetch could
// (prefetchPorts), else here, a uverbs context per device, devices in
// parallel (fanout). A port the device does not answer for gets what
// sysfs and the netdev give (sysfsRateMTU).
func (l *live) queryPorts(ports []Port) {
	answered := make([]bool, len(ports))
	for i := range ports {
		if pa := l.answers[portKey{ports[i].Dev, ports[i].Port}]; pa != nil {
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
		if len(idx) > 0 && !l.asked[ports[i].Dev] {
			if d, ok := l.verbsDevice(ports[i].Dev); ok {
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
			l.sysfsRateMTU(&ports[i])
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
func (l *live) prefetchPorts(dev string, port uint32, o PortOptions) {
	devs, err := l.nlDevicesNamed(dev)
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
				reads[i] = append(reads[i], portRead{key: portKey{devs[i].Name, p}, rate: l.portAttr(devs[i].Name, p, "rate")})
			}
			switch devs[i].Protocol {
			case "ib", "opa":
				return // no netdev MTU in what they print
			}
			for _, p := range ps {
				if (port == 0 || p.Port == port) && p.NetdevIndex != nil {
					if m, ok := l.ioctlMTU(p.NetdevName); ok {
						mtus[i] = append(mtus[i], [2]uint32{*p.NetdevIndex, m})
					}
				}
			}
		}
	}
	l.prefetchNLPorts(devs, o.QueryPort, also)
	for i, d := range devs {
		for _, r := range reads[i] {
			switch {
			case r.attr != nil:
				if l.answers == nil {
					l.answers = make(map[portKey]*verbs.PortAttr)
				}
				l.answers[r.key] = r.attr
			default:
				if l.rates == nil {
					l.rates = make(map[portKey]string)
				}
				l.rates[r.key] = r.rate
			}
		}
		for _, m := range mtus[i] {
			if l.mtus == nil {
				l.mtus = make(map[uint32]uint32)
			}
			l.mtus[m[0]] = m[1]
		}
		if asked[i] {
			if l.asked == nil {
				l.asked = make(map[string]bool)
			}
			l.asked[d.Name] = true
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
func (l *live) portRate(dev string, port uint32) string {
	if v, ok := l.rates[portKey{dev, port}]; ok {
		return v
	}
	return l.portAttr(dev, port, "rate")
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

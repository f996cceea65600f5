package inventory

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// The NLDEV dumps of a support bundle (docs/capture.md): what only RDMA
// netlink knows, written by 'rdmactl capture' next to the sysfs copy as
// rdmactl/nldev.json, and read back by Captured, so that a capture shows
// the device index, protocol, capability bits, adaptive moderation, the
// uverbs driver id, the netns mode and the NLDEV statistics as the live
// host did. Values are the kernel's, unconverted (states as numbers,
// GUIDs in host order), so that the reading side decodes them exactly as
// the live path decodes netlink.

// NLDumpFile is the dump's path inside a capture.
var NLDumpFile = filepath.Join(sysfs.BundleMetaDir, "nldev.json")

// NLDump is every NLDEV answer the inventory uses.
type NLDump struct {
	Devices []NLDumpDevice `json:"devices"`
	// System is SYS_GET's answer; nil when the kernel has none.
	System *NLDumpSystem `json:"system"`
}

// NLDumpDevice is one device of the device dump, with its GET_CHARDEV
// "uverbs" answer and its ports.
type NLDumpDevice struct {
	Index        uint32         `json:"index"`
	Name         string         `json:"name"`
	NodeType     *uint8         `json:"node_type"`
	FW           string         `json:"fw"`
	NodeGUID     *uint64        `json:"node_guid"`
	SysImageGUID *uint64        `json:"sys_image_guid"`
	NumPorts     *uint32        `json:"num_ports"`
	Caps         *uint64        `json:"caps"`
	Protocol     string         `json:"protocol"`
	DIM          *bool          `json:"dim"`
	Uverbs       *NLDumpChardev `json:"uverbs"`
	Ports        []NLDumpPort   `json:"ports"`
}

// NLDumpChardev is GET_CHARDEV's answer.
type NLDumpChardev struct {
	Name     string  `json:"name"`
	ABI      *uint64 `json:"abi"`
	Dev      *uint64 `json:"dev"`
	Major    *uint32 `json:"major"`
	Minor    *uint32 `json:"minor"`
	DriverID *uint32 `json:"driver_id"`
}

// NLDumpPort is one port of the port dump, with its STAT_GET answer.
type NLDumpPort struct {
	Port         uint32  `json:"port"`
	State        *uint8  `json:"state"`
	PhysState    *uint8  `json:"phys_state"`
	Caps         *uint64 `json:"caps"`
	SubnetPrefix *uint64 `json:"subnet_prefix"`
	LID          *uint32 `json:"lid"`
	SMLID        *uint32 `json:"sm_lid"`
	LMC          *uint8  `json:"lmc"`
	NetdevName   string  `json:"netdev_name"`
	NetdevIndex  *uint32 `json:"netdev_index"`
	// Statistics is nil when STAT_GET failed (StatisticsError says why).
	Statistics      []NLDumpCounter `json:"statistics"`
	StatisticsError string          `json:"statistics_error,omitempty"`
}

// NLDumpCounter is one NLDEV statistic.
type NLDumpCounter struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// NLDumpSystem is SYS_GET's answer.
type NLDumpSystem struct {
	NetnsShared    *bool `json:"netns_shared"`
	CopyOnFork     *bool `json:"copy_on_fork"`
	PrivilegedQKey *bool `json:"privileged_qkey"`
}

// NLDump asks the live kernel everything the dump holds: the device dump,
// and per device GET_CHARDEV, the port dump and per port STAT_GET; then
// SYS_GET. One socket, the requests the inventory makes anyway.
func (s *Source) NLDump() (*NLDump, error) {
	l, err := s.b.running("NLDEV dump")
	if err != nil {
		return nil, err
	}
	return l.nlDump()
}

// nlDump is NLDump of the running kernel.
func (l *live) nlDump() (*NLDump, error) {
	devs, err := l.nlDevices()
	if err != nil {
		return nil, err
	}
	d := &NLDump{Devices: []NLDumpDevice{}}
	for _, nd := range devs {
		dd := NLDumpDevice{Index: nd.Index, Name: nd.Name, NodeType: nd.NodeType, FW: nd.FW, NodeGUID: nd.NodeGUID,
			SysImageGUID: nd.SysImageGUID, NumPorts: nd.NumPorts, Caps: nd.Caps, Protocol: nd.Protocol, DIM: nd.DIM,
			Ports: []NLDumpPort{}}
		if ch := l.chardevOf(nd.Index); ch != nil {
			dd.Uverbs = &NLDumpChardev{Name: ch.Name, ABI: ch.ABI, Dev: ch.Dev, Major: ch.Major, Minor: ch.Minor, DriverID: ch.DriverID}
		}
		ps, err := l.nlPorts(nd.Index)
		if err != nil {
			continue // removed since the device dump
		}
		for _, p := range ps {
			dp := NLDumpPort{Port: p.Port, State: p.State, PhysState: p.PhysState, Caps: p.Caps, SubnetPrefix: p.SubnetPrefix,
				LID: p.LID, SMLID: p.SMLID, LMC: p.LMC, NetdevName: p.NetdevName, NetdevIndex: p.NetdevIndex}
			cs, err := l.nl.PortStatistics(nd.Index, p.Port)
			if err != nil {
				dp.StatisticsError = err.Error()
			} else {
				dp.Statistics = []NLDumpCounter{}
				for _, c := range cs {
					dp.Statistics = append(dp.Statistics, NLDumpCounter{c.Name, c.Value})
				}
			}
			dd.Ports = append(dd.Ports, dp)
		}
		d.Devices = append(d.Devices, dd)
	}
	if st, err := l.nl.System(); err == nil {
		d.System = &NLDumpSystem{NetnsShared: st.NetnsShared, CopyOnFork: st.CopyOnFork, PrivilegedQKey: st.PrivilegedQKey}
	}
	return d, nil
}

// maxNLDump bounds the file read back (a capture from another host):
// 256 devices with 100 statistics a port are well under 16 MiB.
const maxNLDump = 16 << 20

// LoadNLDump reads root's rdmactl/nldev.json; nil and no error when the
// capture has none (a plain sysfs copy, or one made before bundles).
func LoadNLDump(root string) (*NLDump, error) {
	p := filepath.Join(root, NLDumpFile)
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxNLDump {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", p, maxNLDump)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	return ParseNLDump(b)
}

// ParseNLDump decodes a dump; devices without a name are an error.
func ParseNLDump(b []byte) (*NLDump, error) {
	var d NLDump
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", NLDumpFile, err)
	}
	for _, dd := range d.Devices {
		if dd.Name == "" {
			return nil, fmt.Errorf("%s: a device without a name", NLDumpFile)
		}
	}
	return &d, nil
}

// dumpDevice is the dumped device called name, or nil.
func (c *captured) dumpDevice(name string) *NLDumpDevice {
	if c.dump == nil {
		return nil
	}
	for i := range c.dump.Devices {
		if c.dump.Devices[i].Name == name {
			return &c.dump.Devices[i]
		}
	}
	return nil
}

// dumpPort is the dumped port dev/port, or nil.
func (c *captured) dumpPort(dev string, port uint32) (*NLDumpDevice, *NLDumpPort) {
	d := c.dumpDevice(dev)
	if d == nil {
		return nil, nil
	}
	for i := range d.Ports {
		if d.Ports[i].Port == port {
			return d, &d.Ports[i]
		}
	}
	return d, nil
}

// dumpSystem is the dumped SYS_GET as nldev's type.
func (c *captured) dumpSystem() *nldev.System {
	if c.dump == nil || c.dump.System == nil {
		return nil
	}
	st := c.dump.System
	return &nldev.System{NetnsShared: st.NetnsShared, CopyOnFork: st.CopyOnFork, PrivilegedQKey: st.PrivilegedQKey}
}

// dumpIndex is the dumped NLDEV index of dev, or nil.
func (c *captured) dumpIndex(dev string) *uint32 {
	if d := c.dumpDevice(dev); d != nil {
		idx := d.Index
		return &idx
	}
	return nil
}

// dumpDeviceFacts fills a captured device's netlink-only facts from the
// dump, as Devices fills them live.
func (c *captured) dumpDeviceFacts(r *Device, o DeviceOptions) {
	d := c.dumpDevice(r.Name)
	if d == nil {
		return
	}
	idx := d.Index
	r.Index, r.Protocol, r.DIM, r.Caps = &idx, d.Protocol, d.DIM, d.Caps
	if o.Chardev && d.Uverbs != nil {
		r.DriverID = d.Uverbs.DriverID
	}
}

// dumpPortFacts fills a captured port's netlink-only facts from the dump.
func (c *captured) dumpPortFacts(r *Port) {
	d, p := c.dumpPort(r.Dev, r.Port)
	if d == nil || p == nil {
		return
	}
	idx := d.Index
	r.DevIndex, r.Caps = &idx, p.Caps
}

// dumpStatistics is the dumped NLDEV statistics of r as a SrcNetlink set,
// or nil when the dump has no answer for the port.
func (c *captured) dumpStatistics(r PortRef) *CounterSet {
	_, p := c.dumpPort(r.Dev, r.Port)
	if p == nil {
		return nil
	}
	set := CounterSet{Dev: r.Dev, Port: r.Port, Source: SrcNetlink}
	if p.Statistics == nil {
		set.Err = errors.New(p.StatisticsError)
		if p.StatisticsError == "" {
			set.Err = errors.New("no NLDEV statistics in the capture")
		}
		return &set
	}
	for _, c := range p.Statistics {
		set.Counters = append(set.Counters, sysfs.Counter{Name: c.Name, Value: c.Value})
	}
	sortCounters(set.Counters)
	return &set
}

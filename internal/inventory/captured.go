package inventory

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// captured is a captured sysfs tree's backend (rdmactl --sysfs-root, or
// the live /sys without netlink): the facts of the tree's files, and what
// only netlink knows from the capture's NLDEV dump (bundle.go) where it
// has one. What only the running system has, it refuses with ErrNeedsLive.
type captured struct {
	tree
	dump    *NLDump // a bundle's NLDEV dumps, or nil
	origin  string  // the bundle file unpacked into the tree's root
	cleanup func()  // removes the unpacked bundle (Close)
	vdevs   map[string]verbs.Device
}

func newCaptured(root string) *captured {
	d, _ := LoadNLDump(root)
	return &captured{tree: tree{sysfs.New(root)}, dump: d}
}

// fresh keeps the NLDEV dump, a record of one moment; the files are read
// again.
func (c *captured) fresh() backend { return &captured{tree: c.tree, dump: c.dump, origin: c.origin} }

func (c *captured) close() error {
	if c.cleanup != nil {
		c.cleanup()
		c.cleanup = nil
	}
	return nil
}

func (c *captured) running(what string) (*live, error) {
	return nil, fmt.Errorf("%s: %w", what, ErrNeedsLive)
}

func (c *captured) deviceNames() ([]string, error) { return c.fs.Devices() }

// system is the dump's SYS_GET; sysfs does not show these settings.
func (c *captured) system() (*System, error) {
	if st := c.dumpSystem(); st != nil {
		return systemOf(st), nil
	}
	return nil, fmt.Errorf("system settings: %w", ErrNeedsLive)
}

// verbsDevices is this host's uverbs devices as sysfs's infiniband_verbs
// shows them (verbs.Devices): without netlink there is no GET_CHARDEV
// answer to take them from.
func (c *captured) verbsDevices() (map[string]verbs.Device, error) {
	if c.vdevs == nil {
		c.vdevs = map[string]verbs.Device{}
		if err := addSysfsVerbs(c.vdevs); err != nil {
			return nil, err
		}
	}
	return c.vdevs, nil
}

// gidTable: none without uverbs; GIDs reads the tree.
func (c *captured) gidTable(string, []PortRef) map[uint32][]sysfs.GID { return nil }

// listed: a captured port is checked against the tree before its
// counters are read (an unknown name is a *sysfs.NotFoundError).
func (c *captured) listed(PortRef) bool { return false }

// portFanout runs f in order: no sockets, and the reads are of files.
func (c *captured) portFanout(n int, f func(nl NL, i int)) {
	for i := 0; i < n; i++ {
		f(nil, i)
	}
}

// statistics is the dump's NLDEV statistics of r, or nil.
func (c *captured) statistics(_ NL, r PortRef) *CounterSet { return c.dumpStatistics(r) }

// snapshotPorts is every port of the tree.
func (c *captured) snapshotPorts() ([]Port, error) { return c.ports("", 0, PortOptions{}) }

// bundle names the capture copied from and gives its own dump.
func (c *captured) bundle(info *BundleInfo) *NLDump {
	info.Source = c.origin
	if info.Source == "" {
		info.Source = c.fs.Root()
	}
	info.NLDev = "none: copied from a capture without one"
	return c.dump
}

// targets is Targets from the tree: an unknown name is a
// *sysfs.NotFoundError.
func (c *captured) targets(dev string, port uint32) ([]PortRef, error) {
	var devs []string
	if dev == "" {
		names, err := c.fs.Devices()
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
			if err := c.fs.CheckPort(d, port); err != nil {
				return nil, err
			}
			out = append(out, PortRef{Dev: d, Port: port, Index: c.dumpIndex(d)})
			continue
		}
		ps, err := c.fs.PortNumbers(d)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			out = append(out, PortRef{Dev: d, Port: p, Index: c.dumpIndex(d)})
		}
	}
	return out, nil
}

// devices is Devices from the tree, with the dump's netlink-only facts.
func (c *captured) devices(name string, o DeviceOptions) ([]Device, error) {
	names := []string{name}
	if name == "" {
		var err error
		if names, err = c.fs.Devices(); err != nil {
			return nil, err
		}
	}
	var out []Device
	for _, n := range names {
		sd, err := c.fs.Device(n)
		if err != nil {
			return nil, err
		}
		np := uint32(len(sd.Ports))
		r := Device{Name: sd.Name, FW: sd.FWVer, NodeGUID: sd.NodeGUID, SysImageGUID: sd.SysImageGUID,
			NumPorts: &np, Uverbs: sd.Uverbs, UverbsMajor: sd.UverbsMajor, UverbsMinor: sd.UverbsMinor}
		if sd.NodeTypeNum != nil {
			r.NodeType = nldev.NodeTypeName(uint8(*sd.NodeTypeNum))
		}
		if sd.UverbsABI != nil {
			v := uint64(*sd.UverbsABI)
			r.UverbsABI = &v
		}
		if o.Sysfs {
			r.Driver, r.PCIAddr = sd.Driver, sd.PCIAddr
		}
		if o.Board {
			r.BoardID, r.HCAType, r.HWRev = sd.BoardID, sd.HCAType, sd.HWRev
		}
		if o.Details {
			r.NUMANode, r.NodeDesc = sd.NUMANode, sd.NodeDesc
		}
		c.dumpDeviceFacts(&r, o)
		out = append(out, r)
	}
	return out, nil
}

// ports is Ports from the tree, with the dump's netlink-only facts.
func (c *captured) ports(dev string, port uint32, _ PortOptions) ([]Port, error) {
	refs, err := c.targets(dev, port)
	if err != nil {
		return nil, err
	}
	var out []Port
	for _, t := range refs {
		p, err := c.fs.Port(t.Dev, t.Port)
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
			r.SubnetPrefix = c.sysfsSubnetPrefix(t.Dev, t.Port)
		}
		c.dumpPortFacts(&r)
		r.Netdev = c.sysfsNetdev(t.Dev, t.Port, p.LinkLayer)
		if r.Netdev != "" {
			nd := c.fs.Netdev(r.Netdev)
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
func (c *captured) sysfsNetdev(dev string, port uint32, linkLayer string) string {
	if nd := c.readAttr("class", "infiniband", dev, "parent"); nd != "" || linkLayer != "Ethernet" {
		return nd
	}
	return c.readAttr("class", "infiniband", dev, "ports", strconv.FormatUint(uint64(port), 10), "gid_attrs", "ndevs", "0")
}

// sysfsSubnetPrefix is an InfiniBand port's subnet prefix as a captured
// tree holds it: the upper half of GID 0, which is how the kernel fills it
// when the driver does not (ib_query_port), and GID 0 is by definition
// the subnet prefix and the port GUID. Like netlink, which sends the
// prefix of every InfiniBand port, an all-zero GID 0 gives zeros; ""
// only when gids/0 is unreadable or not a GID.
func (c *captured) sysfsSubnetPrefix(dev string, port uint32) string {
	a, err := netip.ParseAddr(c.portAttr(dev, port, filepath.Join("gids", "0")))
	if err != nil || !a.Is6() {
		return ""
	}
	b := a.As16()
	return vocab.GUID(binary.BigEndian.Uint64(b[:8])).String()
}

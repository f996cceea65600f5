package inventory

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// DeviceQuery is what one device answers through its uverbs node: what
// ibv_devinfo -v prints (rdmactl dev query).
type DeviceQuery struct {
	Device         verbs.Device
	NodeType       uint8  // sysfs node_type: 1 CA ... (verbs.Device.NodeType)
	BoardID        string // sysfs board_id, "" when the device has none
	Attr           *verbs.DeviceAttr
	NumCompVectors uint32
	Ports          []PortQuery // the ports asked for, in order
}

// PortQuery is one port's QUERY_PORT answer and its populated GIDs.
type PortQuery struct {
	Attr *verbs.PortAttr
	GIDs []verbs.GIDEntry
}

// Query opens every device with a uverbs node, or the one called name, and
// asks it for its attributes, its ports' (only port when port is not 0)
// and their GID tables: one context, one QUERY_DEVICE, one QUERY_PORT per
// port and one QUERY_GID_TABLE per device. No device at all gives
// ErrNoVerbsDevice; an unknown name a *verbs.DeviceNotFoundError, a port
// the device does not have a *verbs.PortNotFoundError.
func (s *Source) Query(name string, port uint8) ([]DeviceQuery, error) {
	var devs []verbs.Device
	if name == "" {
		all, err := s.VerbsDevices()
		if err != nil {
			return nil, err
		}
		if len(all) == 0 {
			return nil, ErrNoVerbsDevice
		}
		devs = all
	} else {
		d, err := s.VerbsDevice(name)
		if err != nil {
			return nil, err
		}
		devs = []verbs.Device{d}
	}
	out := make([]DeviceQuery, 0, len(devs))
	for _, d := range devs {
		q, err := queryDevice(d, port)
		if err != nil {
			return nil, err
		}
		out = append(out, *q)
	}
	return out, nil
}

// queryDevice opens d and gathers everything; port 0 means all ports.
func queryDevice(d verbs.Device, port uint8) (*DeviceQuery, error) {
	ctx, err := verbs.OpenDevice(d, verbs.Options{})
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	attr, err := ctx.QueryDevice()
	if err != nil {
		return nil, err
	}
	if port != 0 && port > attr.PhysPortCnt {
		return nil, &verbs.PortNotFoundError{Device: d.Name, Port: int(port), Ports: int(attr.PhysPortCnt)}
	}
	q := &DeviceQuery{Device: d, NodeType: d.NodeType(), BoardID: d.BoardID(), Attr: attr, NumCompVectors: ctx.NumCompVectors()}
	// QUERY_GID_TABLE covers every port: size it for all of them.
	total := 0
	for p := 1; p <= int(attr.PhysPortCnt); p++ {
		pa, err := ctx.QueryPort(uint8(p))
		if err != nil {
			return nil, err
		}
		total += int(pa.GIDTblLen)
		if port == 0 || uint8(p) == port {
			q.Ports = append(q.Ports, PortQuery{Attr: pa})
		}
	}
	gids, err := ctx.QueryGIDTable(total)
	if err != nil {
		return nil, err
	}
	for i := range q.Ports {
		for _, g := range gids {
			if g.Port == uint32(q.Ports[i].Attr.Port) {
				q.Ports[i].GIDs = append(q.Ports[i].GIDs, g)
			}
		}
	}
	return q, nil
}

// LiveVerbsDevices is every device with a uverbs node, with the driver id
// that netlink GET_CHARDEV reports (sysfs alone only guesses it), for
// callers without a Source of their own (perf): one device dump and one
// GET_CHARDEV per device over one socket, else sysfs.
func LiveVerbsDevices() ([]verbs.Device, error) {
	c, err := nldev.Dial()
	if err != nil {
		return provider.All().Devices()
	}
	defer c.Close()
	return Live(c).VerbsDevices()
}

// LiveVerbsDevice is the uverbs device of name, as LiveVerbsDevices finds
// it, or a *verbs.DeviceNotFoundError.
func LiveVerbsDevice(name string) (verbs.Device, error) {
	c, err := nldev.Dial()
	if err != nil {
		return provider.All().LookupDevice(name)
	}
	defer c.Close()
	return Live(c).VerbsDevice(name)
}

// LiveVerbsDeviceAt is the uverbs device whose NLDEV index is index, or,
// with index nil (a kernel that does not say), the first whose node GUID
// is nodeGUID: how an RDMA CM route names its device (perf -R).
func LiveVerbsDeviceAt(index *uint32, nodeGUID uint64) (verbs.Device, error) {
	c, err := nldev.Dial()
	if err != nil {
		return verbs.Device{}, err
	}
	defer c.Close()
	src := Live(c)
	devs, err := src.Devices("", DeviceOptions{})
	if err != nil {
		return verbs.Device{}, err
	}
	name, err := deviceAt(devs, index, nodeGUID)
	if err != nil {
		return verbs.Device{}, err
	}
	return src.VerbsDevice(name)
}

// deviceAt is LiveVerbsDeviceAt's choice among devs: the name of the
// device with index, else (index nil) of the first with nodeGUID.
func deviceAt(devs []Device, index *uint32, nodeGUID uint64) (string, error) {
	guid := vocab.GUID(nodeGUID).String()
	for _, d := range devs {
		if index != nil && d.Index != nil && *d.Index == *index || index == nil && d.NodeGUID == guid {
			return d.Name, nil
		}
	}
	if index != nil {
		return "", fmt.Errorf("no device has index %d (node GUID %s) in the device list", *index, guid)
	}
	return "", fmt.Errorf("no device has node GUID %s in the device list", guid)
}

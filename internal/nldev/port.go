package nldev

import "fmt"

// Port is one port as RDMA_NLDEV_CMD_PORT_GET reports it. The kernel sends
// caps, subnet prefix, LID, SM LID and LMC only for InfiniBand ports, and
// the netdev only where one is bound (RoCE, iWARP, IPoIB is not reported).
type Port struct {
	DevIndex     uint32
	DevName      string
	Port         uint32
	State        *uint8 // vocab.PortState
	PhysState    *uint8 // vocab.PhysState
	Caps         *uint64
	SubnetPrefix *uint64
	LID          *uint32
	SMLID        *uint32
	LMC          *uint8
	NetdevName   string
	NetdevIndex  *uint32
}

func decodePort(b []byte) Port {
	a := parseAttrs(b)
	p := Port{DevName: a.str(attrDevName), NetdevName: a.str(attrNdevName)}
	if v := a.u32(attrDevIndex); v != nil {
		p.DevIndex = *v
	}
	if v := a.u32(attrPortIndex); v != nil {
		p.Port = *v
	}
	p.State = a.u8(attrPortState)
	p.PhysState = a.u8(attrPortPhysState)
	p.Caps = a.u64(attrCapFlags)
	p.SubnetPrefix = a.u64(attrSubnetPrefix)
	p.LID = a.u32(attrLID)
	p.SMLID = a.u32(attrSMLID)
	p.LMC = a.u8(attrLMC)
	p.NetdevIndex = a.u32(attrNdevIndex)
	return p
}

// PortsOf lists the ports of the device with index dev (one PORT_GET dump).
func (c *Client) PortsOf(dev uint32) ([]Port, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	msgs, err := c.do(cmdPortGet, true, e.b)
	if err != nil {
		return nil, err
	}
	out := make([]Port, 0, len(msgs))
	for _, m := range msgs {
		p := decodePort(m)
		if p.Port == 0 {
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// Ports lists the ports of every device: one device dump, then one port
// dump per device (the kernel's port dump needs a device index), as
// rdma link show does.
func (c *Client) Ports() ([]Port, error) {
	devs, err := c.Devices()
	if err != nil {
		return nil, err
	}
	var out []Port
	for _, d := range devs {
		ps, err := c.PortsOf(d.Index)
		if err != nil {
			return nil, fmt.Errorf("ports of %s: %w", d.Name, err)
		}
		out = append(out, ps...)
	}
	return out, nil
}

// Port returns port of device dev (by name), or a *NotFoundError naming
// the devices or the device's ports.
func (c *Client) Port(dev string, port uint32) (*Port, error) {
	d, err := c.Device(dev)
	if err != nil {
		return nil, err
	}
	ps, err := c.PortsOf(d.Index)
	if err != nil {
		return nil, err
	}
	var have []string
	for i := range ps {
		if ps[i].Port == port {
			return &ps[i], nil
		}
		have = append(have, fmt.Sprintf("%s/%d", dev, ps[i].Port))
	}
	return nil, &NotFoundError{Kind: "port", Name: fmt.Sprintf("%s/%d", dev, port), Exists: have}
}

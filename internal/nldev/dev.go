package nldev

import (
	"fmt"
	"sort"
)

// Device is one RDMA device as RDMA_NLDEV_CMD_GET reports it. Pointer
// fields are nil and strings "" when the kernel did not send the attribute
// (or sent it malformed).
type Device struct {
	Index        uint32
	Name         string
	NodeType     *uint8  // RDMA_NODE_*: 1 CA, 2 switch, 3 router, 4 RNIC...
	FW           string  // "" when the driver has none (rxe)
	NodeGUID     *uint64 // host order, as the kernel puts it (vocab.GUID)
	SysImageGUID *uint64
	NumPorts     *uint32
	Caps         *uint64 // ib_device_cap_flags (64-bit)
	Protocol     string  // "ib", "roce", "iw", "opa" (kernel 5.4+)
	DIM          *bool   // adaptive moderation of kernel CQs
}

// NodeTypeName is the name rdma prints for a node type.
func NodeTypeName(t uint8) string {
	names := []string{"unknown", "ca", "switch", "router", "rnic", "usnic", "usnic_udp", "unspecified"}
	if int(t) < len(names) {
		return names[t]
	}
	return "unknown"
}

// devCapNames are the ib_device_cap_flags bit names rdma dev show -d
// prints (iproute2 rdma/dev.c). Bit 6 really is
// "UD_AV_PORT_ENFORCE_PORT_ENFORCE" there; it is kept so that scripts
// comparing with rdma -j see the same strings.
var devCapNames = map[int]string{
	0: "RESIZE_MAX_WR", 1: "BAD_PKEY_CNTR", 2: "BAD_QKEY_CNTR", 3: "RAW_MULTI",
	4: "AUTO_PATH_MIG", 5: "CHANGE_PHY_PORT", 6: "UD_AV_PORT_ENFORCE_PORT_ENFORCE",
	7: "CURR_QP_STATE_MOD", 8: "SHUTDOWN_PORT", 9: "INIT_TYPE", 10: "PORT_ACTIVE_EVENT",
	11: "SYS_IMAGE_GUID", 12: "RC_RNR_NAK_GEN", 13: "SRQ_RESIZE", 14: "N_NOTIFY_CQ",
	15: "LOCAL_DMA_LKEY", 17: "MEM_WINDOW", 18: "UD_IP_CSUM", 19: "UD_TSO", 20: "XRC",
	21: "MEM_MGT_EXTENSIONS", 22: "BLOCK_MULTICAST_LOOPBACK", 23: "MEM_WINDOW_TYPE_2A",
	24: "MEM_WINDOW_TYPE_2B", 25: "RC_IP_CSUM", 26: "RAW_IP_CSUM", 27: "CROSS_CHANNEL",
	29: "MANAGED_FLOW_STEERING", 30: "SIGNATURE_HANDOVER", 31: "ON_DEMAND_PAGING",
	32: "SG_GAPS_REG", 33: "VIRTUAL_FUNCTION", 34: "RAW_SCATTER_FCS",
	35: "RDMA_NETDEV_OPA_VNIC", 36: "PCI_WRITE_END_PADDING",
}

// portCapNames are the IB PortInfo:CapabilityMask names rdma link show -d
// prints (iproute2 rdma/link.c), low 32 bits then CapabilityMask2 at 32+.
var portCapNames = map[int]string{
	1: "SM", 2: "NOTICE", 3: "TRAP", 4: "OPT_IPD", 5: "AUTO_MIGR", 6: "SL_MAP",
	7: "MKEY_NVRAM", 8: "PKEY_NVRAM", 9: "LED_INFO", 10: "SM_DISABLED",
	11: "SYS_IMAGE_GUID", 12: "PKEY_SW_EXT_PORT_TRAP", 13: "CABLE_INFO",
	14: "EXTENDED_SPEEDS", 15: "CAP_MASK2", 16: "CM", 17: "SNMP_TUNNEL",
	18: "REINIT", 19: "DEVICE_MGMT", 20: "VENDOR_CLASS", 21: "DR_NOTICE",
	22: "CAP_MASK_NOTICE", 23: "BOOT_MGMT", 24: "LINK_LATENCY", 25: "CLIENT_REG",
	26: "OTHER_LOCAL_CHANGES", 27: "LINK_SPPED_WIDTH", 28: "VENDOR_SPECIFIC_MADS",
	29: "MULT_PKER_TRAP", 30: "MULT_FDB", 31: "HIERARCHY_INFO",
	32: "SET_NODE_DESC", 33: "EXT_INFO", 34: "VIRT", 35: "SWITCH_POR_STATE_TABLE",
	36: "LINK_WIDTH_2X", 37: "LINK_SPEED_HDR",
}

func capNames(v uint64, names map[int]string) []string {
	out := []string{}
	for b := 0; b < 64; b++ {
		if v&(1<<b) == 0 {
			continue
		}
		if n, ok := names[b]; ok {
			out = append(out, n)
		} else {
			out = append(out, "UNKNOWN")
		}
	}
	return out
}

// DeviceCapNames names the set bits of a device's caps as rdma does
// ("UNKNOWN" for bits it has no name for).
func DeviceCapNames(v uint64) []string { return capNames(v, devCapNames) }

// PortCapNames names the set bits of a port's caps as rdma does.
func PortCapNames(v uint64) []string { return capNames(v, portCapNames) }

func decodeDevice(b []byte) Device {
	a := parseAttrs(b)
	d := Device{Name: a.str(attrDevName), FW: a.str(attrFWVersion), Protocol: a.str(attrDevProtocol)}
	if v := a.u32(attrDevIndex); v != nil {
		d.Index = *v
	}
	d.NodeType = a.u8(attrDevNodeType)
	d.NodeGUID = a.u64(attrNodeGUID)
	d.SysImageGUID = a.u64(attrSysImageGUID)
	d.NumPorts = a.u32(attrPortIndex)
	d.Caps = a.u64(attrCapFlags)
	if v := a.u8(attrDevDIM); v != nil {
		on := *v != 0
		d.DIM = &on
	}
	return d
}

// Devices lists every RDMA device (one CMD_GET dump), by index.
func (c *Client) Devices() ([]Device, error) {
	msgs, err := c.do(cmdGet, true, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(msgs))
	for _, m := range msgs {
		d := decodeDevice(m)
		if d.Name == "" {
			continue // no name: nothing to show it by
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// NotFoundError reports an unknown device or port with what exists.
type NotFoundError struct {
	Kind   string   // "device" or "port"
	Name   string   // "mlx5_9" or "rxe0/2"
	Exists []string // existing devices or ports
}

func (e *NotFoundError) Error() string {
	have := "none"
	if len(e.Exists) > 0 {
		have = join(e.Exists)
	}
	if e.Kind == "port" {
		return fmt.Sprintf("no RDMA port %s (ports: %s)", e.Name, have)
	}
	return fmt.Sprintf("no RDMA device %q (devices: %s)", e.Name, have)
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// Device returns the device called name (NLDEV GET has no lookup by name,
// so this is a dump), or a *NotFoundError listing the devices.
func (c *Client) Device(name string) (*Device, error) {
	devs, err := c.Devices()
	if err != nil {
		return nil, err
	}
	return FindDevice(devs, name)
}

// FindDevice returns the device of devs called name, or a *NotFoundError
// listing them.
func FindDevice(devs []Device, name string) (*Device, error) {
	var names []string
	for i := range devs {
		if devs[i].Name == name {
			return &devs[i], nil
		}
		names = append(names, devs[i].Name)
	}
	return nil, &NotFoundError{Kind: "device", Name: name, Exists: names}
}

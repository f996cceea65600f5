package dropin

import "github.com/rdmactl/rdmactl/internal/nldev"

// rdma dev, link and system: iproute2 6.1 rdma/dev.c, rdma/link.c and
// rdma/sys.c.

func devHelp(r *rd) int {
	r.outf("Usage: %s dev show [DEV]\n", r.filename)
	r.outf("       %s dev set [DEV] name DEVNAME\n", r.filename)
	r.outf("       %s dev set [DEV] netns NSNAME\n", r.filename)
	r.outf("       %s dev set [DEV] adaptive-moderation [on|off]\n", r.filename)
	return 0
}

func cmdDev(r *rd) int {
	return r.exec([]rdCmd{
		{"", devShow},
		{"show", devShow},
		{"list", devShow},
		{"set", readOnly("dev set", "rdmactl dev set")},
		{"help", devHelp},
	}, "dev command")
}

func devShow(r *rd) int {
	return r.execDev(func(r *rd) int {
		return r.exec([]rdCmd{{"", devNoArgs}}, "parameter")
	})
}

// link.c's names of the port capability mask (bit 0 is RESERVED there).
var portCapLow = [...]string{
	"RESERVED", "SM", "NOTICE", "TRAP", "OPT_IPD", "AUTO_MIGR", "SL_MAP", "MKEY_NVRAM",
	"PKEY_NVRAM", "LED_INFO", "SM_DISABLED", "SYS_IMAGE_GUID", "PKEY_SW_EXT_PORT_TRAP",
	"CABLE_INFO", "EXTENDED_SPEEDS", "CAP_MASK2", "CM", "SNMP_TUNNEL", "REINIT",
	"DEVICE_MGMT", "VENDOR_CLASS", "DR_NOTICE", "CAP_MASK_NOTICE", "BOOT_MGMT",
	"LINK_LATENCY", "CLIENT_REG", "OTHER_LOCAL_CHANGES", "LINK_SPPED_WIDTH",
	"VENDOR_SPECIFIC_MADS", "MULT_PKER_TRAP", "MULT_FDB", "HIERARCHY_INFO",
}

var portCapHigh = [...]string{"SET_NODE_DESC", "EXT_INFO", "VIRT", "SWITCH_POR_STATE_TABLE", "LINK_WIDTH_2X", "LINK_SPEED_HDR"}

// capName is dev_caps_to_str/caps_to_str: the low table by index, then
// the high one from bit 32 (the low table's length there is 32: its
// last named bit is 31).
func capName(idx int, low []string, high []string) string {
	if idx < len(low) && low[idx] != "" {
		return low[idx]
	}
	if h := idx - len(low); h >= 0 && h < len(high) && high[h] != "" {
		return high[h]
	}
	return "UNKNOWN"
}

// printCaps is dev_print_caps/link_print_caps: "\n    caps: <A, B>" as
// text, a "caps" array of strings in JSON.
func (r *rd) printCaps(names []string) {
	r.p.text("\n    caps: <")
	r.p.openArray(printJSON, "caps")
	for i, n := range names {
		f := "%s, "
		if i == len(names)-1 {
			f = "%s"
		}
		r.p.str(printAny, "", f, n)
	}
	r.p.closeArray(printAny, ">")
}

// portCapNames is link.c's caps_to_str: its table names bit 0 RESERVED,
// where nldev's (rdmactl's own link show) leaves it UNKNOWN.
func portCapNames(caps uint64) []string {
	out := make([]string, 0, 8)
	for idx := 0; caps != 0; idx++ {
		if caps&1 != 0 {
			out = append(out, capName(idx, portCapLow[:], portCapHigh[:]))
		}
		caps >>= 1
	}
	return out
}

// devNoArgs prints the current device (dev.c's dev_parse_cb on the
// answer to its GET).
func devNoArgs(r *rd) int {
	m := r.curDev()
	if m == nil {
		return 0
	}
	d := m.dev
	p := r.p
	p.openObject()
	p.uint(printAny, "ifindex", "%d: ", uint64(d.Index))
	p.str(printAny, "ifname", "%s: ", d.Name)
	if d.NodeType != nil {
		p.str(printAny, "node_type", "node_type %s ", nldev.NodeTypeName(*d.NodeType))
	}
	if d.FW != "" {
		p.str(printAny, "fw", "fw %s ", d.FW)
	}
	if d.NodeGUID != nil {
		p.str(printAny, "node_guid", "node_guid %s ", guid(*d.NodeGUID))
	}
	if d.SysImageGUID != nil {
		p.str(printAny, "sys_image_guid", "sys_image_guid %s ", guid(*d.SysImageGUID))
	}
	if r.details {
		if d.DIM != nil {
			p.onOff(printAny, "adaptive-moderation", "adaptive-moderation %s ", *d.DIM)
		}
		if d.Caps != nil {
			r.printCaps(nldev.DeviceCapNames(*d.Caps))
		}
	}
	r.newline()
	return 0
}

func linkHelp(r *rd) int {
	r.outf("Usage: %s link show [DEV/PORT_INDEX]\n", r.filename)
	r.outf("Usage: %s link add NAME type TYPE netdev NETDEV\n", r.filename)
	r.outf("Usage: %s link delete NAME\n", r.filename)
	return 0
}

func cmdLink(r *rd) int {
	return r.exec([]rdCmd{
		{"", linkShow},
		{"add", readOnly("link add", "rdmactl link add")},
		{"delete", readOnly("link delete", "rdmactl link delete")},
		{"show", linkShow},
		{"list", linkShow},
		{"help", linkHelp},
	}, "link command")
}

func linkShow(r *rd) int {
	return r.execLink(func(r *rd) int {
		if r.portIdx == 0 {
			return 0
		}
		return r.exec([]rdCmd{{"", linkNoArgs}}, "parameter")
	}, true)
}

// portsOf is the current device's ports, one dump a device.
func (r *rd) portsOf(dev uint32) ([]nldev.Port, error) {
	if ps, ok := r.ports[dev]; ok {
		return ps, nil
	}
	ps, err := r.nl.PortsOf(dev)
	if err != nil {
		return nil, err
	}
	r.ports[dev] = ps
	return ps, nil
}

var linkStates = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

var physStates = []string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
	"LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}

func nameIn(names []string, v uint8) string {
	if int(v) < len(names) {
		return names[v]
	}
	return "UNKNOWN"
}

// linkNoArgs prints the current port (link.c's link_parse_cb on the
// answer to its PORT_GET).
func linkNoArgs(r *rd) int {
	ps, err := r.portsOf(r.devIdx)
	if err != nil {
		return r.netErr(err)
	}
	var pt *nldev.Port
	for i := range ps {
		if ps[i].Port == r.portIdx {
			pt = &ps[i]
		}
	}
	if pt == nil {
		return 0
	}
	name := pt.DevName
	if name == "" {
		name = r.curDev().name
	}
	p := r.p
	p.openObject()
	p.uint(printJSON, "ifindex", "", uint64(r.devIdx))
	p.str(printAny, "ifname", "link %s/", name)
	p.uint(printAny, "port", "%d ", uint64(pt.Port))
	if pt.SubnetPrefix != nil {
		p.str(printAny, "subnet_prefix", "subnet_prefix %s ", guid(*pt.SubnetPrefix))
	}
	if pt.LID != nil {
		p.uint(printAny, "lid", "lid %d ", uint64(*pt.LID))
	}
	if pt.SMLID != nil {
		p.uint(printAny, "sm_lid", "sm_lid %d ", uint64(*pt.SMLID))
	}
	if pt.LMC != nil {
		p.uint(printAny, "lmc", "lmc %d ", uint64(*pt.LMC))
	}
	if pt.State != nil {
		p.str(printAny, "state", "state %s ", nameIn(linkStates, *pt.State))
	}
	if pt.PhysState != nil {
		p.str(printAny, "physical_state", "physical_state %s ", nameIn(physStates, *pt.PhysState))
	}
	if pt.NetdevName != "" && pt.NetdevIndex != nil {
		p.str(printAny, "netdev", "netdev %s ", pt.NetdevName)
		f := ""
		if r.details {
			f = "netdev_index %d "
		}
		p.uint(printAny, "netdev_index", f, uint64(*pt.NetdevIndex))
	}
	if r.details && pt.Caps != nil {
		r.printCaps(portCapNames(*pt.Caps))
	}
	r.newline()
	return 0
}

func sysHelp(r *rd) int {
	r.outf("Usage: %s system show [ netns ]\n", r.filename)
	r.outf("       %s system set netns { shared | exclusive }\n", r.filename)
	return 0
}

func cmdSys(r *rd) int {
	show := func(r *rd) int {
		return r.exec([]rdCmd{{"", sysShowNoArgs}, {"netns", sysShowNoArgs}}, "parameter")
	}
	return r.exec([]rdCmd{
		{"", show},
		{"show", show},
		{"set", readOnly("system set", "rdmactl system set")},
		{"help", sysHelp},
	}, "system command")
}

// sysShowNoArgs is sys.c's show: no JSON object is opened, so rdma -j
// prints this text too. copy-on-fork is "off" when the kernel does not
// say.
func sysShowNoArgs(r *rd) int {
	s, err := r.nl.System()
	if err != nil {
		return r.netErr(err)
	}
	if s.NetnsShared != nil {
		mode := "exclusive"
		if *s.NetnsShared {
			mode = "shared"
		}
		r.p.str(printAny, "netns", "netns %s ", mode)
	}
	cof := s.CopyOnFork != nil && *s.CopyOnFork
	r.p.onOff(printAny, "copy-on-fork", "copy-on-fork %s\n", cof)
	return 0
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/spf13/cobra"
)

func init() { commandFactories = append(commandFactories, newLinkCmd) }

// linkJSON is one port in `rdmactl -j link show`.
//
// rdma -j link show -d keys: ifindex (RDMA device index), ifname, port,
// subnet_prefix ("fe80:0000:0000:0000"), lid, sm_lid, lmc (InfiniBand
// ports only, as the kernel sends them), state, physical_state (rdma's
// names: ACTIVE, LINK_UP...), netdev, netdev_index, caps (with -d, IB
// only). Ours, from sysfs: link_layer ("InfiniBand", "Ethernet"),
// rate_gbps (number), width ("4X"), speed ("EDR", "" on RoCE);
// active_mtu and max_mtu are bytes (ibv_devinfo's numbers, not its enum).
// active_mtu of an Ethernet port is derived from the netdev MTU (see
// roceMTU) unless -d, which asks uverbs QUERY_PORT and then also gives
// max_mtu. With --sysfs-root there is no ifindex (netlink only).
type linkJSON struct {
	Ifindex      *uint32  `json:"ifindex,omitempty"`
	Ifname       string   `json:"ifname"`
	Port         uint32   `json:"port"`
	SubnetPrefix string   `json:"subnet_prefix,omitempty"`
	LID          *uint32  `json:"lid,omitempty"`
	SMLID        *uint32  `json:"sm_lid,omitempty"`
	LMC          *uint32  `json:"lmc,omitempty"`
	State        string   `json:"state,omitempty"`
	PhysState    string   `json:"physical_state,omitempty"`
	Netdev       string   `json:"netdev,omitempty"`
	NetdevIndex  *uint32  `json:"netdev_index,omitempty"`
	Caps         []string `json:"caps,omitempty"`
	LinkLayer    string   `json:"link_layer,omitempty"`
	RateGbps     *float64 `json:"rate_gbps,omitempty"`
	Width        string   `json:"width,omitempty"`
	Speed        string   `json:"speed,omitempty"`
	ActiveMTU    *uint32  `json:"active_mtu,omitempty"`
	MaxMTU       *uint32  `json:"max_mtu,omitempty"`
}

func newLinkCmd(a *app) *cobra.Command {
	show := func(c *cobra.Command, args []string) error {
		arg := ""
		if len(args) == 1 {
			arg = args[0]
		}
		return runLinkShow(a, arg)
	}
	c := &cobra.Command{
		Use:   "link",
		Short: "RDMA ports: state, physical state, link layer, netdev, LID, rate, MTU (like rdma link show, ibstat)",
		Example: `  rdmactl link
  rdmactl link show rxe0/1
  rdmactl -j link show mlx5_0 | jq '.[].state'`,
		Args: cobra.MaximumNArgs(1),
		RunE: show,
	}
	c.AddCommand(&cobra.Command{
		Use:   "show [DEV[/PORT]]",
		Short: "Show every port, or the ports of DEV, or DEV/PORT",
		Long: `Show every RDMA port (or those of DEV, or DEV/PORT): state and physical state,
netdev and its index (RDMA netlink, as rdma link show), LID, SM LID and LMC on
InfiniBand, link layer and rate (sysfs), active MTU.

The active MTU of a RoCE port is derived from its netdev's MTU as the kernel
does; -d asks the device (uverbs QUERY_PORT) for the active and maximum MTU.
With --sysfs-root everything comes from the captured sysfs tree.`,
		Example: `  rdmactl link show
  rdmactl link show mlx5_0/1
  rdmactl -d -j link show rxe0`,
		Args: cobra.MaximumNArgs(1),
		RunE: show,
	})
	return c
}

func runLinkShow(a *app, arg string) error {
	var dev string
	var port uint32
	if arg != "" {
		var err error
		if dev, port, err = parseDevPort(arg); err != nil {
			return err
		}
	}
	var rows []linkJSON
	var err error
	if a.opts.sysfsRoot != "" {
		rows, err = linkFromSysfs(a, arg)
	} else {
		rows, err = linkFromNetlink(a, dev, port)
	}
	if err != nil {
		return err
	}
	if a.opts.json {
		if rows == nil {
			rows = []linkJSON{}
		}
		return a.printJSON(rows)
	}
	tb := newTable(a.stdout, "PORT", "STATE", "PHYS_STATE", "LINK_LAYER", "NETDEV", "LID", "SM_LID", "LMC", "RATE", "MTU")
	for _, r := range rows {
		rate := ""
		if r.RateGbps != nil {
			rate = strconv.FormatFloat(*r.RateGbps, 'f', -1, 64) + " Gb/s " + strings.TrimSpace(r.Width+" "+r.Speed)
		}
		mtu := ""
		if r.ActiveMTU != nil {
			mtu = fmt.Sprint(*r.ActiveMTU)
			if r.MaxMTU != nil {
				mtu += fmt.Sprintf(" (max %d)", *r.MaxMTU)
			}
		}
		nd := r.Netdev
		if nd != "" && r.NetdevIndex != nil {
			nd = fmt.Sprintf("%s (%d)", nd, *r.NetdevIndex)
		}
		tb.row(fmt.Sprintf("%s/%d", r.Ifname, r.Port), r.State, r.PhysState, r.LinkLayer, nd,
			dashU32(r.LID), dashU32(r.SMLID), dashU32(r.LMC), rate, mtu)
	}
	return tb.render()
}

func dashU32(p *uint32) string {
	if p == nil {
		return ""
	}
	return strconv.FormatUint(uint64(*p), 10)
}

func optU32(p *uint32) any {
	if p == nil {
		return nil
	}
	return *p
}

func linkFromNetlink(a *app, dev string, port uint32) ([]linkJSON, error) {
	c, err := a.openNL()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	devs, err := nlDevices(c, dev)
	if err != nil {
		return nil, err
	}
	var rows []linkJSON
	for _, d := range devs {
		ps, err := c.PortsOf(d.Index)
		if err != nil {
			return nil, nlError(fmt.Errorf("ports of %s: %w", d.Name, err))
		}
		var have []uint32
		found := false
		for _, p := range ps {
			have = append(have, p.Port)
			if port != 0 && p.Port != port {
				continue
			}
			found = true
			rows = append(rows, linkRow(a, d, p))
		}
		if port != 0 && !found {
			return nil, notFoundPort(d.Name, port, have)
		}
	}
	if a.opts.details {
		for i := range rows {
			verbsMTU(&rows[i])
		}
	}
	return rows, nil
}

// linkRow merges the netlink port with the few sysfs files netlink lacks
// (rate, link_layer) and the netdev MTU. Only these files are read:
// sysfs.Port reads every GID and P_Key slot, which would make this
// command slower than rdma link show.
func linkRow(a *app, d nldev.Device, p nldev.Port) linkJSON {
	idx := d.Index
	r := linkJSON{Ifindex: &idx, Ifname: d.Name, Port: p.Port, LID: p.LID, SMLID: p.SMLID,
		Netdev: p.NetdevName, NetdevIndex: p.NetdevIndex}
	if p.SubnetPrefix != nil {
		v := *p.SubnetPrefix
		r.SubnetPrefix = nldev.GUID(v)
	}
	if p.LMC != nil {
		v := uint32(*p.LMC)
		r.LMC = &v
	}
	if p.State != nil {
		r.State = nldev.PortStateName(*p.State)
	}
	if p.PhysState != nil {
		r.PhysState = nldev.PhysStateName(*p.PhysState)
	}
	if p.Caps != nil && a.opts.details {
		r.Caps = nldev.PortCapNames(*p.Caps)
	}
	dir := filepath.Join("/sys/class/infiniband", d.Name, "ports", strconv.FormatUint(uint64(p.Port), 10))
	// The device's protocol gives the link layer without a sysfs read
	// (ib -> InfiniBand, roce and iw -> Ethernet, as rdma_port_get_link_layer
	// answers for these devices); sysfs only on kernels without it.
	switch d.Protocol {
	case "ib", "opa":
		r.LinkLayer = "InfiniBand"
	case "roce", "iw":
		r.LinkLayer = "Ethernet"
	default:
		r.LinkLayer = readTrim(filepath.Join(dir, "link_layer"))
	}
	if g, w, s, ok := parseRateText(readTrim(filepath.Join(dir, "rate"))); ok {
		r.RateGbps, r.Width, r.Speed = &g, w, s
	}
	if r.LinkLayer == "Ethernet" && p.NetdevName != "" {
		if m, err := strconv.ParseUint(readTrim(filepath.Join("/sys/class/net", p.NetdevName, "mtu")), 10, 32); err == nil {
			if v := roceMTU(uint32(m)); v != 0 {
				r.ActiveMTU = &v
			}
		}
	}
	return r
}

// verbsMTU asks the device for the port's active and max MTU (uverbs
// QUERY_PORT). On failure the derived value stays and a note goes nowhere:
// -d is best effort for these two fields.
func verbsMTU(r *linkJSON) {
	ctx, err := verbs.Open(r.Ifname)
	if err != nil {
		return
	}
	defer ctx.Close()
	pa, err := ctx.QueryPort(uint8(r.Port))
	if err != nil {
		return
	}
	act, max := mtuBytes(pa.ActiveMTU), mtuBytes(pa.MaxMTU)
	if act != 0 {
		r.ActiveMTU = &act
	}
	if max != 0 {
		r.MaxMTU = &max
	}
}

// mtuBytes converts enum ib_mtu (1 = 256 ... 5 = 4096) to bytes.
func mtuBytes(e uint8) uint32 {
	if e < 1 || e > 5 {
		return 0
	}
	return 128 << e
}

// roceMTU is the RoCE path MTU the kernel derives from a netdev MTU:
// iboe_get_mtu() (include/rdma/ib_addr.h) subtracts the largest RoCE
// headers (GRH 40 + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4 =
// 96 bytes) and rounds down to an IB MTU; 0 below 256. rxe computes its
// own (netdev MTU - 80, at least 256), which agrees with this for common
// MTUs (1500 -> 1024, 9000 -> 4096) but not for every value; -d asks the
// device instead.
func roceMTU(netdevMTU uint32) uint32 {
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

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// parseRateText parses ports/N/rate ("100 Gb/sec (4X EDR)", "10 Gb/sec
// (1X QDR)"); sysfs.Port does the same but reads the whole port.
func parseRateText(s string) (gbps float64, width, speed string, ok bool) {
	num, rest, found := strings.Cut(s, " Gb/sec")
	if !found {
		return 0, "", "", false
	}
	g, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || g < 0 || g > 1e9 {
		return 0, "", "", false
	}
	f := strings.Fields(strings.Trim(strings.TrimSpace(rest), "()"))
	if len(f) > 0 {
		width = f[0]
	}
	if len(f) > 1 {
		speed = f[1]
	}
	return g, width, speed, true
}

// linkFromSysfs builds the rows from a sysfs tree alone (--sysfs-root).
func linkFromSysfs(a *app, arg string) ([]linkJSON, error) {
	f := sysfs.New(a.opts.sysfsRoot)
	targets, err := sfTargets(f, arg)
	if err != nil {
		return nil, err
	}
	var rows []linkJSON
	for _, t := range targets {
		p, err := f.Port(t.dev, t.port)
		if err != nil {
			return nil, sfError(err)
		}
		r := linkJSON{Ifname: t.dev, Port: t.port, LinkLayer: p.LinkLayer, RateGbps: p.RateGbps, Width: p.Width, Speed: p.Speed}
		if p.StateNum != nil {
			r.State = nldev.PortStateName(uint8(*p.StateNum))
		}
		if p.PhysStateNum != nil {
			r.PhysState = nldev.PhysStateName(uint8(*p.PhysStateNum))
		}
		if p.LinkLayer == "InfiniBand" {
			r.LID, r.SMLID, r.LMC = p.LID, p.SMLID, p.LMC
		}
		// The netdev: the device's parent (rxe, siw) or the first GID's.
		if d, err := f.Device(t.dev); err == nil && d.Parent != "" {
			r.Netdev = d.Parent
		}
		if r.Netdev != "" {
			nd := f.Netdev(r.Netdev)
			r.NetdevIndex = nd.Ifindex
			if p.LinkLayer == "Ethernet" && nd.MTU != nil {
				if v := roceMTU(*nd.MTU); v != 0 {
					r.ActiveMTU = &v
				}
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

package link

import (
	"fmt"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/vocab"
	"github.com/spf13/cobra"
)

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
// RoCEMTU) unless -dd, which asks each device (uverbs QUERY_PORT) and then
// also gives max_mtu. -d stays with what netlink and sysfs hold, as rdma
// -d does: a uverbs context per device is several firmware commands each
// on mlx5, which a host with many functions should not pay for caps. With
// --sysfs-root there is no ifindex (netlink only).
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

func NewCmd(a *cmdutil.App) *cobra.Command {
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

-d adds the port capabilities (InfiniBand), as rdma -d link show.

The active MTU of a RoCE port is derived from its netdev's MTU as the kernel
does; -dd asks each device itself (it opens a uverbs context per device,
uverbs QUERY_PORT, as ibv_devinfo does) for the active and maximum MTU and
the rate. With --sysfs-root everything comes from the captured sysfs tree.`,
		Example: `  rdmactl link show
  rdmactl link show mlx5_0/1
  rdmactl -d -j link show rxe0
  rdmactl -dd link show mlx5_0      # MTUs as the device reports them, with the maximum`,
		Args: cobra.MaximumNArgs(1),
		RunE: show,
	})
	for _, f := range linkSubcommands { // add, delete (linkadd.go)
		c.AddCommand(f(a))
	}
	return c
}

func runLinkShow(a *cmdutil.App, arg string) error {
	dev, port, err := cmdutil.ParseDevPort(arg)
	if err != nil {
		return err
	}
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return err
	}
	defer closeSrc()
	ports, err := src.Ports(dev, port, inventory.PortOptions{QueryPort: a.Opts.DriverDetails && !src.Offline()})
	if err != nil {
		return err
	}
	var rows []linkJSON
	for _, p := range ports {
		r := linkJSON{Ifindex: p.DevIndex, Ifname: p.Dev, Port: p.Port, SubnetPrefix: p.SubnetPrefix,
			LID: p.LID, SMLID: p.SMLID, LMC: p.LMC, State: p.State, PhysState: p.PhysState,
			Netdev: p.Netdev, NetdevIndex: p.NetdevIndex, LinkLayer: p.LinkLayer,
			RateGbps: p.RateGbps, Width: p.Width, Speed: p.Speed, ActiveMTU: p.ActiveMTU, MaxMTU: p.MaxMTU}
		if p.Caps != nil && a.Opts.Details {
			r.Caps = inventory.PortCapNames(*p.Caps)
		}
		rows = append(rows, r)
	}
	if a.Opts.JSON {
		return cmdutil.PrintList(a, rows)
	}
	tb := render.NewTable(a.Stdout, "PORT", "STATE", "PHYS_STATE", "LINK_LAYER", "NETDEV", "LID", "SM_LID", "LMC", "RATE", "MTU")
	for _, r := range rows {
		rate := ""
		if r.RateGbps != nil {
			rate = vocab.Rate{Gbps: *r.RateGbps, Width: r.Width, Speed: r.Speed}.String()
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
		tb.Row(fmt.Sprintf("%s/%d", r.Ifname, r.Port), r.State, r.PhysState, r.LinkLayer, nd,
			dashU32(r.LID), dashU32(r.SMLID), dashU32(r.LMC), rate, mtu)
	}
	return tb.Flush()
}

func dashU32(p *uint32) string {
	if p == nil {
		return ""
	}
	return strconv.FormatUint(uint64(*p), 10)
}

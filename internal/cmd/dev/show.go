package dev

import (
	"github.com/rdmactl/rdmactl/internal/render"
	"strings"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/spf13/cobra"
)

// devShowJSON is one device in `rdmactl -j dev show`.
//
// rdma -j dev show -d keys: ifindex (RDMA device index), ifname,
// node_type ("ca"...), fw (absent when the driver has none, as rdma),
// node_guid, sys_image_guid ("xxxx:xxxx:xxxx:xxxx"), protocol,
// adaptive_moderation (rdma: "adaptive-moderation"), caps (with -d: the
// names rdma prints). Ours: num_ports, driver (kernel driver or module),
// driver_id (enum rdma_driver_id, from GET_CHARDEV), uverbs (char device
// name), uverbs_major/uverbs_minor, uverbs_abi, pci_addr, numa_node,
// board_id, hca_type, hw_rev, node_desc (sysfs, where the device has
// them), netns_mode ("shared" or "exclusive"; system-wide, repeated per
// device so that each object stands alone). With --sysfs-root there is no
// ifindex, protocol, caps, adaptive_moderation, driver_id or netns_mode.
type devShowJSON struct {
	Ifindex      *uint32  `json:"ifindex,omitempty"`
	Ifname       string   `json:"ifname"`
	NodeType     string   `json:"node_type,omitempty"`
	FW           string   `json:"fw,omitempty"`
	NodeGUID     string   `json:"node_guid,omitempty"`
	SysImageGUID string   `json:"sys_image_guid,omitempty"`
	Protocol     string   `json:"protocol,omitempty"`
	DIM          *bool    `json:"adaptive_moderation,omitempty"`
	Caps         []string `json:"caps,omitempty"`
	NumPorts     *uint32  `json:"num_ports,omitempty"`
	Driver       string   `json:"driver,omitempty"`
	DriverID     *uint32  `json:"driver_id,omitempty"`
	Uverbs       string   `json:"uverbs,omitempty"`
	UverbsMajor  *uint32  `json:"uverbs_major,omitempty"`
	UverbsMinor  *uint32  `json:"uverbs_minor,omitempty"`
	UverbsABI    *uint64  `json:"uverbs_abi,omitempty"`
	PCIAddr      string   `json:"pci_addr,omitempty"`
	NUMANode     *int     `json:"numa_node,omitempty"`
	BoardID      string   `json:"board_id,omitempty"`
	HCAType      string   `json:"hca_type,omitempty"`
	HWRev        string   `json:"hw_rev,omitempty"`
	NodeDesc     string   `json:"node_desc,omitempty"`
	NetnsMode    string   `json:"netns_mode,omitempty"`
}

func newDevShowCmd(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "show [DEV]",
		Short: "Show RDMA devices: index, node type, firmware, GUIDs, driver, uverbs node (like rdma dev show, ibv_devices)",
		Long: `Show every RDMA device, or DEV: index, name, node type, firmware, node and
system image GUIDs, protocol (RDMA netlink, as rdma dev show), driver and the
uverbs char device (netlink GET_CHARDEV), PCI address, board id, HCA type and
hardware revision where the device has them (sysfs), and the netns mode.
-d adds the capability flags and the rest of the sysfs facts.`,
		Example: `  rdmactl dev show
  rdmactl -d dev show mlx5_0
  rdmactl -j dev show | jq -r '.[] | .ifname + " " + .node_guid'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dev := ""
			if len(args) == 1 {
				dev = args[0]
			}
			rows, err := devShow(a, dev)
			if err != nil {
				return err
			}
			return printDevShow(a, rows)
		},
	}
}

func devShow(a *cmdutil.App, dev string) ([]devShowJSON, error) {
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return nil, err
	}
	defer closeSrc()
	// Board id, HCA type and hardware revision are in -d's table and in
	// JSON only; node description and NUMA node in -d's JSON only (a
	// sysfs read per device that the table would not print).
	devs, err := src.Devices(dev, inventory.DeviceOptions{Chardev: true, Sysfs: true,
		Board: a.Opts.Details || a.Opts.JSON, Details: a.Opts.Details && a.Opts.JSON})
	if err != nil {
		return nil, err
	}
	netns := src.NetnsMode()
	var rows []devShowJSON
	for _, d := range devs {
		r := devShowJSON{Ifindex: d.Index, Ifname: d.Name, NodeType: d.NodeType, FW: d.FW, NodeGUID: d.NodeGUID,
			SysImageGUID: d.SysImageGUID, Protocol: d.Protocol, DIM: d.DIM, NumPorts: d.NumPorts,
			Driver: d.Driver, DriverID: d.DriverID, Uverbs: d.Uverbs, UverbsMajor: d.UverbsMajor,
			UverbsMinor: d.UverbsMinor, UverbsABI: d.UverbsABI, PCIAddr: d.PCIAddr, NUMANode: d.NUMANode,
			BoardID: d.BoardID, HCAType: d.HCAType, HWRev: d.HWRev, NodeDesc: d.NodeDesc, NetnsMode: netns}
		if d.Caps != nil && a.Opts.Details {
			r.Caps = inventory.DeviceCapNames(*d.Caps)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func printDevShow(a *cmdutil.App, rows []devShowJSON) error {
	if a.Opts.JSON {
		return cmdutil.PrintList(a, rows)
	}
	hdr := []string{"IDX", "DEV", "NODE_TYPE", "FW", "NODE_GUID", "SYS_IMAGE_GUID", "DRIVER", "UVERBS", "PCI", "NETNS"}
	if a.Opts.Details {
		hdr = append(hdr, "BOARD_ID", "HCA_TYPE", "HW_REV", "CAPS")
	}
	tb := render.NewTable(a.Stdout, hdr...)
	for _, r := range rows {
		cells := []any{render.Opt(r.Ifindex), r.Ifname, r.NodeType, r.FW, r.NodeGUID, r.SysImageGUID, r.Driver, r.Uverbs, r.PCIAddr, r.NetnsMode}
		if a.Opts.Details {
			cells = append(cells, r.BoardID, r.HCAType, r.HWRev, strings.Join(r.Caps, ","))
		}
		tb.Row(cells...)
	}
	return tb.Flush()
}

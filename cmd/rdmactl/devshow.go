package main

import (
	"strings"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/spf13/cobra"
)

func init() { devSubcommands = append(devSubcommands, newDevShowCmd) }

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

func newDevShowCmd(a *app) *cobra.Command {
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
			var rows []devShowJSON
			var err error
			if a.opts.sysfsRoot != "" {
				rows, err = devShowSysfs(a, dev)
			} else {
				rows, err = devShowNetlink(a, dev)
			}
			if err != nil {
				return err
			}
			return printDevShow(a, rows)
		},
	}
}

func devShowNetlink(a *app, dev string) ([]devShowJSON, error) {
	c, err := a.openNL()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	devs, err := nlDevices(c, dev)
	if err != nil {
		return nil, err
	}
	netns := ""
	if s, err := c.System(); err == nil && s.NetnsShared != nil {
		netns = map[bool]string{true: "shared", false: "exclusive"}[*s.NetnsShared]
	}
	f := sysfs.New("")
	var rows []devShowJSON
	for _, d := range devs {
		idx := d.Index
		r := devShowJSON{Ifindex: &idx, Ifname: d.Name, FW: d.FW, Protocol: d.Protocol, DIM: d.DIM,
			NumPorts: d.NumPorts, NetnsMode: netns}
		if d.NodeType != nil {
			r.NodeType = nldev.NodeTypeName(*d.NodeType)
		}
		if d.NodeGUID != nil {
			r.NodeGUID = nldev.GUID(*d.NodeGUID)
		}
		if d.SysImageGUID != nil {
			r.SysImageGUID = nldev.GUID(*d.SysImageGUID)
		}
		if d.Caps != nil && a.opts.details {
			r.Caps = nldev.DeviceCapNames(*d.Caps)
		}
		// The uverbs node as rdma-core finds it: GET_CHARDEV, not sysfs.
		if ch, err := c.Chardev(d.Index, "uverbs"); err == nil {
			r.Uverbs, r.UverbsMajor, r.UverbsMinor, r.UverbsABI, r.DriverID = ch.Name, ch.Major, ch.Minor, ch.ABI, ch.DriverID
		}
		// sysfs for what netlink does not carry. The device may have been
		// renamed or removed between the two reads: then these stay empty.
		if sd, err := f.Device(d.Name); err == nil {
			fillFromSysfs(&r, sd, a.opts.details)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func fillFromSysfs(r *devShowJSON, sd *sysfs.Device, details bool) {
	r.Driver, r.PCIAddr, r.BoardID, r.HCAType, r.HWRev = sd.Driver, sd.PCIAddr, sd.BoardID, sd.HCAType, sd.HWRev
	if details {
		r.NUMANode, r.NodeDesc = sd.NUMANode, sd.NodeDesc
	}
}

func devShowSysfs(a *app, dev string) ([]devShowJSON, error) {
	f := sysfs.New(a.opts.sysfsRoot)
	names := []string{dev}
	if dev == "" {
		var err error
		if names, err = f.Devices(); err != nil {
			return nil, sfError(err)
		}
	}
	var rows []devShowJSON
	for _, n := range names {
		sd, err := f.Device(n)
		if err != nil {
			return nil, sfError(err)
		}
		np := uint32(len(sd.Ports))
		r := devShowJSON{Ifname: sd.Name, FW: sd.FWVer, NodeGUID: sd.NodeGUID, SysImageGUID: sd.SysImageGUID,
			NumPorts: &np, Uverbs: sd.Uverbs, UverbsMajor: sd.UverbsMajor, UverbsMinor: sd.UverbsMinor}
		if sd.NodeTypeNum != nil {
			r.NodeType = nldev.NodeTypeName(uint8(*sd.NodeTypeNum))
		}
		if sd.UverbsABI != nil {
			v := uint64(*sd.UverbsABI)
			r.UverbsABI = &v
		}
		fillFromSysfs(&r, sd, a.opts.details)
		rows = append(rows, r)
	}
	return rows, nil
}

func printDevShow(a *app, rows []devShowJSON) error {
	if a.opts.json {
		if rows == nil {
			rows = []devShowJSON{}
		}
		return a.printJSON(rows)
	}
	hdr := []string{"IDX", "DEV", "NODE_TYPE", "FW", "NODE_GUID", "SYS_IMAGE_GUID", "DRIVER", "UVERBS", "PCI", "NETNS"}
	if a.opts.details {
		hdr = append(hdr, "BOARD_ID", "HCA_TYPE", "HW_REV", "CAPS")
	}
	tb := newTable(a.stdout, hdr...)
	for _, r := range rows {
		cells := []any{optU32(r.Ifindex), r.Ifname, r.NodeType, r.FW, r.NodeGUID, r.SysImageGUID, r.Driver, r.Uverbs, r.PCIAddr, r.NetnsMode}
		if a.opts.details {
			cells = append(cells, r.BoardID, r.HCAType, r.HWRev, strings.Join(r.Caps, ","))
		}
		tb.row(cells...)
	}
	return tb.render()
}

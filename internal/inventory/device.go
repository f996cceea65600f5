package inventory

import (
	"path/filepath"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Device is one RDMA device. Pointers and strings are nil/"" when the
// source does not know the fact.
type Device struct {
	Index        *uint32 // NLDEV device index (live only)
	Name         string
	NodeType     string // "ca", "rnic"...
	FW           string
	NodeGUID     string // "xxxx:xxxx:xxxx:xxxx"
	SysImageGUID string
	Protocol     string  // "roce", "ib", "iw" (live only)
	DIM          *bool   // adaptive moderation (live only)
	Caps         *uint64 // device capability bits (live only)
	NumPorts     *uint32
	// The uverbs char device.
	Uverbs      string
	UverbsMajor *uint32
	UverbsMinor *uint32
	UverbsABI   *uint64
	DriverID    *uint32 // enum rdma_driver_id (live only)
	// sysfs facts, read only when DeviceOptions ask for them.
	Driver   string
	PCIAddr  string
	BoardID  string
	HCAType  string
	HWRev    string
	NUMANode *int
	NodeDesc string
}

// DeviceOptions say which facts to gather beyond netlink's.
type DeviceOptions struct {
	Chardev bool // the uverbs char device (GET_CHARDEV live)
	Sysfs   bool // driver, PCI address
	// Board: board id, HCA type, hardware revision (hardware drivers
	// only: a device without a parent device is not asked).
	Board   bool
	Details bool // also NUMA node and node description
}

// NetnsMode is the RDMA subsystem's netns mode, "shared" or "exclusive";
// "" when the kernel does not say (before 5.2) or a capture has no NLDEV
// dump.
func (s *Source) NetnsMode() string {
	if st, err := s.System(); err == nil {
		return st.NetnsMode
	}
	return ""
}

// Devices gathers every device, or the one called name.
func (s *Source) Devices(name string, o DeviceOptions) ([]Device, error) { return s.b.devices(name, o) }

// deviceSysfs reads the few sysfs facts netlink does not carry. The device
// may have been renamed or removed since the dump: they then stay empty.
func (t tree) deviceSysfs(r *Device, o DeviceOptions) {
	if !o.Board && !o.Sysfs && !o.Details {
		return
	}
	// A device without a parent device (rxe, siw) has no device link, and
	// so no driver link or NUMA node under it, and no board files either:
	// board_id, hca_type and hw_rev come from the attribute groups of
	// hardware drivers (mlx5, bnxt_re, hfi1...), which all sit on a PCI
	// or auxiliary device. One failed readlink answers all five (at 128
	// rxe devices, 384 failed opens fewer for -d dev show). That readlink
	// and the one or two reads that may follow it (the driver link,
	// node_desc) go by full path; only a device with a parent whose board
	// files or -d -j facts are asked gets its directory opened, where the
	// relative lookups repay the open. A device gone since the dump fails
	// every read: its fields stay empty.
	path := filepath.Join(t.fs.Root(), "class", "infiniband", r.Name)
	dir := sysfs.PathDir(path)
	a := dir.LinkBase("device")
	parent := a != ""
	if parent && (o.Board || o.Details) {
		if d, err := sysfs.OpenDir(path); err == nil {
			defer d.Close()
			dir = d
		}
	}
	if o.Board && parent {
		r.BoardID = dir.String("board_id")
		r.HCAType = dir.String("hca_type")
		r.HWRev = dir.String("hw_rev")
	}
	if o.Sysfs {
		if parent {
			r.Driver = dir.LinkBase("device/driver")
		}
		if r.Driver == "" {
			r.Driver = sysfs.SoftDriver(r.Name)
		}
		if sysfs.IsPCIAddr(a) {
			r.PCIAddr = a
		}
	}
	if o.Details {
		r.NodeDesc = dir.String("node_desc")
		if parent {
			if n, err := strconv.Atoi(dir.String("device/numa_node")); err == nil {
				r.NUMANode = &n
			}
		}
	}
}

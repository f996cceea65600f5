package sysfs

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Device is what /sys/class/infiniband/<dev> says about one RDMA device.
// Strings are "" and pointers nil when the file is absent, unreadable or
// malformed; rxe, for instance, has no hca_type, hw_rev, board_id or
// device link, and an empty fw_ver.
type Device struct {
	Name string `json:"ifname"`
	// NodeType is the label of node_type ("CA", "Switch", "Router",
	// "RNIC"...), NodeTypeNum its number ("1: CA" -> 1).
	NodeType     string  `json:"node_type,omitempty"`
	NodeTypeNum  *uint32 `json:"node_type_num,omitempty"`
	NodeGUID     string  `json:"node_guid,omitempty"` // "xxxx:xxxx:xxxx:xxxx", as rdma -j
	SysImageGUID string  `json:"sys_image_guid,omitempty"`
	FWVer        string  `json:"fw,omitempty"` // rdma -j calls it "fw"
	HCAType      string  `json:"hca_type,omitempty"`
	HWRev        string  `json:"hw_rev,omitempty"`
	BoardID      string  `json:"board_id,omitempty"`
	NodeDesc     string  `json:"node_desc,omitempty"`
	// PCIAddr is the PCI address behind the device symlink
	// ("0000:03:00.0"); "" for software devices such as rxe.
	PCIAddr  string `json:"pci_addr,omitempty"`
	NUMANode *int   `json:"numa_node,omitempty"` // -1 means "no NUMA affinity", as sysfs says
	// Driver is the kernel driver bound to the PCI device (device/driver
	// link, e.g. "mlx5_core"). For devices without a device link, such as
	// rxe, it is derived from the name prefix ("rdma_rxe" for rxeN, "siw").
	Driver string `json:"driver,omitempty"`
	// Parent is the content of the "parent" attribute: for rxe and siw the
	// netdev the device is bound to ("vrxe0").
	Parent string   `json:"parent,omitempty"`
	Ports  []uint32 `json:"ports"`
	// Uverbs is the uverbs char device name ("uverbs0"), from
	// class/infiniband_verbs/*/ibdev; "" if there is none.
	Uverbs      string  `json:"uverbs,omitempty"`
	UverbsMajor *uint32 `json:"uverbs_major,omitempty"`
	UverbsMinor *uint32 `json:"uverbs_minor,omitempty"`
	// UverbsABI is the driver's uverbs ABI (uverbsN/abi_version): rxe 2, mlx5 1.
	UverbsABI *uint32 `json:"uverbs_abi,omitempty"`
}

// UverbsPath is the char device path ("/dev/infiniband/uverbs0"), or "".
func (d *Device) UverbsPath() string {
	if d.Uverbs == "" {
		return ""
	}
	return "/dev/infiniband/" + d.Uverbs
}

// isPCIAddr matches a PCI address as the kernel names devices,
// DDDD:BB:SS.F (domain of four or more hex digits, function 0-7). A
// hand-written check rather than a package-level regexp: compiling one at
// init costs every rdmactl run a few ms under emulation.
func isPCIAddr(s string) bool {
	dom, rest, ok := strings.Cut(s, ":")
	return ok && len(dom) >= 4 && isHex(dom) && len(rest) == 7 &&
		isHex(rest[0:2]) && rest[2] == ':' && isHex(rest[3:5]) && rest[5] == '.' &&
		rest[6] >= '0' && rest[6] <= '7'
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Device reads the device's attributes. Unknown names give a *NotFoundError
// that lists the existing devices.
func (f *FS) Device(name string) (*Device, error) {
	if err := f.checkDevice(name); err != nil {
		return nil, err
	}
	dir := f.devDir(name)
	d := &Device{Name: name}
	if n, label, ok := parseNumLabel(readOpt(filepath.Join(dir, "node_type"))); ok {
		d.NodeType, d.NodeTypeNum = label, &n
	}
	d.NodeGUID = guidText(readOpt(filepath.Join(dir, "node_guid")))
	d.SysImageGUID = guidText(readOpt(filepath.Join(dir, "sys_image_guid")))
	d.FWVer = readOpt(filepath.Join(dir, "fw_ver"))
	d.HCAType = readOpt(filepath.Join(dir, "hca_type"))
	d.HWRev = readOpt(filepath.Join(dir, "hw_rev"))
	d.BoardID = readOpt(filepath.Join(dir, "board_id"))
	d.NodeDesc = readOpt(filepath.Join(dir, "node_desc"))
	d.Parent = readOpt(filepath.Join(dir, "parent"))

	if addr := linkBase(filepath.Join(dir, "device")); isPCIAddr(addr) {
		d.PCIAddr = addr
	}
	if s, ok := readString(filepath.Join(dir, "device", "numa_node")); ok {
		if n, err := strconv.Atoi(s); err == nil {
			d.NUMANode = &n
		}
	}
	d.Driver = linkBase(filepath.Join(dir, "device", "driver"))
	if d.Driver == "" {
		d.Driver = softDriver(name)
	}
	d.Ports = f.ports(name)
	f.fillUverbs(d)
	return d, nil
}

// guidText is a node_guid/sys_image_guid file as rdma -j shows GUIDs
// ("xxxx:xxxx:xxxx:xxxx", lower case), or "" when malformed.
func guidText(s string) string {
	if g, ok := vocab.ParseGUID(s); ok {
		return g.String()
	}
	return ""
}

// softDriver names the kernel module of a software device that has no
// device/driver link. The names come from the module names
// (rdma_rxe.ko, siw.ko).
func softDriver(name string) string {
	switch {
	case strings.HasPrefix(name, "rxe"):
		return "rdma_rxe"
	case strings.HasPrefix(name, "siw"):
		return "siw"
	}
	return ""
}

// ports lists the numeric entries of <dev>/ports, sorted.
// ports is portList without its error: a device whose ports cannot be
// listed has none to show.
func (f *FS) ports(dev string) []uint32 {
	ps, _ := f.portList(dev)
	return ps
}

// portList lists dev's port numbers, and the error of reading its ports
// directory, if any.
func (f *FS) portList(dev string) ([]uint32, error) {
	dir := filepath.Join(f.devDir(dev), "ports")
	ents, err := os.ReadDir(dir)
	var ps []uint32
	for _, e := range ents {
		// A port is a directory named by its number, from 1 (checkPort's
		// rule), or it would be listed and then not found.
		if n, err := strconv.ParseUint(e.Name(), 10, 32); err == nil && n != 0 && e.IsDir() {
			ps = append(ps, uint32(n))
		} else {
			f.skip(filepath.Join(dir, e.Name()), "not a port directory")
		}
	}
	slices.Sort(ps)
	return ps, err
}

// fillUverbs finds the uverbs char device whose ibdev is d.Name. The uverbs
// index need not match the device index, so always map through ibdev.
func (f *FS) fillUverbs(d *Device) {
	for _, n := range f.UverbsNodes() {
		if n.IBDev != d.Name {
			continue
		}
		d.Uverbs = n.Name
		if n.DevOK {
			ma, mi := n.Major, n.Minor
			d.UverbsMajor, d.UverbsMinor = &ma, &mi
		}
		d.UverbsABI = n.ABI
		return
	}
}

// UverbsNode is a uverbs char device as class/infiniband_verbs/uverbsN
// shows it.
type UverbsNode struct {
	Name  string // "uverbs0"
	IBDev string // the RDMA device it serves (ibdev)
	// Major and Minor are the node's device number (dev), when DevOK.
	Major, Minor uint32
	DevOK        bool
	ABI          *uint32 // the driver's uverbs ABI (abi_version): rxe 2, mlx5 1
}

// UverbsNodes lists class/infiniband_verbs/uverbs*, sorted by name; an
// entry without a readable ibdev (a node going away) is left out.
func (f *FS) UverbsNodes() []UverbsNode {
	dir := filepath.Join(f.root, "class", "infiniband_verbs")
	ents, _ := os.ReadDir(dir) // sorted by name
	var ns []UverbsNode
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "uverbs") {
			continue
		}
		n := UverbsNode{Name: e.Name(), IBDev: readOpt(filepath.Join(dir, e.Name(), "ibdev"))}
		if n.IBDev == "" {
			continue
		}
		n.Major, n.Minor, n.DevOK = vocab.ParseDevNum(readOpt(filepath.Join(dir, e.Name(), "dev")))
		n.ABI, _ = parseU32(readOpt(filepath.Join(dir, e.Name(), "abi_version")))
		ns = append(ns, n)
	}
	return ns
}

// UverbsABIVersion is the global uverbs ABI (class/infiniband_verbs/abi_version,
// 6 on every current kernel); nil if unreadable.
func (f *FS) UverbsABIVersion() *uint32 {
	v, _ := parseU32(readOpt(filepath.Join(f.root, "class", "infiniband_verbs", "abi_version")))
	return v
}

// LinkBase is the last element of a symlink's target, or "".
func LinkBase(path string) string { return linkBase(path) }

// SoftDriver is the module of a software device without a device/driver
// link (rdma_rxe, siw), by its name; "" otherwise.
func SoftDriver(name string) string { return softDriver(name) }

// IsPCIAddr matches a PCI address (DDDD:BB:SS.F).
func IsPCIAddr(s string) bool { return isPCIAddr(s) }

package verbs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Device is an RDMA device with a uverbs character device: what is needed
// to open it (rdma-core libibverbs/init.c, util/open_cdev.c).
type Device struct {
	Name     string // IB device name, "rxe0"
	Uverbs   string // "uverbs0"; need not share the device's index
	Path     string // "/dev/infiniband/uverbs0"
	Major    uint32 // of the char device, checked against fstat at open
	Minor    uint32
	ABI      uint32 // the driver's uverbs ABI (rxe 2, mlx5 1)
	DriverID uint32 // RDMA_DRIVER_* (DriverRXE, DriverMLX5); 0 unknown
	Driver   string // "rxe", "mlx5", or the best name known
	// Provider is the user-space driver of DriverID among those the
	// device was found with; nil if there is none (queries still work,
	// the data path does not).
	Provider Provider

	providers Providers // those it was found with, for the ABI error
}

// Where the kernel shows the uverbs devices and their nodes.
const (
	sysfsRoot = "/sys"
	devRoot   = "/dev"
)

// Devices lists the RDMA devices that have a uverbs node, sorted by name.
// It fails if the kernel's global uverbs ABI is not 6.
func (ps Providers) Devices() ([]Device, error) {
	if ok, err := CheckABI(); err != nil || !ok {
		return nil, err
	}
	return ps.devicesIn(sysfs.New(sysfsRoot)), nil
}

// devicesIn is Devices over the sysfs tree fs (class/infiniband_verbs,
// internal/sysfs UverbsNodes). sysfs does not show the driver id: it is
// guessed (guessDriverID); a caller with an NLDEV client knows it
// (GET_CHARDEV) and builds the Device with NewDevice. A node whose dev
// cannot be read (it vanished, or is malformed) is left out.
func (ps Providers) devicesIn(fs *sysfs.FS) []Device {
	var devs []Device
	for _, n := range fs.UverbsNodes() {
		if !n.DevOK {
			continue
		}
		d := Device{Name: n.IBDev, Uverbs: n.Name, Path: filepath.Join(devRoot, "infiniband", n.Name), Major: n.Major, Minor: n.Minor}
		if n.ABI != nil {
			d.ABI = *n.ABI
		}
		d.DriverID = ps.guessDriverID(fs.Root(), n.IBDev)
		d.Driver = driverName(d.DriverID, n.IBDev)
		d.Provider, d.providers = ps.byID(d.DriverID), ps
		devs = append(devs, d)
	}
	sort.Slice(devs, func(i, j int) bool { return devs[i].Name < devs[j].Name })
	return devs
}

// CheckABI reads the kernel's global uverbs ABI version: false without
// ib_uverbs (no device can be opened), an error unless it is the one
// rdmactl speaks.
func CheckABI() (bool, error) {
	s, err := readSysfs(filepath.Join(sysfsRoot, "class", "infiniband_verbs", "abi_version"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err == nil {
		if v, err := strconv.ParseUint(s, 10, 32); err != nil || v != uverbsABIVersion {
			return false, fmt.Errorf("the kernel's uverbs ABI is %q, rdmactl speaks ABI %d: the kernel is too old or too new for it", s, uverbsABIVersion)
		}
	}
	return true, nil
}

// LookupDevice finds the uverbs device of IB device name.
func (ps Providers) LookupDevice(name string) (Device, error) {
	devs, err := ps.Devices()
	if err != nil {
		return Device{}, err
	}
	var known []string
	for _, d := range devs {
		if d.Name == name {
			return d, nil
		}
		known = append(known, d.Name)
	}
	return Device{}, &DeviceNotFoundError{Name: name, Known: known}
}

// NewDevice is the Device of IB device ibdev served by uverbs node node
// ("uverbs0") as RDMA netlink GET_CHARDEV reports it (rdma-core's first
// choice, libibverbs/ibdev_nl.c): the driver's ABI, the node's major/minor
// and the driver id (0: unknown, then guessed as Devices does).
func (ps Providers) NewDevice(ibdev, node string, abi, major, minor, driverID uint32) Device {
	d := Device{Name: ibdev, Uverbs: node, Path: filepath.Join(devRoot, "infiniband", node),
		Major: major, Minor: minor, ABI: abi, DriverID: driverID}
	if d.DriverID == 0 {
		d.DriverID = ps.guessDriverID(sysfsRoot, ibdev)
	}
	d.Driver = driverName(d.DriverID, ibdev)
	d.Provider, d.providers = ps.byID(d.DriverID), ps
	return d
}

// guessDriverID names the driver without netlink (sysfs under root): from
// the kernel module behind the device's parent (a provider's
// kernelModule), or, for software devices that have no parent device,
// from the name prefix the rdma tool gives them (a provider's namePrefix;
// rdma-core matches rxe the same way, providers/rxe/rxe.c hca_table).
func (ps Providers) guessDriverID(root, ibdev string) uint32 {
	if l, err := os.Readlink(filepath.Join(root, "class", "infiniband", ibdev, "device", "driver")); err == nil {
		for _, p := range ps {
			if m := p.Info().KernelModule; m != "" && filepath.Base(l) == m {
				return p.Info().ID
			}
		}
		return 0
	}
	for _, p := range ps {
		if strings.HasPrefix(ibdev, p.Info().NamePrefix) {
			return p.Info().ID
		}
	}
	return 0
}

// driverNames are enum rdma_driver_id (ib_user_ioctl_verbs.h) in order.
var driverNames = []string{"unknown", "mlx5", "mlx4", "cxgb3", "cxgb4", "mthca", "bnxt_re", "ocrdma", "nes",
	"irdma", "vmw_pvrdma", "qedr", "hns", "usnic", "rxe", "hfi1", "qib", "efa", "siw", "erdma", "mana"}

func driverName(id uint32, ibdev string) string {
	if id != 0 && int(id) < len(driverNames) {
		return driverNames[id]
	}
	return "unknown (" + ibdev + ")"
}

// CheckProviderABI applies the provider's uverbs ABI range (ProviderInfo, as
// rdma-core's per-provider ranges). Other drivers are only queried, so any
// ABI goes.
func (d Device) CheckProviderABI() error {
	p := d.Provider
	if p == nil {
		return nil
	}
	if i := p.Info(); d.ABI < i.MinABI || d.ABI > i.MaxABI {
		var known []string
		for _, q := range d.providers {
			i := q.Info()
			lo, hi := i.MinABI, i.MaxABI
			r := fmt.Sprintf("%s %d", i.Name, lo)
			if hi != lo {
				r += fmt.Sprintf("..%d", hi)
			}
			known = append(known, r)
		}
		return fmt.Errorf("%s: driver %s uverbs ABI %d is not supported by rdmactl (%s)", d.Name, d.Driver, d.ABI, strings.Join(known, ", "))
	}
	return nil
}

// readSysfs reads a sysfs attribute, bounded (sysfs.ReadBounded: a broken
// or fake tree's huge or endless file is never read whole) and without an
// *os.File, whose first open in a process starts the runtime's network
// poller (epoll, an eventfd, and the scheduler's epoll waits from then on)
// in inspection commands that have no other use for it.
func readSysfs(path string) (string, error) {
	b, err := sysfs.ReadBounded(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// NodeType is the device's node type from sysfs (node_type "1: CA"):
// 1 CA, 2 switch, 3 router, 4 RNIC (iWARP), 5 usNIC, 6 usNIC UDP,
// 7 unspecified; 0 if unreadable.
func (d Device) NodeType() uint8 {
	s, err := readSysfs(filepath.Join(sysfsRoot, "class", "infiniband", d.Name, "node_type"))
	if err != nil {
		return 0
	}
	return parseNodeType(s)
}

// parseNodeType reads sysfs node_type ("1: CA"); 0 if malformed.
func parseNodeType(s string) uint8 {
	num, _, _ := strings.Cut(s, ":")
	v, err := strconv.ParseUint(strings.TrimSpace(num), 10, 8)
	if err != nil {
		return 0
	}
	return uint8(v)
}

// BoardID is the sysfs board_id (mlx5 has one, rxe none): "" if absent.
func (d Device) BoardID() string {
	s, _ := readSysfs(filepath.Join(sysfsRoot, "class", "infiniband", d.Name, "board_id"))
	return s
}

package inventory

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"golang.org/x/sys/unix"
)

// Host facts doctor judges: the PCIe link of a device's PCI function, a
// netdev's state and addresses, kernel modules, this process's
// RLIMIT_MEMLOCK and its access to the uverbs nodes. The sysfs ones are in
// a capture too; the others describe the running process or network
// namespace and are ErrNeedsLive offline.

// PCIeLink is the link of a device's PCI function: class/infiniband/DEV/
// device/{current,max}_link_{speed,width}, the files lspci -vv reads for
// LnkSta and LnkCap. Speeds are in GT/s; 0 when the kernel says "Unknown"
// or the file is missing (virtual functions, some bridges).
type PCIeLink struct {
	Addr                 string // the PCI address
	CurSpeed, MaxSpeed   float64
	CurWidth, MaxWidth   uint32
	CurSpeedS, MaxSpeedS string // verbatim, "16.0 GT/s PCIe"
}

// PCIeLink is dev's PCIe link, or nil when dev has no PCI function (rxe,
// siw) or the function shows no link attributes.
func (s *Source) PCIeLink(dev string) *PCIeLink {
	d := Device{Name: dev}
	s.deviceSysfs(&d, DeviceOptions{Sysfs: true})
	if d.PCIAddr == "" {
		return nil
	}
	l := &PCIeLink{Addr: d.PCIAddr}
	attr := func(n string) string { return s.readAttr("class", "infiniband", dev, "device", n) }
	l.CurSpeedS, l.MaxSpeedS = attr("current_link_speed"), attr("max_link_speed")
	l.CurSpeed, l.MaxSpeed = ParseGTs(l.CurSpeedS), ParseGTs(l.MaxSpeedS)
	l.CurWidth, l.MaxWidth = ParseWidth(attr("current_link_width")), ParseWidth(attr("max_link_width"))
	if l.CurSpeedS == "" && l.MaxSpeedS == "" && l.CurWidth == 0 && l.MaxWidth == 0 {
		return nil
	}
	return l
}

// ParseGTs reads a PCIe link speed in GT/s: "8.0 GT/s PCIe" (5.x+) or "8 GT/s" (older); 0 otherwise.
func ParseGTs(s string) float64 {
	f := strings.Fields(s)
	if len(f) < 2 || f[1] != "GT/s" {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || !(v > 0 && v <= 1e3) { // NaN and Inf too
		return 0
	}
	return v
}

// ParseWidth reads a PCIe link width: decimal ("16"), or x-prefixed by some
// kernels' max_link_width; 0 when unknown.
func ParseWidth(s string) uint32 {
	s = strings.TrimPrefix(strings.TrimSpace(s), "x")
	v, err := strconv.ParseUint(s, 10, 8)
	if err != nil {
		return 0
	}
	return uint32(v)
}

// NetdevInfo is what doctor needs of a netdev, from class/net/NAME.
type NetdevInfo struct {
	Name      string
	OperState string  // "up", "down", "lowerlayerdown"...; "" unknown
	MTU       *uint32 // nil when unreadable
}

// Netdev reads name's state and MTU (a capture has both).
func (s *Source) Netdev(name string) NetdevInfo {
	n := s.fs.Netdev(name)
	return NetdevInfo{Name: name, OperState: n.OperState, MTU: n.MTU}
}

// NetdevAddrs is name's IP addresses, in this process's network namespace.
func (s *Source) NetdevAddrs(name string) ([]netip.Addr, error) {
	if _, err := s.b.running("addresses of " + name); err != nil {
		return nil, err
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, err
	}
	as, err := ifc.Addrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range as {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out, nil
}

// ModuleLoaded reports whether /sys/module/NAME exists: the module is
// loaded, or built in with parameters (ib_uverbs and rdma_ucm have none
// when built in, so "built in" shows up as absent: the uverbs and rdma_cm
// nodes then tell).
func (s *Source) ModuleLoaded(name string) (bool, error) {
	if _, err := s.b.running("module " + name); err != nil {
		return false, err
	}
	_, err := os.Stat(filepath.Join(s.fs.Root(), "module", name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Memlock is this process's RLIMIT_MEMLOCK and whether CAP_IPC_LOCK lifts
// it (the kernel then pins without charging the limit).
type Memlock struct {
	Soft       uint64 // bytes; Unlimited for RLIM_INFINITY
	CapIPCLock bool
}

// Unlimited is RLIM_INFINITY.
const Unlimited = ^uint64(0)

// Memlock reads this process's memlock limit and CAP_IPC_LOCK.
func (s *Source) Memlock() (*Memlock, error) {
	if _, err := s.b.running("RLIMIT_MEMLOCK"); err != nil {
		return nil, err
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil {
		return nil, err
	}
	m := &Memlock{Soft: rl.Cur}
	if rl.Cur == unix.RLIM_INFINITY {
		m.Soft = Unlimited
	}
	m.CapIPCLock = verbs.HasCapIPCLock()
	return m, nil
}

// UverbsAccess opens /dev/infiniband/NODE read-write and closes it: what a
// verbs program does first. nil means this process may use the device.
// Opening allocates nothing in the driver until a context is made.
func (s *Source) UverbsAccess(node string) error {
	if _, err := s.b.running("/dev/infiniband/" + node); err != nil {
		return err
	}
	if node == "" || strings.ContainsAny(node, "/\x00") || node == "." || node == ".." {
		return fmt.Errorf("bad uverbs node name %q", node)
	}
	fd, err := unix.Open(filepath.Join("/dev/infiniband", node), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "open", Path: filepath.Join("/dev/infiniband", node), Err: err}
	}
	unix.Close(fd)
	return nil
}

package nldev

import (
	"errors"
	"fmt"
	"sort"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/kfeat"
)

// Counter is one hardware counter of RDMA_NLDEV_CMD_STAT_GET.
type Counter struct {
	Name  string
	Value uint64
}

func decodeStats(b []byte) []Counter {
	a := parseAttrs(b)
	var out []Counter
	for _, e := range a.entries(attrStatHWCounters, attrStatHWCounterEntry) {
		name := e.str(attrStatHWCounterName)
		v := e.u64(attrStatHWCounterValue)
		if name == "" || v == nil {
			continue // malformed entry: leave it out
		}
		out = append(out, Counter{Name: name, Value: *v})
	}
	return out
}

// PortStatistics returns the hardware counters of port of the device with
// index devIndex (what "rdma statistic show link DEV/PORT" prints), in the
// kernel's order. It is one STAT_GET request: callers that start from a
// name look the index up once (Devices) and reuse it, e.g. every --watch
// interval. An unknown device or port is the kernel's EINVAL.
func (c *Client) PortStatistics(devIndex, port uint32) ([]Counter, error) {
	var e encoder
	e.u32(attrDevIndex, devIndex)
	e.u32(attrPortIndex, port)
	msgs, err := c.do(cmdStatGet, false, e.b)
	if err != nil {
		return nil, err
	}
	var out []Counter
	for _, m := range msgs {
		out = append(out, decodeStats(m)...)
	}
	return out, nil
}

// Chardev is a device's char device of one type ("uverbs"), as
// RDMA_NLDEV_CMD_GET_CHARDEV reports it.
type Chardev struct {
	Name     string  // "uverbs0"
	ABI      *uint64 // the driver's uverbs ABI version
	Dev      *uint64 // raw, as the kernel encodes it (huge_encode_dev)
	Major    *uint32 // decoded as rdma-core does (glibc major()/minor())
	Minor    *uint32
	DriverID *uint32 // enum rdma_driver_id (ib_user_ioctl_verbs.h): RDMA_DRIVER_MLX5 = 1, RDMA_DRIVER_RXE = 14 ...
}

func decodeChardev(b []byte) Chardev {
	a := parseAttrs(b)
	c := Chardev{Name: a.str(attrChardevName), ABI: a.u64(attrChardevABI), Dev: a.u64(attrChardev)}
	if c.Dev != nil {
		ma, mi := unix.Major(*c.Dev), unix.Minor(*c.Dev)
		c.Major, c.Minor = &ma, &mi
	}
	if v := a.uint(attrUverbsDriverID); v != nil && *v <= 0xffffffff {
		id := uint32(*v)
		c.DriverID = &id
	}
	return c
}

// Chardev asks which char device of type typ ("uverbs", "umad",
// "rdma_cm"...) serves device dev (by index). The kernel answers ENOENT
// when there is none.
func (c *Client) Chardev(dev uint32, typ string) (*Chardev, error) {
	var e encoder
	e.u32(attrDevIndex, dev)
	e.str(attrChardevType, typ)
	msgs, err := c.do(cmdGetChardev, false, e.b)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, &KernelError{Op: "GET_CHARDEV", Errno: unix.ENOENT}
	}
	ch := decodeChardev(msgs[0])
	return &ch, nil
}

// System is RDMA_NLDEV_CMD_SYS_GET: the subsystem-wide settings.
type System struct {
	NetnsShared    *bool // netns mode: true "shared", false "exclusive"
	CopyOnFork     *bool
	PrivilegedQKey *bool // mainline 6.5+, and backported (Debian 6.1 sends it); nil where the kernel does not
}

func boolOf(v *uint8) *bool {
	if v == nil {
		return nil
	}
	b := *v != 0
	return &b
}

func decodeSystem(b []byte) System {
	a := parseAttrs(b)
	return System{
		NetnsShared:    boolOf(a.u8(attrSysNetnsMode)),
		CopyOnFork:     boolOf(a.u8(attrSysCopyOnFork)),
		PrivilegedQKey: boolOf(a.u8(attrSysPrivQKeyMode)),
	}
}

// ErrNoSystem: the kernel has no RDMA_NLDEV_CMD_SYS_GET.
var ErrNoSystem = errors.New("this kernel has no RDMA netlink system settings (RDMA_NLDEV_CMD_SYS_GET, Linux 5.2+)")

// System reads the netns mode, copy-on-fork and privileged-qkey settings.
// A kernel without SYS_GET (before 5.2), or kfeat.NLDEVSystem forced
// absent, gives an error matching ErrNoSystem.
func (c *Client) System() (*System, error) {
	if !kfeat.Worth(kfeat.NLDEVSystem) {
		return nil, ErrNoSystem
	}
	msgs, err := c.do(cmdSysGet, false, nil)
	if err != nil {
		if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.EINVAL) {
			kfeat.Set(kfeat.NLDEVSystem, false, "SYS_GET: "+errName(err))
			return nil, fmt.Errorf("%w: %v", ErrNoSystem, err)
		}
		return nil, err
	}
	kfeat.Set(kfeat.NLDEVSystem, true, "SYS_GET answered")
	var s System
	if len(msgs) > 0 {
		s = decodeSystem(msgs[0])
	}
	return &s, nil
}

// Summary is one device's resource counts (RDMA_NLDEV_CMD_RES_GET).
type Summary struct {
	DevIndex uint32
	DevName  string
	// Counts by the kernel's names: "pd", "cq", "qp", "cm_id", "mr",
	// "ctx", "srq" (the order is in Names).
	Counts map[string]uint64
	Names  []string
}

func decodeSummary(b []byte) Summary {
	a := parseAttrs(b)
	s := Summary{DevName: a.str(attrDevName), Counts: map[string]uint64{}}
	if v := a.u32(attrDevIndex); v != nil {
		s.DevIndex = *v
	}
	for _, e := range a.entries(attrResSummary, attrResSummaryEntry) {
		n := e.str(attrResSummaryName)
		v := e.u64(attrResSummaryCurr)
		if n == "" || v == nil {
			continue
		}
		if _, dup := s.Counts[n]; !dup {
			s.Names = append(s.Names, n)
		}
		s.Counts[n] = *v
	}
	return s
}

// ResourceSummary counts the resources of every device (one dump).
func (c *Client) ResourceSummary() ([]Summary, error) {
	var e encoder
	if c.driverDetails {
		e.u8(attrDriverDetails, 1) // counts include the driver's own objects (6.9+)
	}
	msgs, err := c.do(cmdResGet, true, e.b)
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, m := range msgs {
		s := decodeSummary(m)
		if s.DevName != "" {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].DevIndex < out[j].DevIndex })
	return out, nil
}

// errName is err's errno as its name (EOPNOTSUPP), for probe details.
func errName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

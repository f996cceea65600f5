package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/kfeat"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// DeviceCaps is the legacy QUERY_DEVICE answer, struct
// ib_uverbs_query_device_resp (include/uapi/rdma/ib_user_verbs.h, 176
// B), as the kernel wrote it; EX QUERY_DEVICE's answer begins with it.
type DeviceCaps struct {
	FWVer                 uint64
	NodeGUID              [8]byte // __be64 (vocab.GUIDFromBytes)
	SysImageGUID          [8]byte // __be64
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HWVer                 uint32
	MaxQP                 uint32
	MaxQPWR               uint32
	DeviceCapFlags        uint32
	MaxSGE                uint32
	MaxSGERd              uint32
	MaxCQ                 uint32
	MaxCQE                uint32
	MaxMR                 uint32
	MaxPD                 uint32
	MaxQPRdAtom           uint32
	MaxEERdAtom           uint32
	MaxResRdAtom          uint32
	MaxQPInitRdAtom       uint32
	MaxEEInitRdAtom       uint32
	AtomicCap             uint32
	MaxEE                 uint32
	MaxRDD                uint32
	MaxMW                 uint32
	MaxRawIPv6QP          uint32
	MaxRawEthyQP          uint32
	MaxMcastGrp           uint32
	MaxMcastQPAttach      uint32
	MaxTotalMcastQPAttach uint32
	MaxAH                 uint32
	MaxFMR                uint32
	MaxMapPerFMR          uint32
	MaxSRQ                uint32
	MaxSRQWR              uint32
	MaxSRQSGE             uint32
	MaxPkeys              uint16
	LocalCAAckDelay       uint8
	PhysPortCnt           uint8
	Reserved              [4]uint8
}

// DeviceAttr is what QUERY_DEVICE and EX QUERY_DEVICE report
// (ib_uverbs_ex_query_device_resp). Fields past the legacy 176 bytes are
// valid only when Extended is true and ResponseLength covers them.
type DeviceAttr struct {
	DeviceCaps

	// Extended is true when EX QUERY_DEVICE answered; ResponseLength is
	// how many bytes of the 304-byte response the kernel filled.
	Extended       bool
	ResponseLength uint32
	ODPGeneralCaps uint64
	ODPRCCaps      uint32
	ODPUCCaps      uint32
	ODPUDCaps      uint32
	XRCODPCaps     uint32
	// TimestampMask is the completion timestamp mask (0: no timestamps);
	// HCACoreClock the core clock in kHz (0: unknown).
	TimestampMask              uint64
	HCACoreClock               uint64
	DeviceCapFlagsEx           uint64
	RSSSupportedQPTs           uint32
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	MaxWQTypeRQ                uint32
	RawPacketCaps              uint32
	TMMaxRndvHdrSize           uint32
	TMMaxNumTags               uint32
	TMFlags                    uint32
	TMMaxOps                   uint32
	TMMaxSGE                   uint32
	MaxCQModerationCount       uint16
	MaxCQModerationPeriod      uint16
	MaxDMSize                  uint64

	// Provider (mlx5) data of EX QUERY_DEVICE: struct
	// mlx5_ib_query_device_resp, which follows the core answer. The core
	// answer (ib_uverbs_ex_query_device_resp) has no TSO, RSS hash or
	// packet pacing fields; only mlx5 reports them. DriverResponseLength
	// is how many bytes of it the kernel filled: 0 when none was asked
	// for (other drivers, or an mlx5 kernel without
	// MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE). Fields it does not cover
	// are 0, which is what libibverbs' ibv_query_device_ex reports then.
	DriverResponseLength      uint32
	TSOMaxTSO                 uint32 // bytes
	TSOSupportedQPTs          uint32 // bit n: enum ib_qp_type n
	RSSRxHashFunction         uint8
	RSSRxHashFieldsMask       uint64
	PacketPacingRateMin       uint32 // kbps
	PacketPacingRateMax       uint32 // kbps
	PacketPacingSupportedQPTs uint32 // bit n: enum ib_qp_type n
}

// FWVerString formats FWVer as d's libibverbs provider does
// (Provider.FWVersion), "%d.%d.%d" for a device without one here, from
// the 16-bit fields at bits 32, 16 and 0.
func (a *DeviceAttr) FWVerString(d Device) string {
	major, minor, sub := (a.FWVer>>32)&0xffff, (a.FWVer>>16)&0xffff, a.FWVer&0xffff
	if p := d.Provider; p != nil {
		return p.Info().FWVersion(major, minor, sub)
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, sub)
}

// QueryDevice returns the device attributes: EX QUERY_DEVICE first, the
// legacy QUERY_DEVICE when the kernel lacks it (as rc:cmd_device.c
// ibv_cmd_query_device_any).
func (c *Context) QueryDevice() (*DeviceAttr, error) {
	req := uvExQueryDevice{}
	var resp uvExQueryDeviceResp
	// Provider data only where the driver defines it (deviceQuerier).
	var drv []byte
	var fill func(*DeviceAttr)
	if q, ok := c.prov.(DeviceQuerier); ok {
		drv, fill = q.QueryDeviceUData()
	}
	err := c.writeExCmd(exCmdQueryDevice, rawmem.Of(&req), rawmem.Of(&resp), nil, drv)
	if err == nil {
		a := deviceAttrFrom(&resp.Base)
		a.fillEx(&resp)
		if fill != nil {
			fill(a)
		}
		return a, nil
	}
	if !errors.Is(err, ErrUnsupported) {
		return nil, err
	}
	lreq := uvQueryDevice{}
	var lresp uvQueryDeviceResp
	if err := c.writeCmd(cmdQueryDevice, rawmem.Of(&lreq), rawmem.Of(&lresp), nil, nil); err != nil {
		return nil, err
	}
	return deviceAttrFrom(&lresp), nil
}

func deviceAttrFrom(r *uvQueryDeviceResp) *DeviceAttr {
	return &DeviceAttr{DeviceCaps: *r}
}

// covers reports whether a response of n bytes reaches the end of the
// field at off of size bytes. A kernel older than the header fills less
// and says so in response_length: the fields past it are absent, and
// stay 0 here, as rdma-core's ibv_cmd_query_device_any leaves them.
func covers(n uint32, off, size uintptr) bool { return uintptr(n) >= off+size }

// fillEx takes the fields past the legacy answer that r.ResponseLength
// covers, each checked on its own.
func (a *DeviceAttr) fillEx(r *uvExQueryDeviceResp) {
	a.Extended = true
	a.ResponseLength = r.ResponseLength
	n := r.ResponseLength
	if covers(n, unsafe.Offsetof(r.ODPCaps), unsafe.Sizeof(r.ODPCaps)) {
		a.ODPGeneralCaps = r.ODPCaps.GeneralCaps
		a.ODPRCCaps, a.ODPUCCaps, a.ODPUDCaps = r.ODPCaps.RCODPCaps, r.ODPCaps.UCODPCaps, r.ODPCaps.UDODPCaps
	}
	if covers(n, unsafe.Offsetof(r.TimestampMask), unsafe.Sizeof(r.TimestampMask)) {
		a.TimestampMask = r.TimestampMask
	}
	if covers(n, unsafe.Offsetof(r.HCACoreClock), unsafe.Sizeof(r.HCACoreClock)) {
		a.HCACoreClock = r.HCACoreClock
	}
	if covers(n, unsafe.Offsetof(r.DeviceCapFlagsEx), unsafe.Sizeof(r.DeviceCapFlagsEx)) {
		a.DeviceCapFlagsEx = r.DeviceCapFlagsEx
	}
	if covers(n, unsafe.Offsetof(r.RSSCaps), unsafe.Sizeof(r.RSSCaps)) {
		a.RSSSupportedQPTs = r.RSSCaps.SupportedQPTs
		a.MaxRWQIndirectionTables = r.RSSCaps.MaxRWQIndirectionTables
		a.MaxRWQIndirectionTableSize = r.RSSCaps.MaxRWQIndirectionTableSize
	}
	if covers(n, unsafe.Offsetof(r.MaxWQTypeRQ), unsafe.Sizeof(r.MaxWQTypeRQ)) {
		a.MaxWQTypeRQ = r.MaxWQTypeRQ
	}
	if covers(n, unsafe.Offsetof(r.RawPacketCaps), unsafe.Sizeof(r.RawPacketCaps)) {
		a.RawPacketCaps = r.RawPacketCaps
	}
	if covers(n, unsafe.Offsetof(r.TMCaps), unsafe.Sizeof(r.TMCaps)) {
		a.TMMaxRndvHdrSize, a.TMMaxNumTags, a.TMFlags = r.TMCaps.MaxRndvHdrSize, r.TMCaps.MaxNumTags, r.TMCaps.Flags
		a.TMMaxOps, a.TMMaxSGE = r.TMCaps.MaxOps, r.TMCaps.MaxSGE
	}
	if covers(n, unsafe.Offsetof(r.CQModerationCaps), unsafe.Sizeof(r.CQModerationCaps)) {
		a.MaxCQModerationCount = r.CQModerationCaps.MaxCQModerationCount
		a.MaxCQModerationPeriod = r.CQModerationCaps.MaxCQModerationPeriod
	}
	if covers(n, unsafe.Offsetof(r.MaxDMSize), unsafe.Sizeof(r.MaxDMSize)) {
		a.MaxDMSize = r.MaxDMSize
	}
	if covers(n, unsafe.Offsetof(r.XRCODPCaps), unsafe.Sizeof(r.XRCODPCaps)) {
		a.XRCODPCaps = r.XRCODPCaps
	}
}

// PortCaps is the legacy QUERY_PORT answer, struct
// ib_uverbs_query_port_resp (include/uapi/rdma/ib_user_verbs.h, 40 B), as
// the kernel wrote it, its enums typed; the ioctl's answer begins with it.
type PortCaps struct {
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPkeyCntr   uint32
	QkeyViolCntr  uint32
	GIDTblLen     uint32
	PkeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	State         vocab.PortState
	MaxMTU        vocab.MTU
	ActiveMTU     vocab.MTU
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     vocab.PhysState
	LinkLayer     vocab.LinkLayer
	Flags         uint8 // bit 0: GRH required
	Reserved      uint8
}

// PortAttr is what QUERY_PORT reports (ib_uverbs_query_port_resp_ex).
type PortAttr struct {
	Port uint8
	PortCaps
	PortCapFlags2 uint16
	// ActiveSpeedEx is the 32-bit speed of the ioctl answer (6.12 fills
	// it; 6.1's answer has reserved bytes there). It is 0 when the kernel
	// gave only the legacy answer, which has no such field: write()
	// QUERY_PORT, or an older ioctl. Then ActiveSpeed is the speed, as
	// in rdma-core's ibv_query_port, which leaves active_speed_ex 0 on its
	// write() fallback.
	ActiveSpeedEx uint32
}

// Rate is the port's rate from its active speed (ActiveSpeedEx where the
// kernel gave it) and width, as ports/N/rate shows it (vocab.RateOf).
func (a *PortAttr) Rate() (vocab.Rate, bool) {
	speed := uint32(a.ActiveSpeed)
	if a.ActiveSpeedEx != 0 {
		speed = a.ActiveSpeedEx
	}
	return vocab.RateOf(speed, a.ActiveWidth)
}

// QueryPort queries port (1-based): the native ioctl (48-byte response,
// with port_cap_flags2 and active_speed_ex) first, as rdma-core does on
// 5.x+, then write() QUERY_PORT. A port the device lacks gives a
// *PortNotFoundError.
func (c *Context) QueryPort(port uint8) (*PortAttr, error) {
	if port == 0 {
		return nil, &PortNotFoundError{Device: c.dev.Name, Port: 0, Ports: c.portCount()}
	}
	var ex uvQueryPortRespEx
	done := false
	if c.useIoctl && kfeat.Worth(kfeat.QueryPortIoctl) {
		attrs := []ioctlAttr{
			attrConst(attrQueryPortNum, uint64(port)),
			attrPtrOut(attrQueryPortResp, rawmem.Of(&ex)),
		}
		err := c.ioctl(objDevice, methQueryPort, attrs)
		switch {
		case err == nil:
			done = true
			kfeat.Set(kfeat.QueryPortIoctl, true, "answered on "+c.dev.Name)
		case errors.Is(err, unix.EPROTONOSUPPORT):
			kfeat.Set(kfeat.QueryPortIoctl, false, "EPROTONOSUPPORT")
		case errors.Is(err, unix.EINVAL):
			return nil, c.portError(port, err)
		default:
			return nil, err
		}
	}
	if !done {
		req := uvQueryPort{PortNum: port}
		if err := c.writeCmd(cmdQueryPort, rawmem.Of(&req), rawmem.Of(&ex.LegacyResp), nil, nil); err != nil {
			if errors.Is(err, unix.EINVAL) {
				return nil, c.portError(port, err)
			}
			return nil, err
		}
	}
	return &PortAttr{Port: port, PortCaps: ex.LegacyResp, PortCapFlags2: ex.PortCapFlags2, ActiveSpeedEx: ex.ActiveSpeedEx}, nil
}

// portError turns EINVAL for a port beyond phys_port_cnt into a
// PortNotFoundError.
func (c *Context) portError(port uint8, err error) error {
	if n := c.portCount(); n > 0 && int(port) > n {
		return &PortNotFoundError{Device: c.dev.Name, Port: int(port), Ports: n}
	}
	return err
}

func (c *Context) portCount() int {
	a, err := c.QueryDevice()
	if err != nil {
		return 0
	}
	return int(a.PhysPortCnt)
}

// GIDEntry is one populated GID table slot.
type GIDEntry struct {
	Port          uint32
	Index         uint32
	GID           [16]byte // network order
	Type          vocab.GIDType
	NetdevIfindex uint32 // 0 on InfiniBand or when unknown
}

// Addr is the GID as an IPv6 address (IPv4-mapped for RoCE IPv4 GIDs).
func (g GIDEntry) Addr() netip.Addr { return netip.AddrFrom16(g.GID) }

// QueryGIDTable returns the populated GID entries of every port, in
// (port, index) order as the kernel gives them. maxEntries bounds the
// answer (the sum of the ports' gid_tbl_len is always enough). It uses
// the QUERY_GID_TABLE ioctl (5.10+), else sysfs as rdma-core does
// (rc:cmd_device.c query_gid_table_fb).
func (c *Context) QueryGIDTable(maxEntries int) ([]GIDEntry, error) {
	if maxEntries <= 0 {
		return nil, nil
	}
	// An ioctl attribute's length is 16 bits: at most 2047 entries of 32
	// bytes fit. Populated GIDs are far fewer than that in practice.
	if maxEntries > 0xffff/32 {
		maxEntries = 0xffff / 32
	}
	if c.useIoctl && kfeat.Worth(kfeat.QueryGIDTable) {
		const entrySize = 32
		out := make([]byte, entrySize*maxEntries)
		var num [8]byte
		attrs := []ioctlAttr{
			attrConst(attrGIDTableEntrySize, entrySize),
			attrFlags32(attrGIDTableFlags, 0).optional(),
			attrPtrOut(attrGIDTableRespEntries, out),
			attrPtrOut(attrGIDTableRespNumEntrie, num[:]),
		}
		err := c.ioctl(objDevice, methQueryGIDTable, attrs)
		if err == nil {
			kfeat.Set(kfeat.QueryGIDTable, true, "answered on "+c.dev.Name)
			return parseGIDTable(out, binary.NativeEndian.Uint64(num[:])), nil
		}
		if !errors.Is(err, unix.EPROTONOSUPPORT) {
			return nil, err
		}
		kfeat.Set(kfeat.QueryGIDTable, false, "EPROTONOSUPPORT")
	}
	return gidTableSysfs(sysfs.New(sysfsRoot), c.dev.Name)
}

// parseGIDTable decodes QUERY_GID_TABLE's answer: num packed 32-byte
// ib_uverbs_gid_entry records at the start of out. A count larger than
// out holds (a kernel bug) is clamped rather than trusted.
func parseGIDTable(out []byte, num uint64) []GIDEntry {
	const entrySize = 32
	if max := uint64(len(out) / entrySize); num > max {
		num = max
	}
	gids := make([]GIDEntry, 0, num)
	for i := 0; i < int(num); i++ {
		var e uvGIDEntry
		copy(rawmem.Of(&e), out[i*entrySize:])
		gids = append(gids, GIDEntry{Port: e.PortNum, Index: e.GIDIndex, GID: e.GID, Type: vocab.GIDType(e.GIDType), NetdevIfindex: e.NetdevIfindex})
	}
	return gids
}

// gidTableSysfs reads dev's GID tables from sysfs (internal/sysfs,
// ports/<p>/gids/<i> with gid_attrs/types and ndevs): populated slots
// only, as QUERY_GID_TABLE answers. A slot whose type cannot be read or
// is none the kernel writes is left out: the kernel fails that read for
// an empty slot (rdma_get_gid_attr, drivers/infiniband/core/cache.c).
func gidTableSysfs(fs *sysfs.FS, dev string) ([]GIDEntry, error) {
	ports, err := fs.PortNumbers(dev)
	if err != nil {
		return nil, fmt.Errorf("%s: reading the GID table from sysfs: %w", dev, err)
	}
	var gids []GIDEntry
	for _, port := range ports {
		slots, err := fs.GIDs(dev, port)
		if err != nil {
			continue
		}
		for _, g := range slots {
			if !g.RawOK || g.Empty() || !g.Kind.Known() {
				continue
			}
			e := GIDEntry{Port: port, Index: g.Index, GID: g.Raw, Type: g.Kind}
			if g.Netdev != "" {
				if ix := fs.Netdev(g.Netdev).Ifindex; ix != nil {
					e.NetdevIfindex = *ix
				}
			}
			gids = append(gids, e)
		}
	}
	return gids, nil
}

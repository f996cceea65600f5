package nldev

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Owner says who holds a resource: a user process (PID) or a kernel
// module (KernName, such as "ib_core"); the kernel sends one of the two.
type Owner struct {
	PID      *uint32
	KernName string
}

func decodeOwner(a attrs) Owner {
	return Owner{PID: a.u32(attrResPID), KernName: a.str(attrResKernName)}
}

// ResHead is what every resource entry carries: its device (from the
// message) and owner.
type ResHead struct {
	DevIndex uint32
	DevName  string
	Owner
	// Driver is the entry's driver details (rdma -dd), in the kernel's
	// order; nil when the driver reports none (rxe, siw).
	Driver []DriverAttr
}

// QP is one entry of RES_QP_GET. Fields the kernel omits (rqpn, rq_psn,
// path_mig_state for unconnected QPs; pdn for kernel QPs) stay nil.
type QP struct {
	ResHead
	Port         *uint32 // nil while the QP has no port yet
	LQPN         *uint32
	RQPN         *uint32
	Type         *uint8 // IB_QPT_*
	State        *uint8 // IB_QPS_*
	RQPSN        *uint32
	SQPSN        *uint32
	PathMigState *uint8
	PDN          *uint32
	Subtype      string // a driver QP's (Type 0xff) kind, as its driver names it
}

// CQ is one entry of RES_CQ_GET.
type CQ struct {
	ResHead
	CQN     *uint32
	CQE     *uint32
	Users   *uint64
	PollCtx *uint8 // kernel CQs only
	DIM     *bool
	CtxN    *uint32 // user CQs only
}

// MR is one entry of RES_MR_GET. RKey, LKey and IOVA are sent only to
// CAP_NET_ADMIN callers.
type MR struct {
	ResHead
	MRN  *uint32
	RKey *uint32
	LKey *uint32
	IOVA *uint64
	Len  *uint64
	PDN  *uint32
	CtxN *uint32
}

// PD is one entry of RES_PD_GET.
type PD struct {
	ResHead
	PDN              *uint32
	LocalDMALKey     *uint32
	UnsafeGlobalRKey *uint32
	Users            *uint64
	CtxN             *uint32
}

// CMID is one entry of RES_CM_ID_GET.
type CMID struct {
	ResHead
	Port    *uint32
	CMIDN   *uint32
	LQPN    *uint32
	QPType  *uint8
	State   *uint8 // RDMA_CM_* state
	PS      *uint32
	SrcAddr netip.AddrPort // invalid when absent or not IPv4/IPv6
	DstAddr netip.AddrPort
}

// Ctx is one entry of RES_CTX_GET.
type Ctx struct {
	ResHead
	CtxN *uint32
}

// SRQ is one entry of RES_SRQ_GET.
type SRQ struct {
	ResHead
	SRQN *uint32
	Type *uint8 // IB_SRQT_*: 0 BASIC, 1 XRC, 2 TM
	PDN  *uint32
	CQN  *uint32
	// QPs are the QPs attached, as ranges (a single QP is Min == Max).
	QPs []QPRange
}

// QPRange is an inclusive range of QP numbers.
type QPRange struct{ Min, Max uint32 }

// resDump runs one RES_*_GET dump per device and calls fn for each entry
// with the device of its message. The kernel's resource dumps need
// RDMA_NLDEV_ATTR_DEV_INDEX (res_get_common_dumpit answers EINVAL without
// it, in the dump's NLMSG_DONE; seen on 6.1), so the devices are listed
// first, as rdma res show does.
func (c *Client) resDump(op, table, entry uint16, fn func(h ResHead, a attrs)) error {
	devs, err := c.Devices()
	if err != nil {
		return err
	}
	return c.resDumpOf(devs, op, table, entry, fn)
}

// resDumpOf is resDump over devices the caller already listed (the
// inventory's one device dump). A device's error is wrapped with its name
// and keeps the *KernelError, so that callers can tell a device that went
// away (DeviceGone) from other failures.
func (c *Client) resDumpOf(devs []Device, op, table, entry uint16, fn func(h ResHead, a attrs)) error {
	for _, d := range devs {
		var e encoder
		if c.driverDetails {
			// As rdma -dd: the kernel (6.9+) then lists the driver's
			// own objects too; older kernels ignore the attribute.
			e.u8(attrDriverDetails, 1)
		}
		e.u32(attrDevIndex, d.Index)
		msgs, err := c.do(op, true, e.b)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Name, err)
		}
		for _, m := range msgs {
			decodeRes(m, table, entry, fn)
		}
	}
	return nil
}

func decodeRes(m []byte, table, entry uint16, fn func(h ResHead, a attrs)) {
	a := parseAttrs(m)
	h := ResHead{DevName: a.str(attrDevName)}
	if v := a.u32(attrDevIndex); v != nil {
		h.DevIndex = *v
	}
	for _, e := range a.entries(table, entry) {
		hh := h
		hh.Owner = decodeOwner(e)
		hh.Driver = decodeDriver(e)
		fn(hh, e)
	}
}

func decodeQP(h ResHead, e attrs) QP {
	return QP{ResHead: h, Port: e.u32(attrPortIndex), LQPN: e.u32(attrResLQPN), RQPN: e.u32(attrResRQPN),
		Type: e.u8(attrResType), State: e.u8(attrResState), RQPSN: e.u32(attrResRQPSN),
		SQPSN: e.u32(attrResSQPSN), PathMigState: e.u8(attrResPathMigState), PDN: e.u32(attrResPDN),
		Subtype: e.str(attrResSubtype)}
}

func decodeCQ(h ResHead, e attrs) CQ {
	return CQ{ResHead: h, CQN: e.u32(attrResCQN), CQE: e.u32(attrResCQE), Users: e.u64(attrResUseCnt),
		PollCtx: e.u8(attrResPollCtx), DIM: boolOf(e.u8(attrDevDIM)), CtxN: e.u32(attrResCtxN)}
}

func decodeMR(h ResHead, e attrs) MR {
	return MR{ResHead: h, MRN: e.u32(attrResMRN), RKey: e.u32(attrResRKey), LKey: e.u32(attrResLKey),
		IOVA: e.u64(attrResIOVA), Len: e.u64(attrResMRLen), PDN: e.u32(attrResPDN), CtxN: e.u32(attrResCtxN)}
}

func decodePD(h ResHead, e attrs) PD {
	return PD{ResHead: h, PDN: e.u32(attrResPDN), LocalDMALKey: e.u32(attrResLocalDMALKey),
		UnsafeGlobalRKey: e.u32(attrResUnsafeGlobRKey), Users: e.u64(attrResUseCnt), CtxN: e.u32(attrResCtxN)}
}

func decodeCMID(h ResHead, e attrs) CMID {
	return CMID{ResHead: h, Port: e.u32(attrPortIndex), CMIDN: e.u32(attrResCMIDN), LQPN: e.u32(attrResLQPN),
		QPType: e.u8(attrResType), State: e.u8(attrResState), PS: e.u32(attrResPS),
		SrcAddr: sockaddr(e.raw(attrResSrcAddr)), DstAddr: sockaddr(e.raw(attrResDstAddr))}
}

func decodeCtx(h ResHead, e attrs) Ctx { return Ctx{ResHead: h, CtxN: e.u32(attrResCtxN)} }

func decodeSRQ(h ResHead, e attrs) SRQ {
	s := SRQ{ResHead: h, SRQN: e.u32(attrResSRQN), Type: e.u8(attrResType), PDN: e.u32(attrResPDN), CQN: e.u32(attrResCQN)}
	// The QP table holds QP entries of either one LQPN or a MIN/MAX range.
	for _, q := range e.entries(attrResQP, attrResQPEntry) {
		if n := q.u32(attrResLQPN); n != nil {
			s.QPs = append(s.QPs, QPRange{*n, *n})
		} else if lo, hi := q.u32(attrMinRange), q.u32(attrMaxRange); lo != nil && hi != nil {
			s.QPs = append(s.QPs, QPRange{*lo, *hi})
		}
	}
	return s
}

// sockaddr decodes a struct __kernel_sockaddr_storage holding a
// sockaddr_in or sockaddr_in6 (family in host order, port big-endian).
func sockaddr(b []byte) netip.AddrPort {
	if len(b) < 2 {
		return netip.AddrPort{}
	}
	switch binary.NativeEndian.Uint16(b) {
	case 2: // AF_INET
		if len(b) >= 8 {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:]))
		}
	case 10: // AF_INET6
		if len(b) >= 24 {
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])), binary.BigEndian.Uint16(b[2:]))
		}
	}
	return netip.AddrPort{}
}

// QPs lists the QPs of every device.
func (c *Client) QPs() ([]QP, error) {
	var out []QP
	err := c.resDump(cmdResQPGet, attrResQP, attrResQPEntry, func(h ResHead, a attrs) { out = append(out, decodeQP(h, a)) })
	return out, err
}

// CQs lists the CQs of every device.
func (c *Client) CQs() ([]CQ, error) {
	var out []CQ
	err := c.resDump(cmdResCQGet, attrResCQ, attrResCQEntry, func(h ResHead, a attrs) { out = append(out, decodeCQ(h, a)) })
	return out, err
}

// MRs lists the MRs of every device.
func (c *Client) MRs() ([]MR, error) {
	var out []MR
	err := c.resDump(cmdResMRGet, attrResMR, attrResMREntry, func(h ResHead, a attrs) { out = append(out, decodeMR(h, a)) })
	return out, err
}

// PDs lists the PDs of every device.
func (c *Client) PDs() ([]PD, error) {
	var out []PD
	err := c.resDump(cmdResPDGet, attrResPD, attrResPDEntry, func(h ResHead, a attrs) { out = append(out, decodePD(h, a)) })
	return out, err
}

// CMIDs lists the RDMA CM IDs of every device.
func (c *Client) CMIDs() ([]CMID, error) {
	var out []CMID
	err := c.resDump(cmdResCMIDGet, attrResCMID, attrResCMIDEntry, func(h ResHead, a attrs) { out = append(out, decodeCMID(h, a)) })
	return out, err
}

// Contexts lists the uverbs contexts of every device.
func (c *Client) Contexts() ([]Ctx, error) {
	var out []Ctx
	err := c.resDump(cmdResCtxGet, attrResCtx, attrResCtxEntry, func(h ResHead, a attrs) { out = append(out, decodeCtx(h, a)) })
	return out, err
}

// SRQs lists the SRQs of every device.
func (c *Client) SRQs() ([]SRQ, error) {
	var out []SRQ
	err := c.resDump(cmdResSRQGet, attrResSRQ, attrResSRQEntry, func(h ResHead, a attrs) { out = append(out, decodeSRQ(h, a)) })
	return out, err
}

// ResourceReader is the part of *Client that lists resources: the
// summary and each object of devs. Readers that take a fake in tests
// (inventory, the rdma drop-in) ask for it.
type ResourceReader interface {
	ResourceSummary() ([]Summary, error)
	QPsOf(devs []Device) ([]QP, error)
	CQsOf(devs []Device) ([]CQ, error)
	MRsOf(devs []Device) ([]MR, error)
	PDsOf(devs []Device) ([]PD, error)
	CMIDsOf(devs []Device) ([]CMID, error)
	ContextsOf(devs []Device) ([]Ctx, error)
	SRQsOf(devs []Device) ([]SRQ, error)
}

var _ ResourceReader = (*Client)(nil)

// The ...Of variants dump the resources of devs only (one RES_*_GET dump
// per device), for callers that already made the device dump.

// QPsOf lists the QPs of devs.
func (c *Client) QPsOf(devs []Device) ([]QP, error) {
	var out []QP
	err := c.resDumpOf(devs, cmdResQPGet, attrResQP, attrResQPEntry, func(h ResHead, a attrs) { out = append(out, decodeQP(h, a)) })
	return out, err
}

// CQsOf lists the CQs of devs.
func (c *Client) CQsOf(devs []Device) ([]CQ, error) {
	var out []CQ
	err := c.resDumpOf(devs, cmdResCQGet, attrResCQ, attrResCQEntry, func(h ResHead, a attrs) { out = append(out, decodeCQ(h, a)) })
	return out, err
}

// MRsOf lists the MRs of devs.
func (c *Client) MRsOf(devs []Device) ([]MR, error) {
	var out []MR
	err := c.resDumpOf(devs, cmdResMRGet, attrResMR, attrResMREntry, func(h ResHead, a attrs) { out = append(out, decodeMR(h, a)) })
	return out, err
}

// PDsOf lists the PDs of devs.
func (c *Client) PDsOf(devs []Device) ([]PD, error) {
	var out []PD
	err := c.resDumpOf(devs, cmdResPDGet, attrResPD, attrResPDEntry, func(h ResHead, a attrs) { out = append(out, decodePD(h, a)) })
	return out, err
}

// CMIDsOf lists the RDMA CM IDs of devs.
func (c *Client) CMIDsOf(devs []Device) ([]CMID, error) {
	var out []CMID
	err := c.resDumpOf(devs, cmdResCMIDGet, attrResCMID, attrResCMIDEntry, func(h ResHead, a attrs) { out = append(out, decodeCMID(h, a)) })
	return out, err
}

// ContextsOf lists the uverbs contexts of devs.
func (c *Client) ContextsOf(devs []Device) ([]Ctx, error) {
	var out []Ctx
	err := c.resDumpOf(devs, cmdResCtxGet, attrResCtx, attrResCtxEntry, func(h ResHead, a attrs) { out = append(out, decodeCtx(h, a)) })
	return out, err
}

// SRQsOf lists the SRQs of devs.
func (c *Client) SRQsOf(devs []Device) ([]SRQ, error) {
	var out []SRQ
	err := c.resDumpOf(devs, cmdResSRQGet, attrResSRQ, attrResSRQEntry, func(h ResHead, a attrs) { out = append(out, decodeSRQ(h, a)) })
	return out, err
}

// Names rdma prints for resource enums (iproute2 rdma/res-*.c).

// QPTypeName names an IB_QPT_* value.
func QPTypeName(t uint8) string {
	names := []string{"SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE", "UNKNOWN", "RAW_PACKET", "XRC_INI", "XRC_TGT"}
	if int(t) < len(names) {
		return names[t]
	}
	if t == 0xff {
		return "DRIVER"
	}
	return "UNKNOWN"
}

// QPStateName names an IB_QPS_* value.
func QPStateName(s uint8) string { return pick(s, "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR") }

// PathMigStateName names an IB_MIG_* value.
func PathMigStateName(s uint8) string { return pick(s, "MIGRATED", "REARM", "ARMED") }

// PollCtxName names an IB_POLL_* value.
func PollCtxName(s uint8) string {
	return pick(s, "DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE")
}

// CMStateName names an RDMA_CM_* state.
func CMStateName(s uint8) string {
	return pick(s, "IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY", "ROUTE_RESOLVED",
		"CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING")
}

// PSName names an RDMA_PS_* port space.
func PSName(ps uint32) string {
	switch ps {
	case 0x0002:
		return "IPOIB"
	case 0x0106:
		return "TCP"
	case 0x0111:
		return "UDP"
	case 0x013f:
		return "IB"
	}
	return "---"
}

// SRQTypeName names an IB_SRQT_* value.
func SRQTypeName(t uint8) string { return pick(t, "BASIC", "XRC", "TM") }

// An entry's enums by the names above, "" where the kernel sent none.

// TypeName names q's type.
func (q QP) TypeName() string { return nameOf(q.Type, QPTypeName) }

// StateName names q's state.
func (q QP) StateName() string { return nameOf(q.State, QPStateName) }

// PathMigStateName names q's path migration state.
func (q QP) PathMigStateName() string { return nameOf(q.PathMigState, PathMigStateName) }

// PollCtxName names c's poll context (kernel CQs).
func (c CQ) PollCtxName() string { return nameOf(c.PollCtx, PollCtxName) }

// QPTypeName names the type of m's QP.
func (m CMID) QPTypeName() string { return nameOf(m.QPType, QPTypeName) }

// StateName names m's RDMA CM state.
func (m CMID) StateName() string { return nameOf(m.State, CMStateName) }

// PSName names m's port space.
func (m CMID) PSName() string {
	if m.PS == nil {
		return ""
	}
	return PSName(*m.PS)
}

// TypeName names s's type.
func (s SRQ) TypeName() string { return nameOf(s.Type, SRQTypeName) }

func nameOf(v *uint8, name func(uint8) string) string {
	if v == nil {
		return ""
	}
	return name(*v)
}

func pick(v uint8, names ...string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return "UNKNOWN"
}

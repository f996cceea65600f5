package verbs

// MODIFY_QP attributes and the RESET -> INIT -> RTR -> RTS transitions
// (drivers/infiniband/core/verbs.c qp_state_table decides which
// attributes each transition requires per QP type).

import "github.com/rdmactl/rdmactl/internal/vocab"

// QPState is enum ib_qp_state.
type QPState uint8

const (
	QPStateReset QPState = 0
	QPStateInit  QPState = 1
	QPStateRTR   QPState = 2
	QPStateRTS   QPState = 3
	QPStateSQD   QPState = 4
	QPStateSQE   QPState = 5
	QPStateErr   QPState = 6
)

func (s QPState) String() string {
	switch s {
	case QPStateReset:
		return "RESET"
	case QPStateInit:
		return "INIT"
	case QPStateRTR:
		return "RTR"
	case QPStateRTS:
		return "RTS"
	case QPStateSQD:
		return "SQD"
	case QPStateSQE:
		return "SQE"
	case QPStateErr:
		return "ERR"
	}
	return "QPState(" + itoa(uint64(s)) + ")"
}

// QPAttrMask selects the ModifyAttr fields a Modify call sends (enum
// ib_qp_attr_mask).
type QPAttrMask uint32

const (
	QPAttrState           QPAttrMask = 1 << 0
	QPAttrCurState        QPAttrMask = 1 << 1
	QPAttrAccessFlags     QPAttrMask = 1 << 3
	QPAttrPKeyIndex       QPAttrMask = 1 << 4
	QPAttrPort            QPAttrMask = 1 << 5
	QPAttrQKey            QPAttrMask = 1 << 6
	QPAttrAV              QPAttrMask = 1 << 7
	QPAttrPathMTU         QPAttrMask = 1 << 8
	QPAttrTimeout         QPAttrMask = 1 << 9
	QPAttrRetryCnt        QPAttrMask = 1 << 10
	QPAttrRNRRetry        QPAttrMask = 1 << 11
	QPAttrRQPSN           QPAttrMask = 1 << 12
	QPAttrMaxQPRdAtomic   QPAttrMask = 1 << 13
	QPAttrMinRNRTimer     QPAttrMask = 1 << 15
	QPAttrSQPSN           QPAttrMask = 1 << 16
	QPAttrMaxDestRdAtomic QPAttrMask = 1 << 17
	QPAttrDestQPN         QPAttrMask = 1 << 20
)

// ModifyAttr is the subset of ibv_qp_attr that Modify sends; the mask says
// which fields the kernel reads.
type ModifyAttr struct {
	State           QPState
	CurState        QPState
	PathMTU         vocab.MTU
	QKey            uint32
	RQPSN           uint32 // 24 bits: the peer's SQ PSN
	SQPSN           uint32 // 24 bits
	DestQPN         uint32
	Access          Access // what the peer may do: AccessRemoteWrite, AccessRemoteRead, ...
	PKeyIndex       uint16
	Port            uint8
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8 // IB encoding: 12 = 0.64 ms
	Timeout         uint8 // 4.096 µs * 2^Timeout; 0 disables the retransmit timer
	RetryCnt        uint8
	RNRRetry        uint8 // 7 = retry forever
	Dest            AHAttr
}

func buildModifyQP(qpHandle uint32, a *ModifyAttr, mask QPAttrMask) abiModifyQP {
	m := abiModifyQP{
		QPHandle:        qpHandle,
		AttrMask:        uint32(mask),
		QKey:            a.QKey,
		RQPSN:           a.RQPSN & 0xffffff,
		SQPSN:           a.SQPSN & 0xffffff,
		DestQPNum:       a.DestQPN,
		QPAccessFlags:   uint32(a.Access),
		PKeyIndex:       a.PKeyIndex,
		QPState:         uint8(a.State),
		CurQPState:      uint8(a.CurState),
		PathMTU:         uint8(a.PathMTU),
		MaxRdAtomic:     a.MaxRdAtomic,
		MaxDestRdAtomic: a.MaxDestRdAtomic,
		MinRNRTimer:     a.MinRNRTimer,
		PortNum:         a.Port,
		Timeout:         a.Timeout,
		RetryCnt:        a.RetryCnt,
		RNRRetry:        a.RNRRetry,
	}
	if mask&QPAttrAV != 0 {
		m.Dest = a.Dest.qpDest()
	}
	return m
}

// InitAttr are the RESET -> INIT attributes.
type InitAttr struct {
	Port      uint8  // 1-based
	PKeyIndex uint16 // 0 on RoCE
	Access    Access // RC/UC: what the peer may do (UC ignores AccessRemoteRead)
	QKey      uint32 // UD only
}

// RTRAttr are the INIT -> RTR attributes (RC and UC; UD needs none).
type RTRAttr struct {
	Dest            AHAttr // the peer: on RoCE IsGlobal, DGID, SGIDIndex, Port
	PathMTU         vocab.MTU
	DestQPN         uint32
	RQPSN           uint32 // the peer's SQ PSN
	MaxDestRdAtomic uint8  // RC: incoming RDMA READs in flight (>= 1 to serve READs)
	MinRNRTimer     uint8  // RC
}

// RTSAttr are the RTR -> RTS attributes.
type RTSAttr struct {
	SQPSN       uint32
	Timeout     uint8 // RC
	RetryCnt    uint8 // RC
	RNRRetry    uint8 // RC
	MaxRdAtomic uint8 // RC: outgoing RDMA READs in flight
}

// initMods, rtrMods and rtsMods return the attributes and mask the kernel
// requires for a transition of a QP of type t (and nothing it forbids).
func initMods(t QPType, a InitAttr) (ModifyAttr, QPAttrMask) {
	m := ModifyAttr{State: QPStateInit, Port: a.Port, PKeyIndex: a.PKeyIndex}
	mask := QPAttrState | QPAttrPKeyIndex | QPAttrPort
	if t == QPTypeUD {
		m.QKey = a.QKey
		return m, mask | QPAttrQKey
	}
	m.Access = a.Access
	return m, mask | QPAttrAccessFlags
}

func rtrMods(t QPType, a RTRAttr) (ModifyAttr, QPAttrMask) {
	m := ModifyAttr{State: QPStateRTR}
	if t == QPTypeUD {
		return m, QPAttrState
	}
	m.Dest, m.PathMTU, m.DestQPN, m.RQPSN = a.Dest, a.PathMTU, a.DestQPN, a.RQPSN
	mask := QPAttrState | QPAttrAV | QPAttrPathMTU | QPAttrDestQPN | QPAttrRQPSN
	if t == QPTypeRC {
		m.MaxDestRdAtomic, m.MinRNRTimer = a.MaxDestRdAtomic, a.MinRNRTimer
		mask |= QPAttrMaxDestRdAtomic | QPAttrMinRNRTimer
	}
	return m, mask
}

func rtsMods(t QPType, a RTSAttr) (ModifyAttr, QPAttrMask) {
	m := ModifyAttr{State: QPStateRTS, SQPSN: a.SQPSN}
	mask := QPAttrState | QPAttrSQPSN
	if t == QPTypeRC {
		m.Timeout, m.RetryCnt, m.RNRRetry, m.MaxRdAtomic = a.Timeout, a.RetryCnt, a.RNRRetry, a.MaxRdAtomic
		mask |= QPAttrTimeout | QPAttrRetryCnt | QPAttrRNRRetry | QPAttrMaxQPRdAtomic
	}
	return m, mask
}

// PathInfo is what each side of a connection tells the other out of band.
type PathInfo struct {
	QPN uint32
	PSN uint32   // the side's initial SQ PSN (24 bits)
	GID [16]byte // RoCE / global routing
	LID uint16   // InfiniBand
}

// ConnectAttr drives QP.Connect. Zero values get the defaults noted.
type ConnectAttr struct {
	Port      uint8  // default 1
	SGIDIndex uint8  // the local RoCE v2 GID for Remote.GID's family
	Global    bool   // carry a GRH; forced on when Remote.GID is non-zero (RoCE)
	Access    Access // default AccessAll (local write, remote write and read)
	// PathMTU defaults to 1024. Use the port's active MTU: rxe accepts
	// anything up to its max_mtu (4096) whatever the netdev allows.
	PathMTU vocab.MTU
	QKey    uint32 // UD
	Local   PathInfo
	Remote  PathInfo

	HopLimit     uint8 // default 64
	TrafficClass uint8
	FlowLabel    uint32 // 20 bits
	SL           uint8
	PKeyIndex    uint16
	Timeout      uint8 // default 14 (~67 ms)
	RetryCnt     uint8 // default 7
	RNRRetry     uint8 // default 7 (infinite)
	MinRNRTimer  uint8 // default 12 (0.64 ms)
	RdAtomic     uint8 // outgoing and incoming READs in flight, default 1
}

func (c *ConnectAttr) withDefaults() ConnectAttr {
	a := *c
	def := func(v *uint8, d uint8) {
		if *v == 0 {
			*v = d
		}
	}
	def(&a.Port, 1)
	def(&a.HopLimit, 64)
	def(&a.Timeout, 14)
	def(&a.RetryCnt, 7)
	def(&a.RNRRetry, 7)
	def(&a.MinRNRTimer, 12)
	def(&a.RdAtomic, 1)
	if a.Access == 0 {
		a.Access = AccessAll
	}
	if a.PathMTU == 0 {
		a.PathMTU = vocab.MTU1024
	}
	if a.Remote.GID != ([16]byte{}) {
		a.Global = true
	}
	return a
}

func (c *ConnectAttr) stages() (InitAttr, RTRAttr, RTSAttr) {
	return InitAttr{Port: c.Port, Access: c.Access, QKey: c.QKey, PKeyIndex: c.PKeyIndex},
		RTRAttr{
			Dest: AHAttr{Port: c.Port, IsGlobal: c.Global, DGID: c.Remote.GID, SGIDIndex: c.SGIDIndex,
				HopLimit: c.HopLimit, TrafficClass: c.TrafficClass, FlowLabel: c.FlowLabel, DLID: c.Remote.LID, SL: c.SL},
			PathMTU: c.PathMTU, DestQPN: c.Remote.QPN, RQPSN: c.Remote.PSN,
			MaxDestRdAtomic: c.RdAtomic, MinRNRTimer: c.MinRNRTimer,
		},
		RTSAttr{SQPSN: c.Local.PSN, Timeout: c.Timeout, RetryCnt: c.RetryCnt, RNRRetry: c.RNRRetry, MaxRdAtomic: c.RdAtomic}
}

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return string(b[i:])
}

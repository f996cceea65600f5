package verbs

import "unsafe"

// Core uverbs request/response structs for CQs, QPs and AHs, declared with
// the exact layout of ib_user_verbs.h (checked against gcc by
// qp_layout_test.go). Requests are sent as their raw bytes after the
// 8-byte cmd_hdr; the kernel writes responses at the `response` address.

// struct ib_uverbs_create_cq (32 B).
type abiCreateCQ struct {
	Response    uint64
	UserHandle  uint64
	CQE         uint32
	CompVector  uint32
	CompChannel int32 // -1: none
	Reserved    uint32
}

// struct ib_uverbs_create_cq_resp (8 B); driver data follows.
type abiCreateCQResp struct {
	CQHandle uint32
	CQE      uint32
}

// struct ib_uverbs_destroy_cq (16 B).
type abiDestroyCQ struct {
	Response uint64
	CQHandle uint32
	Reserved uint32
}

// struct ib_uverbs_destroy_cq_resp (8 B).
type abiDestroyCQResp struct {
	CompEventsReported  uint32
	AsyncEventsReported uint32
}

// struct ib_uverbs_create_qp (56 B).
type abiCreateQP struct {
	Response      uint64
	UserHandle    uint64
	PDHandle      uint32
	SendCQHandle  uint32
	RecvCQHandle  uint32
	SRQHandle     uint32
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	SQSigAll      uint8
	QPType        uint8
	IsSRQ         uint8
	Reserved      uint8
}

// struct ib_uverbs_create_qp_resp (32 B); driver data follows.
type abiCreateQPResp struct {
	QPHandle      uint32
	QPN           uint32
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	Reserved      uint32
}

// struct ib_uverbs_destroy_qp (16 B).
type abiDestroyQP struct {
	Response uint64
	QPHandle uint32
	Reserved uint32
}

// struct ib_uverbs_destroy_qp_resp (4 B).
type abiDestroyQPResp struct {
	EventsReported uint32
}

// struct ib_uverbs_qp_dest (32 B).
type abiQPDest struct {
	DGID         [16]byte
	FlowLabel    uint32
	DLID         uint16
	Reserved     uint16
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
}

// struct ib_uverbs_modify_qp (112 B). No response.
type abiModifyQP struct {
	Dest             abiQPDest
	AltDest          abiQPDest
	QPHandle         uint32
	AttrMask         uint32
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	QPState          uint8
	CurQPState       uint8
	PathMTU          uint8
	PathMigState     uint8
	EnSQDAsyncNotify uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [2]uint8
}

// struct ib_uverbs_ah_attr (32 B), with its ib_uverbs_global_route.
type abiAHAttr struct {
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	GRHReserved  uint8
	DLID         uint16
	SL           uint8
	SrcPathBits  uint8
	StaticRate   uint8
	IsGlobal     uint8
	PortNum      uint8
	Reserved     uint8
}

// struct ib_uverbs_create_ah (56 B).
type abiCreateAH struct {
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	Reserved   uint32
	Attr       abiAHAttr
}

// struct ib_uverbs_create_ah_resp (4 B); driver data follows.
type abiCreateAHResp struct {
	AHHandle uint32
}

// struct ib_uverbs_destroy_ah (4 B). No response.
type abiDestroyAH struct {
	AHHandle uint32
}

// Compile-time size checks: a wrong size fails the build.
var (
	_ [56 - unsafe.Sizeof(abiCreateQP{})]struct{}
	_ [unsafe.Sizeof(abiCreateQP{}) - 56]struct{}
	_ [112 - unsafe.Sizeof(abiModifyQP{})]struct{}
	_ [unsafe.Sizeof(abiModifyQP{}) - 112]struct{}
	_ [56 - unsafe.Sizeof(abiCreateAH{})]struct{}
	_ [unsafe.Sizeof(abiCreateAH{}) - 56]struct{}
	_ [32 - unsafe.Sizeof(abiCreateCQ{})]struct{}
	_ [unsafe.Sizeof(abiCreateCQ{}) - 32]struct{}
)

func boolU8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func (a *AHAttr) qpDest() abiQPDest {
	return abiQPDest{DGID: a.DGID, FlowLabel: a.FlowLabel, DLID: a.DLID, SGIDIndex: a.SGIDIndex,
		HopLimit: a.HopLimit, TrafficClass: a.TrafficClass, SL: a.SL, SrcPathBits: a.SrcPathBits,
		StaticRate: a.StaticRate, IsGlobal: boolU8(a.IsGlobal), PortNum: a.Port}
}

func (a *AHAttr) ahAttr() abiAHAttr {
	return abiAHAttr{DGID: a.DGID, FlowLabel: a.FlowLabel, SGIDIndex: a.SGIDIndex, HopLimit: a.HopLimit,
		TrafficClass: a.TrafficClass, DLID: a.DLID, SL: a.SL, SrcPathBits: a.SrcPathBits,
		StaticRate: a.StaticRate, IsGlobal: boolU8(a.IsGlobal), PortNum: a.Port}
}

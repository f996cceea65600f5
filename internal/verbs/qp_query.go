package verbs

import (
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// QUERY_QP: the attributes the kernel holds for a QP, as it reports them
// (ib_uverbs_query_qp). Used to check that what MODIFY_QP asked for (the
// path's SL and traffic class, the retransmit timeout) is what the QP
// got: on RoCE without VLANs the SL never reaches the wire, so the
// kernel's answer is the only place to see it.

// struct ib_uverbs_query_qp (16 B).
type abiQueryQP struct {
	Response uint64
	QPHandle uint32
	AttrMask uint32
}

// struct ib_uverbs_query_qp_resp (128 B); driver data follows (none used).
type abiQueryQPResp struct {
	Dest            abiQPDest
	AltDest         abiQPDest
	MaxSendWR       uint32
	MaxRecvWR       uint32
	MaxSendSGE      uint32
	MaxRecvSGE      uint32
	MaxInlineData   uint32
	QKey            uint32
	RQPSN           uint32
	SQPSN           uint32
	DestQPNum       uint32
	QPAccessFlags   uint32
	PKeyIndex       uint16
	AltPKeyIndex    uint16
	QPState         uint8
	CurQPState      uint8
	PathMTU         uint8
	PathMigState    uint8
	SQDraining      uint8
	MaxRdAtomic     uint8
	MaxDestRdAtomic uint8
	MinRNRTimer     uint8
	PortNum         uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	AltPortNum      uint8
	AltTimeout      uint8
	SQSigAll        uint8
	Reserved        [5]uint8
}

var (
	_ [16 - unsafe.Sizeof(abiQueryQP{})]struct{}
	_ [unsafe.Sizeof(abiQueryQP{}) - 16]struct{}
	_ [128 - unsafe.Sizeof(abiQueryQPResp{})]struct{}
	_ [unsafe.Sizeof(abiQueryQPResp{}) - 128]struct{}
)

// QueriedQP is the kernel's view of a QP: the fields of ibv_qp_attr
// that QUERY_QP fills, the MODIFY_QP attributes plus the queues' sizes.
// Dest is the primary path; its GRH fields are meaningful when
// Dest.IsGlobal.
type QueriedQP struct {
	ModifyAttr
	Caps QPCaps
}

// allQPAttrs asks for every attribute (ib_uverbs_query_qp's attr_mask is
// passed to the driver, which may skip what is not asked for).
const allQPAttrs = 0x1fffff

// Query runs QUERY_QP.
func (qp *QP) Query() (*QueriedQP, error) {
	if qp.prov == nil {
		return nil, ErrClosed
	}
	cmd := abiQueryQP{QPHandle: qp.handle, AttrMask: allQPAttrs}
	var r abiQueryQPResp
	if err := qp.ctx.writeCmd(cmdQueryQP, rawmem.Of(&cmd), rawmem.Of(&r), nil, nil); err != nil {
		return nil, err
	}
	return r.decode(), nil
}

func (r *abiQueryQPResp) decode() *QueriedQP {
	d := &r.Dest
	return &QueriedQP{ModifyAttr: ModifyAttr{
		State: QPState(r.QPState), CurState: QPState(r.CurQPState), PathMTU: vocab.MTU(r.PathMTU), QKey: r.QKey, RQPSN: r.RQPSN, SQPSN: r.SQPSN,
		DestQPN: r.DestQPNum, Access: Access(r.QPAccessFlags), PKeyIndex: r.PKeyIndex, Port: r.PortNum,
		MaxRdAtomic: r.MaxRdAtomic, MaxDestRdAtomic: r.MaxDestRdAtomic, MinRNRTimer: r.MinRNRTimer,
		Timeout: r.Timeout, RetryCnt: r.RetryCnt, RNRRetry: r.RNRRetry,
		Dest: AHAttr{Port: d.PortNum, IsGlobal: d.IsGlobal != 0, DGID: d.DGID, SGIDIndex: d.SGIDIndex,
			HopLimit: d.HopLimit, TrafficClass: d.TrafficClass, FlowLabel: d.FlowLabel, DLID: d.DLID,
			SL: d.SL, SrcPathBits: d.SrcPathBits, StaticRate: d.StaticRate}},
		Caps: QPCaps{MaxSendWR: r.MaxSendWR, MaxRecvWR: r.MaxRecvWR, MaxSendSGE: r.MaxSendSGE,
			MaxRecvSGE: r.MaxRecvSGE, MaxInlineData: r.MaxInlineData},
	}
}

package rdmacm

import (
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// INIT_QP_ATTR's answer (struct ib_uverbs_qp_attr) reaches verbs'
// MODIFY_QP attributes whole: mask, states, PSNs, READ depths, timers
// and the address vector with its GRH.
func TestDecodeQPAttr(t *testing.T) {
	r := uverbsQPAttr{QPAttrMask: 1<<0 | 1<<21, QPState: StateRTR, CurQPState: StateInit, PathMTU: 3,
		QKey: 7, RQPSN: 0x123456, SQPSN: 0x654321, DestQPNum: 0x17, QPAccessFlags: 0xe, PKeyIndex: 2,
		MaxRdAtomic: 8, MaxDestRdAtomic: 16, MinRNRTimer: 12, PortNum: 1, Timeout: 14, RetryCnt: 7, RNRRetry: 6}
	r.AHAttr.GRH.DGID[15] = 1
	r.AHAttr.GRH.SGIDIndex, r.AHAttr.GRH.HopLimit, r.AHAttr.GRH.TrafficClass, r.AHAttr.GRH.FlowLabel = 1, 64, 0x60, 0xabc
	r.AHAttr.DLID, r.AHAttr.SL, r.AHAttr.SrcPathBits, r.AHAttr.StaticRate, r.AHAttr.IsGlobal, r.AHAttr.PortNum = 9, 3, 1, 2, 1, 1
	a := decodeQPAttr(&r)
	want := QPAttr{Mask: 1<<0 | 1<<21, ModifyAttr: verbs.ModifyAttr{State: verbs.QPStateRTR, CurState: verbs.QPStateInit,
		PathMTU: 3, QKey: 7, RQPSN: 0x123456, SQPSN: 0x654321, DestQPN: 0x17, Access: 0xe, PKeyIndex: 2,
		Port: 1, MaxRdAtomic: 8, MaxDestRdAtomic: 16, MinRNRTimer: 12, Timeout: 14, RetryCnt: 7, RNRRetry: 6,
		Dest: verbs.AHAttr{DGID: [16]byte{15: 1}, FlowLabel: 0xabc, SGIDIndex: 1, HopLimit: 64, TrafficClass: 0x60,
			DLID: 9, SL: 3, SrcPathBits: 1, StaticRate: 2, IsGlobal: true, Port: 1}}}
	if a != want {
		t.Fatalf("decoded\n%+v\nwant\n%+v", a, want)
	}
}

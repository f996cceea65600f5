package rxe

import (
	"testing"

	"github.com/rdmactl/rdmactl/internal/testexec"
)

// TestRxeLayoutAgainstC compiles testdata/layout/rxe_layout.c with gcc
// (testexec.BuildC) against the system's rdma/rdma_user_rxe.h and
// compares every offset and size it prints with the rxe_*.go constants.
// Without gcc it fails, as the other oracles do.
func TestRxeLayoutAgainstC(t *testing.T) {
	consts := map[string]uintptr{
		"rxe_queue_buf.log2_elem_size":        rxeRingLog2Off,
		"rxe_queue_buf.index_mask":            rxeRingMaskOff,
		"rxe_queue_buf.producer_index":        rxeRingProdOff,
		"rxe_queue_buf.consumer_index":        rxeRingConsOff,
		"rxe_queue_buf.data":                  rxeRingDataOff,
		"rxe_send_wqe":                        rxeSWQEHdrSize,
		"rxe_send_wr":                         rxeSWQEWRSize,
		"rxe_send_wqe.wr.wr_id":               rxeSWQEWRID,
		"rxe_send_wqe.wr.opcode":              rxeSWQEOpcode,
		"rxe_send_wqe.wr.send_flags":          rxeSWQESendFlags,
		"rxe_send_wqe.wr.ex.imm_data":         rxeSWQEImm,
		"rxe_send_wqe.wr.wr.rdma.remote_addr": rxeSWQERemoteAddr,
		"rxe_send_wqe.wr.wr.rdma.rkey":        rxeSWQERKey,
		"rxe_send_wqe.wr.wr.ud.remote_qpn":    rxeSWQEUDQPN,
		"rxe_send_wqe.wr.wr.ud.remote_qkey":   rxeSWQEUDQKey,
		"rxe_send_wqe.wr.wr.ud.pkey_index":    rxeSWQEUDPKey,
		"rxe_send_wqe.wr.wr.ud.ah_num":        rxeSWQEUDAHNum,
		"rxe_send_wqe.status":                 rxeSWQEStatus,
		"rxe_send_wqe.state":                  rxeSWQEState,
		"rxe_send_wqe.iova":                   rxeSWQEIOVA,
		"rxe_send_wqe.ssn":                    rxeSWQESSN,
		"rxe_send_wqe.dma.length":             rxeSWQEDMALength,
		"rxe_send_wqe.dma.resid":              rxeSWQEDMAResid,
		"rxe_send_wqe.dma.num_sge":            rxeSWQEDMANumSGE,
		"rxe_send_wqe.dma.sge":                rxeSWQEHdrSize,
		"rxe_recv_wqe":                        rxeRWQEHdrSize,
		"rxe_recv_wqe.wr_id":                  rxeRWQEWRID,
		"rxe_recv_wqe.dma.length":             rxeRWQEDMALength,
		"rxe_recv_wqe.dma.resid":              rxeRWQEDMAResid,
		"rxe_recv_wqe.dma.num_sge":            rxeRWQEDMANumSGE,
		"rxe_recv_wqe.dma.sge":                rxeRWQEHdrSize,
		"rxe_sge":                             rxeSGESize,
		"rxe_create_cq_resp":                  16,
		"rxe_create_qp_resp":                  32,
		"rxe_create_qp_resp.rq_mi":            0,
		"rxe_create_qp_resp.sq_mi":            16,
		"rxe_create_ah_resp":                  8,
		"rxe_create_ah_resp.ah_num":           0,
		// atomic.go, srq.go
		"rxe_send_wqe.wr.wr.atomic.remote_addr": rxeSWQEAtomicAddr,
		"rxe_send_wqe.wr.wr.atomic.compare_add": rxeSWQEAtomicCompare,
		"rxe_send_wqe.wr.wr.atomic.swap":        rxeSWQEAtomicSwap,
		"rxe_send_wqe.wr.wr.atomic.rkey":        rxeSWQEAtomicRKey,
		"rxe_create_srq_resp":                   rxeCreateSRQRespSize,
		"rxe_create_srq_resp.mi":                0,
		"rxe_create_srq_resp.srq_num":           16,
		"mminfo.offset":                         0,
		"mminfo.size":                           8,
	}
	checked := 0
	for _, f := range testexec.LayoutFacts(t, "testdata/layout/rxe_layout.c") {
		c, ok := consts[f.Name]
		if !ok {
			t.Errorf("%s: no Go counterpart declared in the test", f.Name)
			continue
		}
		want := uintptr(f.Off)
		if !f.IsField {
			want = uintptr(f.Size) // a struct: its size
		}
		if c != want {
			t.Errorf("%s: Go has %d, C has %d", f.Name, c, want)
		}
		checked++
	}
	if checked != len(consts) {
		t.Errorf("%d layout facts compared, %d declared", checked, len(consts))
	}
}

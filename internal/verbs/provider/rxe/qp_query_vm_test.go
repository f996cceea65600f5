//go:build vmtest

package rxe

import (
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestVMQueryQP: QUERY_QP reports what MODIFY_QP set on an RC pair (the
// path's traffic class and flow label, the RTS timeout and retry count,
// the P_Key index), on each side its own values, so that a field read
// from the wrong offset or a value the kernel dropped shows. The SL is
// accepted but not kept by rxe: its address vector holds the GRH and the
// port only (rxe_av_from_attr), so QUERY_QP answers 0 whatever was set.
// RoCE without VLANs has nowhere to carry an SL; the test pins that fact.
func TestVMQueryQP(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe0", verbs.QPTypeRC, 4096, 4, 0)
	b := newSide(t, "rxe1", verbs.QPTypeRC, 4096, 4, 0)
	ai, bi := a.info(100), b.info(200)
	ca := verbs.ConnectAttr{SGIDIndex: vmGIDIndex, PathMTU: vmMTU, Local: ai, Remote: bi,
		TrafficClass: 0x68, FlowLabel: 0x12345, SL: 3, Timeout: 18, RetryCnt: 5}
	cb := verbs.ConnectAttr{SGIDIndex: vmGIDIndex, PathMTU: vmMTU, Local: bi, Remote: ai,
		TrafficClass: 0xb9, SL: 15, Timeout: 31, RetryCnt: 1}
	if err := a.qp.Connect(ca); err != nil {
		t.Fatal(err)
	}
	if err := b.qp.Connect(cb); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    *side
		want verbs.ConnectAttr
	}{{a, ca}, {b, cb}} {
		q, err := c.s.qp.Query()
		if err != nil {
			t.Fatalf("%s: QUERY_QP: %v", c.s.dev, err)
		}
		w := c.want
		d := q.Dest
		if q.State != verbs.QPStateRTS || q.DestQPN != w.Remote.QPN || q.SQPSN != w.Local.PSN || q.RQPSN != w.Remote.PSN ||
			q.PathMTU != vmMTU || !d.IsGlobal || d.DGID != w.Remote.GID || d.SGIDIndex != vmGIDIndex {
			t.Errorf("%s: QUERY_QP %+v; want RTS towards QPN %d, PSNs %d/%d, MTU %v", c.s.dev, q, w.Remote.QPN, w.Local.PSN, w.Remote.PSN, vmMTU)
		}
		if d.TrafficClass != w.TrafficClass || d.SL != 0 || q.Timeout != w.Timeout || q.RetryCnt != w.RetryCnt || q.PKeyIndex != 0 {
			t.Errorf("%s: QUERY_QP tclass %#x sl %d timeout %d retry %d pkey_index %d; want %#x 0 (rxe keeps no SL; %d was set) %d %d 0",
				c.s.dev, d.TrafficClass, d.SL, q.Timeout, q.RetryCnt, q.PKeyIndex, w.TrafficClass, w.SL, w.Timeout, w.RetryCnt)
		}
		if w.FlowLabel != 0 && d.FlowLabel != w.FlowLabel {
			t.Errorf("%s: QUERY_QP flow label %#x, set %#x", c.s.dev, d.FlowLabel, w.FlowLabel)
		}
		t.Logf("%s: tclass %#x flow_label %#x sl %d timeout %d retry_cnt %d rnr_retry %d pkey_index %d", c.s.dev,
			d.TrafficClass, d.FlowLabel, d.SL, q.Timeout, q.RetryCnt, q.RNRRetry, q.PKeyIndex)
	}
}

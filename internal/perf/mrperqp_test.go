package perf

import (
	"sync/atomic"
	"testing"
)

// TestMRPerQPKeys: with a region a QP (--mr_per_qp) each QP's send and
// receive work requests carry its own lkey; without, every QP the one.
func TestMRPerQPKeys(t *testing.T) {
	for _, perQP := range []bool{false, true} {
		res := &Resources{QPs: make([]QP, 3), LKey: 7, RKey: 8}
		if perQP {
			res.QPKeys = []QPKeys{{LKey: 10, RKey: 20}, {LKey: 11, RKey: 21}, {LKey: 12, RKey: 22}}
		}
		p := &Params{Verb: VerbSend, Test: TestBW, Iters: 10, QPs: 3, PostList: 1, TxDepth: 4, CQMod: 1}
		r := newRunner(p, res, make([]Dest, 3), nil, 0, new(atomic.Bool))
		r.prepare(64)
		for i := 0; i < 3; i++ {
			wantL, wantR := uint32(7), uint32(8)
			if perQP {
				wantL, wantR = uint32(10+i), uint32(20+i)
			}
			if got := r.wrs[i][0].SGE.LKey; got != wantL {
				t.Errorf("perQP %v: QP %d send lkey %d, want %d", perQP, i, got, wantL)
			}
			if got := r.rwrs[i][0].SGE.LKey; got != wantL {
				t.Errorf("perQP %v: QP %d receive lkey %d, want %d", perQP, i, got, wantL)
			}
			if got := res.rkey(i); got != wantR {
				t.Errorf("perQP %v: QP %d rkey %d, want %d", perQP, i, got, wantR)
			}
		}
	}
}

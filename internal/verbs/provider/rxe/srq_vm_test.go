//go:build vmtest

package rxe

import (
	"fmt"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestRxeSRQ: two RC QPs on rxe0 share one SRQ; rxe1's two QPs send to
// them. Each message takes the next receive of the SRQ whichever QP it
// came to, its completion names that QP, and the bytes received are the
// bytes sent. The SRQ refuses to close while its QPs are open, and the
// QPs refuse receives of their own.
func TestRxeSRQ(t *testing.T) {
	checkNoLeaks(t)
	const n = 24
	a := newSide(t, "rxe1", verbs.QPTypeRC, 2*vmHalf, 16, 0)
	ctx := vmOpen(t, "rxe0")
	pd := vmAllocPD(t, ctx)
	mr := vmRegMR(t, ctx, pd, 2*vmHalf)
	cq, err := ctx.CreateCQ(64)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cq.Close() })
	srq, err := ctx.CreateSRQ(pd, verbs.SRQAttr{MaxWR: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srq.Close(); err != nil {
			t.Errorf("SRQ close: %v", err)
		}
	})
	if srq.MaxWR() < n {
		t.Fatalf("SRQ holds %d, want >= %d", srq.MaxWR(), n)
	}
	var bq [2]*side
	for i := range bq {
		qp, err := ctx.CreateQP(pd, verbs.QPAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, SRQ: srq})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = qp.Close() })
		bq[i] = &side{dev: "rxe0", ctx: ctx, pd: pd, mr: mr, cq: cq, qp: qp, gid: vmGID(t, "rxe0", vmGIDIndex), wcs: make([]verbs.WC, 16)}
	}
	if err := bq[0].qp.PostRecv([]verbs.RecvWR{{WRID: 1, SGE: verbs.SGE{Addr: mr.addr(0), Length: 8, LKey: mr.lkey}}}); err == nil {
		t.Fatal("a QP on an SRQ accepted a receive of its own")
	}
	if err := srq.Close(); err == nil {
		t.Fatal("SRQ closed under its QPs")
	}
	// a's second QP, to bq[1].
	a2q, err := a.ctx.CreateQP(a.pd, verbs.QPAttr{Type: verbs.QPTypeRC, SendCQ: a.cq, RecvCQ: a.cq, MaxSendWR: 16, MaxRecvWR: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a2q.Close() })
	a2 := &side{dev: "rxe1", ctx: a.ctx, pd: a.pd, mr: a.mr, cq: a.cq, qp: a2q, gid: a.gid, wcs: a.wcs}
	connect(t, a, bq[0])
	connect(t, a2, bq[1])
	const sz = 256
	for i := 0; i < n; i++ {
		if err := srq.PostRecv([]verbs.RecvWR{{WRID: uint64(100 + i), SGE: verbs.SGE{Addr: mr.addr(vmHalf + i*sz), Length: sz, LKey: mr.lkey}}}); err != nil {
			t.Fatalf("SRQ post %d: %v", i, err)
		}
	}
	for i := 0; i < n; i++ {
		src := a.mr.buf[i*sz : (i+1)*sz]
		fill(src, 7000+i)
		from := []*side{a, a2}[i%2]
		if err := from.qp.PostSend([]verbs.SendWR{{WRID: uint64(i + 1), Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
			SGE: verbs.SGE{Addr: a.mr.addr(i * sz), Length: sz, LKey: a.mr.lkey}}}); err != nil {
			t.Fatal(err)
		}
		a.waitWC(t, uint64(i+1))
		wc := bq[0].waitWC(t, uint64(100+i)) // the SRQ's receives are taken in order
		if want := bq[i%2].qp.QPN(); wc.QPNum != want || wc.Opcode != verbs.WCRecv || wc.ByteLen != sz {
			t.Fatalf("message %d: WC %+v, want a %d-byte receive on QP %#x", i, wc, sz, want)
		}
		mustEqual(t, fmt.Sprintf("message %d", i), mr.buf[vmHalf+i*sz:vmHalf+(i+1)*sz], src)
	}
}

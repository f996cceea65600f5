package rxe

import (
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/testexec"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/verbstest"
)

// putRxeCQE writes wc into the next CQ slot as the kernel does.
func putRxeCQE(cq *rxeCQ, wc verbs.WC) {
	r := cq.ring
	p := r.loadProd()
	encodeCQE(r.slot(p), &wc)
	r.storeProd(r.next(p))
}

// TestRxeCQIndexFaults: a CQ ring whose producer or consumer index lies
// beyond the index mask. Before the checks Poll never reached a masked
// consumer index equal to prod, and handed out stale slots as completions
// (or read past the ring).
func TestRxeCQIndexFaults(t *testing.T) {
	for _, c := range []struct {
		name  string
		prod  bool
		value uint32
		text  string
	}{
		{"prod mask+1", true, 16, "producer index 0x10 beyond index_mask 0xf"},
		{"prod huge", true, 0xffffffff, "producer index 0xffffffff beyond index_mask 0xf"},
		{"cons mask+1", false, 16, "consumer index 0x10 beyond index_mask 0xf"},
		{"cons huge", false, 0x7ffffff0, "consumer index 0x7ffffff0 beyond index_mask 0xf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testexec.RunIsolated(t, func(t *testing.T) {
				qp, cq, k := newSyncFakeRxe(t, 8, 16)
				if err := qp.PostSend([]verbs.SendWR{rxeWrite64}); err != nil {
					t.Fatal(err)
				}
				k.step()
				if c.prod {
					cq.ring.storeProd(c.value)
				} else {
					cq.ring.storeCons(c.value)
				}
				wcs := make([]verbs.WC, 4)
				n, err := cq.Poll(wcs)
				if n != 0 {
					t.Errorf("Poll returned %d completions from a corrupt ring", n)
				}
				qe := verbstest.WantQueueError(t, err, map[bool]verbs.QueueFault{true: verbs.FaultProducerIndex, false: verbs.FaultConsumerIndex}[c.prod],
					"rxefake0", "rxe CQ ring", c.text)
				// Refused from now on, through the CQ wrapper too, even
				// once the indices look sane again.
				cq.ring.storeProd(0)
				cq.ring.storeCons(0)
				if n, err := verbs.NewUnownedCQ(cq, nil, 0).Poll(wcs); n != 0 || err != error(qe) {
					t.Errorf("second Poll: %d, %v; want 0 and the same error", n, err)
				}
			})
		})
	}
}

// TestRxeWQIndexFaults: SQ and RQ rings whose indices lie beyond the mask.
// Before the checks a producer index beyond the mask was used as a slot
// number: the WQE was written outside the ring (a fault, in the child
// process, for the huge values).
func TestRxeWQIndexFaults(t *testing.T) {
	for _, c := range []struct {
		name      string
		recv      bool
		prod      bool
		value     uint32
		fault     verbs.QueueFault
		ring, txt string
	}{
		{"SQ prod", false, true, 0x7fffffff, verbs.FaultProducerIndex, "rxe SQ ring", "producer index 0x7fffffff beyond index_mask 0x7"},
		{"SQ cons", false, false, 9, verbs.FaultConsumerIndex, "rxe SQ ring", "consumer index 0x9 beyond index_mask 0x7"},
		{"RQ prod", true, true, 0x7fffffff, verbs.FaultProducerIndex, "rxe RQ ring", "producer index 0x7fffffff beyond index_mask 0x7"},
		{"RQ cons", true, false, 0x100, verbs.FaultConsumerIndex, "rxe RQ ring", "consumer index 0x100 beyond index_mask 0x7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			testexec.RunIsolated(t, func(t *testing.T) {
				qp, _, _ := newSyncFakeRxe(t, 8, 16)
				ring := qp.sq
				if c.recv {
					ring = qp.rq
				}
				if c.prod {
					ring.storeProd(c.value)
				} else {
					ring.storeCons(c.value)
				}
				post := func() error {
					if c.recv {
						return qp.PostRecv([]verbs.RecvWR{{WRID: 2, SGE: verbs.SGE{Addr: 0x2000, Length: 64, LKey: 1}}})
					}
					return verbs.NewUnownedQP(qp).PostSend([]verbs.SendWR{rxeWrite64})
				}
				qe := verbstest.WantQueueError(t, post(), c.fault, "rxefake0", c.ring, c.txt, "QP")
				ring.storeProd(0)
				ring.storeCons(0)
				if err := post(); err != error(qe) {
					t.Errorf("second post: %v; want the same error", err)
				}
			})
		})
	}
}

// TestRxeCQEGarbage: CQEs that no work request of ours can have produced.
// The good completions before the bad one are delivered, the bad one is
// an error (before the checks it was delivered as a completion), and the
// CQ refuses further polls.
func TestRxeCQEGarbage(t *testing.T) {
	for _, c := range []struct {
		name  string
		wc    verbs.WC
		noRQ  bool
		fault verbs.QueueFault
		text  string
	}{
		{"bad opcode", verbs.WC{WRID: 7, Opcode: 77, ByteLen: 8, QPNum: fakeQPN}, false, verbs.FaultCompletionOpcode, "completion for QP 0x11 has opcode 77"},
		{"bind MW opcode", verbs.WC{WRID: 7, Opcode: 5, ByteLen: 8, QPNum: fakeQPN}, false, verbs.FaultCompletionOpcode, "opcode 5"},
		{"other QP", verbs.WC{WRID: 7, Opcode: verbs.WCRDMAWrite, ByteLen: 8, QPNum: 99}, false, verbs.FaultCompletionQP, "completion names QP 0x63, which does not complete into this CQ"},
		{"status", verbs.WC{WRID: 7, Status: 0x1234, QPNum: fakeQPN}, false, verbs.FaultCompletionStatus, "status 4660, not an ibv_wc_status"},
		{"recv without RQ", verbs.WC{WRID: 7, Opcode: verbs.WCRecv, ByteLen: 1, QPNum: fakeQPN}, true, verbs.FaultNoReceiveQueue, "receive completion for QP 0x11, which has no receive queue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			qp, cq, k := newSyncFakeRxe(t, 8, 16)
			if c.noRQ {
				qp.rq = nil
				cq.updateSole() // as if created without one
			} else if err := qp.PostRecv([]verbs.RecvWR{{WRID: 2, SGE: verbs.SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
				t.Fatal(err)
			}
			if err := qp.PostSend([]verbs.SendWR{rxeWrite64, rxeWrite64}); err != nil {
				t.Fatal(err)
			}
			k.step() // two good CQEs
			putRxeCQE(cq, c.wc)
			putRxeCQE(cq, verbs.WC{WRID: 8, Opcode: verbs.WCRDMAWrite, ByteLen: 64, QPNum: fakeQPN})
			wcs := make([]verbs.WC, 8)
			n, err := cq.Poll(wcs)
			if n != 2 || wcs[0].WRID != 1 || wcs[1].WRID != 1 {
				t.Errorf("Poll delivered %d completions %+v, want the 2 good ones", n, wcs[:n])
			}
			qe := verbstest.WantQueueError(t, err, c.fault, "rxefake0", "rxe CQ ring", c.text)
			if cq.ring.loadCons() != 2 {
				t.Errorf("consumer index %d, want 2 (past the good CQEs only)", cq.ring.loadCons())
			}
			if n, err := cq.Poll(wcs); n != 0 || err != error(qe) {
				t.Errorf("second Poll: %d, %v; want 0 and the same error", n, err)
			}
		})
	}
}

// TestRxeCQEAccepted: what the kernel does write passes the checks: error
// completions (opcode and length undefined), an RDMA WRITE with immediate
// longer than the receive, late CQEs of a closed QP, and those of a new
// QP that reuses its number.
func TestRxeCQEAccepted(t *testing.T) {
	qp, cq, _ := newSyncFakeRxe(t, 8, 16)
	if err := qp.PostRecv([]verbs.RecvWR{{WRID: 2, SGE: verbs.SGE{Addr: 0x2000, Length: 0, LKey: 1}}}); err != nil {
		t.Fatal(err)
	}
	putRxeCQE(cq, verbs.WC{WRID: 2, Status: 5, QPNum: fakeQPN})                                         // flushed receive: opcode 0
	putRxeCQE(cq, verbs.WC{WRID: 3, Status: 12, Opcode: 0xff, ByteLen: 1 << 30, QPNum: fakeQPN})        // retry exceeded
	putRxeCQE(cq, verbs.WC{WRID: 4, Opcode: verbs.WCRecvRDMAWithImm, ByteLen: 1 << 20, QPNum: fakeQPN}) // write length
	wcs := make([]verbs.WC, 8)
	if n, err := cq.Poll(wcs); n != 3 || err != nil {
		t.Fatalf("Poll: %d, %v", n, err)
	}
	_ = qp.Release()
	putRxeCQE(cq, verbs.WC{WRID: 5, Opcode: 99, ByteLen: 1 << 20, QPNum: fakeQPN}) // the closed QP's
	if n, err := cq.Poll(wcs); n != 1 || err != nil {
		t.Fatalf("late CQE of a closed QP: %d, %v", n, err)
	}
	qp2 := newRxeQP(-1, "rxefake0", verbs.QPTypeRC, fakeQPN, 0, cq, cq)
	cq.attach(qp2)
	putRxeCQE(cq, verbs.WC{WRID: 6, Opcode: verbs.WCRecv, ByteLen: 1, QPNum: fakeQPN}) // qp2 has no receive queue
	if _, err := cq.Poll(wcs); !errors.Is(err, verbs.ErrQueueCorrupt) {
		t.Fatalf("the new QP numbered %d was not checked: %v", fakeQPN, err)
	}
}

// TestDoorbellDeviceGone: a failed rxe doorbell names the device, and
// EIO/ENODEV (what uverbs answers once the device is gone) match
// ErrDeviceGone, on the detached path too (no QP wrapper to translate).
func TestDoorbellDeviceGone(t *testing.T) {
	qp, _, _ := newSyncFakeRxe(t, 8, 16)
	qp.kick = nil
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	qp.fd, qp.db = fd, newRxeDoorbell(1)
	err = qp.PostSend([]verbs.SendWR{rxeWrite64})
	if !errors.Is(err, unix.EBADF) || !strings.HasPrefix(err.Error(), "rxefake0: POST_SEND") {
		t.Errorf("doorbell on a read-only fd: %v", err)
	}
	for _, e := range []unix.Errno{unix.EIO, unix.ENODEV} {
		qp.dbErr.Errno = e
		err := error(&qp.dbErr)
		if !errors.Is(err, verbs.ErrDeviceGone) || !errors.Is(err, e) || !strings.Contains(err.Error(), "rxefake0") ||
			!strings.Contains(err.Error(), "removed") {
			t.Errorf("%v: %v (ErrDeviceGone %v)", e, err, errors.Is(err, verbs.ErrDeviceGone))
		}
	}
}

// FuzzRxeCQPoll: whatever the kernel leaves in a CQ ring's indices and
// CQE, Poll neither panics nor hands out a completion the checks forbid.
func FuzzRxeCQPoll(f *testing.F) {
	good := make([]byte, rxeCQESize)
	encodeCQE(good, &verbs.WC{WRID: 1, Opcode: verbs.WCRDMAWrite, ByteLen: 64, QPNum: fakeQPN})
	recv := make([]byte, rxeCQESize)
	encodeCQE(recv, &verbs.WC{WRID: 2, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: fakeQPN})
	f.Add(uint32(1), uint32(0), good)
	f.Add(uint32(1), uint32(0), recv)
	f.Add(uint32(0), uint32(15), good)
	f.Add(uint32(16), uint32(0), good)
	f.Add(uint32(0xffffffff), uint32(3), recv)
	f.Add(uint32(5), uint32(4), make([]byte, 3))
	f.Fuzz(func(t *testing.T, prod, cons uint32, cqe []byte) {
		qp, cq, _ := newSyncFakeRxe(t, 8, 16)
		if err := qp.PostRecv([]verbs.RecvWR{{WRID: 2, SGE: verbs.SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
			t.Fatal(err)
		}
		if err := qp.PostSend([]verbs.SendWR{rxeWrite64}); err != nil {
			t.Fatal(err)
		}
		r := cq.ring
		for i := uint32(0); i <= r.mask; i++ {
			copy(r.slot(i), cqe)
		}
		r.storeProd(prod)
		r.storeCons(cons)
		wcs := make([]verbs.WC, 4)
		n, err := cq.Poll(wcs)
		if n < 0 || n > len(wcs) {
			t.Fatalf("Poll returned %d", n)
		}
		if (prod > r.mask || cons > r.mask) && (err == nil || n != 0) {
			t.Fatalf("indices %#x/%#x beyond mask %#x: %d, %v", prod, cons, r.mask, n, err)
		}
		if err != nil && !errors.Is(err, verbs.ErrQueueCorrupt) {
			t.Fatalf("error %v is not a QueueError", err)
		}
		for _, wc := range wcs[:n] {
			if wc.QPNum != fakeQPN || wc.Status > rxeWCStatusMax {
				t.Fatalf("delivered %+v", wc)
			}
			if wc.Status == 0 && wc.Opcode != verbs.WCRecvRDMAWithImm && wc.ByteLen > 64 {
				t.Fatalf("delivered %+v: longer than posted", wc)
			}
		}
	})
}

// TestRxeCQTwoQPs: with two live QPs on a CQ, Poll takes the path that
// looks each CQE's QP up: both QPs' completions pass, a third QP number
// is refused, and closing one QP brings the single-QP path back.
func TestRxeCQTwoQPs(t *testing.T) {
	qp, cq, k := newSyncFakeRxe(t, 8, 16)
	qp2 := newRxeQP(-1, "rxefake0", verbs.QPTypeRC, fakeQPN+1, 0, cq, cq)
	qp2.sq = mustRing(t, fakeRxeRing(9, 8))
	cq.attach(qp2)
	if got := atomic.LoadUint32(&cq.soleQPN); got != ^uint32(0) {
		t.Fatalf("soleQPN %#x with two QPs", got)
	}
	if err := qp.PostSend([]verbs.SendWR{rxeWrite64}); err != nil {
		t.Fatal(err)
	}
	k.step()
	putRxeCQE(cq, verbs.WC{WRID: 9, Opcode: verbs.WCSend, ByteLen: 64, QPNum: fakeQPN + 1})
	wcs := make([]verbs.WC, 4)
	if n, err := cq.Poll(wcs); n != 2 || err != nil || wcs[1].QPNum != fakeQPN+1 {
		t.Fatalf("Poll: %d, %v, %+v", n, err, wcs[:n])
	}
	_ = qp2.Release()
	if got := atomic.LoadUint32(&cq.soleQPN); got != fakeQPN {
		t.Fatalf("soleQPN %#x after closing the second QP, want %#x", got, fakeQPN)
	}
	putRxeCQE(cq, verbs.WC{WRID: 10, Opcode: verbs.WCSend, ByteLen: 64, QPNum: fakeQPN + 1}) // late, closed: passes
	putRxeCQE(cq, verbs.WC{WRID: 11, Opcode: verbs.WCSend, ByteLen: 64, QPNum: fakeQPN + 2})
	n, err := cq.Poll(wcs)
	if n != 1 {
		t.Errorf("Poll delivered %d, want the closed QP's late CQE only", n)
	}
	verbstest.WantQueueError(t, err, verbs.FaultCompletionQP, "rxefake0", "completion names QP 0x13")
}

var rxeWrite64 = verbs.SendWR{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 1}

// TestRxeQueueFullRecovers: a queue that fills refuses with ErrQueueFull,
// writes nothing, and takes WRs again once completions are polled; a post
// larger than the queue can ever hold is another error (ErrQueueFull would
// make a caller poll and retry forever).
func TestRxeQueueFullRecovers(t *testing.T) {
	qp, cq, k := newSyncFakeRxe(t, 8, 16)
	wcs := make([]verbs.WC, 8)
	for round := 0; round < 3; round++ {
		posted := 0
		for ; posted < 100; posted++ {
			err := qp.PostSend([]verbs.SendWR{rxeWrite64})
			if errors.Is(err, verbs.ErrQueueFull) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if posted != 7 {
			t.Fatalf("round %d: %d posted before ErrQueueFull, want 7", round, posted)
		}
		k.step()
		if n, err := cq.Poll(wcs); n != 7 || err != nil {
			t.Fatalf("round %d: polled %d, %v", round, n, err)
		}
	}
	many := make([]verbs.SendWR, 8)
	for i := range many {
		many[i] = rxeWrite64
	}
	if err := qp.PostSend(many); err != verbs.ErrBatchTooLarge {
		t.Errorf("8 WRs on an empty 7-slot SQ: %v, want ErrBatchTooLarge", err)
	}
	rws := make([]verbs.RecvWR, 8)
	if err := qp.PostRecv(rws); err != verbs.ErrBatchTooLarge {
		t.Errorf("8 WRs on an empty 7-slot RQ: %v, want ErrBatchTooLarge", err)
	}
}

package verbs

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/testexec"
	"golang.org/x/sys/unix"
)

// Fault injection: values the kernel or the device hands the data path
// through shared memory that cannot be right must come back as a
// *QueueError naming the device, never as a signal, a wrong completion or
// a loop that does not end; and the queue must refuse further use.

// runIsolated runs fn in a child process (this test binary, re-executed
// for this test only, through $RDMACTL_TEST_EXEC when set) when a bug in
// the code under test could crash the process: the parent then reports a
// failure instead of dying with it.
func runIsolated(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	if os.Getenv("VERBS_FAULT_CHILD") == t.Name() {
		fn(t)
		return
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := testexec.CommandContext(ctx, os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "VERBS_FAULT_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+parts0(t.Name())) {
		t.Fatalf("in a child process: %v\n%s", err, out)
	}
}

func parts0(name string) string { return strings.SplitN(name, "/", 2)[0] }

// wantQueueError checks that err is a *QueueError with fault f that names
// the device and says what was wrong (each of texts).
func wantQueueError(t *testing.T, err error, f QueueFault, dev string, texts ...string) *QueueError {
	t.Helper()
	var qe *QueueError
	if !errors.As(err, &qe) {
		t.Fatalf("got %v, want a *QueueError", err)
	}
	if qe.Fault != f {
		t.Errorf("fault %d, want %d: %v", qe.Fault, f, err)
	}
	if !errors.Is(err, ErrQueueCorrupt) {
		t.Errorf("errors.Is(%v, ErrQueueCorrupt) is false", err)
	}
	msg := err.Error()
	for _, s := range append([]string{dev + ": "}, texts...) {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q lacks %q", msg, s)
		}
	}
	return qe
}

// putRxeCQE writes wc into the next CQ slot as the kernel does.
func putRxeCQE(cq *rxeCQ, wc WC) {
	r := cq.ring
	p := r.loadProd()
	encodeCQE(r.slot(p), &wc)
	r.storeProd(r.next(p))
}

var rxeWrite64 = SendWR{WRID: 1, Opcode: OpRDMAWrite, Flags: SendSignaled, SGE: SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 1}

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
			runIsolated(t, func(t *testing.T) {
				qp, cq, k := newSyncFakeRxe(t, 8, 16)
				if err := qp.PostSend([]SendWR{rxeWrite64}); err != nil {
					t.Fatal(err)
				}
				k.step()
				if c.prod {
					cq.ring.storeProd(c.value)
				} else {
					cq.ring.storeCons(c.value)
				}
				wcs := make([]WC, 4)
				n, err := cq.Poll(wcs)
				if n != 0 {
					t.Errorf("Poll returned %d completions from a corrupt ring", n)
				}
				qe := wantQueueError(t, err, map[bool]QueueFault{true: FaultProducerIndex, false: FaultConsumerIndex}[c.prod],
					"rxefake0", "rxe CQ ring", c.text)
				// Refused from now on, through the CQ wrapper too, even
				// once the indices look sane again.
				cq.ring.storeProd(0)
				cq.ring.storeCons(0)
				if n, err := (&CQ{prov: cq}).Poll(wcs); n != 0 || err != error(qe) {
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
		fault     QueueFault
		ring, txt string
	}{
		{"SQ prod", false, true, 0x7fffffff, FaultProducerIndex, "rxe SQ ring", "producer index 0x7fffffff beyond index_mask 0x7"},
		{"SQ cons", false, false, 9, FaultConsumerIndex, "rxe SQ ring", "consumer index 0x9 beyond index_mask 0x7"},
		{"RQ prod", true, true, 0x7fffffff, FaultProducerIndex, "rxe RQ ring", "producer index 0x7fffffff beyond index_mask 0x7"},
		{"RQ cons", true, false, 0x100, FaultConsumerIndex, "rxe RQ ring", "consumer index 0x100 beyond index_mask 0x7"},
	} {
		t.Run(c.name, func(t *testing.T) {
			runIsolated(t, func(t *testing.T) {
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
						return qp.PostRecv([]RecvWR{{WRID: 2, SGE: SGE{Addr: 0x2000, Length: 64, LKey: 1}}})
					}
					return (&QP{send: qp, state: QPStateRTS}).PostSend([]SendWR{rxeWrite64})
				}
				qe := wantQueueError(t, post(), c.fault, "rxefake0", c.ring, c.txt, "QP")
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
		wc    WC
		noRQ  bool
		fault QueueFault
		text  string
	}{
		{"bad opcode", WC{WRID: 7, Opcode: 77, ByteLen: 8, QPNum: fakeQPN}, false, FaultCompletionOpcode, "completion for QP 0x11 has opcode 77"},
		{"bind MW opcode", WC{WRID: 7, Opcode: 5, ByteLen: 8, QPNum: fakeQPN}, false, FaultCompletionOpcode, "opcode 5"},
		{"other QP", WC{WRID: 7, Opcode: WCRDMAWrite, ByteLen: 8, QPNum: 99}, false, FaultCompletionQP, "completion names QP 0x63, which does not complete into this CQ"},
		{"status", WC{WRID: 7, Status: 0x1234, QPNum: fakeQPN}, false, FaultCompletionStatus, "status 4660, not an ibv_wc_status"},
		{"recv without RQ", WC{WRID: 7, Opcode: WCRecv, ByteLen: 1, QPNum: fakeQPN}, true, FaultNoReceiveQueue, "receive completion for QP 0x11, which has no receive queue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			qp, cq, k := newSyncFakeRxe(t, 8, 16)
			if c.noRQ {
				qp.rq = nil
				cq.updateSole() // as if created without one
			} else if err := qp.PostRecv([]RecvWR{{WRID: 2, SGE: SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
				t.Fatal(err)
			}
			if err := qp.PostSend([]SendWR{rxeWrite64, rxeWrite64}); err != nil {
				t.Fatal(err)
			}
			k.step() // two good CQEs
			putRxeCQE(cq, c.wc)
			putRxeCQE(cq, WC{WRID: 8, Opcode: WCRDMAWrite, ByteLen: 64, QPNum: fakeQPN})
			wcs := make([]WC, 8)
			n, err := cq.Poll(wcs)
			if n != 2 || wcs[0].WRID != 1 || wcs[1].WRID != 1 {
				t.Errorf("Poll delivered %d completions %+v, want the 2 good ones", n, wcs[:n])
			}
			qe := wantQueueError(t, err, c.fault, "rxefake0", "rxe CQ ring", c.text)
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
	if err := qp.PostRecv([]RecvWR{{WRID: 2, SGE: SGE{Addr: 0x2000, Length: 0, LKey: 1}}}); err != nil {
		t.Fatal(err)
	}
	putRxeCQE(cq, WC{WRID: 2, Status: 5, QPNum: fakeQPN})                                   // flushed receive: opcode 0
	putRxeCQE(cq, WC{WRID: 3, Status: 12, Opcode: 0xff, ByteLen: 1 << 30, QPNum: fakeQPN})  // retry exceeded
	putRxeCQE(cq, WC{WRID: 4, Opcode: WCRecvRDMAWithImm, ByteLen: 1 << 20, QPNum: fakeQPN}) // write length
	wcs := make([]WC, 8)
	if n, err := cq.Poll(wcs); n != 3 || err != nil {
		t.Fatalf("Poll: %d, %v", n, err)
	}
	_ = qp.Release()
	putRxeCQE(cq, WC{WRID: 5, Opcode: 99, ByteLen: 1 << 20, QPNum: fakeQPN}) // the closed QP's
	if n, err := cq.Poll(wcs); n != 1 || err != nil {
		t.Fatalf("late CQE of a closed QP: %d, %v", n, err)
	}
	qp2 := newRxeQP(-1, "rxefake0", QPTypeRC, fakeQPN, 0, cq, cq)
	cq.attach(qp2)
	putRxeCQE(cq, WC{WRID: 6, Opcode: WCRecv, ByteLen: 1, QPNum: fakeQPN}) // qp2 has no receive queue
	if _, err := cq.Poll(wcs); !errors.Is(err, ErrQueueCorrupt) {
		t.Fatalf("the new QP numbered %d was not checked: %v", fakeQPN, err)
	}
}

// TestQueueFullRecovers: a queue that fills refuses with ErrQueueFull,
// writes nothing, and takes WRs again once completions are polled; a post
// larger than the queue can ever hold is another error (ErrQueueFull would
// make a caller poll and retry forever).
func TestQueueFullRecovers(t *testing.T) {
	t.Run("rxe", func(t *testing.T) {
		qp, cq, k := newSyncFakeRxe(t, 8, 16)
		wcs := make([]WC, 8)
		for round := 0; round < 3; round++ {
			posted := 0
			for ; posted < 100; posted++ {
				err := qp.PostSend([]SendWR{rxeWrite64})
				if errors.Is(err, ErrQueueFull) {
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
		many := make([]SendWR, 8)
		for i := range many {
			many[i] = rxeWrite64
		}
		if err := qp.PostSend(many); err != ErrBatchTooLarge {
			t.Errorf("8 WRs on an empty 7-slot SQ: %v, want ErrBatchTooLarge", err)
		}
		rws := make([]RecvWR, 8)
		if err := qp.PostRecv(rws); err != ErrBatchTooLarge {
			t.Errorf("8 WRs on an empty 7-slot RQ: %v, want ErrBatchTooLarge", err)
		}
	})
	t.Run("mlx5", func(t *testing.T) {
		q, cq, _ := mlx5TestQP(t, 8, 8, 0, 16)
		m := &mlx5Model{q: q, cq: cq}
		wr := []SendWR{{WRID: 1, Opcode: OpRDMAWrite, SGE: SGE{Addr: 0x1000, Length: 64, LKey: 1}}}
		wcs := make([]WC, 16)
		for round := 0; round < 3; round++ {
			posted := 0
			for ; posted < 100; posted++ {
				wr[0].Flags = 0
				if posted == 7 {
					wr[0].Flags = SendSignaled // the last one retires them all
				}
				err := q.PostSend(wr)
				if errors.Is(err, ErrQueueFull) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if posted != 8 {
				t.Fatalf("round %d: %d posted before ErrQueueFull, want 8", round, posted)
			}
			m.step()
			if n, err := cq.Poll(wcs); n != 1 || err != nil {
				t.Fatalf("round %d: polled %d, %v", round, n, err)
			}
		}
		if err := q.PostSend(make([]SendWR, 9)); err != ErrBatchTooLarge {
			t.Errorf("9 WRs on an empty 8-WQEBB SQ: %v, want ErrBatchTooLarge", err)
		}
		if err := q.PostRecv(make([]RecvWR, 9)); err != ErrBatchTooLarge {
			t.Errorf("9 WRs on an empty 8-entry RQ: %v, want ErrBatchTooLarge", err)
		}
	})
}

// mlx5CQEBody is a CQE body for QP qpn with WQE counter ctr and byte count
// cnt (bytes 60..63 are written by writeCQE).
func mlx5CQEBody(qpn uint32, sop uint8, ctr uint16, cnt uint32) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[mlx5CQESopDropQPN:], uint32(sop)<<24|qpn)
	binary.BigEndian.PutUint16(b[mlx5CQEWQECounter:], ctr)
	binary.BigEndian.PutUint32(b[mlx5CQEByteCnt:], cnt)
	return b
}

// TestMLX5CQEFaults: CQEs the device cannot have written for this QP.
// Before the checks each was taken as a completion: a WQE counter out of
// range retired the SQ to a stale position and returned a stale WRID, a
// receive with none posted returned one, the others came out as
// completions with GENERAL_ERR or an impossible length.
func TestMLX5CQEFaults(t *testing.T) {
	read := SendWR{WRID: 3, Opcode: OpRDMARead, Flags: SendSignaled, SGE: SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 2}
	write := SendWR{WRID: 4, Opcode: OpRDMAWrite, Flags: SendSignaled, SGE: SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 2}
	for _, c := range []struct {
		name   string
		sendWR uint32 // 0: a QP without SQ
		recvWR uint32 // 0: a QP without RQ
		inject func(t *testing.T, q *mlx5QP, m *mlx5Model)
		fault  QueueFault
		text   string
	}{
		{"wqe_counter beyond posted", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			unsignaled := write
			unsignaled.Flags = 0
			if err := q.PostSend([]SendWR{unsignaled, unsignaled}); err != nil { // counters 2, 3
				t.Fatal(err)
			}
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 5, 0), mlx5CQEReq)
		}, FaultWQECounter, "wqe_counter 0x5, outside the outstanding WQEs 0x2..0x3"},
		{"wqe_counter already retired", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 1, 0), mlx5CQEReq)
		}, FaultWQECounter, "wqe_counter 0x1 when no send WQE was outstanding (next counter 0x2)"},
		{"error CQE wqe_counter", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			b := mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 0xfff0, 0)
			b[mlx5ErrSyndrome] = mlx5SyndromeWRFlush
			m.writeCQE(b, mlx5CQEReqErr)
		}, FaultWQECounter, "wqe_counter 0xfff0"},
		{"wqe_counter inside a WQE", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			src := make([]byte, 90)
			in := SendWR{WRID: 5, Opcode: OpSend, Flags: SendInline, SGE: SGE{Addr: uint64(uintptr(unsafe.Pointer(&src[0]))), Length: 90}}
			if err := q.PostSend([]SendWR{in}); err != nil { // 2 WQEBBs: counters 2, 3
				t.Fatal(err)
			}
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpSend, 3, 0), mlx5CQEReq)
		}, FaultWQEStart, "wqe_counter 0x3, which is not the start of a posted WQE"},
		{"READ byte_cnt", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			if err := q.PostSend([]SendWR{read}); err != nil {
				t.Fatal(err)
			}
			m.byteCnt = 4096
			m.step()
		}, FaultCompletionLength, "reports 4096 bytes, more than the 64 posted"},
		{"recv byte_cnt", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.recv(1000, false, 0)
		}, FaultCompletionLength, "reports 1000 bytes, more than the 256 posted"},
		{"recv none posted", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 0, 8), mlx5CQERespSend)
		}, FaultNoReceivePosted, "receive completion for QP 0x2a5, which had no receive posted"},
		{"recv without RQ", 8, 0, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 0, 8), mlx5CQERespSend)
		}, FaultNoReceiveQueue, "which has no receive queue"},
		{"send without SQ", 0, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpSend, 0, 0), mlx5CQEReq)
		}, FaultNoSendQueue, "which has no send queue"},
		{"resize opcode", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 0, 0), 5)
		}, FaultCompletionOpcode, "has opcode 5"},
		{"opcode 9", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 2, 0), 9)
		}, FaultCompletionOpcode, "has opcode 9"},
		{"compressed format", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 2, 0), mlx5CQEReq)
			m.cq.buf[((m.pi-1)&(m.cq.ncqe-1))*mlx5CQESize+mlx5CQEOpOwn] |= 3 << 2
		}, FaultCQEFormat, "in format 3"},
		{"unknown QP", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(0x999, mlx5OpRDMAWrite, 2, 0), mlx5CQEReq)
		}, FaultCompletionQP, "completion names QP 0x999, which does not complete into this CQ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, cq, _ := mlx5TestQP(t, c.sendWR, c.recvWR, 90, 16)
			cq.err.Device = "mlx5fake0"
			m := &mlx5Model{q: q, cq: cq}
			if c.recvWR > 0 && c.fault != FaultNoReceivePosted {
				if err := q.PostRecv([]RecvWR{{WRID: 9, SGE: SGE{Addr: 0x2000, Length: 256, LKey: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			good := 0
			if c.sendWR > 0 {
				// Two good completions first (counters 0 and 1).
				if err := q.PostSend([]SendWR{write, write}); err != nil {
					t.Fatal(err)
				}
				m.step()
				good = 2
			}
			c.inject(t, q, m)
			wcs := make([]WC, 8)
			n, err := cq.Poll(wcs)
			if n != good {
				t.Errorf("Poll delivered %d completions %+v, want the %d good ones", n, wcs[:n], good)
			}
			qe := wantQueueError(t, err, c.fault, "mlx5fake0", "mlx5 CQ", c.text)
			if cq.ci != uint32(good) || binary.BigEndian.Uint32(cq.dbr) != uint32(good) {
				t.Errorf("consumer index %d (doorbell record %d), want %d", cq.ci, binary.BigEndian.Uint32(cq.dbr), good)
			}
			if n, err := cq.Poll(wcs); n != 0 || err != error(qe) {
				t.Errorf("second Poll: %d, %v; want 0 and the same error", n, err)
			}
		})
	}
}

// TestMLX5ClosedQPCQEs: late CQEs of a closed QP are dropped, not taken
// for corruption (the QP's number was known to the CQ).
func TestMLX5ClosedQPCQEs(t *testing.T) {
	q, cq, _ := mlx5TestQP(t, 4, 4, 0, 8)
	m := &mlx5Model{q: q, cq: cq}
	qpn := q.qpn
	_ = q.Release()
	m.writeCQE(mlx5CQEBody(qpn, mlx5OpSend, 7, 0), mlx5CQEReq)
	m.writeCQE(mlx5CQEBody(qpn, 0, 0, 8), mlx5CQERespSend)
	var wcs [4]WC
	if n, err := cq.Poll(wcs[:]); n != 0 || err != nil || cq.ci != 2 {
		t.Fatalf("Poll: %d, %v, ci %d; want the 2 CQEs dropped", n, err, cq.ci)
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
	err = qp.PostSend([]SendWR{rxeWrite64})
	if !errors.Is(err, unix.EBADF) || !strings.HasPrefix(err.Error(), "rxefake0: POST_SEND") {
		t.Errorf("doorbell on a read-only fd: %v", err)
	}
	for _, e := range []unix.Errno{unix.EIO, unix.ENODEV} {
		qp.dbErr.Errno = e
		err := error(&qp.dbErr)
		if !errors.Is(err, ErrDeviceGone) || !errors.Is(err, e) || !strings.Contains(err.Error(), "rxefake0") ||
			!strings.Contains(err.Error(), "removed") {
			t.Errorf("%v: %v (ErrDeviceGone %v)", e, err, errors.Is(err, ErrDeviceGone))
		}
	}
}

// FuzzRxeCQPoll: whatever the kernel leaves in a CQ ring's indices and
// CQE, Poll neither panics nor hands out a completion the checks forbid.
func FuzzRxeCQPoll(f *testing.F) {
	good := make([]byte, rxeCQESize)
	encodeCQE(good, &WC{WRID: 1, Opcode: WCRDMAWrite, ByteLen: 64, QPNum: fakeQPN})
	recv := make([]byte, rxeCQESize)
	encodeCQE(recv, &WC{WRID: 2, Opcode: WCRecv, ByteLen: 64, QPNum: fakeQPN})
	f.Add(uint32(1), uint32(0), good)
	f.Add(uint32(1), uint32(0), recv)
	f.Add(uint32(0), uint32(15), good)
	f.Add(uint32(16), uint32(0), good)
	f.Add(uint32(0xffffffff), uint32(3), recv)
	f.Add(uint32(5), uint32(4), make([]byte, 3))
	f.Fuzz(func(t *testing.T, prod, cons uint32, cqe []byte) {
		qp, cq, _ := newSyncFakeRxe(t, 8, 16)
		if err := qp.PostRecv([]RecvWR{{WRID: 2, SGE: SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
			t.Fatal(err)
		}
		if err := qp.PostSend([]SendWR{rxeWrite64}); err != nil {
			t.Fatal(err)
		}
		r := cq.ring
		for i := uint32(0); i <= r.mask; i++ {
			copy(r.slot(i), cqe)
		}
		r.storeProd(prod)
		r.storeCons(cons)
		wcs := make([]WC, 4)
		n, err := cq.Poll(wcs)
		if n < 0 || n > len(wcs) {
			t.Fatalf("Poll returned %d", n)
		}
		if (prod > r.mask || cons > r.mask) && (err == nil || n != 0) {
			t.Fatalf("indices %#x/%#x beyond mask %#x: %d, %v", prod, cons, r.mask, n, err)
		}
		if err != nil && !errors.Is(err, ErrQueueCorrupt) {
			t.Fatalf("error %v is not a QueueError", err)
		}
		for _, wc := range wcs[:n] {
			if wc.QPNum != fakeQPN || wc.Status > rxeWCStatusMax {
				t.Fatalf("delivered %+v", wc)
			}
			if wc.Status == 0 && wc.Opcode != WCRecvRDMAWithImm && wc.ByteLen > 64 {
				t.Fatalf("delivered %+v: longer than posted", wc)
			}
		}
	})
}

// FuzzMLX5CQPoll: whatever the device writes into the next CQE (owner bit
// set for software), Poll neither panics nor hands out a WRID that was
// not posted or a length beyond the posted one.
func FuzzMLX5CQPoll(f *testing.F) {
	seed := func(qpn uint32, sop uint8, ctr uint16, cnt uint32, opcode uint8) []byte {
		b := mlx5CQEBody(qpn, sop, ctr, cnt)
		b[mlx5CQEOpOwn] = opcode << 4
		return b
	}
	f.Add(seed(0x2a5, mlx5OpRDMAWrite, 0, 0, mlx5CQEReq))
	f.Add(seed(0x2a5, mlx5OpRDMARead, 1, 64, mlx5CQEReq))
	f.Add(seed(0x2a5, mlx5OpRDMARead, 1, 65, mlx5CQEReq))
	f.Add(seed(0x2a5, 0, 0, 64, mlx5CQERespSend))
	f.Add(seed(0x2a5, 0, 0, 1<<30, mlx5CQERespWRImm))
	f.Add(seed(0x2a5, mlx5OpSend, 0x8000, 0, mlx5CQEReqErr))
	f.Add(seed(0x2a6, mlx5OpSend, 0, 0, mlx5CQEReq))
	f.Add(seed(0x2a5, 0, 0, 0, 5))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < mlx5CQESize {
			return
		}
		q, cq, _ := mlx5TestQP(t, 4, 4, 0, 8)
		if err := q.PostRecv([]RecvWR{{WRID: 9, SGE: SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
			t.Fatal(err)
		}
		wrs := []SendWR{
			{WRID: 1, Opcode: OpRDMAWrite, Flags: SendSignaled, SGE: SGE{Addr: 0x1000, Length: 64, LKey: 1}},
			{WRID: 2, Opcode: OpRDMARead, Flags: SendSignaled, SGE: SGE{Addr: 0x1000, Length: 64, LKey: 1}},
		}
		if err := q.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		copy(cq.buf[:mlx5CQESize], b[:mlx5CQESize])
		cq.buf[mlx5CQEOpOwn] &^= 1 // software owns it on the first pass
		var wcs [2]WC
		n, err := cq.Poll(wcs[:])
		if err != nil && (!errors.Is(err, ErrQueueCorrupt) || n != 0) {
			t.Fatalf("Poll: %d, %v", n, err)
		}
		for _, wc := range wcs[:n] {
			if wc.WRID != 1 && wc.WRID != 2 && wc.WRID != 9 {
				t.Fatalf("WRID %d was never posted: %+v", wc.WRID, wc)
			}
			if wc.Status == 0 && (wc.Opcode == WCRDMARead || wc.Opcode == WCRecv) && wc.ByteLen > 64 {
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
	qp2 := newRxeQP(-1, "rxefake0", QPTypeRC, fakeQPN+1, 0, cq, cq)
	qp2.sq = mustRing(t, fakeRxeRing(9, 8))
	cq.attach(qp2)
	if got := atomic.LoadUint32(&cq.soleQPN); got != ^uint32(0) {
		t.Fatalf("soleQPN %#x with two QPs", got)
	}
	if err := qp.PostSend([]SendWR{rxeWrite64}); err != nil {
		t.Fatal(err)
	}
	k.step()
	putRxeCQE(cq, WC{WRID: 9, Opcode: WCSend, ByteLen: 64, QPNum: fakeQPN + 1})
	wcs := make([]WC, 4)
	if n, err := cq.Poll(wcs); n != 2 || err != nil || wcs[1].QPNum != fakeQPN+1 {
		t.Fatalf("Poll: %d, %v, %+v", n, err, wcs[:n])
	}
	_ = qp2.Release()
	if got := atomic.LoadUint32(&cq.soleQPN); got != fakeQPN {
		t.Fatalf("soleQPN %#x after closing the second QP, want %#x", got, fakeQPN)
	}
	putRxeCQE(cq, WC{WRID: 10, Opcode: WCSend, ByteLen: 64, QPNum: fakeQPN + 1}) // late, closed: passes
	putRxeCQE(cq, WC{WRID: 11, Opcode: WCSend, ByteLen: 64, QPNum: fakeQPN + 2})
	n, err := cq.Poll(wcs)
	if n != 1 {
		t.Errorf("Poll delivered %d, want the closed QP's late CQE only", n)
	}
	wantQueueError(t, err, FaultCompletionQP, "rxefake0", "completion names QP 0x13")
}

package verbs

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
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
	// Through $RDMACTL_TEST_EXEC, as the C oracles (oracle_test.go): under
	// qemu-user without binfmt_misc the binary cannot exec itself.
	name, args := os.Args[0], []string{"-test.run=" + strings.Join(parts, "/"), "-test.count=1", "-test.v"}
	if wrap := strings.Fields(os.Getenv("RDMACTL_TEST_EXEC")); len(wrap) > 0 {
		name, args = wrap[0], append(append(wrap[1:len(wrap):len(wrap)], os.Args[0]), args...)
	}
	cmd := exec.CommandContext(ctx, name, args...)
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
		{"atomic opcode", WC{WRID: 7, Opcode: 3, ByteLen: 8, QPNum: fakeQPN}, false, FaultCompletionOpcode, "opcode 3"},
		{"other QP", WC{WRID: 7, Opcode: WCRDMAWrite, ByteLen: 8, QPNum: 99}, false, FaultCompletionQP, "completion names QP 0x63, which does not complete into this CQ"},
		{"send byte_len", WC{WRID: 7, Opcode: WCRDMAWrite, ByteLen: 1 << 20, QPNum: fakeQPN}, false, FaultCompletionLength, "reports 1048576 bytes, more than the 64 posted"},
		{"recv byte_len", WC{WRID: 7, Opcode: WCRecv, ByteLen: 65, QPNum: fakeQPN}, false, FaultCompletionLength, "reports 65 bytes, more than the 64 posted"},
		{"status", WC{WRID: 7, Status: 0x1234, QPNum: fakeQPN}, false, FaultCompletionStatus, "status 4660, not an ibv_wc_status"},
		{"recv without RQ", WC{WRID: 7, Opcode: WCRecv, ByteLen: 1, QPNum: fakeQPN}, true, FaultNoReceiveQueue, "receive completion for QP 0x11, which has no receive queue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			qp, cq, k := newSyncFakeRxe(t, 8, 16)
			if err := qp.PostRecv([]RecvWR{{WRID: 2, SGE: SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
				t.Fatal(err)
			}
			if c.noRQ {
				qp.rq = nil
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
	_ = qp.release()
	putRxeCQE(cq, WC{WRID: 5, Opcode: 99, ByteLen: 1 << 20, QPNum: fakeQPN}) // the closed QP's
	if n, err := cq.Poll(wcs); n != 1 || err != nil {
		t.Fatalf("late CQE of a closed QP: %d, %v", n, err)
	}
	qp2 := newRxeQP(-1, "rxefake0", QPTypeRC, fakeQPN, 0)
	cq.attach(qp2)
	putRxeCQE(cq, WC{WRID: 6, Opcode: WCRDMAWrite, ByteLen: 1, QPNum: fakeQPN}) // nothing that long posted on qp2
	if _, err := cq.Poll(wcs); !errors.Is(err, ErrQueueCorrupt) {
		t.Fatalf("the new QP numbered %d was not checked: %v", fakeQPN, err)
	}
}

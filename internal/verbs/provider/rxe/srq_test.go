package rxe

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/verbstest"
)

func fakeRxeSRQ(t *testing.T, slots int) *rxeSRQ {
	return &rxeSRQ{ring: mustRing(t, fakeRxeRing(6, slots)), err: verbs.QueueError{Device: "rxefake0", Queue: "rxe SRQ ring"}}
}

// TestRxeSRQPostRecv: receives land in the SRQ ring as struct
// rxe_recv_wqe (the RQ's layout), all or nothing, and allocate nothing.
func TestRxeSRQPostRecv(t *testing.T) {
	s := fakeRxeSRQ(t, 8)
	wrs := []verbs.RecvWR{{WRID: 7, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 3}}, {WRID: 8, SGE: verbs.SGE{Addr: 0x2000, Length: 32, LKey: 3}}}
	if err := s.PostRecv(wrs); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	for i, w := range wrs {
		slot := s.ring.slot(uint32(i))
		if le.Uint64(slot[rxeRWQEWRID:]) != w.WRID || le.Uint32(slot[rxeRWQEDMALength:]) != w.SGE.Length ||
			le.Uint32(slot[rxeRWQEDMANumSGE:]) != 1 || le.Uint64(slot[rxeRWQEHdrSize:]) != w.SGE.Addr {
			t.Errorf("slot %d: % x", i, slot[:rxeRWQEHdrSize+rxeSGESize])
		}
	}
	if p := s.ring.loadProd(); p != 2 {
		t.Fatalf("producer %d, want 2", p)
	}
	many := make([]verbs.RecvWR, 6)
	if err := s.PostRecv(many); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("6 more into 5 free slots: %v, want ErrQueueFull", err)
	}
	if err := s.PostRecv(make([]verbs.RecvWR, 8)); !errors.Is(err, verbs.ErrBatchTooLarge) {
		t.Fatalf("8 into a 7-slot ring: %v", err)
	}
	one := wrs[:1]
	if n := testing.AllocsPerRun(100, func() {
		_ = s.PostRecv(one)
		s.ring.storeCons(s.ring.loadProd()) // the kernel took it
	}); n != 0 {
		t.Fatalf("PostRecv allocates %v times", n)
	}
}

// TestRxeSRQIndexFaults: an SRQ ring index beyond the mask is a
// QueueError, kept for every later post, and nothing is written.
func TestRxeSRQIndexFaults(t *testing.T) {
	for _, c := range []struct {
		prod bool
		v    uint32
		text string
	}{{true, 8, "producer index 0x8 beyond index_mask 0x7"}, {false, 0xffffffff, "consumer index 0xffffffff beyond"}} {
		s := fakeRxeSRQ(t, 8)
		if c.prod {
			s.ring.storeProd(c.v)
		} else {
			s.ring.storeCons(c.v)
		}
		wr := []verbs.RecvWR{{WRID: 1, SGE: verbs.SGE{Addr: 1, Length: 1, LKey: 1}}}
		err := s.PostRecv(wr)
		qe := verbstest.WantQueueError(t, err, map[bool]verbs.QueueFault{true: verbs.FaultProducerIndex, false: verbs.FaultConsumerIndex}[c.prod], "rxefake0", "rxe SRQ ring", c.text)
		s.ring.storeProd(0)
		s.ring.storeCons(0)
		if err2 := s.PostRecv(wr); err2 != error(qe) {
			t.Fatalf("second post: %v, want the same error", err2)
		}
		if p := s.ring.loadProd(); p != 0 {
			t.Fatalf("a refused post moved the producer to %d", p)
		}
	}
}

// TestRxeSRQCompletions: a QP on an SRQ has no RQ, and its receive
// completions pass the CQ's checks (on the fast path too); without an SRQ
// they would be refused.
func TestRxeSRQCompletions(t *testing.T) {
	qp, cq, _ := newSyncFakeRxe(t, 8, 16)
	qp.rq, qp.hasSRQ = nil, true
	cq.updateSole()
	putRxeCQE(cq, verbs.WC{WRID: 3, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: fakeQPN})
	wcs := make([]verbs.WC, 2)
	if n, err := cq.Poll(wcs); n != 1 || err != nil || wcs[0].WRID != 3 {
		t.Fatalf("SRQ receive: %d %v %+v", n, err, wcs[0])
	}
	qp.hasSRQ = false
	cq.updateSole()
	putRxeCQE(cq, verbs.WC{WRID: 4, Opcode: verbs.WCRecv, ByteLen: 64, QPNum: fakeQPN})
	_, err := cq.Poll(wcs)
	verbstest.WantQueueError(t, err, verbs.FaultNoReceiveQueue, "rxefake0", "rxe CQ ring", "no receive queue")
}

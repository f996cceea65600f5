package mlx5

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/verbstest"
)

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
	read := verbs.SendWR{WRID: 3, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 2}
	write := verbs.SendWR{WRID: 4, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 2}
	for _, c := range []struct {
		name   string
		sendWR uint32 // 0: a QP without SQ
		recvWR uint32 // 0: a QP without RQ
		inject func(t *testing.T, q *mlx5QP, m *mlx5Model)
		fault  verbs.QueueFault
		text   string
	}{
		{"wqe_counter beyond posted", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			unsignaled := write
			unsignaled.Flags = 0
			if err := q.PostSend([]verbs.SendWR{unsignaled, unsignaled}); err != nil { // counters 2, 3
				t.Fatal(err)
			}
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 5, 0), mlx5CQEReq)
		}, verbs.FaultWQECounter, "wqe_counter 0x5, outside the outstanding WQEs 0x2..0x3"},
		{"wqe_counter already retired", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 1, 0), mlx5CQEReq)
		}, verbs.FaultWQECounter, "wqe_counter 0x1 when no send WQE was outstanding (next counter 0x2)"},
		{"error CQE wqe_counter", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			b := mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 0xfff0, 0)
			b[mlx5ErrSyndrome] = mlx5SyndromeWRFlush
			m.writeCQE(b, mlx5CQEReqErr)
		}, verbs.FaultWQECounter, "wqe_counter 0xfff0"},
		{"wqe_counter inside a WQE", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			src := make([]byte, 90)
			in := verbs.SendWR{WRID: 5, Opcode: verbs.OpSend, Flags: verbs.SendInline, SGE: verbs.SGE{Addr: uint64(uintptr(unsafe.Pointer(&src[0]))), Length: 90}}
			if err := q.PostSend([]verbs.SendWR{in}); err != nil { // 2 WQEBBs: counters 2, 3
				t.Fatal(err)
			}
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpSend, 3, 0), mlx5CQEReq)
		}, verbs.FaultWQEStart, "wqe_counter 0x3, which is not the start of a posted WQE"},
		{"READ byte_cnt", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			if err := q.PostSend([]verbs.SendWR{read}); err != nil {
				t.Fatal(err)
			}
			m.byteCnt = 4096
			m.step()
		}, verbs.FaultCompletionLength, "reports 4096 bytes, more than the 64 posted"},
		{"recv byte_cnt", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.recv(1000, false, 0)
		}, verbs.FaultCompletionLength, "reports 1000 bytes, more than the 256 posted"},
		{"recv none posted", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 0, 8), mlx5CQERespSend)
		}, verbs.FaultNoReceivePosted, "receive completion for QP 0x2a5, which had no receive posted"},
		{"recv without RQ", 8, 0, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 0, 8), mlx5CQERespSend)
		}, verbs.FaultNoReceiveQueue, "which has no receive queue"},
		{"send without SQ", 0, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpSend, 0, 0), mlx5CQEReq)
		}, verbs.FaultNoSendQueue, "which has no send queue"},
		{"resize opcode", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 0, 0), 5)
		}, verbs.FaultCompletionOpcode, "has opcode 5"},
		{"opcode 9", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, 0, 2, 0), 9)
		}, verbs.FaultCompletionOpcode, "has opcode 9"},
		{"compressed format", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(q.qpn, mlx5OpRDMAWrite, 2, 0), mlx5CQEReq)
			m.cq.buf[((m.pi-1)&(m.cq.ncqe-1))*mlx5CQESize+mlx5CQEOpOwn] |= 3 << 2
		}, verbs.FaultCQEFormat, "in format 3"},
		{"unknown QP", 8, 4, func(t *testing.T, q *mlx5QP, m *mlx5Model) {
			m.writeCQE(mlx5CQEBody(0x999, mlx5OpRDMAWrite, 2, 0), mlx5CQEReq)
		}, verbs.FaultCompletionQP, "completion names QP 0x999, which does not complete into this CQ"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, cq, _ := mlx5TestQP(t, c.sendWR, c.recvWR, 90, 16)
			cq.err.Device = "mlx5fake0"
			m := &mlx5Model{q: q, cq: cq}
			if c.recvWR > 0 && c.fault != verbs.FaultNoReceivePosted {
				if err := q.PostRecv([]verbs.RecvWR{{WRID: 9, SGE: verbs.SGE{Addr: 0x2000, Length: 256, LKey: 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			good := 0
			if c.sendWR > 0 {
				// Two good completions first (counters 0 and 1).
				if err := q.PostSend([]verbs.SendWR{write, write}); err != nil {
					t.Fatal(err)
				}
				m.step()
				good = 2
			}
			c.inject(t, q, m)
			wcs := make([]verbs.WC, 8)
			n, err := cq.Poll(wcs)
			if n != good {
				t.Errorf("Poll delivered %d completions %+v, want the %d good ones", n, wcs[:n], good)
			}
			qe := verbstest.WantQueueError(t, err, c.fault, "mlx5fake0", "mlx5 CQ", c.text)
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
	var wcs [4]verbs.WC
	if n, err := cq.Poll(wcs[:]); n != 0 || err != nil || cq.ci != 2 {
		t.Fatalf("Poll: %d, %v, ci %d; want the 2 CQEs dropped", n, err, cq.ci)
	}
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
		if err := q.PostRecv([]verbs.RecvWR{{WRID: 9, SGE: verbs.SGE{Addr: 0x2000, Length: 64, LKey: 1}}}); err != nil {
			t.Fatal(err)
		}
		wrs := []verbs.SendWR{
			{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}},
			{WRID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}},
		}
		if err := q.PostSend(wrs); err != nil {
			t.Fatal(err)
		}
		copy(cq.buf[:mlx5CQESize], b[:mlx5CQESize])
		cq.buf[mlx5CQEOpOwn] &^= 1 // software owns it on the first pass
		var wcs [2]verbs.WC
		n, err := cq.Poll(wcs[:])
		if err != nil && (!errors.Is(err, verbs.ErrQueueCorrupt) || n != 0) {
			t.Fatalf("Poll: %d, %v", n, err)
		}
		for _, wc := range wcs[:n] {
			if wc.WRID != 1 && wc.WRID != 2 && wc.WRID != 9 {
				t.Fatalf("WRID %d was never posted: %+v", wc.WRID, wc)
			}
			if wc.Status == 0 && (wc.Opcode == verbs.WCRDMARead || wc.Opcode == verbs.WCRecv) && wc.ByteLen > 64 {
				t.Fatalf("delivered %+v: longer than posted", wc)
			}
		}
	})
}

// TestMLX5QueueFullRecovers: a queue that fills refuses with ErrQueueFull,
// writes nothing, and takes WRs again once completions are polled; a post
// larger than the queue can ever hold is another error (ErrQueueFull would
// make a caller poll and retry forever).
func TestMLX5QueueFullRecovers(t *testing.T) {
	q, cq, _ := mlx5TestQP(t, 8, 8, 0, 16)
	m := &mlx5Model{q: q, cq: cq}
	wr := []verbs.SendWR{{WRID: 1, Opcode: verbs.OpRDMAWrite, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}}}
	wcs := make([]verbs.WC, 16)
	for round := 0; round < 3; round++ {
		posted := 0
		for ; posted < 100; posted++ {
			wr[0].Flags = 0
			if posted == 7 {
				wr[0].Flags = verbs.SendSignaled // the last one retires them all
			}
			err := q.PostSend(wr)
			if errors.Is(err, verbs.ErrQueueFull) {
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
	if err := q.PostSend(make([]verbs.SendWR, 9)); err != verbs.ErrBatchTooLarge {
		t.Errorf("9 WRs on an empty 8-WQEBB SQ: %v, want ErrBatchTooLarge", err)
	}
	if err := q.PostRecv(make([]verbs.RecvWR, 9)); err != verbs.ErrBatchTooLarge {
		t.Errorf("9 WRs on an empty 8-entry RQ: %v, want ErrBatchTooLarge", err)
	}
}

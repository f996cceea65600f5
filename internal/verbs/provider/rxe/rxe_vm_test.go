//go:build vmtest

package rxe

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Kernel tests of the QP lifecycle and the rxe data path, rxe0 <-> rxe1 in
// one process. They need the rdmavm guest: rxe0 (10.77.0.1) and rxe1
// (10.77.0.2), GID index 1 = the IPv4-mapped RoCE v2 GID, 1500-byte veths
// (active MTU 1024).

const (
	vmGIDIndex = 1
	vmMTU      = vocab.MTU1024
	vmQKey     = 0x11111111
	udGRH      = 40 // UD receive buffers start with the GRH (RoCE v2 IPv4: 20 zero bytes + IPv4 header)
)

// resSnapshot is `rdma res show` (per-device object counts); tests that
// create kernel objects check that it is unchanged at the end.
func resSnapshot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("rdma", "res", "show").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma res show: %v\n%s", err, out)
	}
	return string(out)
}

// checkNoLeaks registers a cleanup, to run after every other cleanup of
// the test, that compares `rdma res show` with what it is now.
func checkNoLeaks(t testing.TB) {
	before := resSnapshot(t)
	t.Cleanup(func() {
		if after := resSnapshot(t); after != before {
			t.Errorf("rdma res show changed (leaked kernel objects):\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

// side is one end of a connection: a context on one device with a PD, a
// registered buffer, one CQ and one QP.
type side struct {
	dev string
	ctx *verbs.Context
	pd  *verbs.PD
	mr  *vmMR
	cq  *verbs.CQ
	qp  *verbs.QP
	gid [16]byte
	wcs []verbs.WC
}

func newSide(t testing.TB, dev string, typ verbs.QPType, bufSize int, depth uint32, inline uint32) *side {
	t.Helper()
	s := &side{dev: dev, wcs: make([]verbs.WC, 16)}
	var err error
	s.ctx = vmOpen(t, dev)
	s.pd = vmAllocPD(t, s.ctx)
	s.mr = vmRegMR(t, s.ctx, s.pd, bufSize)
	if s.cq, err = s.ctx.CreateCQ(int(2*depth + 2)); err != nil {
		t.Fatalf("%s: CreateCQ: %v", dev, err)
	}
	t.Cleanup(func() {
		if err := s.cq.Close(); err != nil {
			t.Errorf("%s: CQ close: %v", dev, err)
		}
	})
	s.qp, err = s.ctx.CreateQP(s.pd, verbs.QPAttr{Type: typ, SendCQ: s.cq, RecvCQ: s.cq,
		MaxSendWR: depth, MaxRecvWR: depth, MaxInlineData: inline})
	if err != nil {
		t.Fatalf("%s: CreateQP: %v", dev, err)
	}
	t.Cleanup(func() {
		if err := s.qp.Close(); err != nil {
			t.Errorf("%s: QP close: %v", dev, err)
		}
	})
	s.gid = vmGID(t, dev, vmGIDIndex)
	return s
}

func (s *side) info(psn uint32) verbs.PathInfo {
	return verbs.PathInfo{QPN: s.qp.QPN(), PSN: psn, GID: s.gid}
}

// connect brings a and b to RTS against each other.
func connect(t testing.TB, a, b *side) {
	t.Helper()
	ai, bi := a.info(100+a.qp.QPN()), b.info(200+b.qp.QPN())
	if err := a.qp.Connect(verbs.ConnectAttr{SGIDIndex: vmGIDIndex, PathMTU: vmMTU, QKey: vmQKey, Local: ai, Remote: bi}); err != nil {
		t.Fatalf("%s: %v", a.dev, err)
	}
	if err := b.qp.Connect(verbs.ConnectAttr{SGIDIndex: vmGIDIndex, PathMTU: vmMTU, QKey: vmQKey, Local: bi, Remote: ai}); err != nil {
		t.Fatalf("%s: %v", b.dev, err)
	}
	if a.qp.State() != verbs.QPStateRTS || b.qp.State() != verbs.QPStateRTS {
		t.Fatalf("states %v %v", a.qp.State(), b.qp.State())
	}
}

// waitWC polls s's CQ until a completion with wrID arrives (failing on a
// timeout or any error status).
func (s *side) waitWC(t testing.TB, wrID uint64) verbs.WC {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		n, err := s.cq.Poll(s.wcs[:1])
		if err != nil {
			t.Fatalf("%s: poll: %v", s.dev, err)
		}
		if n == 1 {
			wc := s.wcs[0]
			if wc.Status != 0 {
				t.Fatalf("%s: completion wr_id %d status %d (vendor_err %d) opcode %d", s.dev, wc.WRID, wc.Status, wc.VendorErr, wc.Opcode)
			}
			if wc.WRID != wrID {
				t.Fatalf("%s: completion wr_id %d, want %d (%+v)", s.dev, wc.WRID, wrID, wc)
			}
			return wc
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no completion for wr_id %d after 20 s", s.dev, wrID)
		}
		runtime.Gosched()
	}
}

func fill(b []byte, seed int) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x = x*1103515245 + 12345
		b[i] = byte(x >> 16)
	}
}

func mustEqual(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: byte %d is %#x, want %#x", what, i, got[i], want[i])
		}
	}
}

var vmSizes = []int{1, 2, 63, 64, 4095, 4096, 65536, 1 << 20}

// Layout of each side's buffer: [0, 1 MiB) source/destination for local
// ops, [1 MiB, 2 MiB) the area the peer writes/reads.
const vmHalf = 1 << 20

func TestRxeRCLoopback(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe1", verbs.QPTypeRC, 2*vmHalf, 16, 0)
	b := newSide(t, "rxe0", verbs.QPTypeRC, 2*vmHalf, 16, 0)
	connect(t, a, b)
	if c := a.qp.Caps(); c.MaxSendWR < 16 || c.MaxInlineData < 16 {
		t.Errorf("caps %+v", c)
	}
	wr := uint64(0)
	for op, name := range []string{"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ"} {
		for _, n := range vmSizes {
			wr++
			t.Logf("%s %d bytes", name, n)
			src := a.mr.buf[:n]
			dst := b.mr.buf[vmHalf : vmHalf+n]
			fill(src, op*100+n)
			clear(dst)
			remote := b.mr.addr(vmHalf)
			imm := uint32(0xc0de0000) + uint32(wr)
			swr := verbs.SendWR{WRID: wr, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: uint32(n), LKey: a.mr.lkey},
				RemoteAddr: remote, RKey: b.mr.rkey}
			recv := false
			switch name {
			case "SEND":
				swr.Opcode, recv = verbs.OpSend, true
			case "SEND_IMM":
				swr.Opcode, swr.Imm, recv = verbs.OpSendImm, imm, true
			case "WRITE":
				swr.Opcode = verbs.OpRDMAWrite
			case "WRITE_IMM":
				swr.Opcode, swr.Imm, recv = verbs.OpRDMAWriteImm, imm, true
			case "READ":
				// a reads b's area into its own buffer.
				swr.Opcode = verbs.OpRDMARead
				fill(dst, op*100+n)
				clear(src)
				src, dst = dst, src
			}
			if recv {
				if err := b.qp.PostRecv([]verbs.RecvWR{{WRID: 1000 + wr, SGE: verbs.SGE{Addr: b.mr.addr(vmHalf), Length: vmHalf, LKey: b.mr.lkey}}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.qp.PostSend([]verbs.SendWR{swr}); err != nil {
				t.Fatalf("%s %d: %v", name, n, err)
			}
			wc := a.waitWC(t, wr)
			wantOp := map[verbs.Opcode]verbs.WCOpcode{verbs.OpSend: verbs.WCSend, verbs.OpSendImm: verbs.WCSend, verbs.OpRDMAWrite: verbs.WCRDMAWrite, verbs.OpRDMAWriteImm: verbs.WCRDMAWrite, verbs.OpRDMARead: verbs.WCRDMARead}[swr.Opcode]
			if wc.Opcode != wantOp || wc.QPNum != a.qp.QPN() {
				t.Errorf("%s %d: requester WC %+v", name, n, wc)
			}
			if recv {
				rwc := b.waitWC(t, 1000+wr)
				if rwc.QPNum != b.qp.QPN() {
					t.Errorf("%s %d: responder WC qp_num %d", name, n, rwc.QPNum)
				}
				switch name {
				case "WRITE_IMM":
					if rwc.Opcode != verbs.WCRecvRDMAWithImm || rwc.Flags&verbs.WCWithImm == 0 || rwc.Imm != imm {
						t.Errorf("%s %d: responder WC %+v, want RECV_RDMA_WITH_IMM imm %#x", name, n, rwc, imm)
					}
				case "SEND_IMM":
					if rwc.Opcode != verbs.WCRecv || rwc.Flags&verbs.WCWithImm == 0 || rwc.Imm != imm || rwc.ByteLen != uint32(n) {
						t.Errorf("%s %d: responder WC %+v, want RECV with imm %#x", name, n, rwc, imm)
					}
				default:
					if rwc.Opcode != verbs.WCRecv || rwc.ByteLen != uint32(n) || rwc.Flags&verbs.WCWithImm != 0 {
						t.Errorf("%s %d: responder WC %+v", name, n, rwc)
					}
				}
			}
			mustEqual(t, fmt.Sprintf("%s %d", name, n), dst, src)
		}
	}
}

func TestRxeUCLoopback(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe1", verbs.QPTypeUC, 2*vmHalf, 16, 0)
	b := newSide(t, "rxe0", verbs.QPTypeUC, 2*vmHalf, 16, 0)
	connect(t, a, b)
	wr := uint64(0)
	for _, n := range []int{1, 64, 4096, 65536} {
		for _, opc := range []verbs.Opcode{verbs.OpSend, verbs.OpRDMAWrite} {
			wr++
			src, dst := a.mr.buf[:n], b.mr.buf[vmHalf:vmHalf+n]
			fill(src, int(opc)*7+n)
			clear(dst)
			if opc == verbs.OpSend {
				if err := b.qp.PostRecv([]verbs.RecvWR{{WRID: 1000 + wr, SGE: verbs.SGE{Addr: b.mr.addr(vmHalf), Length: vmHalf, LKey: b.mr.lkey}}}); err != nil {
					t.Fatal(err)
				}
			}
			err := a.qp.PostSend([]verbs.SendWR{{WRID: wr, Opcode: opc, Flags: verbs.SendSignaled,
				SGE: verbs.SGE{Addr: a.mr.addr(0), Length: uint32(n), LKey: a.mr.lkey}, RemoteAddr: b.mr.addr(vmHalf), RKey: b.mr.rkey}})
			if err != nil {
				t.Fatal(err)
			}
			a.waitWC(t, wr)
			if opc == verbs.OpSend {
				b.waitWC(t, 1000+wr)
			} else {
				// UC has no ACK: the requester completes when the packets
				// are sent. Wait for the bytes to land.
				vmcheck.Until(10*time.Second, nil, func() bool { return dst[n-1] == src[n-1] })
			}
			mustEqual(t, fmt.Sprintf("UC op %d %d", opc, n), dst, src)
		}
	}
	// READ is refused on UC before touching the ring.
	if err := a.qp.PostSend([]verbs.SendWR{{Opcode: verbs.OpRDMARead, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 1, LKey: a.mr.lkey}}}); err == nil {
		t.Error("RDMA READ on a UC QP was accepted")
	}
}

func TestRxeUDSend(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe1", verbs.QPTypeUD, 2*vmHalf, 16, 0)
	b := newSide(t, "rxe0", verbs.QPTypeUD, 2*vmHalf, 16, 0)
	connect(t, a, b)
	ah, err := a.ctx.CreateAH(a.pd, verbs.AHAttr{Port: 1, IsGlobal: true, DGID: b.gid, SGIDIndex: vmGIDIndex, HopLimit: 64})
	if err != nil {
		t.Fatalf("CreateAH: %v", err)
	}
	t.Cleanup(func() {
		if err := ah.Close(); err != nil {
			t.Errorf("AH close: %v", err)
		}
	})
	wr := uint64(0)
	for _, n := range []int{1, 2, 63, 64, 512, int(vmMTU.Bytes())} {
		for _, withImm := range []bool{false, true} {
			wr++
			src := a.mr.buf[:n]
			fill(src, n+int(wr))
			rbuf := b.mr.buf[vmHalf : vmHalf+udGRH+n]
			clear(rbuf)
			if err := b.qp.PostRecv([]verbs.RecvWR{{WRID: 1000 + wr, SGE: verbs.SGE{Addr: b.mr.addr(vmHalf), Length: uint32(udGRH + vmMTU.Bytes()), LKey: b.mr.lkey}}}); err != nil {
				t.Fatal(err)
			}
			swr := verbs.SendWR{WRID: wr, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: uint32(n), LKey: a.mr.lkey},
				AH: ah, RemoteQPN: b.qp.QPN(), RemoteQKey: vmQKey}
			if withImm {
				swr.Opcode, swr.Imm = verbs.OpSendImm, 0xabcd0000+uint32(wr)
			}
			if err := a.qp.PostSend([]verbs.SendWR{swr}); err != nil {
				t.Fatalf("UD send %d: %v", n, err)
			}
			a.waitWC(t, wr)
			rwc := b.waitWC(t, 1000+wr)
			if rwc.ByteLen != uint32(udGRH+n) || rwc.SrcQP != a.qp.QPN() || rwc.Flags&verbs.WCWithGRH == 0 {
				t.Errorf("UD recv %d: WC %+v (want byte_len %d, src_qp %d, GRH flag)", n, rwc, udGRH+n, a.qp.QPN())
			}
			if withImm && (rwc.Flags&verbs.WCWithImm == 0 || rwc.Imm != swr.Imm) {
				t.Errorf("UD recv imm: WC %+v, want imm %#x", rwc, swr.Imm)
			}
			mustEqual(t, fmt.Sprintf("UD %d", n), rbuf[udGRH:], src)
		}
	}
	// A UD send without an AH is refused.
	if err := a.qp.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend}}); err == nil {
		t.Error("UD send without AH accepted")
	}
}

// TestRxeQueueFullAndInline: a batch larger than the SQ can ever hold is
// refused whole (nothing posted), and not with ErrQueueFull, which would
// be retried forever; a batch of exactly the
// capacity of unsignaled inline WRITEs plus one signaled one goes through
// once slots are retired; an inline WR longer than granted is refused.
func TestRxeQueueFullAndInline(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe1", verbs.QPTypeRC, 2*vmHalf, 8, 64)
	b := newSide(t, "rxe0", verbs.QPTypeRC, 2*vmHalf, 8, 64)
	connect(t, a, b)
	caps := a.qp.Caps()
	if caps.MaxInlineData < 64 || caps.MaxSendWR < 8 {
		t.Fatalf("caps %+v: want MaxInlineData >= 64, MaxSendWR >= 8", caps)
	}
	t.Logf("granted caps %+v", caps)
	w := verbs.SendWR{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendInline, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 64},
		RemoteAddr: b.mr.addr(vmHalf), RKey: b.mr.rkey}
	batch := make([]verbs.SendWR, caps.MaxSendWR+1)
	for i := range batch {
		batch[i] = w
		batch[i].WRID = uint64(10 + i)
		fill(a.mr.buf[:64], 5)
	}
	if err := a.qp.PostSend(batch); err != verbs.ErrBatchTooLarge {
		t.Fatalf("batch of %d on an SQ of %d: %v, want ErrBatchTooLarge", len(batch), caps.MaxSendWR, err)
	}
	if p := a.qp.Provider().(*rxeQP).sq.loadProd(); p != 0 {
		t.Fatalf("a refused batch moved the SQ producer index to %d", p)
	}
	// The whole capacity, the last WR signaled.
	batch = batch[:caps.MaxSendWR]
	batch[len(batch)-1].Flags |= verbs.SendSignaled
	if err := a.qp.PostSend(batch); err != nil {
		t.Fatalf("batch of %d: %v", len(batch), err)
	}
	a.waitWC(t, batch[len(batch)-1].WRID)
	mustEqual(t, "inline", b.mr.buf[vmHalf:vmHalf+64], a.mr.buf[:64])
	// Too long for the granted inline size.
	w.SGE.Length = caps.MaxInlineData + 1
	if err := a.qp.PostSend([]verbs.SendWR{w}); err == nil {
		t.Error("inline longer than MaxInlineData accepted")
	}
}

// TestRxeLifecycleErrors: a doorbell before RTS fails with the command
// name and errno; closing twice is fine; a CQ in use cannot be closed.
func TestRxeLifecycleErrors(t *testing.T) {
	checkNoLeaks(t)
	a := newSide(t, "rxe0", verbs.QPTypeRC, 1<<16, 4, 0)
	if err := a.qp.PostRecv([]verbs.RecvWR{{SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 1, LKey: a.mr.lkey}}}); err == nil {
		t.Error("PostRecv in RESET accepted")
	}
	if err := a.qp.ToInit(verbs.InitAttr{Port: 1, Access: verbs.AccessLocalWrite}); err != nil {
		t.Fatal(err)
	}
	err := a.qp.PostSend([]verbs.SendWR{{WRID: 1, Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 1, LKey: a.mr.lkey}}})
	if err == nil || !strings.Contains(err.Error(), "POST_SEND") || !errors.Is(err, unix.EINVAL) {
		t.Errorf("send in INIT: %v, want a POST_SEND EINVAL error", err)
	}
	rq := a.qp.Provider().(*rxeQP)
	if p := rq.sq.loadProd(); p != 0 {
		t.Errorf("a refused send moved the SQ producer index to %d", p)
	}
	// The kernel's own answer to a doorbell below RTS: EINVAL from
	// POST_SEND.
	if err := rq.doorbell(); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "rxe0: POST_SEND (rxe doorbell)") {
		t.Errorf("doorbell in INIT: %v, want rxe0: POST_SEND (rxe doorbell): EINVAL", err)
	}
	// A bad RTR (empty GID slot) names MODIFY_QP and leaves the QP in INIT.
	err = a.qp.ToRTR(verbs.RTRAttr{Dest: verbs.AHAttr{Port: 1, IsGlobal: true, SGIDIndex: 7, DGID: a.gid}, PathMTU: vmMTU, DestQPN: a.qp.QPN(), MaxDestRdAtomic: 1, MinRNRTimer: 12})
	if err == nil || !strings.Contains(err.Error(), "MODIFY_QP") {
		t.Errorf("RTR with sgid_index 7: %v", err)
	}
	if a.qp.State() != verbs.QPStateInit {
		t.Errorf("state %v after failed RTR", a.qp.State())
	}
	if err := a.cq.Close(); err == nil {
		t.Error("closing a CQ still used by a QP succeeded")
	}
	if err := a.qp.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.qp.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := a.qp.PostSend(nil); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("PostSend after Close: %v", err)
	}
}

// postPollWrite posts one signaled WRITE and polls until it completes.
func postPollWrite(a *side, wr []verbs.SendWR) {
	if err := a.qp.PostSend(wr); err != nil {
		panic(err)
	}
	for {
		n, err := a.cq.Poll(a.wcs[:1])
		if err != nil {
			panic(err)
		}
		if n == 1 {
			if a.wcs[0].Status != 0 {
				panic(fmt.Sprintf("status %d", a.wcs[0].Status))
			}
			return
		}
	}
}

func benchPair(t testing.TB, inline uint32) (*side, *side) {
	a := newSide(t, "rxe1", verbs.QPTypeRC, 1<<16, 16, inline)
	b := newSide(t, "rxe0", verbs.QPTypeRC, 1<<16, 16, inline)
	connect(t, a, b)
	return a, b
}

func TestRxeVMPostPollAllocs(t *testing.T) {
	checkNoLeaks(t)
	a, b := benchPair(t, 64)
	for _, inline := range []bool{false, true} {
		wr := []verbs.SendWR{{WRID: 7, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 64, LKey: a.mr.lkey},
			RemoteAddr: b.mr.addr(0), RKey: b.mr.rkey}}
		if inline {
			wr[0].Flags |= verbs.SendInline
		}
		rwr := []verbs.RecvWR{{WRID: 8, SGE: verbs.SGE{Addr: b.mr.addr(0), Length: 64, LKey: b.mr.lkey}}}
		allocs := testing.AllocsPerRun(50, func() {
			postPollWrite(a, wr)
			// PostRecv is on the measured path too (the RQ fills up: the
			// WRITEs consume nothing, so post/drain within capacity).
			if err := b.qp.PostRecv(rwr); err != nil && !errors.Is(err, verbs.ErrQueueFull) {
				panic(err)
			}
		})
		if allocs != 0 {
			t.Errorf("inline=%v: %v allocations per post+poll", inline, allocs)
		}
		t.Logf("inline=%v: %v allocations per post+poll iteration", inline, allocs)
	}
}

func benchPostPoll(b *testing.B, n uint32, inline bool) {
	checkNoLeaks(b)
	x, y := benchPair(b, 64)
	wr := []verbs.SendWR{{WRID: 7, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: x.mr.addr(0), Length: n, LKey: x.mr.lkey},
		RemoteAddr: y.mr.addr(0), RKey: y.mr.rkey}}
	if inline {
		wr[0].Flags |= verbs.SendInline
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		postPollWrite(x, wr)
	}
}

// BenchmarkPostPollRXE: one signaled 64-byte RDMA WRITE rxe1 -> rxe0, post
// and poll to completion, per op (latency of the whole user+kernel path).
func BenchmarkPostPollRXE(b *testing.B) { benchPostPoll(b, 64, false) }

// BenchmarkPostPollInlineRXE: the same with the 16 bytes inline.
func BenchmarkPostPollInlineRXE(b *testing.B) { benchPostPoll(b, 16, true) }

// TestRxeCreateErrors: refused creates name the command and leak nothing.
func TestRxeCreateErrors(t *testing.T) {
	checkNoLeaks(t)
	c := vmOpen(t, "rxe0")
	pd := vmAllocPD(t, c)
	if _, err := c.CreateCQ(0); err == nil {
		t.Error("CreateCQ(0) accepted")
	}
	// rxe's max_cqe is 32767.
	if _, err := c.CreateCQ(1 << 20); err == nil || !strings.Contains(err.Error(), "CREATE_CQ") {
		t.Errorf("CreateCQ(1<<20): %v, want a CREATE_CQ error", err)
	}
	cq, err := c.CreateCQ(8)
	if err != nil {
		t.Fatal(err)
	}
	defer cq.Close()
	// rxe's max_qp_wr is 1<<20; its max inline is 512.
	for _, attr := range []verbs.QPAttr{
		{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 1 << 21, MaxRecvWR: 1},
		{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4, MaxInlineData: 4096},
	} {
		if _, err := c.CreateQP(pd, attr); err == nil || !strings.Contains(err.Error(), "CREATE_QP") {
			t.Errorf("CreateQP(%+v): %v, want a CREATE_QP error", attr, err)
		}
	}
	if _, err := c.CreateQP(pd, verbs.QPAttr{Type: 7, SendCQ: cq, RecvCQ: cq, MaxSendWR: 1}); err == nil {
		t.Error("QP type 7 accepted")
	}
	if _, err := c.CreateQP(pd, verbs.QPAttr{Type: verbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxSendSGE: 2}); err == nil {
		t.Error("2 send SGEs accepted by the one-SGE rxe data path")
	}
	// An AH to a GID nobody has: the kernel cannot resolve the MAC.
	var nobody [16]byte
	copy(nobody[10:], []byte{0xff, 0xff, 10, 77, 0, 99})
	if ah, err := c.CreateAH(pd, verbs.AHAttr{Port: 1, IsGlobal: true, DGID: nobody, SGIDIndex: vmGIDIndex, HopLimit: 64}); err == nil {
		t.Logf("CreateAH to an unreachable GID succeeded (kernel resolves lazily); closing it")
		if err := ah.Close(); err != nil {
			t.Error(err)
		}
	} else if !strings.Contains(err.Error(), "CREATE_AH") {
		t.Errorf("CreateAH unreachable: %v, want a CREATE_AH error", err)
	}
}

// TestRxeContextCloseReleasesAll: closing only the context destroys its
// QP, AH, CQ, MR and PD (newest first); the objects' own Close is then a
// no-op.
func TestRxeContextCloseReleasesAll(t *testing.T) {
	checkNoLeaks(t)
	c, err := openDevice("rxe1")
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	buf, err := verbs.NewBuffer(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	if _, err := pd.RegMR(buf, verbs.AccessAll); err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	qp, err := c.CreateQP(pd, verbs.QPAttr{Type: verbs.QPTypeUD, SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
	if err != nil {
		t.Fatal(err)
	}
	ah, err := c.CreateAH(pd, verbs.AHAttr{Port: 1, IsGlobal: true, DGID: vmGID(t, "rxe0", vmGIDIndex), SGIDIndex: vmGIDIndex, HopLimit: 64})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("context close: %v", err)
	}
	for name, f := range map[string]func() error{"QP": qp.Close, "AH": ah.Close, "CQ": cq.Close} {
		if err := f(); err != nil {
			t.Errorf("%s.Close after Context.Close: %v", name, err)
		}
	}
	if _, err := cq.Poll(make([]verbs.WC, 1)); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("Poll after close: %v", err)
	}
}

// TestRxeSigAllSeparateCQs: with SigAll an unsignaled SEND still
// completes; send and receive completions go to their own CQs.
func TestRxeSigAllSeparateCQs(t *testing.T) {
	checkNoLeaks(t)
	type end struct {
		ctx      *verbs.Context
		pd       *verbs.PD
		mr       *vmMR
		scq, rcq *verbs.CQ
		qp       *verbs.QP
		gid      [16]byte
		dev      string
		sinfo    verbs.PathInfo
		wcs      []verbs.WC
	}
	mk := func(dev string) *end {
		e := &end{dev: dev, wcs: make([]verbs.WC, 4)}
		e.ctx = vmOpen(t, dev)
		e.pd = vmAllocPD(t, e.ctx)
		e.mr = vmRegMR(t, e.ctx, e.pd, 1<<16)
		var err error
		for _, p := range []**verbs.CQ{&e.scq, &e.rcq} {
			if *p, err = e.ctx.CreateCQ(8); err != nil {
				t.Fatal(err)
			}
			cq := *p
			t.Cleanup(func() { _ = cq.Close() })
		}
		if e.qp, err = e.ctx.CreateQP(e.pd, verbs.QPAttr{Type: verbs.QPTypeRC, SendCQ: e.scq, RecvCQ: e.rcq, MaxSendWR: 4, MaxRecvWR: 4, SigAll: true}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.qp.Close() })
		e.gid = vmGID(t, dev, vmGIDIndex)
		e.sinfo = verbs.PathInfo{QPN: e.qp.QPN(), PSN: 0xabcde + e.qp.QPN(), GID: e.gid}
		return e
	}
	a, b := mk("rxe1"), mk("rxe0")
	for _, p := range [][2]*end{{a, b}, {b, a}} {
		if err := p[0].qp.Connect(verbs.ConnectAttr{SGIDIndex: vmGIDIndex, Local: p[0].sinfo, Remote: p[1].sinfo}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.qp.PostRecv([]verbs.RecvWR{{WRID: 5, SGE: verbs.SGE{Addr: b.mr.addr(0), Length: 4096, LKey: b.mr.lkey}}}); err != nil {
		t.Fatal(err)
	}
	fill(a.mr.buf[:100], 42)
	if err := a.qp.PostSend([]verbs.SendWR{{WRID: 6, Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: a.mr.addr(0), Length: 100, LKey: a.mr.lkey}}}); err != nil {
		t.Fatal(err)
	}
	wait := func(cq *verbs.CQ, what string) verbs.WC {
		deadline := time.Now().Add(20 * time.Second)
		wcs := make([]verbs.WC, 2)
		for time.Now().Before(deadline) {
			n, err := cq.Poll(wcs)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				if n != 1 || wcs[0].Status != 0 {
					t.Fatalf("%s: %d completions %+v", what, n, wcs[:n])
				}
				return wcs[0]
			}
			runtime.Gosched()
		}
		t.Fatalf("%s: no completion", what)
		return verbs.WC{}
	}
	if wc := wait(a.scq, "unsignaled SEND on a SigAll QP"); wc.WRID != 6 || wc.Opcode != verbs.WCSend {
		t.Errorf("send WC %+v", wc)
	}
	if wc := wait(b.rcq, "RECV"); wc.WRID != 5 || wc.ByteLen != 100 {
		t.Errorf("recv WC %+v", wc)
	}
	mustEqual(t, "SEND 100", b.mr.buf[:100], a.mr.buf[:100])
	for _, cq := range []*verbs.CQ{a.rcq, b.scq} {
		if n, _ := cq.Poll(make([]verbs.WC, 1)); n != 0 {
			t.Error("a completion landed on the wrong CQ")
		}
	}
}

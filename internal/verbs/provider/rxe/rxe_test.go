package rxe

import (
	"encoding/binary"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// fakeRxeRing builds a struct rxe_queue_buf as the kernel would (header,
// zero indices) in ordinary memory.
func fakeRxeRing(log2 uint32, slots int) []byte {
	buf := make([]byte, rxeRingDataOff+slots<<log2)
	binary.LittleEndian.PutUint32(buf[rxeRingLog2Off:], log2)
	binary.LittleEndian.PutUint32(buf[rxeRingMaskOff:], uint32(slots-1))
	return buf
}

func mustRing(t testing.TB, buf []byte) *rxeRing {
	t.Helper()
	r, err := newRxeRing(buf)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRxeRingHeader(t *testing.T) {
	r := mustRing(t, fakeRxeRing(8, 32))
	if r.capacity() != 31 || r.slotSize != 256 {
		t.Fatalf("capacity %d slot %d, want 31 256", r.capacity(), r.slotSize)
	}
	if got := r.free(0, 0); got != 31 {
		t.Errorf("free(0,0) = %d, want 31", got)
	}
	if got := r.free(5, 6); got != 0 {
		t.Errorf("free(5,6) = %d, want 0 (full)", got)
	}
	if got := r.free(31, 0); got != 0 {
		t.Errorf("free(31,0) = %d, want 0 (full)", got)
	}
	if got := r.free(3, 1); got != 29 {
		t.Errorf("free(3,1) = %d, want 29", got)
	}
	if uintptr(r.slotPtr(2))-uintptr(unsafe.Pointer(&r.buf[0])) != rxeRingDataOff+2*256 {
		t.Error("slot 2 at the wrong offset")
	}

	bad := map[string][]byte{
		"short":      make([]byte, 100),
		"log2 small": fakeRxeRing(4, 4),
		"mask 0":     fakeRxeRing(6, 1),
		"mask not 2^n-1": func() []byte {
			b := fakeRxeRing(6, 8)
			binary.LittleEndian.PutUint32(b[rxeRingMaskOff:], 5)
			return b
		}(),
		"too small for slots": fakeRxeRing(6, 8)[:rxeRingDataOff+7*64],
		"index beyond mask": func() []byte {
			b := fakeRxeRing(6, 8)
			binary.LittleEndian.PutUint32(b[rxeRingProdOff:], 8)
			return b
		}(),
	}
	for name, b := range bad {
		if _, err := newRxeRing(b); err == nil {
			t.Errorf("%s: newRxeRing accepted a bad header", name)
		}
	}
}

// FuzzRxeRingHeader: the header is kernel input; newRxeRing must reject
// anything whose slots would fall outside the mapping, and never panic.
func FuzzRxeRingHeader(f *testing.F) {
	f.Add(uint32(7), uint32(31), uint32(0), uint32(0), 384+32*128)
	f.Add(uint32(8), uint32(31), uint32(3), uint32(1), 384+32*256)
	f.Add(uint32(31), uint32(0xffffffff), uint32(0), uint32(0), 4096)
	f.Add(uint32(6), uint32(63), uint32(64), uint32(0), 384+64*64)
	f.Fuzz(func(t *testing.T, log2, mask, prod, cons uint32, size int) {
		if size < 0 || size > 1<<20 {
			return
		}
		b := make([]byte, size)
		if size >= rxeRingDataOff {
			binary.LittleEndian.PutUint32(b[0:], log2)
			binary.LittleEndian.PutUint32(b[4:], mask)
			binary.LittleEndian.PutUint32(b[rxeRingProdOff:], prod)
			binary.LittleEndian.PutUint32(b[rxeRingConsOff:], cons)
		}
		r, err := newRxeRing(b)
		if err != nil {
			return
		}
		last := r.slot(r.mask)
		end := uintptr(unsafe.Pointer(&last[len(last)-1])) - uintptr(unsafe.Pointer(&b[0]))
		if end >= uintptr(len(b)) {
			t.Fatalf("last slot ends at %d, mapping is %d", end, len(b))
		}
	})
}

func TestEncodeRxeSendWQE(t *testing.T) {
	slot := make([]byte, 512)
	for i := range slot {
		slot[i] = 0xee // stale kernel state must be cleared
	}
	wr := verbs.SendWR{WRID: 0x1122334455667788, Opcode: verbs.OpRDMAWriteImm, Flags: verbs.SendSignaled, Imm: 0xa1b2c3d4,
		SGE: verbs.SGE{Addr: 0x7f0000001000, Length: 4096, LKey: 0x2c2}, RemoteAddr: 0x7f0000009000, RKey: 0x3c3}
	encodeRxeSendWQE(slot, &wr, 0, 9)
	le := binary.LittleEndian
	check := func(name string, got, want uint64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %#x, want %#x", name, got, want)
		}
	}
	check("wr_id", le.Uint64(slot[0:]), wr.WRID)
	check("reserved", uint64(le.Uint32(slot[8:])), 0)
	check("opcode", uint64(le.Uint32(slot[12:])), 1)
	check("send_flags", uint64(le.Uint32(slot[16:])), 2)
	check("imm bytes", uint64(binary.BigEndian.Uint32(slot[20:])), 0xa1b2c3d4)
	check("remote_addr", le.Uint64(slot[24:]), wr.RemoteAddr)
	check("rkey", uint64(le.Uint32(slot[32:])), 0x3c3)
	check("status", uint64(le.Uint32(slot[144:])), 0)
	check("state", uint64(le.Uint32(slot[148:])), 0)
	check("iova", le.Uint64(slot[152:]), wr.RemoteAddr)
	check("first_psn", uint64(le.Uint32(slot[164:])), 0)
	check("ssn", uint64(le.Uint32(slot[176:])), 9)
	check("dma.length", uint64(le.Uint32(slot[184:])), 4096)
	check("dma.resid", uint64(le.Uint32(slot[188:])), 4096)
	check("dma.cur_sge", uint64(le.Uint32(slot[192:])), 0)
	check("dma.num_sge", uint64(le.Uint32(slot[196:])), 1)
	check("dma.sge_offset", uint64(le.Uint32(slot[200:])), 0)
	check("sge.addr", le.Uint64(slot[208:]), wr.SGE.Addr)
	check("sge.length", uint64(le.Uint32(slot[216:])), 4096)
	check("sge.lkey", uint64(le.Uint32(slot[220:])), 0x2c2)

	// Inline: the payload is copied to offset 208.
	payload := []byte("inline payload, 32 bytes long!!!")
	wr = verbs.SendWR{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendInline | verbs.SendSignaled,
		SGE: verbs.SGE{Addr: uint64(uintptr(unsafe.Pointer(&payload[0]))), Length: uint32(len(payload))}, RemoteAddr: 64, RKey: 5}
	encodeRxeSendWQE(slot, &wr, 0, 0)
	check("inline flags", uint64(le.Uint32(slot[16:])), 0x0a)
	if string(slot[208:208+len(payload)]) != string(payload) {
		t.Errorf("inline data = %q", slot[208:208+len(payload)])
	}

	// UD SEND: remote QPN, QKey and the AH number.
	wr = verbs.SendWR{WRID: 2, Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: 1, Length: 10, LKey: 7}, RemoteQPN: 0x12, RemoteQKey: 0x11111111}
	encodeRxeSendWQE(slot, &wr, 3, 0)
	check("ud.remote_qpn", uint64(le.Uint32(slot[24:])), 0x12)
	check("ud.remote_qkey", uint64(le.Uint32(slot[28:])), 0x11111111)
	check("ud.ah_num", uint64(le.Uint32(slot[36:])), 3)
	check("ud iova", le.Uint64(slot[152:]), 0)
	check("imm untouched", uint64(le.Uint32(slot[20:])), 0)
	for i := 56; i < 144; i++ {
		if slot[i] != 0 {
			t.Fatalf("ud.av byte %d = %#x, want 0 (the kernel uses ah_num)", i, slot[i])
		}
	}
}

func TestEncodeRxeRecvWQE(t *testing.T) {
	slot := make([]byte, 64)
	for i := range slot {
		slot[i] = 0xee
	}
	encodeRxeRecvWQE(slot, &verbs.RecvWR{WRID: 77, SGE: verbs.SGE{Addr: 0x1000, Length: 4096, LKey: 9}})
	le := binary.LittleEndian
	want := []struct {
		off int
		v   uint64
		sz  int
	}{{0, 77, 8}, {8, 0, 4}, {12, 0, 4}, {16, 4096, 4}, {20, 4096, 4}, {24, 0, 4}, {28, 1, 4}, {32, 0, 4}, {36, 0, 4}, {40, 0x1000, 8}, {48, 4096, 4}, {52, 9, 4}}
	for _, w := range want {
		var got uint64
		if w.sz == 8 {
			got = le.Uint64(slot[w.off:])
		} else {
			got = uint64(le.Uint32(slot[w.off:]))
		}
		if got != w.v {
			t.Errorf("recv wqe off %d = %#x, want %#x", w.off, got, w.v)
		}
	}
}

// encodeCQE is the kernel side of decodeRxeCQE, for tests.
func encodeCQE(b []byte, wc *verbs.WC) {
	le := binary.LittleEndian
	le.PutUint64(b[0:], wc.WRID)
	le.PutUint32(b[8:], uint32(wc.Status))
	le.PutUint32(b[12:], uint32(wc.Opcode))
	le.PutUint32(b[16:], wc.VendorErr)
	le.PutUint32(b[20:], wc.ByteLen)
	binary.BigEndian.PutUint32(b[24:], wc.Imm)
	le.PutUint32(b[28:], wc.QPNum)
	le.PutUint32(b[32:], wc.SrcQP)
	le.PutUint32(b[36:], wc.Flags)
	le.PutUint16(b[40:], wc.PKeyIndex)
	le.PutUint16(b[42:], wc.SLID)
	b[44], b[45], b[46] = wc.SL, wc.DLIDBits, wc.PortNum
}

func FuzzDecodeRxeCQE(f *testing.F) {
	seed := make([]byte, 48)
	encodeCQE(seed, &verbs.WC{WRID: 5, Opcode: verbs.WCRecv, ByteLen: 4096, QPNum: 17, Flags: verbs.WCWithGRH, PortNum: 1})
	f.Add(seed)
	f.Add(make([]byte, 48))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < rxeCQESize {
			return
		}
		var wc verbs.WC
		decodeRxeCQE(b, &wc)
		again := make([]byte, 48)
		encodeCQE(again, &wc)
		if string(again[:47]) != string(b[:47]) {
			t.Fatalf("decode/encode round trip differs:\n%x\n%x", b[:47], again[:47])
		}
	})
}

func TestWCLayoutMatchesUverbsWC(t *testing.T) {
	// WC documents itself as laid out as struct ib_uverbs_wc.
	var wc verbs.WC
	offs := []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"WRID", unsafe.Offsetof(wc.WRID), 0}, {"Status", unsafe.Offsetof(wc.Status), 8},
		{"Opcode", unsafe.Offsetof(wc.Opcode), 12}, {"VendorErr", unsafe.Offsetof(wc.VendorErr), 16},
		{"ByteLen", unsafe.Offsetof(wc.ByteLen), 20}, {"Imm", unsafe.Offsetof(wc.Imm), 24},
		{"QPNum", unsafe.Offsetof(wc.QPNum), 28}, {"SrcQP", unsafe.Offsetof(wc.SrcQP), 32},
		{"Flags", unsafe.Offsetof(wc.Flags), 36}, {"PKeyIndex", unsafe.Offsetof(wc.PKeyIndex), 40},
		{"SLID", unsafe.Offsetof(wc.SLID), 42}, {"SL", unsafe.Offsetof(wc.SL), 44},
		{"DLIDBits", unsafe.Offsetof(wc.DLIDBits), 45}, {"PortNum", unsafe.Offsetof(wc.PortNum), 46},
		{"size", unsafe.Sizeof(wc), 48},
	}
	for _, o := range offs {
		if o.got != o.want {
			t.Errorf("WC.%s at %d, want %d", o.name, o.got, o.want)
		}
	}
}

// fakeRxeKernel plays the kernel's requester/completer for an rxeQP whose
// rings live in ordinary memory: on each doorbell it consumes the SQ,
// writes one CQE per signaled WQE and moves the SQ consumer index, like
// rxe does after the ACK.
type fakeRxeKernel struct {
	qp   *rxeQP
	cq   *rxeRing
	bell chan struct{}
	done chan struct{}
	wg   sync.WaitGroup
}

// fakeRxeQPCQ is an RC QP numbered fakeQPN (64-byte inline, sqSlots
// slots in the SQ and RQ) and its CQ of cqSlots, on rings in ordinary
// memory of the fake device "rxefake0".
func fakeRxeQPCQ(t testing.TB, sqSlots, cqSlots int) (*rxeQP, *rxeCQ) {
	cq := newRxeCQ(mustRing(t, fakeRxeRing(7, cqSlots)), "rxefake0")
	qp := newRxeQP(-1, "rxefake0", verbs.QPTypeRC, fakeQPN, 64, cq, cq)
	qp.sq = mustRing(t, fakeRxeRing(9, sqSlots))
	qp.rq = mustRing(t, fakeRxeRing(6, sqSlots))
	cq.attach(qp)
	return qp, cq
}

const fakeQPN = 17

func newFakeRxe(t testing.TB, sqSlots, cqSlots int) (*rxeQP, *rxeCQ, *fakeRxeKernel) {
	qp, cq := fakeRxeQPCQ(t, sqSlots, cqSlots)
	k := &fakeRxeKernel{qp: qp, cq: cq.ring, bell: make(chan struct{}, 1), done: make(chan struct{})}
	qp.kick = func() error {
		select {
		case k.bell <- struct{}{}:
		default:
		}
		return nil
	}
	k.wg.Add(1)
	go k.run()
	t.Cleanup(func() { close(k.done); k.wg.Wait() })
	return qp, cq, k
}

func (k *fakeRxeKernel) run() {
	defer k.wg.Done()
	for {
		select {
		case <-k.done:
			return
		case <-k.bell:
		}
		k.step()
	}
}

// step executes every posted send WQE: one CQE per signaled one, then the
// SQ consumer index moves past it.
func (k *fakeRxeKernel) step() {
	le := binary.LittleEndian
	sq := k.qp.sq
	cons := sq.loadCons()
	prod := sq.loadProd()
	for cons != prod {
		w := sq.slot(cons)
		if le.Uint32(w[rxeSWQESendFlags:])&uint32(verbs.SendSignaled) != 0 {
			cp := k.cq.loadProd()
			if k.cq.next(cp) == k.cq.loadCons() {
				panic("fake kernel: CQ overrun")
			}
			encodeCQE(k.cq.slot(cp), &verbs.WC{WRID: le.Uint64(w[0:]), Opcode: rxeWCOpcode(le.Uint32(w[12:])),
				ByteLen: le.Uint32(w[rxeSWQEDMALength:]), QPNum: fakeQPN})
			k.cq.storeProd(k.cq.next(cp))
		}
		le.PutUint32(w[rxeSWQEState:], 2)
		cons = sq.next(cons)
		sq.storeCons(cons)
	}
}

// rxeWCOpcode is the kernel's wr_to_wc_opcode for the opcodes posted here.
func rxeWCOpcode(op uint32) verbs.WCOpcode {
	switch op {
	case 2, 3:
		return verbs.WCSend
	case 4:
		return verbs.WCRDMARead
	case 5:
		return verbs.WCCompSwap
	case 6:
		return verbs.WCFetchAdd
	}
	return verbs.WCRDMAWrite
}

// newSyncFakeRxe is newFakeRxe without the kernel goroutine: the caller
// runs k.step() after posting (benchmarks measure only the data path).
func newSyncFakeRxe(t testing.TB, sqSlots, cqSlots int) (*rxeQP, *rxeCQ, *fakeRxeKernel) {
	qp, cq := fakeRxeQPCQ(t, sqSlots, cqSlots)
	k := &fakeRxeKernel{qp: qp, cq: cq.ring}
	qp.kick = func() error { return nil }
	return qp, cq, k
}

// BenchmarkRxePostPoll: one signaled 64-byte RDMA WRITE and one receive
// posted, the fake kernel run in the same goroutine, the CQE polled.
func BenchmarkRxePostPoll(b *testing.B) {
	qp, cq, k := newSyncFakeRxe(b, 64, 64)
	wrs := []verbs.SendWR{{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGE: verbs.SGE{Addr: 0x1000, Length: 64, LKey: 1}, RemoteAddr: 1, RKey: 1}}
	rwr := []verbs.RecvWR{{WRID: 2, SGE: verbs.SGE{Addr: 0x2000, Length: 64, LKey: 1}}}
	wcs := make([]verbs.WC, 4)
	b.ReportAllocs()
	for b.Loop() {
		if err := qp.PostSend(wrs); err != nil {
			b.Fatal(err)
		}
		k.step()
		if n, err := cq.Poll(wcs); n != 1 || err != nil {
			b.Fatalf("polled %d: %v", n, err)
		}
		if err := qp.PostRecv(rwr); err != nil {
			b.Fatal(err)
		}
		qp.rq.storeCons(qp.rq.loadProd()) // the fake kernel "consumes" the receive
	}
}

func pollN(t testing.TB, cq *rxeCQ, wcs []verbs.WC, n int) {
	t.Helper()
	got := 0
	for spins := 0; got < n; spins++ {
		k, err := cq.Poll(wcs[got:n])
		if err != nil {
			t.Fatal(err)
		}
		got += k
		if k == 0 {
			runtime.Gosched() // let the fake kernel goroutine run
		}
		if spins > 50_000_000 {
			t.Fatalf("polled %d of %d completions", got, n)
		}
	}
}

func TestRxeFakeKernelPostPoll(t *testing.T) {
	qp, cq, _ := newFakeRxe(t, 8, 16)
	buf := make([]byte, 64)
	wrs := make([]verbs.SendWR, 3)
	for i := range wrs {
		wrs[i] = verbs.SendWR{WRID: uint64(100 + i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGE: verbs.SGE{Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), Length: uint32(8 * (i + 1)), LKey: 1}, RemoteAddr: 4096, RKey: 2}
	}
	wrs[1].Flags = 0 // unsignaled: no CQE, slot still retired
	if err := qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	wcs := make([]verbs.WC, 4)
	pollN(t, cq, wcs, 2)
	if wcs[0].WRID != 100 || wcs[1].WRID != 102 || wcs[1].ByteLen != 24 || wcs[0].Opcode != verbs.WCRDMAWrite {
		t.Fatalf("completions %+v %+v", wcs[0], wcs[1])
	}
	if n, _ := cq.Poll(wcs); n != 0 {
		t.Fatalf("extra completions: %d", n)
	}

	// Full: 7 usable slots; ask for 8 without posting any.
	for qp.sq.loadCons() != qp.sq.loadProd() {
	}
	many := make([]verbs.SendWR, 8)
	for i := range many {
		many[i] = wrs[0]
	}
	if err := qp.PostSend(many); err != verbs.ErrBatchTooLarge {
		t.Fatalf("posting 8 on a 7-slot SQ: %v, want ErrBatchTooLarge", err)
	}
	if qp.sq.loadProd() != 3 {
		t.Fatalf("a refused post moved the producer index to %d", qp.sq.loadProd())
	}

	// Bad WRs are refused before any slot is written.
	bad := []verbs.SendWR{wrs[0], {Opcode: verbs.OpRDMAWrite, Flags: verbs.SendInline, SGE: verbs.SGE{Length: 65}}}
	if err := qp.PostSend(bad); !errors.Is(err, verbs.ErrInlineTooLong) {
		t.Fatalf("inline 65 > 64: %v", err)
	}
	if err := qp.PostSend([]verbs.SendWR{{Opcode: 9}}); !errors.Is(err, verbs.ErrBadOpcode) {
		t.Fatalf("opcode 9: %v", err)
	}
	if qp.sq.loadProd() != 3 {
		t.Fatal("a refused post moved the producer index")
	}
}

func TestRxePostRecvFull(t *testing.T) {
	qp, _, _ := newFakeRxe(t, 4, 8)
	r := []verbs.RecvWR{{WRID: 1, SGE: verbs.SGE{Addr: 1, Length: 2, LKey: 3}}}
	for i := 0; i < 3; i++ {
		if err := qp.PostRecv(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := qp.PostRecv(r); !errors.Is(err, verbs.ErrQueueFull) {
		t.Fatalf("4th recv on a 3-slot RQ: %v", err)
	}
	// The kernel consumes one: room again.
	qp.rq.storeCons(1)
	if err := qp.PostRecv(r); err != nil {
		t.Fatal(err)
	}
}

func TestRxePostPollAllocs(t *testing.T) {
	qp, cq, _ := newFakeRxe(t, 32, 64)
	buf := make([]byte, 64)
	wr := []verbs.SendWR{{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled | verbs.SendInline,
		SGE: verbs.SGE{Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), Length: 16}, RemoteAddr: 1, RKey: 1}}
	rwr := []verbs.RecvWR{{WRID: 2, SGE: verbs.SGE{Addr: 1, Length: 64, LKey: 1}}}
	wcs := make([]verbs.WC, 4)
	allocs := testing.AllocsPerRun(200, func() {
		if err := qp.PostSend(wr); err != nil {
			t.Fatal(err)
		}
		pollN(t, cq, wcs, 1)
		if err := qp.PostRecv(rwr); err != nil {
			t.Fatal(err)
		}
		qp.rq.storeCons(qp.rq.loadProd()) // the fake kernel "consumes" the receive
	})
	if allocs != 0 {
		t.Fatalf("post+poll allocates %v times per iteration", allocs)
	}
}

func TestRxeDoorbellBytes(t *testing.T) {
	d := newRxeDoorbell(3)
	le := binary.LittleEndian
	if le.Uint32(d.cmd[0:]) != 28 || le.Uint16(d.cmd[4:]) != 8 || le.Uint16(d.cmd[6:]) != 1 {
		t.Errorf("header % x", d.cmd[:8])
	}
	if le.Uint64(d.cmd[8:]) != uint64(uintptr(unsafe.Pointer(&d.resp[0]))) {
		t.Error("response pointer does not point at resp")
	}
	if le.Uint32(d.cmd[16:]) != 3 || le.Uint32(d.cmd[20:]) != 0 || le.Uint32(d.cmd[24:]) != 0 || le.Uint32(d.cmd[28:]) != 128 {
		t.Errorf("body % x", d.cmd[16:])
	}
}

// DetachedWatch hands out the rxe CQ ring's index words: equal while the
// CQ is empty, different once the kernel has written a completion, equal
// again after Poll took it. Other providers have none.
func TestRxeCQDetachedWatch(t *testing.T) {
	qp, rcq, _ := newFakeRxe(t, 8, 16)
	prod, cons, ok := verbs.NewUnownedCQ(rcq, nil, 0).DetachedWatch()
	if !ok || prod != rcq.ring.prod || cons != rcq.ring.cons {
		t.Fatalf("DetachedWatch = %p, %p, %v; want the ring's words %p, %p", prod, cons, ok, rcq.ring.prod, rcq.ring.cons)
	}
	if atomic.LoadUint32(prod) != atomic.LoadUint32(cons) {
		t.Fatal("an empty CQ's indices differ")
	}
	buf := make([]byte, 8)
	wr := verbs.SendWR{WRID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGE: verbs.SGE{Addr: uint64(uintptr(unsafe.Pointer(&buf[0]))), Length: 8, LKey: 1}, RemoteAddr: 4096, RKey: 2}
	if err := qp.PostSend([]verbs.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for atomic.LoadUint32(prod) == atomic.LoadUint32(cons) {
		if time.Now().After(deadline) {
			t.Fatal("the indices did not differ after a signaled post")
		}
		runtime.Gosched()
	}
	wcs := make([]verbs.WC, 1)
	if n, _ := rcq.Poll(wcs); n != 1 || wcs[0].WRID != 1 {
		t.Fatalf("Poll after the indices moved: %d, %+v", n, wcs[0])
	}
	if atomic.LoadUint32(prod) != atomic.LoadUint32(cons) {
		t.Fatal("the indices differ after Poll took the only completion")
	}
	if _, _, ok := verbs.NewUnownedCQ(fakeProviderCQ{}, nil, 0).DetachedWatch(); ok {
		t.Fatal("DetachedWatch ok for a provider without a ring")
	}
}

// fakeProviderCQ is a provider CQ with no ring (as mlx5's).
type fakeProviderCQ struct{}

func (fakeProviderCQ) Poll([]verbs.WC) (int, error) { return 0, nil }
func (fakeProviderCQ) Release() error               { return nil }

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// An in-memory RDMA fabric for host tests: WRs execute at post time by
// copying between the registered buffers of fake QPs, completions go to
// fixed-size CQ rings. It allocates nothing after setup, so the loops'
// AllocsPerRun can be measured on it. One mutex serialises the fabric (it
// is a fake; the loops under test take no locks themselves).

type fakeFabric struct {
	mu      sync.Mutex
	nextQPN uint32
	nextKey uint32
	qps     map[uint32]*fakeQP
	mrs     map[uint32]*fakeMR
	live    int // objects not yet destroyed
	posts   int // PostSend calls
	// recvLists counts PostRecv calls by the number of WRs in them.
	recvLists map[int]int
	// lost: the link is gone; sends are taken and never complete, as on
	// rxe once the netdev is down (neither success nor error).
	lost bool
	// corrupt, if set, sees the target bytes of each RDMA write after the
	// copy, numbered from 0 (a fabric that damages data).
	corrupt func(n int, dst []byte)
	writes  int
}

// postCount is how many PostSend calls the fabric has seen.
func (f *fakeFabric) postCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts
}

func newFakeFabric() *fakeFabric {
	return &fakeFabric{nextQPN: 0x11, nextKey: 0x100, qps: map[uint32]*fakeQP{}, mrs: map[uint32]*fakeMR{}}
}

type fakeMR struct {
	buf  []byte
	addr uint64
	// atomic: registered for remote atomics (SetupConfig.Atomic); an
	// atomic on an MR without it fails as on a device.
	atomic bool
}

type fakeCQ struct {
	f    *fakeFabric
	ring []verbs.WC
	head int
	n    int
	// maxAsked is the largest batch a Poll asked for.
	maxAsked int
}

func (c *fakeCQ) push(wc verbs.WC) bool {
	if c.n == len(c.ring) {
		return false
	}
	c.ring[(c.head+c.n)%len(c.ring)] = wc
	c.n++
	return true
}

func (c *fakeCQ) Poll(wcs []verbs.WC) (int, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.maxAsked = max(c.maxAsked, len(wcs))
	k := 0
	for k < len(wcs) && c.n > 0 {
		wcs[k] = c.ring[c.head]
		c.head = (c.head + 1) % len(c.ring)
		c.n--
		k++
	}
	return k, nil
}

type fakePending struct {
	data  []byte // view into the sender's buffer
	n     uint32
	flags uint32 // the receive's WC flags (verbs.WCWithImm for OpSendImm)
}

type fakeQP struct {
	f       *fakeFabric
	qpn     uint32
	typ     verbs.QPType
	mr      *fakeMR
	scq     *fakeCQ
	rcq     *fakeCQ
	remote  Dest
	cfg     ConnectConfig // Connect's
	rq      []verbs.RecvWR
	rqHead  int
	rqN     int
	pending []fakePending // sends waiting for a receive (RNR retry)
	pHead   int
	pN      int
	// maxInline is SetupConfig.Inline: as the real providers, the fake
	// refuses a longer inline send.
	maxInline uint32
	// echo makes this QP answer every write or send at once, as a peer
	// running the other half of a ping-pong would.
	echo bool
	// lateStart delays an echoing QP's first answer, as a peer that
	// starts its loop late (a perftest client calibrating its clock).
	lateStart time.Duration
	// srq: receives come from this shared queue (SetupConfig.SRQ).
	srq *fakeSRQ
}

// fakeSRQ is a receive ring shared by QPs; a message takes its next WR,
// whichever QP it came to.
type fakeSRQ struct {
	f    *fakeFabric
	rq   []verbs.RecvWR
	head int
	n    int
	qps  []*fakeQP
}

func (s *fakeSRQ) PostRecv(wrs []verbs.RecvWR) error {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	for i := range wrs {
		if s.n == len(s.rq) {
			return errFakeFull
		}
		s.rq[(s.head+s.n)%len(s.rq)] = wrs[i]
		s.n++
	}
	for _, q := range s.qps {
		for q.pN > 0 && s.n > 0 {
			pd := q.pending[q.pHead]
			q.pHead = (q.pHead + 1) % len(q.pending)
			q.pN--
			q.deliverLocked(pd.data[:pd.n], pd.flags)
		}
	}
	return nil
}

// answerLate runs an echoing peer's first answer after its lateStart.
// Callers check lateStart first: the closure allocates, and the loops'
// fake must not.
func (q *fakeQP) answerLate(peer *fakeQP, f func()) {
	d := peer.lateStart
	peer.lateStart = 0
	time.AfterFunc(d, func() {
		q.f.mu.Lock()
		defer q.f.mu.Unlock()
		f()
	})
}

var errFakeFull = errors.New("fake queue full")

func (q *fakeQP) PostRecv(wrs []verbs.RecvWR) error {
	q.f.mu.Lock()
	defer q.f.mu.Unlock()
	if q.f.recvLists != nil {
		q.f.recvLists[len(wrs)]++
	}
	for i := range wrs {
		if q.rqN == len(q.rq) {
			return errFakeFull
		}
		q.rq[(q.rqHead+q.rqN)%len(q.rq)] = wrs[i]
		q.rqN++
	}
	for q.pN > 0 && q.rqN > 0 {
		pd := q.pending[q.pHead]
		q.pHead = (q.pHead + 1) % len(q.pending)
		q.pN--
		q.deliverLocked(pd.data[:pd.n], pd.flags)
	}
	return nil
}

// fakeWriteImm marks a delivery as a write with immediate data: its bytes
// were written to the target already; the receive completes with their
// length and copies nothing (IB spec: a write's immediate data consumes
// a receive WQE, whose completion carries the write's length).
const fakeWriteImm uint32 = 1 << 30

// deliverLocked puts a received message into the next posted receive.
func (q *fakeQP) deliverLocked(data []byte, flags uint32) bool {
	if q.srq != nil {
		return q.deliverSRQLocked(data, flags)
	}
	if q.rqN == 0 {
		if q.pN == len(q.pending) {
			return false
		}
		q.pending[(q.pHead+q.pN)%len(q.pending)] = fakePending{data: data, n: uint32(len(data)), flags: flags}
		q.pN++
		return true
	}
	rw := q.rq[q.rqHead]
	q.rqHead = (q.rqHead + 1) % len(q.rq)
	q.rqN--
	off := rw.SGE.Addr - q.mr.addr
	grh := uint64(0)
	if q.typ == verbs.QPTypeUD {
		grh = udGRH
	}
	op := verbs.WCRecv
	if flags&fakeWriteImm != 0 {
		flags &^= fakeWriteImm
		op = verbs.WCRecvRDMAWithImm
	} else {
		copy(q.mr.buf[off+grh:], data)
	}
	q.rcq.push(verbs.WC{WRID: rw.WRID, Opcode: op, ByteLen: uint32(len(data)) + uint32(grh), QPNum: q.qpn, Flags: flags})
	return true
}

// deliverSRQLocked is deliverLocked with the QP's SRQ.
func (q *fakeQP) deliverSRQLocked(data []byte, flags uint32) bool {
	s := q.srq
	if s.n == 0 {
		if q.pN == len(q.pending) {
			return false
		}
		q.pending[(q.pHead+q.pN)%len(q.pending)] = fakePending{data: data, n: uint32(len(data)), flags: flags}
		q.pN++
		return true
	}
	rw := s.rq[s.head]
	s.head = (s.head + 1) % len(s.rq)
	s.n--
	copy(q.mr.buf[rw.SGE.Addr-q.mr.addr:], data)
	q.rcq.push(verbs.WC{WRID: rw.WRID, Opcode: verbs.WCRecv, ByteLen: uint32(len(data)), QPNum: q.qpn, Flags: flags})
	return true
}

func (q *fakeQP) PostSend(wrs []verbs.SendWR) error {
	q.f.mu.Lock()
	defer q.f.mu.Unlock()
	q.f.posts++
	if q.f.lost {
		return nil
	}
	for i := range wrs {
		if wrs[i].Flags&verbs.SendInline != 0 && wrs[i].SGE.Length > q.maxInline {
			return fmt.Errorf("fake: %d-byte inline send on a QP created for %d", wrs[i].SGE.Length, q.maxInline)
		}
	}
	for i := range wrs {
		wr := &wrs[i]
		src := q.mr.buf[wr.SGE.Addr-q.mr.addr:][:wr.SGE.Length]
		var status verbs.WCStatus
		var op verbs.WCOpcode
		switch wr.Opcode {
		case verbs.OpRDMAWrite, verbs.OpRDMAWriteImm:
			op = verbs.WCRDMAWrite
			mr := q.f.mrs[wr.RKey]
			if mr == nil || wr.RemoteAddr < mr.addr || wr.RemoteAddr+uint64(len(src)) > mr.addr+uint64(len(mr.buf)) {
				status = 10 // remote access error
				break
			}
			copy(mr.buf[wr.RemoteAddr-mr.addr:], src)
			if q.f.corrupt != nil {
				q.f.corrupt(q.f.writes, mr.buf[wr.RemoteAddr-mr.addr:][:len(src)])
			}
			q.f.writes++
			if wr.Opcode == verbs.OpRDMAWriteImm {
				switch peer := q.f.qps[q.remote.QPN]; {
				case peer != nil && peer.echo:
					q.deliverLocked(src, verbs.WCWithImm|fakeWriteImm) // its answer
				case peer == nil || !peer.deliverLocked(src, verbs.WCWithImm|fakeWriteImm):
					status = 13 // RNR retry exceeded
				}
				break
			}
			if peer := q.f.qps[q.remote.QPN]; peer != nil && peer.echo {
				// The peer answers with the same bytes into our target area.
				back := mr.buf[wr.RemoteAddr-mr.addr:][:len(src)]
				dst := q.mr.buf[peer.remote.VAddr-q.mr.addr:]
				if peer.lateStart > 0 {
					q.answerLate(peer, func() { copy(dst, back) })
				} else {
					copy(dst, back)
				}
			}
		case verbs.OpRDMARead:
			op = verbs.WCRDMARead
			mr := q.f.mrs[wr.RKey]
			if mr == nil || wr.RemoteAddr < mr.addr || wr.RemoteAddr+uint64(len(src)) > mr.addr+uint64(len(mr.buf)) {
				status = 10
				break
			}
			copy(src, mr.buf[wr.RemoteAddr-mr.addr:])
		case verbs.OpAtomicFetchAdd, verbs.OpAtomicCmpSwap:
			op = verbs.WCFetchAdd
			if wr.Opcode == verbs.OpAtomicCmpSwap {
				op = verbs.WCCompSwap
			}
			mr := q.f.mrs[wr.RKey]
			if mr == nil || !mr.atomic || len(src) != 8 || wr.RemoteAddr%8 != 0 || wr.RemoteAddr < mr.addr || wr.RemoteAddr+8 > mr.addr+uint64(len(mr.buf)) {
				status = 10
				break
			}
			// Atomically, as the host sees a NIC's atomic: a validator
			// (--data_validation) reads the word while the fabric runs.
			w := (*uint64)(unsafe.Pointer(&mr.buf[wr.RemoteAddr-mr.addr]))
			var old uint64
			if wr.Opcode == verbs.OpAtomicFetchAdd {
				old = atomic.AddUint64(w, wr.CompareAdd) - wr.CompareAdd
			} else if old = atomic.LoadUint64(w); old == wr.CompareAdd {
				atomic.StoreUint64(w, wr.Swap)
			}
			if uintptr(unsafe.Pointer(&src[0]))%8 == 0 {
				atomic.StoreUint64((*uint64)(unsafe.Pointer(&src[0])), old)
			} else {
				binary.LittleEndian.PutUint64(src, old)
			}
		case verbs.OpSend, verbs.OpSendImm:
			op = verbs.WCSend
			var flags uint32
			if wr.Opcode == verbs.OpSendImm {
				flags = verbs.WCWithImm
			}
			dst := q.remote.QPN
			if q.typ == verbs.QPTypeUD {
				dst = wr.RemoteQPN
			}
			peer := q.f.qps[dst]
			if peer == nil {
				status = 12 // retry exceeded
				break
			}
			if peer.echo {
				if peer.lateStart > 0 {
					q.answerLate(peer, func() { q.deliverLocked(src, flags) })
				} else {
					q.deliverLocked(src, flags)
				}
				break
			}
			if !peer.deliverLocked(src, flags) {
				status = 13 // RNR retry exceeded
			}
		}
		if wr.Flags&verbs.SendSignaled != 0 || status != 0 {
			if !q.scq.push(verbs.WC{WRID: wr.WRID, Status: status, Opcode: op, QPNum: q.qpn}) {
				return errFakeFull
			}
		}
	}
	return nil
}

// fakeDevice implements Device on a fakeFabric.
type fakeDevice struct {
	f      *fakeFabric
	ip     byte
	qps    []*fakeQP
	mr     *fakeMR
	rkey   uint32
	closed bool
	echo   bool
	port   PortAttr
	srqs   int         // SRQs Setup made
	cfg    SetupConfig // Setup's
}

func newFakeDevice(f *fakeFabric, ip byte) *fakeDevice {
	d := &fakeDevice{f: f, ip: ip}
	d.port = PortAttr{LinkLayer: vocab.LinkLayerEthernet, ActiveMTU: 1024, MaxOutRead: 128, GIDs: []GIDEntry{
		{Index: 0, GID: [16]byte{0xfe, 0x80, 15: ip}, Type: vocab.GIDTypeRoCEv2},
		{Index: 1, GID: [16]byte{10: 0xff, 11: 0xff, 12: 10, 13: 77, 14: 0, 15: ip}, Type: vocab.GIDTypeRoCEv2},
	}}
	return d
}

func (d *fakeDevice) Port() (PortAttr, error) { return d.port, nil }

func (d *fakeDevice) Setup(cfg SetupConfig) (*Resources, error) {
	d.cfg = cfg
	f := d.f
	f.mu.Lock()
	defer f.mu.Unlock()
	buf := make([]byte, cfg.BufSize)
	addr := uint64(uintptr(unsafe.Pointer(&buf[0])))
	d.mr = &fakeMR{buf: buf, addr: addr, atomic: cfg.Atomic}
	d.rkey = f.nextKey
	f.nextKey++
	f.mrs[d.rkey] = d.mr
	cqe := max(cfg.CQE, 64) * 2
	scq := &fakeCQ{f: f, ring: make([]verbs.WC, cqe)}
	rcq := &fakeCQ{f: f, ring: make([]verbs.WC, cqe)}
	res := &Resources{Buf: buf, Addr: addr, LKey: d.rkey, RKey: d.rkey, SendCQ: scq, RecvCQ: rcq}
	var srq *fakeSRQ
	if cfg.SRQ {
		srq = &fakeSRQ{f: f, rq: make([]verbs.RecvWR, cfg.RecvWR)}
		d.srqs++
	}
	for i := 0; i < cfg.NumQPs; i++ {
		q := &fakeQP{f: f, qpn: f.nextQPN, typ: cfg.Type, mr: d.mr, scq: scq, rcq: rcq, maxInline: uint32(max(cfg.Inline, 0)),
			rq: make([]verbs.RecvWR, cfg.RecvWR+1), pending: make([]fakePending, 4096), echo: d.echo}
		f.nextQPN++
		f.qps[q.qpn] = q
		d.qps = append(d.qps, q)
		var rq verbs.RecvQueue = q
		if srq != nil {
			q.srq, rq = srq, srq
			srq.qps = append(srq.qps, q)
		}
		res.QPs = append(res.QPs, QP{SendQueue: q, RecvQueue: rq, QPN: q.qpn})
	}
	f.live += 2 + 2 + len(d.qps) // pd+mr, 2 cqs, qps
	return res, nil
}

func (d *fakeDevice) Connect(i int, cfg ConnectConfig) error {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	d.qps[i].remote, d.qps[i].cfg = cfg.Remote, cfg
	return nil
}

func (d *fakeDevice) CreateAH(remote *Dest, cfg ConnectConfig) (*verbs.AH, error) {
	return &verbs.AH{}, nil
}

func (d *fakeDevice) Close() error {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	if d.closed || d.mr == nil {
		d.closed = true
		return nil
	}
	d.closed = true
	for _, q := range d.qps {
		delete(d.f.qps, q.qpn)
	}
	delete(d.f.mrs, d.rkey)
	d.f.live -= 4 + len(d.qps)
	return nil
}

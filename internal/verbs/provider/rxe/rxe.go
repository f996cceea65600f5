// Package rxe is the rxe (Soft-RoCE) provider. The kernel allocates the SQ, RQ and CQ
// rings (vmalloc memory, not charged to RLIMIT_MEMLOCK) and hands out mmap
// cookies in the CREATE_CQ / CREATE_QP udata; user space maps them from the
// command fd, writes WQEs and polls CQEs directly, and after posting sends
// rings a doorbell: an empty POST_SEND write() that makes the kernel run or
// schedule the QP's requester. Receives need no syscall.
//
// Queues are not locked: each SendQueue, RecvQueue and CompletionQueue must
// be used by one goroutine at a time (a send queue and its QP's receive
// queue may be used concurrently; they are separate rings).
package rxe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// Provider is the rxe provider (internal/verbs.Provider).
type Provider struct{}

// rxe has SRQs, user-space AHs and queues a detached loop may drive; the
// core looks for each by type assertion, where a renamed method would
// silently turn it off: these lines make that a build error.
var (
	_ verbs.SRQCreator      = (*rxeContext)(nil)
	_ verbs.AHCreator       = (*rxeContext)(nil)
	_ verbs.DetachableQueue = (*rxeQP)(nil)
	_ verbs.DetachableQueue = (*rxeCQ)(nil)
	_ verbs.DetachableQueue = (*rxeSRQ)(nil)
	_ verbs.IndexWatcher    = (*rxeCQ)(nil)
)

// Info: ABI 1..2, providers/rxe/rxe.c's verbs_device_ops. A software
// device has no parent; rdma link add names it rxeN (providers/rxe/rxe.c
// matches rxe the same way, hca_table).
func (Provider) Info() verbs.ProviderInfo {
	return verbs.ProviderInfo{ID: verbs.DriverRXE, Name: "rxe", MinABI: 1, MaxABI: 2, NamePrefix: "rxe"}
}

// rxe's ALLOC_PD has no udata.
func (Provider) AllocPD(exec verbs.ExecFunc) (uint32, uint32, error) {
	h, err := exec(nil, nil)
	return h, 0, err
}

// rxe's GET_CONTEXT has no udata in either direction.
func (Provider) ContextUData() ([]byte, int) { return nil, 0 }

func (Provider) OpenContext(cmdFD int, _ []byte) (verbs.ProviderContext, error) {
	return &rxeContext{fd: cmdFD}, nil
}

type rxeContext struct {
	fd int // the uverbs command fd: rings are mmap'd from it, doorbells written to it
}

func (c *rxeContext) Close() error { return nil }

// struct mminfo (rdma_user_rxe.h): u64 offset (an mmap cookie), u32 size.
type rxeMMInfo struct {
	offset uint64
	size   uint32
}

func parseRxeMMInfo(b []byte) rxeMMInfo {
	return rxeMMInfo{offset: binary.LittleEndian.Uint64(b), size: binary.LittleEndian.Uint32(b[8:])}
}

// mapRing maps one ring the kernel announced and checks its header.
func (c *rxeContext) mapRing(what string, mi rxeMMInfo) (*rxeRing, error) {
	if mi.size < rxeRingDataOff || mi.offset > 1<<62 {
		return nil, fmt.Errorf("rxe: kernel announced a %s ring of %d bytes at offset %#x", what, mi.size, mi.offset)
	}
	buf, err := unix.Mmap(c.fd, int64(mi.offset), int(mi.size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("rxe: mmap %s ring (%d bytes at offset %#x): %w", what, mi.size, mi.offset, err)
	}
	r, err := newRxeRing(buf)
	if err != nil {
		_ = unix.Munmap(buf)
		return nil, fmt.Errorf("rxe: %s ring: %w", what, err)
	}
	return r, nil
}

func unmapRing(r *rxeRing) error {
	if r == nil || r.buf == nil {
		return nil
	}
	err := unix.Munmap(r.buf)
	r.buf = nil
	return err
}

// CreateCQ runs CREATE_CQ with room for struct rxe_create_cq_resp and maps
// the CQ ring it describes.
func (c *rxeContext) CreateCQ(req *verbs.CQRequest, exec verbs.ExecFunc) (verbs.ProviderCQ, error) {
	out := make([]byte, 16) // struct rxe_create_cq_resp; heap, the kernel writes it
	if _, err := exec(nil, out); err != nil {
		return nil, err
	}
	r, err := c.mapRing("CQ", parseRxeMMInfo(out))
	if err != nil {
		return nil, err
	}
	if r.slotSize < rxeCQESize {
		_ = unmapRing(r)
		return nil, fmt.Errorf("rxe: CQ slots are %d bytes, smaller than a %d-byte CQE", r.slotSize, rxeCQESize)
	}
	return newRxeCQ(r, req.Device), nil
}

// createAH runs CREATE_AH with room for struct rxe_create_ah_resp and
// returns the AH number the kernel gave it: UD send WQEs carry it in
// wr.ud.ah_num and the 6.1 kernel looks the address vector up by it
// (rxe_get_av), so the WQE's own rxe_av stays zero.
func (c *rxeContext) CreateAH(req *verbs.AHRequest, exec verbs.ExecFunc) (verbs.ProviderAH, uint32, error) {
	out := make([]byte, 8)
	if _, err := exec(nil, out); err != nil {
		return nil, 0, err
	}
	num := binary.LittleEndian.Uint32(out)
	if num == 0 {
		// An old kernel that does not fill ah_num would need the AV copied
		// into every WQE; 6.1 always fills it.
		return nil, 0, errors.New("rxe: CREATE_AH returned ah_num 0 (kernel too old for AH numbers)")
	}
	return nil, num, nil
}

// The rxe queues keep to the detached data path's rules (detached.go),
// and its CQ shows new completions as a producer index in memory.
func (q *rxeQP) Detachable()                 {}
func (c *rxeCQ) Detachable()                 {}
func (c *rxeCQ) Watch() (prod, cons *uint32) { return c.ring.prod, c.ring.cons }

// rxeCQ is a CQ ring: the kernel produces CQEs, user space consumes them.
type rxeCQ struct {
	ring *rxeRing
	err  verbs.QueueError
	// soleQPN is the number of the CQ's only live QP, ^0 unless there is
	// exactly one: Poll's fast path checks a CQE's QP with it alone.
	// soleRecvQPN is soleQPN if that QP has a receive queue, else ^0.
	// Both atomic.
	soleQPN, soleRecvQPN uint32
	// qps are the QPs completing into this CQ (an *rxeQPList, loaded
	// atomically: QPs come and go on the control path while another
	// goroutine may poll; replaced whole under mu). lastQP is the index
	// of the last one a CQE named (an integer: the detached path stores
	// no pointers).
	qps    unsafe.Pointer
	mu     sync.Mutex
	lastQP int
}

// rxeQPList is a CQ's QPs, replaced whole (copy on write).
type rxeQPList struct{ qps []*rxeQP }

// rxeMaxGoneQPs bounds how many closed QPs a CQ remembers: their late
// CQEs are delivered, not taken for corruption.
const rxeMaxGoneQPs = 64

func newRxeCQ(r *rxeRing, dev string) *rxeCQ {
	c := &rxeCQ{ring: r, err: verbs.QueueError{Device: dev, Queue: "rxe CQ ring"}, soleQPN: ^uint32(0), soleRecvQPN: ^uint32(0)}
	atomic.StorePointer(&c.qps, unsafe.Pointer(&rxeQPList{}))
	return c
}

// attach adds q (whose qpn is set) to the QPs completing into c, in place
// of a closed QP that had the same number.
func (c *rxeCQ) attach(q *rxeQP) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := (*rxeQPList)(atomic.LoadPointer(&c.qps)).qps
	n := make([]*rxeQP, 0, len(old)+1)
	gone := 0
	for i := len(old) - 1; i >= 0; i-- { // newest first, to keep the newest closed ones
		x := old[i]
		if x == q {
			return
		}
		if atomic.LoadUint32(&x.gone) != 0 {
			if x.qpn == q.qpn || gone == rxeMaxGoneQPs {
				continue
			}
			gone++
		}
		n = append(n, x)
	}
	slices.Reverse(n)
	n = append(n, q)
	atomic.StorePointer(&c.qps, unsafe.Pointer(&rxeQPList{qps: n}))
	c.setSole()
}

// updateSole sets soleQPN after a QP went.
func (c *rxeCQ) updateSole() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.setSole()
}

// setSole sets soleQPN from the QP list; c.mu is held.
func (c *rxeCQ) setSole() {
	sole, live, soleWithRQ := ^uint32(0), 0, ^uint32(0)
	for _, x := range (*rxeQPList)(atomic.LoadPointer(&c.qps)).qps {
		if atomic.LoadUint32(&x.gone) == 0 {
			sole = x.qpn
			live++
			if x.rq != nil || x.hasSRQ {
				soleWithRQ = x.qpn
			}
		}
	}
	soleRecv := ^uint32(0)
	if live != 1 {
		sole = ^uint32(0)
	} else if sole == soleWithRQ {
		soleRecv = sole
	}
	atomic.StoreUint32(&c.soleQPN, sole)
	atomic.StoreUint32(&c.soleRecvQPN, soleRecv)
}

// findQP returns the QP numbered qpn that completes into c, or nil.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (c *rxeCQ) findQP(qpn uint32) *rxeQP {
	qps := (*rxeQPList)(atomic.LoadPointer(&c.qps)).qps
	if i := c.lastQP; i < len(qps) && qps[i].qpn == qpn {
		return qps[i]
	}
	for i := len(qps) - 1; i >= 0; i-- {
		if qps[i].qpn == qpn {
			c.lastQP = i
			return qps[i]
		}
	}
	return nil
}

// Poll copies up to len(wcs) completions out of the ring and publishes the
// new consumer index once. Both indices and every CQE are checked before
// use (queueerror.go): on a fault, wcs[:n] are the good completions before
// it and the error is a *QueueError, returned again by every later call.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (c *rxeCQ) Poll(wcs []verbs.WC) (int, error) {
	r := c.ring
	cons := r.loadCons()
	prod := r.loadProd()
	// The mask is 2^n-1: one test for both indices, and for an earlier
	// fault (poison).
	if prod|cons|c.err.Poison() > r.mask {
		return 0, r.indexFault(&c.err, 0, prod, cons)
	}
	sole, soleRecv := atomic.LoadUint32(&c.soleQPN), atomic.LoadUint32(&c.soleRecvQPN)
	n := 0
	for n < len(wcs) && cons != prod {
		wc := &wcs[n]
		decodeRxeCQE(r.slot(cons), wc)
		// The common case inline, everything else in check.
		if wc.Status != 0 || !fits(wc, sole, soleRecv) {
			if err := c.check(wc); err != nil {
				if n > 0 {
					r.storeCons(cons)
				}
				return n, err
			}
		}
		cons = r.next(cons)
		n++
	}
	if n > 0 {
		r.storeCons(cons)
	}
	return n, nil
}

// rxeWCStatusMax is the last ibv_wc_status (IBV_WC_GENERAL_ERR).
const rxeWCStatusMax = 21

// fits reports whether wc, a successful completion, is a send, RDMA WRITE,
// READ or atomic of the CQ's sole QP, or a receive of it with its receive queue:
// Poll's fast path.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func fits(wc *verbs.WC, sole, soleRecv uint32) bool {
	if wc.Opcode <= verbs.WCFetchAdd { // WCSend, WCRDMAWrite, WCRDMARead, the atomics
		return wc.QPNum == sole
	}
	return wc.Opcode == verbs.WCRecv && wc.QPNum == soleRecv
}

// check refuses a CQE that no work request of ours can have produced: an
// unknown status, a QP that does not complete here, and for successful
// completions an opcode this data path never posts or a receive on a QP
// without RQ. Completions of closed QPs pass with their status checked.
// byte_len is not checked here: rxe CQEs do not say which WQE they
// complete, so the bound could only be the largest length ever posted on
// the CQ (tracking it cost every post ~3% in BenchmarkRxePostPoll), and a
// wrong length puts nothing out of bounds in this package; callers that
// use it check it against what they posted (perf's message length).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (c *rxeCQ) check(wc *verbs.WC) error {
	q := c.findQP(wc.QPNum)
	if q == nil {
		return c.err.Record(verbs.FaultCompletionQP, wc.QPNum, uint64(wc.QPNum), 0)
	}
	if wc.Status != 0 {
		if wc.Status > rxeWCStatusMax {
			return c.err.Record(verbs.FaultCompletionStatus, wc.QPNum, uint64(wc.Status), rxeWCStatusMax)
		}
		// The opcode and length of an error completion are undefined
		// (rxe leaves a flushed receive's zero).
		return nil
	}
	if atomic.LoadUint32(&q.gone) != 0 {
		return nil
	}
	switch wc.Opcode {
	case verbs.WCSend, verbs.WCRDMAWrite, verbs.WCRDMARead, verbs.WCCompSwap, verbs.WCFetchAdd:
	case verbs.WCRecv, verbs.WCRecvRDMAWithImm:
		if q.rq == nil && !q.hasSRQ {
			return c.err.Record(verbs.FaultNoReceiveQueue, wc.QPNum, 0, 0)
		}
	default:
		return c.err.Record(verbs.FaultCompletionOpcode, wc.QPNum, uint64(wc.Opcode), 0)
	}
	return nil
}

func (c *rxeCQ) Release() error { return unmapRing(c.ring) }

// CreateQP runs CREATE_QP with room for struct rxe_create_qp_resp (RQ
// mminfo first, then SQ) and maps both rings.
func (c *rxeContext) CreateQP(req *verbs.QPRequest, exec verbs.ExecFunc) (verbs.ProviderQP, error) {
	if req.MaxSendSGE > 1 || req.MaxRecvSGE > 1 {
		// SendWR and RecvWR carry one SGE; more slots would only waste ring space.
		return nil, fmt.Errorf("rxe: %d send / %d recv SGEs requested, this data path posts one", req.MaxSendSGE, req.MaxRecvSGE)
	}
	out := make([]byte, 32) // struct rxe_create_qp_resp
	handle, err := exec(nil, out)
	if err != nil {
		return nil, err
	}
	sendCQ, ok1 := req.SendCQ.(*rxeCQ)
	recvCQ, ok2 := req.RecvCQ.(*rxeCQ)
	if !ok1 || !ok2 {
		return nil, errors.New("rxe: QP's CQs are not rxe CQs")
	}
	q := newRxeQP(c.fd, req.Device, req.Type, req.QPN, req.Granted.MaxInlineData, sendCQ, recvCQ)
	q.hasSRQ = req.SRQ != nil
	if q.sq, err = c.mapRing("SQ", parseRxeMMInfo(out[16:])); err != nil {
		return nil, err
	}
	if q.sq.slotSize < rxeSWQEHdrSize+rxeSGESize {
		_ = q.Release()
		return nil, fmt.Errorf("rxe: SQ slots are %d bytes, too small for a WQE with one SGE", q.sq.slotSize)
	}
	if q.maxInline > uint32(q.sq.slotSize-rxeSWQEHdrSize) {
		q.maxInline = uint32(q.sq.slotSize - rxeSWQEHdrSize)
	}
	if mi := parseRxeMMInfo(out[0:]); mi.size != 0 && !q.hasSRQ {
		if q.rq, err = c.mapRing("RQ", mi); err != nil {
			_ = q.Release()
			return nil, err
		}
		if q.rq.slotSize < rxeRWQEHdrSize+rxeSGESize {
			_ = q.Release()
			return nil, fmt.Errorf("rxe: RQ slots are %d bytes, too small for a WQE with one SGE", q.rq.slotSize)
		}
	}
	q.db = newRxeDoorbell(handle)
	sendCQ.attach(q)
	recvCQ.attach(q)
	return q, nil
}

// newRxeQP is a QP without rings (the caller maps them), not yet attached
// to its CQs.
func newRxeQP(fd int, dev string, typ verbs.QPType, qpn, maxInline uint32, sendCQ, recvCQ *rxeCQ) *rxeQP {
	return &rxeQP{fd: fd, typ: typ, qpn: qpn, maxInline: maxInline, sendCQ: sendCQ, recvCQ: recvCQ,
		sqErr: verbs.QueueError{Device: dev, Queue: "rxe SQ ring"},
		rqErr: verbs.QueueError{Device: dev, Queue: "rxe RQ ring"},
		dbErr: verbs.DoorbellError{Device: dev, Provider: "rxe"}}
}

// rxeDoorbell is the pre-built POST_SEND command (as rdma-core's
// providers/rxe/rxe.c post_send_db sends it):
// cmd_hdr{28, in_words 8, out_words 1} + ib_uverbs_post_send{response,
// qp_handle, wr_count 0, sge_count 0, wqe_size 128}. It is a heap object
// allocated once per QP, so the response address inside it stays valid and
// ringing allocates nothing.
type rxeDoorbell struct {
	cmd  [32]byte
	resp [4]byte // bad_wr, written by the kernel on every call
}

const (
	rxeCmdPostSend = 28
	rxeDBWQESize   = 128 // as rdma-core; the kernel requires >= 56 even with no WRs
	rxeDBInWords   = 8
	rxeDBOutWords  = 1
	rxeDBRespWords = 1
)

func newRxeDoorbell(qpHandle uint32) *rxeDoorbell {
	d := new(rxeDoorbell)
	le := binary.LittleEndian
	le.PutUint32(d.cmd[0:], rxeCmdPostSend)
	le.PutUint16(d.cmd[4:], rxeDBInWords)
	le.PutUint16(d.cmd[6:], rxeDBOutWords)
	le.PutUint64(d.cmd[8:], uint64(uintptr(unsafe.Pointer(&d.resp[0]))))
	le.PutUint32(d.cmd[16:], qpHandle)
	le.PutUint32(d.cmd[28:], rxeDBWQESize)
	return d
}

// rxeQP is a QP's SQ and RQ rings plus its doorbell.
type rxeQP struct {
	fd        int
	typ       verbs.QPType
	qpn       uint32
	maxInline uint32
	sq, rq    *rxeRing
	ssn       uint32
	db        *rxeDoorbell
	dbErr     verbs.DoorbellError
	// gone is set (atomic) when the QP is released. Its CQs keep it, to
	// tell its late CQEs from corruption.
	gone           uint32
	sqErr, rqErr   verbs.QueueError
	sendCQ, recvCQ *rxeCQ // never nil
	// hasSRQ: receives come from an SRQ (srq.go); rq is nil.
	hasSRQ bool
	// kick replaces the doorbell write in host unit tests (fake kernel).
	kick func() error
}

func (q *rxeQP) SendCapacity() uint32 { return q.sq.capacity() }
func (q *rxeQP) RecvCapacity() uint32 {
	if q.rq == nil {
		return 0
	}
	return q.rq.capacity()
}

func (q *rxeQP) Release() error {
	atomic.StoreUint32(&q.gone, 1)
	q.sendCQ.updateSole()
	q.recvCQ.updateSole()
	return errors.Join(unmapRing(q.sq), unmapRing(q.rq))
}

// PostSend validates every WR, then writes them all, publishes the producer
// index once and rings the doorbell once. Either all of wrs are posted or
// none is (ErrQueueFull when the SQ lacks room for all of them).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (q *rxeQP) PostSend(wrs []verbs.SendWR) error {
	if len(wrs) == 0 {
		return nil
	}
	sq := q.sq
	prod := sq.loadProd()
	cons := sq.loadCons()
	if prod|cons|q.sqErr.Poison() > sq.mask { // as in rxeCQ.Poll
		return sq.indexFault(&q.sqErr, q.qpn, prod, cons)
	}
	if uint64(len(wrs)) > uint64(sq.free(prod, cons)) {
		if uint64(len(wrs)) > uint64(sq.capacity()) {
			return verbs.ErrBatchTooLarge // ErrQueueFull would be retried forever
		}
		return verbs.ErrQueueFull
	}
	for i := range wrs {
		if err := q.checkSend(&wrs[i]); err != nil {
			return err
		}
	}
	for i := range wrs {
		wr := &wrs[i]
		var ahNum uint32
		if q.typ == verbs.QPTypeUD {
			ahNum = wr.AH.Num()
		}
		encodeRxeSendWQE(sq.slot(prod), wr, ahNum, q.ssn)
		q.ssn++
		prod = sq.next(prod)
	}
	sq.storeProd(prod)
	return q.doorbell()
}

// checkSend refuses a WR this QP cannot post, with a preallocated error.
//
//go:nosplit
func (q *rxeQP) checkSend(wr *verbs.SendWR) error {
	switch wr.Opcode {
	case verbs.OpSend, verbs.OpSendImm:
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteImm:
		if q.typ == verbs.QPTypeUD {
			return verbs.ErrUDOpcode
		}
	case verbs.OpRDMARead:
		if q.typ != verbs.QPTypeRC {
			return verbs.ErrReadNotRC
		}
	case verbs.OpAtomicCmpSwap, verbs.OpAtomicFetchAdd:
		if err := verbs.CheckAtomic(wr, q.typ == verbs.QPTypeRC); err != nil {
			return err
		}
	default:
		return verbs.ErrBadOpcode
	}
	if q.typ == verbs.QPTypeUD && (wr.AH == nil || wr.AH.Num() == 0) {
		return verbs.ErrNoAH
	}
	if wr.Flags&verbs.SendInline != 0 {
		if wr.Opcode == verbs.OpRDMARead {
			return verbs.ErrInlineRead
		}
		if wr.SGE.Length > q.maxInline {
			return verbs.ErrInlineTooLong
		}
	}
	return nil
}

// doorbell writes the prepared POST_SEND command; it does not allocate, only
// the failure path builds an error value. It is a raw syscall, without the
// runtime's entersyscall/exitsyscall: rxe runs the requester inline in
// post_send and never sleeps there, but a doorbell for a batch of WQEs can
// take longer than sysmon's 20 us retake threshold, and under Syscall sysmon
// then hands the P to another thread mid-loop (a wakeup, a migration and a
// latency spike per doorbell in a busy benchmark).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (q *rxeQP) doorbell() error {
	if q.kick != nil {
		return q.kick()
	}
	for {
		_, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(q.fd), uintptr(unsafe.Pointer(&q.db.cmd[0])), uintptr(len(q.db.cmd)))
		if e == 0 {
			return nil
		}
		if e != unix.EINTR {
			q.dbErr.Errno = e
			return &q.dbErr
		}
	}
}

// PostRecv writes all of wrs into the RQ and publishes the producer index
// once; no syscall. All or nothing, as PostSend.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (q *rxeQP) PostRecv(wrs []verbs.RecvWR) error {
	if len(wrs) == 0 {
		return nil
	}
	rq := q.rq
	if rq == nil {
		return verbs.ErrNoRQ
	}
	return rq.postRecv(wrs, &q.rqErr, q.qpn)
}

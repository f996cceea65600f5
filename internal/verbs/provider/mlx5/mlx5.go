// Package mlx5 is the mlx5 (ConnectX-4 and later) provider, written to the kernel ABI
// (rdma/mlx5-abi.h) and rdma-core's providers/mlx5.
// Unlike rxe, user space owns the queues: the CQ buffer, the QP buffer (RQ
// then SQ) and the doorbell records are anonymous mappings handed to the
// kernel in the CREATE_CQ / CREATE_QP udata, which pins them for the
// device. Sends are rung through a UAR page mapped from the command fd
// (static bfregs: with dynamic UARs the kernel allocates none and every
// CQ and QP needs a UAR allocated through mlx5's UAR objects,
// drivers/infiniband/hw/mlx5/main.c mlx5_ib_alloc_ucontext); receives need
// only the doorbell record. No syscall on the data path.
//
// Not yet run on hardware: the encodings are checked against mlx5dv.h (a
// C program built by the tests), the queue protocol against a software
// model of the device (mlx5_test.go).
//
// Restrictions of this first version: RC and UC QPs (UD needs an address
// vector in every WQE, built from CREATE_AH's mlx5 response: not done), one
// SGE per WR, no BlueFlame (the 8-byte doorbell only, as rdma-core with
// MLX5_SHUT_UP_BF=1), 64-byte CQEs. CQs are polled, and armed for
// completion events through their doorbell record and UAR
// (mlx5_cqarm.go).
//
// Queues are not locked, as with rxe: one goroutine at a time per send
// queue, receive queue and CQ.
package mlx5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Provider is the mlx5 provider (internal/verbs.Provider).
type Provider struct{}

// The optional parts of the provider contract mlx5 has: the core finds
// them by type assertion, so a renamed method would turn them off
// silently; these make it a build error.
var (
	_ verbs.SRQCreator       = (*mlx5Context)(nil)
	_ verbs.DeviceQuerier    = (*mlx5Context)(nil)
	_ verbs.QPModifyObserver = (*mlx5QP)(nil)
	_ verbs.CQArmer          = (*mlx5CQ)(nil)
)

// Info: ABI exactly 1, providers/mlx5/mlx5-ABI.h
// (MLX5_UVERBS_MIN_ABI_VERSION, MLX5_UVERBS_MAX_ABI_VERSION); a
// four-digit firmware subminor, providers/mlx5/verbs.c
// (mlx5_query_device_ex).
func (Provider) Info() verbs.ProviderInfo {
	return verbs.ProviderInfo{ID: verbs.DriverMLX5, Name: "mlx5", MinABI: 1, MaxABI: 1,
		KernelModule: "mlx5_core", NamePrefix: "mlx5_", FWSubminorDigits: 4}
}

// ALLOC_PD's response udata is struct mlx5_ib_alloc_pd_resp { __u32 pdn; }.
func (Provider) AllocPD(exec verbs.ExecFunc) (uint32, uint32, error) {
	out := make([]byte, 4)
	h, err := exec(nil, out)
	return h, binary.NativeEndian.Uint32(out), err
}

func (Provider) ContextUData() ([]byte, int) {
	req := &mlx5AllocUcontextReq{
		TotalNumBfregs:      mlx5DefTotBfregs,
		NumLowLatencyBfregs: mlx5DefLowLatency,
		MaxCQEVersion:       mlx5MaxCQEVersion,
		LibCaps:             mlx5LibCap4KUAR,
	}
	return rawmem.Of(req), int(unsafe.Sizeof(mlx5AllocUcontextResp{}))
}

// uarMapper maps and unmaps a context's UAR pages: mmapUARs, or, in host
// tests, ordinary memory.
type uarMapper interface {
	mapUAR(fd int, offset int64, length int) ([]byte, error)
	unmapUAR(b []byte) error
}

// mmapUARs maps length bytes of the command fd at offset.
type mmapUARs struct{}

func (mmapUARs) mapUAR(fd int, offset int64, length int) ([]byte, error) {
	// Write-only, shared: rdma-core's mlx5_mmap. The UAR is never read.
	return unix.Mmap(fd, offset, length, unix.PROT_WRITE, unix.MAP_SHARED)
}

func (mmapUARs) unmapUAR(b []byte) error { return unix.Munmap(b) }

// mlx5Context is one open mlx5 context: the GET_CONTEXT answer and the
// static UAR pages it announced.
type mlx5Context struct {
	fd       int
	resp     mlx5AllocUcontextResp
	pageSize int
	uars     [][]byte // system pages of UARs; uars[i] is UAR mmap page i
	uarMap   uarMapper
	nextUIdx uint32
}

func (Provider) OpenContext(cmdFD int, out []byte) (verbs.ProviderContext, error) {
	return mlx5OpenContext(cmdFD, out, unix.Getpagesize(), mmapUARs{})
}

func mlx5OpenContext(cmdFD int, out []byte, pageSize int, uars uarMapper) (*mlx5Context, error) {
	c := &mlx5Context{fd: cmdFD, pageSize: pageSize, uarMap: uars}
	if len(out) < int(unsafe.Sizeof(c.resp)) {
		return nil, fmt.Errorf("GET_CONTEXT response udata is %d bytes, want %d", len(out), unsafe.Sizeof(c.resp))
	}
	copy(rawmem.Of(&c.resp), out)
	r := &c.resp
	if r.NumUARsPerPage == 0 {
		// Old kernels leave it 0: one UAR per system page (rdma-core
		// adjust_uar_info).
		r.NumUARsPerPage = 1
	}
	if r.CQEVersion > mlx5MaxCQEVersion {
		return nil, fmt.Errorf("kernel chose CQE version %d, this provider knows 0 and 1", r.CQEVersion)
	}
	// Four bfregs of bf_reg_size bytes from 0x800 must fit in each 4K UAR
	// (real devices: 512), and the UARs in the system page.
	if r.BfRegSize == 0 || r.BfRegSize > (mlx5AdapterPage-mlx5BFOffset)/mlx5BfregsPerUAR ||
		uint64(r.NumUARsPerPage)*mlx5AdapterPage > uint64(pageSize) {
		return nil, fmt.Errorf("kernel announced bf_reg_size %d and %d UARs per %d-byte page: not a layout this provider understands", r.BfRegSize, r.NumUARsPerPage, pageSize)
	}
	npages := r.TotBfregs / (r.NumUARsPerPage * mlx5NonFPBfregsUAR)
	if npages == 0 {
		return nil, fmt.Errorf("kernel allocated no static UARs (tot_bfregs %d); dynamic UARs are not supported here", r.TotBfregs)
	}
	if npages > 255 {
		return nil, fmt.Errorf("kernel announced %d UAR pages, more than the mmap index can name", npages)
	}
	for i := uint32(0); i < npages; i++ {
		m, err := uars.mapUAR(cmdFD, mlx5UARMmapOffset(mlx5MmapRegularPg, i, pageSize), pageSize)
		if err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("mmap UAR page %d: %w", i, err)
		}
		c.uars = append(c.uars, m)
	}
	return c, nil
}

func (c *mlx5Context) Close() error {
	var errs []error
	for _, m := range c.uars {
		errs = append(errs, c.uarMap.unmapUAR(m))
	}
	c.uars = nil
	return errors.Join(errs...)
}

// bfreg returns the doorbell register of global bfreg index bfi (the
// kernel's CREATE_QP answer) and its BlueFlame half size (rdma-core
// providers/mlx5/mlx5.c mlx5_set_context).
func (c *mlx5Context) bfreg(bfi uint32) (unsafe.Pointer, uint32, error) {
	uar := bfi / mlx5BfregsPerUAR
	k := bfi % mlx5BfregsPerUAR
	page := uar / c.resp.NumUARsPerPage
	j := uar % c.resp.NumUARsPerPage
	if page >= uint32(len(c.uars)) {
		return nil, 0, fmt.Errorf("kernel gave bfreg %d, beyond the %d mapped UAR pages", bfi, len(c.uars))
	}
	off := j*mlx5AdapterPage + mlx5BFOffset + k*c.resp.BfRegSize
	var half uint32
	if bfi != 0 {
		half = c.resp.BfRegSize / 2
	}
	return unsafe.Pointer(&c.uars[page][off]), half, nil
}

// mlx5Mem is an anonymous mapping the device reads or writes (queues,
// doorbell records): never Go heap (see Buffer), page-aligned, populated,
// not inherited by fork.
func mlx5Mem(n int) ([]byte, error) {
	ps := unix.Getpagesize()
	n = (n + ps - 1) / ps * ps
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mlx5: cannot map %d bytes of queue memory: %w", n, err)
	}
	if err := unix.Madvise(m, unix.MADV_DONTFORK); err != nil {
		_ = unix.Munmap(m)
		return nil, fmt.Errorf("mlx5: madvise(MADV_DONTFORK): %w", err)
	}
	return m, nil
}

// mlx5QueueMem maps a queue buffer of n bytes and its 8-byte doorbell
// record (mlx5Mem each), or neither.
func mlx5QueueMem(n int) (buf, dbr []byte, err error) {
	if buf, err = mlx5Mem(n); err != nil {
		return nil, nil, err
	}
	if dbr, err = mlx5Mem(8); err != nil {
		_ = mlx5Free(buf)
		return nil, nil, err
	}
	return buf, dbr, nil
}

func mlx5Free(m []byte) error {
	if m == nil {
		return nil
	}
	return unix.Munmap(m)
}

func roundPow2(n uint32) uint32 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len32(n-1)
}

// ---- CQ ----

// mlx5CQ is a CQ ring of ncqe 64-byte CQEs written by the device, and its
// doorbell record (word 0: consumer index).
type mlx5CQ struct {
	buf  []byte // ncqe·64, mapped
	dbr  []byte // one page; the record is its first 8 bytes
	ncqe uint32
	ci   uint32 // unmasked consumer counter
	cqn  uint32
	// qps are the live QPs completing into this CQ, looked up by the QPN
	// in each CQE; gone are up to mlx5MaxGoneQPs closed ones, whose late
	// CQEs are dropped rather than taken for corruption. Both are
	// replaced whole under mu (QPs come and go on the control path while
	// another goroutine may poll). lastQP caches the last one found.
	qps, gone atomic.Pointer[[]*mlx5QP]
	mu        sync.Mutex
	lastQP    int
	err       verbs.QueueError
	// armReg is the CQ doorbell in the UAR (mlx5_cqarm.go).
	armReg unsafe.Pointer
}

// mlx5MaxGoneQPs bounds how many closed QPs a CQ remembers.
const mlx5MaxGoneQPs = 64

func (c *mlx5Context) CreateCQ(req *verbs.CQRequest, exec verbs.ExecFunc) (verbs.ProviderCQ, error) {
	ncqe := roundPow2(uint32(req.CQE) + 1)
	if ncqe > 1<<24 {
		return nil, fmt.Errorf("mlx5: CQ of %d entries is larger than 2^24", req.CQE)
	}
	cq, err := mlx5NewCQ(ncqe)
	if err != nil {
		return nil, err
	}
	cq.armReg = c.cqDoorbell()
	// No UAR page index (flags 0): the kernel arms the CQ through the
	// first static UAR, cqDoorbell's.
	cmd := mlx5CreateCQ{BufAddr: rawmem.Addr(cq.buf), DBAddr: rawmem.Addr(cq.dbr), CQESize: mlx5CQESize}
	var resp mlx5CreateCQResp
	// The core sends ncqe-1; the kernel rounds cqe+1 up to ncqe again.
	req.CQE = int(ncqe - 1)
	if _, err := exec(rawmem.Of(&cmd), rawmem.Of(&resp)); err != nil {
		_ = cq.Release()
		return nil, err
	}
	cq.cqn = resp.CQN
	cq.err.Device = req.Device
	if req.ActualCQE+1 != ncqe {
		_ = cq.Release()
		return nil, fmt.Errorf("mlx5: kernel made a CQ of %d entries, the buffer holds %d", req.ActualCQE+1, ncqe)
	}
	return cq, nil
}

// mlx5NewCQ maps a CQ buffer of ncqe entries, every CQE marked invalid
// with owner 0, and a zeroed doorbell record.
func mlx5NewCQ(ncqe uint32) (*mlx5CQ, error) {
	buf, dbr, err := mlx5QueueMem(int(ncqe) * mlx5CQESize)
	if err != nil {
		return nil, err
	}
	cq := &mlx5CQ{buf: buf[: int(ncqe)*mlx5CQESize : len(buf)], dbr: dbr, ncqe: ncqe, err: verbs.QueueError{Queue: "mlx5 CQ"}}
	for i := uint32(0); i < ncqe; i++ {
		cq.buf[i*mlx5CQESize+mlx5CQEOpOwn] = mlx5CQEInitOpOwn
	}
	empty, none := []*mlx5QP{}, []*mlx5QP{}
	cq.qps.Store(&empty)
	cq.gone.Store(&none)
	return cq, nil
}

func (cq *mlx5CQ) Release() error {
	err := errors.Join(mlx5Free(cq.buf[:cap(cq.buf)]), mlx5Free(cq.dbr))
	cq.buf, cq.dbr = nil, nil
	return err
}

// attach adds q to the QPs completing into cq, and forgets a closed QP
// that had the same number.
func (cq *mlx5CQ) attach(q *mlx5QP) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	old := *cq.qps.Load()
	if slices.Contains(old, q) {
		return
	}
	n := append(slices.Clip(old), q)
	cq.qps.Store(&n)
	g := slices.DeleteFunc(slices.Clone(*cq.gone.Load()), func(x *mlx5QP) bool { return x.qpn == q.qpn })
	cq.gone.Store(&g)
}

// retire moves q from the live QPs to the closed ones.
func (cq *mlx5CQ) retire(q *mlx5QP) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	old := *cq.qps.Load()
	if !slices.Contains(old, q) {
		return
	}
	n := slices.DeleteFunc(slices.Clone(old), func(x *mlx5QP) bool { return x == q })
	cq.qps.Store(&n)
	g := append(slices.Clone(*cq.gone.Load()), q)
	if len(g) > mlx5MaxGoneQPs {
		g = g[len(g)-mlx5MaxGoneQPs:]
	}
	cq.gone.Store(&g)
}

// closedQP reports whether qpn is a closed QP of cq's.
func (cq *mlx5CQ) closedQP(qpn uint32) bool {
	return slices.ContainsFunc(*cq.gone.Load(), func(x *mlx5QP) bool { return x.qpn == qpn })
}

// findQP returns the live QP numbered qpn that completes into cq, or nil.
func (cq *mlx5CQ) findQP(qpn uint32) *mlx5QP {
	qps := *cq.qps.Load()
	if i := cq.lastQP; i < len(qps) && qps[i].qpn == qpn {
		return qps[i]
	}
	for i := len(qps) - 1; i >= 0; i-- {
		if qps[i].qpn == qpn {
			cq.lastQP = i
			return qps[i]
		}
	}
	return nil
}

// Poll takes up to len(wcs) CQEs the device has handed over and then
// publishes the consumer index once (the device needs it to avoid CQ
// overrun, rdma-core providers/mlx5/cq.c update_cons_index). Every CQE is
// checked before its fields are used (queueerror.go): its format and
// opcode, its QP, its WQE counter against the outstanding send WQEs, a
// receive against the posted ones, its byte count against the posted
// length. On a fault, wcs[:n] are the good completions before it and the
// error is a *QueueError, returned again by every later call.
func (cq *mlx5CQ) Poll(wcs []verbs.WC) (int, error) {
	if cq.err.Fault != verbs.FaultNone {
		return 0, &cq.err
	}
	n := 0
	ci := cq.ci
	mask := cq.ncqe - 1
	for n < len(wcs) {
		cqe := cq.buf[(ci&mask)*mlx5CQESize:][:mlx5CQESize]
		tail := atomic.LoadUint32((*uint32)(unsafe.Pointer(&cqe[60])))
		if !mlx5CQEOwned(tail, ci, cq.ncqe) {
			break
		}
		mlx5DMAReadBarrier()
		wc := &wcs[n]
		op := mlx5DecodeCQE(cqe, wc)
		// The common case inline, everything else in fault: a plain
		// 64-byte CQE (format 0) of a live QP of this CQ that completes
		// an outstanding WQE within its posted length.
		q := cq.findQP(wc.QPNum)
		ok := false
		if q != nil {
			switch tail >> 26 { // opcode << 2 | format (op_own bits 7..2)
			case mlx5CQEReq << 2, mlx5CQEReqErr << 2:
				// The decoder sets ByteLen only for a successful RDMA
				// READ.
				wc.WRID, ok = q.sendCompleted(binary.BigEndian.Uint16(cqe[mlx5CQEWQECounter:]), wc.ByteLen)
			case mlx5CQERespSend << 2, mlx5CQERespSendImm << 2, mlx5CQERespSendInv << 2:
				wc.WRID, ok = q.recvCompleted(wc.ByteLen, binary.BigEndian.Uint16(cqe[mlx5CQEWQECounter:]))
			case mlx5CQERespWRImm << 2, mlx5CQERespErr << 2:
				// RDMA WRITE with immediate: byte_cnt is the write's
				// length, not the receive's.
				wc.WRID, ok = q.recvCompleted(0, binary.BigEndian.Uint16(cqe[mlx5CQEWQECounter:]))
			}
		}
		if !ok {
			if q == nil && tail&(3<<26) == 0 && cq.closedQP(wc.QPNum) {
				// A CQE of a QP destroyed meanwhile: drop it, as
				// rdma-core cleans them from the CQ on destroy.
				ci++
				continue
			}
			cq.consumed(ci)
			return n, cq.fault(q, op, tail, cqe, wc)
		}
		ci++
		n++
	}
	cq.consumed(ci)
	return n, nil
}

// consumed publishes consumer index ci (unmasked) in the doorbell record
// if it moved.
func (cq *mlx5CQ) consumed(ci uint32) {
	if ci != cq.ci {
		cq.ci = ci
		atomic.StoreUint32((*uint32)(unsafe.Pointer(&cq.dbr[0])), bits.ReverseBytes32(ci&0xffffff))
	}
}

// fault records in the CQ's QueueError why Poll refused the CQE cqe of
// QP q (nil: none of this CQ's), decoded into wc with opcode op.
func (cq *mlx5CQ) fault(q *mlx5QP, op uint8, tail uint32, cqe []byte, wc *verbs.WC) error {
	if f := (tail >> 26) & 3; f != 0 {
		return cq.err.Record(verbs.FaultCQEFormat, wc.QPNum, uint64(f), 0)
	}
	if q == nil {
		return cq.err.Record(verbs.FaultCompletionQP, wc.QPNum, uint64(wc.QPNum), 0)
	}
	switch op {
	case mlx5CQEReq, mlx5CQEReqErr:
		return q.sendFault(binary.BigEndian.Uint16(cqe[mlx5CQEWQECounter:]), wc.ByteLen, &cq.err)
	case mlx5CQERespSend, mlx5CQERespSendImm, mlx5CQERespSendInv:
		return q.recvFault(wc.ByteLen, binary.BigEndian.Uint16(cqe[mlx5CQEWQECounter:]), &cq.err)
	case mlx5CQERespWRImm, mlx5CQERespErr:
		return q.recvFault(0, binary.BigEndian.Uint16(cqe[mlx5CQEWQECounter:]), &cq.err)
	}
	// Resize, signature, no-packet CQEs: never on the CQs this provider
	// creates.
	return cq.err.Record(verbs.FaultCompletionOpcode, wc.QPNum, uint64(op), 0)
}

// ---- QP ----

// mlx5QP is a QP's buffer (RQ first, then SQ), its doorbell record (word
// 0: RQ counter, word 1: SQ counter) and its doorbell register.
type mlx5QP struct {
	buf []byte
	dbr []byte
	qpn uint32

	sq        []byte      // wqeCnt·64 bytes inside buf
	sqCnt     uint32      // WQEBBs, a power of two
	curPost   uint32      // unmasked WQEBB producer counter
	sqTail    uint32      // WQEBBs completed (signaled CQEs); atomic: the poller writes it
	sqWQE     []mlx5SQWQE // per WQE start, indexed by its first WQEBB
	maxWQEBB  uint32      // WQEBBs of the largest WR this QP accepts
	maxInline uint32
	sigAll    bool
	rc        bool

	rq       []byte
	rqCnt    uint32
	rqStride uint32
	rqHead   uint32
	rqTail   uint32 // atomic: the poller writes it
	rqWQE    []mlx5RQWQE
	// sqMask and rqMask index sqWQE and rqWQE, which have one zero entry
	// (mask 0) when the queue does not exist: a CQE's counter is masked
	// and checked against the entry, never used unchecked.
	sqMask, rqMask uint32

	uar     unsafe.Pointer // bfreg base
	bfOff   uint32         // toggled by bfHalf after each doorbell, as rdma-core
	bfHalf  uint32
	sendCQ  *mlx5CQ
	recvCQ  *mlx5CQ
	lastCtl uint64   // first 8 bytes of the last WQE's ctrl segment (the doorbell value)
	srq     *mlx5SRQ // receives come from it (mlx5_srq.go); rq is empty
}

// mlx5SQWQE is what the poller needs of a posted send WQE.
type mlx5SQWQE struct {
	wrid uint64
	// next is curPost after the WQE: the SQ is retired through it, and
	// it tells a live entry (next beyond the tail) from a stale one.
	next uint32
	len  uint32 // SGE length: an RDMA READ's byte count is at most this
}

// mlx5RQWQE is what the poller needs of a posted receive WQE.
type mlx5RQWQE struct {
	wrid uint64
	len  uint32
	seq  uint32 // rqHead after it: the entry is live when the tail is seq-1
}

// mlx5QPLayout is the sizing of a QP buffer (rdma-core providers/mlx5/verbs.c
// mlx5_calc_sq_size / mlx5_calc_rq_size, for the operations this provider
// posts).
type mlx5QPLayout struct {
	sqCnt, wqeBBs, rqCnt, rqShift uint32
	maxInline                     uint32
}

func mlx5Layout(req *verbs.QPRequest, maxSendWQEBB uint32) (mlx5QPLayout, error) {
	var l mlx5QPLayout
	if req.MaxSendWR > 0 {
		// ctrl + raddr + (one data segment, or the inline data).
		data := uint32(mlx5SegSize)
		if in := (4 + req.MaxInlineData + 15) / 16 * 16; req.MaxInlineData > 0 && in > data {
			data = in
		}
		size := (2*mlx5SegSize + data + mlx5WQEBB - 1) / mlx5WQEBB * mlx5WQEBB
		if size > 0x3f*mlx5SegSize/mlx5WQEBB*mlx5WQEBB {
			return l, fmt.Errorf("mlx5: %d bytes of inline data need a WQE larger than the 63 segments a ctrl segment can count", req.MaxInlineData)
		}
		l.wqeBBs = size / mlx5WQEBB
		// Inline room actually available in that many WQEBBs.
		l.maxInline = size - 2*mlx5SegSize - 4
		if req.MaxInlineData == 0 {
			l.maxInline = 0
		}
		l.sqCnt = roundPow2(req.MaxSendWR*size) / mlx5WQEBB
		if maxSendWQEBB != 0 && l.sqCnt > maxSendWQEBB {
			return l, fmt.Errorf("mlx5: %d send WRs of %d bytes need %d WQEBBs, the device allows %d", req.MaxSendWR, size, l.sqCnt, maxSendWQEBB)
		}
	}
	if req.MaxRecvWR > 0 {
		stride := roundPow2(mlx5SegSize * max(req.MaxRecvSGE, 1))
		l.rqShift = uint32(bits.TrailingZeros32(stride))
		bytes := max(roundPow2(req.MaxRecvWR)*stride, mlx5WQEBB)
		l.rqCnt = bytes / stride
	}
	return l, nil
}

func (c *mlx5Context) CreateQP(req *verbs.QPRequest, exec verbs.ExecFunc) (verbs.ProviderQP, error) {
	if req.Type != verbs.QPTypeRC && req.Type != verbs.QPTypeUC {
		return nil, errors.New("mlx5: only RC and UC QPs are supported by this data path (UD needs address vectors, not implemented)")
	}
	if req.MaxSendSGE > 1 || req.MaxRecvSGE > 1 {
		return nil, fmt.Errorf("mlx5: %d send / %d recv SGEs requested, this data path posts one", req.MaxSendSGE, req.MaxRecvSGE)
	}
	sendCQ, ok1 := req.SendCQ.(*mlx5CQ)
	recvCQ, ok2 := req.RecvCQ.(*mlx5CQ)
	if !ok1 || !ok2 {
		return nil, errors.New("mlx5: QP's CQs are not mlx5 CQs")
	}
	l, err := mlx5Layout(req, c.resp.MaxSendWQEBB)
	if err != nil {
		return nil, err
	}
	q, err := mlx5NewQP(l)
	if err != nil {
		return nil, err
	}
	q.sigAll, q.rc, q.sendCQ, q.recvCQ = req.SigAll, req.Type == verbs.QPTypeRC, sendCQ, recvCQ
	if req.SRQ != nil {
		if q.srq, ok1 = req.SRQ.(*mlx5SRQ); !ok1 {
			_ = q.Release()
			return nil, errors.New("mlx5: QP's SRQ is not an mlx5 SRQ")
		}
	}
	uidx := uint32(mlx5DefaultUIdx)
	if c.resp.CQEVersion == 1 {
		uidx = c.nextUIdx % mlx5DefaultUIdx // < 2^24 and not the 'none' value
		c.nextUIdx++
	}
	cmd := mlx5CreateQP{
		BufAddr: rawmem.Addr(q.buf), DBAddr: rawmem.Addr(q.dbr),
		SQWQECount: l.sqCnt, RQWQECount: l.rqCnt, RQWQEShift: l.rqShift,
		UIdx: uidx,
	}
	var resp mlx5CreateQPResp
	// The kernel derives the send/recv sizes from this udata; keep the core
	// command's counts consistent (max_recv_wr > 0 iff there is an RQ).
	if _, err := exec(rawmem.Of(&cmd), rawmem.Of(&resp)); err != nil {
		_ = q.Release()
		return nil, err
	}
	q.qpn = req.QPN
	if q.maxInline > req.Granted.MaxInlineData && req.Granted.MaxInlineData > 0 {
		q.maxInline = req.Granted.MaxInlineData
	}
	q.uar, q.bfHalf, err = c.bfreg(resp.BfregIndex)
	if err != nil {
		_ = q.Release()
		return nil, fmt.Errorf("mlx5: %w", err)
	}
	sendCQ.attach(q)
	recvCQ.attach(q)
	return q, nil
}

// mlx5NewQP maps the buffer and doorbell record for layout l.
func mlx5NewQP(l mlx5QPLayout) (*mlx5QP, error) {
	rqBytes := l.rqCnt << l.rqShift
	sqBytes := l.sqCnt * mlx5WQEBB
	buf, dbr, err := mlx5QueueMem(int(max(rqBytes+sqBytes, 1)))
	if err != nil {
		return nil, err
	}
	q := &mlx5QP{
		buf: buf, dbr: dbr,
		sq: buf[rqBytes : rqBytes+sqBytes], sqCnt: l.sqCnt, maxWQEBB: l.wqeBBs, maxInline: l.maxInline,
		rq: buf[:rqBytes], rqCnt: l.rqCnt, rqStride: 1 << l.rqShift,
		sqWQE: make([]mlx5SQWQE, max(l.sqCnt, 1)), rqWQE: make([]mlx5RQWQE, max(l.rqCnt, 1)),
		sqMask: max(l.sqCnt, 1) - 1, rqMask: max(l.rqCnt, 1) - 1,
	}
	return q, nil
}

func (q *mlx5QP) Release() error {
	if q.sendCQ != nil { // the CQs keep it, to drop its late CQEs
		q.sendCQ.retire(q)
		q.recvCQ.retire(q)
	}
	err := errors.Join(mlx5Free(q.buf), mlx5Free(q.dbr))
	q.buf, q.dbr, q.sq, q.rq = nil, nil, nil, nil
	return err
}

// SendCapacity is how many WRs of the largest size fit; smaller WRs (no
// inline data) take one WQEBB each, so more of those fit.
func (q *mlx5QP) SendCapacity() uint32 {
	if q.maxWQEBB == 0 {
		return 0
	}
	return q.sqCnt / q.maxWQEBB
}
func (q *mlx5QP) RecvCapacity() uint32 { return q.rqCnt }

// modified zeroes the doorbell record and the queue indices when the QP
// goes back to RESET (rdma-core mlx5_modify_qp).
func (q *mlx5QP) Modified(attr *verbs.ModifyAttr, mask verbs.QPAttrMask) {
	if mask&verbs.QPAttrState == 0 || attr.State != verbs.QPStateReset {
		return
	}
	q.curPost, q.sqTail, q.rqHead, q.rqTail, q.bfOff = 0, 0, 0, 0, 0
	clear(q.sqWQE) // no entry may look live to the poller
	clear(q.rqWQE)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&q.dbr[0])), 0)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&q.dbr[4])), 0)
}

func (q *mlx5QP) checkSend(wr *verbs.SendWR) error {
	switch wr.Opcode {
	case verbs.OpSend, verbs.OpSendImm, verbs.OpRDMAWrite, verbs.OpRDMAWriteImm:
	case verbs.OpRDMARead:
		if !q.rc {
			return verbs.ErrReadNotRC
		}
	case verbs.OpAtomicCmpSwap, verbs.OpAtomicFetchAdd:
		if err := verbs.CheckAtomic(wr, q.rc); err != nil {
			return err
		}
	default:
		return verbs.ErrBadOpcode
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

// PostSend writes all of wrs into the SQ, publishes the SQ counter in the
// doorbell record and rings the doorbell once (rdma-core
// providers/mlx5/qp.c post_send_db). All or nothing: ErrQueueFull when
// the SQ lacks WQEBBs for all of them. SQ space comes back only through
// signaled completions: signal at least one WR per SQ depth.
func (q *mlx5QP) PostSend(wrs []verbs.SendWR) error {
	if len(wrs) == 0 {
		return nil
	}
	if q.sqCnt == 0 {
		return errNoSQ
	}
	need := uint32(0)
	for i := range wrs {
		if err := q.checkSend(&wrs[i]); err != nil {
			return err
		}
		need += (mlx5SendDS(&wrs[i])*mlx5SegSize + mlx5WQEBB - 1) / mlx5WQEBB
	}
	if uint64(need) > uint64(q.sqCnt-(q.curPost-atomic.LoadUint32(&q.sqTail))) {
		if need > q.sqCnt {
			return verbs.ErrBatchTooLarge // ErrQueueFull would be retried forever
		}
		return verbs.ErrQueueFull
	}
	var ctl uint64
	for i := range wrs {
		wr := &wrs[i]
		start := q.curPost
		nbb := mlx5WriteSendWQE(q.sq, start, q.qpn, wr, mlx5FmCeSe(wr.Flags, q.sigAll))
		idx := start & (q.sqCnt - 1)
		q.curPost = start + nbb
		q.sqWQE[idx] = mlx5SQWQE{wrid: wr.WRID, next: q.curPost, len: wr.SGE.Length}
		ctl = *(*uint64)(unsafe.Pointer(&q.sq[idx*mlx5WQEBB]))
	}
	q.lastCtl = ctl
	mlx5DMABarrier()
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&q.dbr[4])), bits.ReverseBytes32(q.curPost&0xffff))
	mlx5WCFence()
	// The ctrl segment's first 8 bytes, as they lie in memory (already
	// big-endian), go to the register unchanged (mmio_write64_be of
	// the big-endian value).
	mlx5MMIOWrite64(unsafe.Add(q.uar, q.bfOff), ctl)
	mlx5WCFence()
	q.bfOff ^= q.bfHalf
	return nil
}

// sendCompleted retires the SQ through the WQE that starts at WQEBB
// counter wqeCounter (a signaled WQE: every earlier one is done too) and
// returns its WRID. The counter must name the start of a live WQE, one
// posted and not yet retired, and byteCnt (0 when it is not a length)
// must not exceed its posted length; otherwise it returns false and
// sendFault says why. Only the queue's own bookkeeping is read (Go
// memory, not the doorbell record, which a concurrent Close unmaps).
func (q *mlx5QP) sendCompleted(wqeCounter uint16, byteCnt uint32) (uint64, bool) {
	w := &q.sqWQE[uint32(wqeCounter)&q.sqMask]
	// d is the counter's distance from the tail (16-bit, as the device
	// counts; the SQ holds at most 2^15 WQEBBs; only the poller writes
	// the tail, always at a WQE's end). The WQE that starts there, if it
	// is posted and not yet retired, ends 1..maxWQEBB WQEBBs after it; a
	// stale entry ends at or before the tail, one of a WQE that starts
	// elsewhere at least sqCnt away.
	d := uint32(wqeCounter - uint16(q.sqTail))
	if d >= q.sqCnt || w.next-q.sqTail-d-1 >= q.maxWQEBB || byteCnt > w.len {
		return 0, false
	}
	atomic.StoreUint32(&q.sqTail, w.next)
	return w.wrid, true
}

// sendFault records in qe why sendCompleted refused.
func (q *mlx5QP) sendFault(wqeCounter uint16, byteCnt uint32, qe *verbs.QueueError) error {
	if q.sqCnt == 0 {
		return qe.Record(verbs.FaultNoSendQueue, q.qpn, 0, 0)
	}
	tail := uint16(q.sqTail)
	// Read only to describe the fault: the poster may be moving it.
	posted := uint16(q.curPost)
	w := &q.sqWQE[uint32(wqeCounter)&q.sqMask]
	if wqeCounter-tail >= posted-tail {
		if qe.Fault == verbs.FaultNone {
			qe.Base = uint64(tail)
		}
		return qe.Record(verbs.FaultWQECounter, q.qpn, uint64(wqeCounter), uint64(posted))
	}
	if d := uint32(wqeCounter - tail); w.next-q.sqTail-d-1 >= q.maxWQEBB {
		return qe.Record(verbs.FaultWQEStart, q.qpn, uint64(wqeCounter), 0)
	}
	return qe.Record(verbs.FaultCompletionLength, q.qpn, uint64(byteCnt), uint64(w.len))
}

// recvCompleted retires the oldest receive WQE (without an SRQ, receives
// complete in order; rdma-core uses the tail, not the CQE's counter) and
// returns its WRID. It must be live (posted and not retired) and byteCnt
// (0 when it is not a length) within its posted length; otherwise it
// returns false and recvFault says why.
func (q *mlx5QP) recvCompleted(byteCnt uint32, wqeCounter uint16) (uint64, bool) {
	if q.srq != nil { // the CQE's counter names the SRQ's WQE
		return q.srq.completed(wqeCounter, byteCnt)
	}
	t := q.rqTail // only the poller writes it
	w := &q.rqWQE[t&q.rqMask]
	if w.seq != t+1 || byteCnt > w.len {
		return 0, false
	}
	atomic.StoreUint32(&q.rqTail, t+1)
	return w.wrid, true
}

// recvFault records in qe why recvCompleted refused.
func (q *mlx5QP) recvFault(byteCnt uint32, wqeCounter uint16, qe *verbs.QueueError) error {
	if q.srq != nil {
		return q.srq.fault(q.qpn, wqeCounter, byteCnt, qe)
	}
	if q.rqCnt == 0 {
		return qe.Record(verbs.FaultNoReceiveQueue, q.qpn, 0, 0)
	}
	t := q.rqTail
	w := &q.rqWQE[t&q.rqMask]
	if w.seq != t+1 {
		return qe.Record(verbs.FaultNoReceivePosted, q.qpn, 0, 0)
	}
	return qe.Record(verbs.FaultCompletionLength, q.qpn, uint64(byteCnt), uint64(w.len))
}

// PostRecv writes all of wrs into the RQ and publishes the RQ counter in
// the doorbell record; receives have no UAR doorbell (rdma-core
// providers/mlx5/qp.c mlx5_post_recv).
func (q *mlx5QP) PostRecv(wrs []verbs.RecvWR) error {
	if len(wrs) == 0 {
		return nil
	}
	if q.rqCnt == 0 {
		return verbs.ErrNoRQ
	}
	if uint64(len(wrs)) > uint64(q.rqCnt-(q.rqHead-atomic.LoadUint32(&q.rqTail))) {
		if uint64(len(wrs)) > uint64(q.rqCnt) {
			return verbs.ErrBatchTooLarge
		}
		return verbs.ErrQueueFull
	}
	for i := range wrs {
		idx := q.rqHead & (q.rqCnt - 1)
		mlx5WriteRecvWQE(q.rq[idx*q.rqStride:(idx+1)*q.rqStride], &wrs[i])
		q.rqHead++
		q.rqWQE[idx] = mlx5RQWQE{wrid: wrs[i].WRID, len: wrs[i].SGE.Length, seq: q.rqHead}
	}
	mlx5DMABarrier()
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&q.dbr[0])), bits.ReverseBytes32(q.rqHead&0xffff))
	return nil
}

var errNoSQ = errors.New("verbs: QP has no send queue")

// QueryDeviceUData: QUERY_DEVICE's response udata (struct
// mlx5_ib_query_device_resp), when the kernel says it fills it
// (MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE in GET_CONTEXT's answer).
func (c *mlx5Context) QueryDeviceUData() ([]byte, func(*verbs.DeviceAttr)) {
	if c.resp.CmdsSuppUHW&mlx5UserCmdsSuppUHWQueryDevice == 0 {
		return nil, nil
	}
	r := new(mlx5QueryDeviceResp)
	return rawmem.Of(r), func(a *verbs.DeviceAttr) { fillMLX5Attr(a, r) }
}

// fillMLX5Attr takes the mlx5 provider fields that r.ResponseLength covers
// (counted from the start of mlx5_ib_query_device_resp, as the kernel's
// mlx5_ib_query_device does).
func fillMLX5Attr(a *verbs.DeviceAttr, r *mlx5QueryDeviceResp) {
	n := r.ResponseLength
	a.DriverResponseLength = n
	if mlx5Covers(n, unsafe.Offsetof(r.TSOCaps), unsafe.Sizeof(r.TSOCaps)) {
		a.TSOMaxTSO, a.TSOSupportedQPTs = r.TSOCaps.MaxTSO, r.TSOCaps.SupportedQPTs
	}
	if mlx5Covers(n, unsafe.Offsetof(r.RSSCaps), unsafe.Sizeof(r.RSSCaps)) {
		a.RSSRxHashFieldsMask, a.RSSRxHashFunction = r.RSSCaps.RxHashFieldsMask, r.RSSCaps.RxHashFunction
	}
	if mlx5Covers(n, unsafe.Offsetof(r.PacketPacingCaps), unsafe.Sizeof(r.PacketPacingCaps)) {
		a.PacketPacingRateMin = r.PacketPacingCaps.QPRateLimitMin
		a.PacketPacingRateMax = r.PacketPacingCaps.QPRateLimitMax
		a.PacketPacingSupportedQPTs = r.PacketPacingCaps.SupportedQPTs
	}
}

// covers reports whether a response of n bytes holds the field at off of
// size bytes.
func mlx5Covers(n uint32, off, size uintptr) bool { return uintptr(n) >= off+size }

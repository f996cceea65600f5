package rxe

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// rxe shares each queue (SQ, RQ, CQ) with the kernel as one mmap'd buffer
// laid out as struct rxe_queue_buf (rdma_user_rxe.h): a header with the
// element size and index mask, the producer and consumer indices in
// separate 128-byte regions, then the slots.
const (
	rxeRingLog2Off = 0
	rxeRingMaskOff = 4
	rxeRingProdOff = 128
	rxeRingConsOff = 256
	rxeRingDataOff = 384
)

// rxeRing is a view of one mapped rxe queue. It does not own the mapping.
//
// Indices are stored already masked. The side that produces (user space for
// the SQ and RQ, the kernel for the CQ) publishes producer_index with a
// store-release after the element is written; the consumer publishes
// consumer_index after it has read the element. Go's sync/atomic loads and
// stores are sequentially consistent, which is stronger than the
// acquire/release rdma-core uses, and plain stores into the slot before the
// atomic index store are ordered by it.
type rxeRing struct {
	buf      []byte
	prod     *uint32
	cons     *uint32
	data     unsafe.Pointer
	mask     uint32
	log2     uint32
	slotSize int
}

// newRxeRing checks the header the kernel wrote and returns a view of buf.
// The header is read once: the kernel never changes it for a live queue
// (resize is not supported here).
func newRxeRing(buf []byte) (*rxeRing, error) {
	if len(buf) < rxeRingDataOff {
		return nil, fmt.Errorf("rxe queue mapping is %d bytes, shorter than its %d-byte header", len(buf), rxeRingDataOff)
	}
	log2 := atomic.LoadUint32((*uint32)(unsafe.Pointer(&buf[rxeRingLog2Off])))
	mask := atomic.LoadUint32((*uint32)(unsafe.Pointer(&buf[rxeRingMaskOff])))
	// Elements are at least a cache line and at most a few KiB (an SQ WQE
	// with 512 bytes of inline data is 720 -> 1024).
	if log2 < 5 || log2 > 16 {
		return nil, fmt.Errorf("rxe queue header has log2_elem_size %d, want 5..16", log2)
	}
	// In 64 bits: mask+1 overflows uint32 for 0xffffffff.
	slots := uint64(mask) + 1
	if mask == 0 || slots&(slots-1) != 0 || slots > 1<<24 {
		return nil, fmt.Errorf("rxe queue header has index_mask %#x, want 2^n-1 below 2^24", mask)
	}
	need := uint64(rxeRingDataOff) + slots<<log2
	if need > uint64(len(buf)) {
		return nil, fmt.Errorf("rxe queue needs %d bytes for %d slots of %d, mapping has %d", need, slots, 1<<log2, len(buf))
	}
	r := &rxeRing{
		buf:      buf,
		prod:     (*uint32)(unsafe.Pointer(&buf[rxeRingProdOff])),
		cons:     (*uint32)(unsafe.Pointer(&buf[rxeRingConsOff])),
		data:     unsafe.Pointer(&buf[rxeRingDataOff]),
		mask:     mask,
		log2:     log2,
		slotSize: 1 << log2,
	}
	if p, c := r.loadProd(), r.loadCons(); p > mask || c > mask {
		return nil, fmt.Errorf("rxe queue indices %d/%d exceed index_mask %#x", p, c, mask)
	}
	return r, nil
}

func (r *rxeRing) loadProd() uint32     { return atomic.LoadUint32(r.prod) }
func (r *rxeRing) loadCons() uint32     { return atomic.LoadUint32(r.cons) }
func (r *rxeRing) storeProd(v uint32)   { atomic.StoreUint32(r.prod, v) }
func (r *rxeRing) storeCons(v uint32)   { atomic.StoreUint32(r.cons, v) }
func (r *rxeRing) next(i uint32) uint32 { return (i + 1) & r.mask }

// capacity is the number of usable slots: one is always left empty so that
// full ((prod+1)&mask == cons) differs from empty (prod == cons).
func (r *rxeRing) capacity() uint32 { return r.mask }

// free is the number of elements a producer may add given both indices.
func (r *rxeRing) free(prod, cons uint32) uint32 { return (cons - prod - 1) & r.mask }

// indexFault records in e which of prod and cons lies beyond the mask,
// or returns the fault e already holds.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (r *rxeRing) indexFault(e *verbs.QueueError, qpn, prod, cons uint32) error {
	if e.Fault != verbs.FaultNone {
		return e
	}
	if prod > r.mask {
		return e.Record(verbs.FaultProducerIndex, qpn, uint64(prod), uint64(r.mask))
	}
	return e.Record(verbs.FaultConsumerIndex, qpn, uint64(cons), uint64(r.mask))
}

// postRecv writes all of wrs into r, a receive ring (an RQ or an SRQ),
// and publishes the producer index once; no syscall. Both indices are
// checked first, as rxeCQ.Poll does: a corrupt index is a *QueueError in
// e (qpn names the QP, 0 for an SRQ), never an access outside the
// mapping. All or nothing.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (r *rxeRing) postRecv(wrs []verbs.RecvWR, e *verbs.QueueError, qpn uint32) error {
	prod := r.loadProd()
	cons := r.loadCons()
	if prod|cons|e.Poison() > r.mask {
		return r.indexFault(e, qpn, prod, cons)
	}
	if uint64(len(wrs)) > uint64(r.free(prod, cons)) {
		if uint64(len(wrs)) > uint64(r.capacity()) {
			return verbs.ErrBatchTooLarge
		}
		return verbs.ErrQueueFull
	}
	for i := range wrs {
		encodeRxeRecvWQE(r.slot(prod), &wrs[i])
		prod = r.next(prod)
	}
	r.storeProd(prod)
	return nil
}

// slotPtr is the address of slot i (i is masked by the caller).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (r *rxeRing) slotPtr(i uint32) unsafe.Pointer {
	return unsafe.Add(r.data, uintptr(i)<<r.log2)
}

// slot is slot i as a byte slice; building the slice header does not
// allocate.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (r *rxeRing) slot(i uint32) []byte {
	return unsafe.Slice((*byte)(r.slotPtr(i)), r.slotSize)
}

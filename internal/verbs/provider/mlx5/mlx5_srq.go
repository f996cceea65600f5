package mlx5

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// mlx5 shared receive queues (srq.go), as rdma-core's providers/mlx5
// mlx5_create_srq, mlx5_post_srq_recv and mlx5_free_srq_wqe (the
// free-list form, without the ODP wait queue). The SRQ is a buffer of
// max WQEs of 32 bytes (struct mlx5_wqe_srq_next_seg, then one data
// segment, mlx5dv.h) linked into a free list by next_wqe_index; a post
// takes the head, a receive completion (its CQE's wqe_counter names the
// WQE) puts the WQE back at the tail. The doorbell record holds the count
// of WQEs posted. Checked against mlx5dv.h and mlx5-abi.h (golden.c), not
// against hardware.

// struct mlx5_ib_create_srq (32 bytes) and its response (8 bytes).
type mlx5CreateSRQ struct {
	BufAddr   uint64
	DBAddr    uint64
	Flags     uint32
	Reserved0 uint32
	UIdx      uint32
	Reserved1 uint32
}

type mlx5CreateSRQResp struct {
	SRQN     uint32
	Reserved uint32
}

const (
	mlx5SRQNextSeg   = 16 // sizeof(struct mlx5_wqe_srq_next_seg)
	mlx5SRQNextIndex = 2  // offsetof(next_wqe_index), be16
	mlx5SRQStride    = 32 // next segment + one data segment; the kernel's minimum
)

// mlx5SRQ is an SRQ's buffer, doorbell record and free list. mu orders
// posts and the polls that free WQEs (rdma-core's srq->lock); it does not
// allocate.
type mlx5SRQ struct {
	mu      sync.Mutex
	buf     []byte
	dbr     []byte
	max     uint32 // WQEs, a power of two; max-1 can be posted at once
	head    uint32 // next WQE to post
	tail    uint32 // last free WQE
	posted  uint32 // outstanding
	counter uint32 // WQEs posted ever (the doorbell record)
	wqe     []mlx5SRQWQE
	err     verbs.QueueError
}

type mlx5SRQWQE struct {
	wrid uint64
	len  uint32
	live bool
}

func (c *mlx5Context) CreateSRQ(req *verbs.SRQRequest, exec verbs.ExecFunc) (verbs.ProviderSRQ, error) {
	if req.MaxSGE > 1 {
		return nil, fmt.Errorf("mlx5: %d SGEs per SRQ receive requested, this data path posts one", req.MaxSGE)
	}
	s, err := mlx5NewSRQ(req.MaxWR, req.Device)
	if err != nil {
		return nil, err
	}
	req.MaxWR = s.max - 1 // as rdma-core: the kernel rounds max_wr+1 up to s.max again
	uidx := uint32(mlx5DefaultUIdx)
	if c.resp.CQEVersion == 1 {
		uidx = c.nextUIdx % mlx5DefaultUIdx
		c.nextUIdx++
	}
	cmd := mlx5CreateSRQ{BufAddr: rawmem.Addr(s.buf), DBAddr: rawmem.Addr(s.dbr), UIdx: uidx}
	var resp mlx5CreateSRQResp
	if _, err := exec(rawmem.Of(&cmd), rawmem.Of(&resp)); err != nil {
		_ = s.Release()
		return nil, err
	}
	return s, nil
}

// mlx5NewSRQ maps the buffer for maxWR receives and links every WQE into
// the free list (mlx5_alloc_srq_buf).
func mlx5NewSRQ(maxWR uint32, dev string) (*mlx5SRQ, error) {
	n := roundPow2(maxWR + 1)
	if n > 1<<15 {
		return nil, fmt.Errorf("mlx5: SRQ of %d receives is larger than this data path's 32767", maxWR)
	}
	buf, dbr, err := mlx5QueueMem(int(n * mlx5SRQStride))
	if err != nil {
		return nil, err
	}
	s := &mlx5SRQ{buf: buf, dbr: dbr, max: n, tail: n - 1, wqe: make([]mlx5SRQWQE, n),
		err: verbs.QueueError{Device: dev, Queue: "mlx5 SRQ"}}
	for i := uint32(0); i < n; i++ {
		binary.BigEndian.PutUint16(s.buf[i*mlx5SRQStride+mlx5SRQNextIndex:], uint16((i+1)&(n-1)))
	}
	return s, nil
}

func (s *mlx5SRQ) Release() error {
	err := errors.Join(mlx5Free(s.buf), mlx5Free(s.dbr))
	s.buf, s.dbr = nil, nil
	return err
}

func (s *mlx5SRQ) Capacity() uint32 { return s.max - 1 }

// PostRecv takes WQEs off the free list's head for all of wrs (or none:
// ErrQueueFull) and publishes the count in the doorbell record. A
// next_wqe_index beyond the buffer (the list is this process's memory,
// but a stray write could break it) is a QueueError, never followed.
func (s *mlx5SRQ) PostRecv(wrs []verbs.RecvWR) error {
	if len(wrs) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err.Fault != verbs.FaultNone {
		return &s.err
	}
	if uint64(len(wrs)) > uint64(s.max-1-s.posted) {
		if uint64(len(wrs)) > uint64(s.max-1) {
			return verbs.ErrBatchTooLarge
		}
		return verbs.ErrQueueFull
	}
	for i := range wrs {
		idx := s.head
		w := s.buf[idx*mlx5SRQStride : (idx+1)*mlx5SRQStride]
		next := uint32(binary.BigEndian.Uint16(w[mlx5SRQNextIndex:]))
		if next >= s.max || s.wqe[idx].live {
			return s.err.Record(verbs.FaultProducerIndex, 0, uint64(next), uint64(s.max-1))
		}
		mlx5WriteRecvWQE(w[mlx5SRQNextSeg:], &wrs[i])
		s.wqe[idx] = mlx5SRQWQE{wrid: wrs[i].WRID, len: wrs[i].SGE.Length, live: true}
		s.head = next
	}
	s.posted += uint32(len(wrs))
	s.counter += uint32(len(wrs))
	mlx5DMABarrier()
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&s.dbr[0])), bits.ReverseBytes32(s.counter))
	return nil
}

// completed retires the WQE a receive CQE names (wqe_counter) and returns
// its WRID: it must be live and byteCnt within its posted length;
// otherwise false, and fault says why.
func (s *mlx5SRQ) completed(ctr uint16, byteCnt uint32) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := uint32(ctr)
	if idx >= s.max || !s.wqe[idx].live || byteCnt > s.wqe[idx].len {
		return 0, false
	}
	w := &s.wqe[idx]
	w.live = false
	s.posted--
	// mlx5_free_srq_wqe: the WQE goes back at the free list's tail.
	binary.BigEndian.PutUint16(s.buf[s.tail*mlx5SRQStride+mlx5SRQNextIndex:], uint16(idx))
	s.tail = idx
	return w.wrid, true
}

// fault records in qe why completed refused a CQE of QP qpn.
func (s *mlx5SRQ) fault(qpn uint32, ctr uint16, byteCnt uint32, qe *verbs.QueueError) error {
	idx := uint32(ctr)
	if idx >= s.max {
		return qe.Record(verbs.FaultWQECounter, qpn, uint64(ctr), uint64(s.max))
	}
	if !s.wqe[idx].live {
		return qe.Record(verbs.FaultNoReceivePosted, qpn, 0, 0)
	}
	return qe.Record(verbs.FaultCompletionLength, qpn, uint64(byteCnt), uint64(s.wqe[idx].len))
}

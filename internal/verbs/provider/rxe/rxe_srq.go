package rxe

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// rxe's SRQ: the kernel's ring, mapped as a QP's RQ is (struct
// rxe_create_srq_resp's mminfo; rdma-core providers/rxe/rxe.c
// rxe_create_srq), with the same struct rxe_recv_wqe slots, so posting is
// the RQ's code.

// rxeCreateSRQRespSize is struct rxe_create_srq_resp: mminfo, srq_num,
// reserved.
const rxeCreateSRQRespSize = 24

// rxeSRQ is an SRQ's ring, which user space produces into like an RQ.
type rxeSRQ struct {
	ring *rxeRing
	err  verbs.QueueError
}

func (c *rxeContext) CreateSRQ(req *verbs.SRQRequest, exec verbs.ExecFunc) (verbs.ProviderSRQ, error) {
	if req.MaxSGE > 1 {
		return nil, fmt.Errorf("rxe: %d SGEs per SRQ receive requested, this data path posts one", req.MaxSGE)
	}
	out := make([]byte, rxeCreateSRQRespSize)
	if _, err := exec(nil, out); err != nil {
		return nil, err
	}
	r, err := c.mapRing("SRQ", parseRxeMMInfo(out))
	if err != nil {
		return nil, err
	}
	if r.slotSize < rxeRWQEHdrSize+rxeSGESize {
		_ = unmapRing(r)
		return nil, fmt.Errorf("rxe: SRQ slots are %d bytes, too small for a WQE with one SGE", r.slotSize)
	}
	return &rxeSRQ{ring: r, err: verbs.QueueError{Device: req.Device, Queue: "rxe SRQ ring"}}, nil
}

func (s *rxeSRQ) Release() error   { return unmapRing(s.ring) }
func (s *rxeSRQ) Capacity() uint32 { return s.ring.capacity() }
func (s *rxeSRQ) Detachable()      {}

// PostRecv writes all of wrs into the SRQ ring and publishes the producer
// index once, as rxeQP.PostRecv does for an RQ; both indices are checked
// first (a corrupt index is a *QueueError, never an access outside the
// mapping).
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (s *rxeSRQ) PostRecv(wrs []verbs.RecvWR) error {
	if len(wrs) == 0 {
		return nil
	}
	return s.ring.postRecv(wrs, &s.err, 0)
}

package verbs

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Shared receive queues. An SRQ holds receive WRs for every QP created
// on it (QPAttr.SRQ): a message to any of them takes the next one, and
// its completion goes to that QP's receive CQ with that QP's number and
// the WR's WRID. Create it before the QPs and close it after them.
//
// The queue itself is the provider's (srqCreator): rxe's ring
// (provider/rxe/rxe_srq.go), mlx5's free list (provider/mlx5/mlx5_srq.go). A provider without SRQs
// is refused in one line.

// Legacy write() commands (enum ib_uverbs_write_cmds).
const (
	cmdCreateSRQ  uint32 = 32
	cmdDestroySRQ uint32 = 35
)

// struct ib_uverbs_create_srq (32 B); driver data follows.
type abiCreateSRQ struct {
	Response   uint64
	UserHandle uint64
	PDHandle   uint32
	MaxWR      uint32
	MaxSGE     uint32
	SRQLimit   uint32
}

// struct ib_uverbs_create_srq_resp (16 B); driver data follows.
type abiCreateSRQResp struct {
	SRQHandle uint32
	MaxWR     uint32
	MaxSGE    uint32
	SRQN      uint32
}

// struct ib_uverbs_destroy_srq (16 B) and its response (4 B).
type abiDestroySRQ struct {
	Response  uint64
	SRQHandle uint32
	Reserved  uint32
}

type abiDestroySRQResp struct {
	EventsReported uint32
}

// SRQAttr describes a shared receive queue to create.
type SRQAttr struct {
	MaxWR  uint32 // receive WRs it holds
	MaxSGE uint32 // 0 means 1; the data path posts one SGE per WR
}

// SRQ is a shared receive queue. PostRecv is the provider's data path,
// with RecvQueue's rules (no allocation, no lock: one goroutine at a
// time).
type SRQ struct {
	ctx    *Context
	handle uint32
	srqn   uint32
	maxWR  uint32
	prov   ProviderSRQ
	recv   RecvQueue
	qps    atomic.Int32 // live QPs created on it
	key    uint64
}

// SRQRequest is what the core knows about an SRQ being created.
type SRQRequest struct {
	Device string
	MaxWR  uint32
	MaxSGE uint32
}

// ProviderSRQ is a provider's shared receive queue.
type ProviderSRQ interface {
	RecvQueue
	Release() error
	Capacity() uint32
}

// SRQCreator is implemented by provider contexts with SRQs (rxe, mlx5).
type SRQCreator interface {
	CreateSRQ(req *SRQRequest, exec ExecFunc) (ProviderSRQ, error)
}

// CreateSRQ creates an SRQ on pd (CREATE_SRQ) and maps its ring. On any
// failure everything created so far is destroyed.
func (c *Context) CreateSRQ(pd *PD, attr SRQAttr) (*SRQ, error) {
	if pd == nil {
		return nil, errors.New("verbs: CreateSRQ needs a PD")
	}
	if attr.MaxWR == 0 || attr.MaxWR > 1<<20 {
		return nil, fmt.Errorf("verbs: SRQ of %d receive WRs, want 1..%d", attr.MaxWR, 1<<20)
	}
	if attr.MaxSGE == 0 {
		attr.MaxSGE = 1
	}
	pc, err := c.dataPath()
	if err != nil {
		return nil, err
	}
	sc, ok := pc.(SRQCreator)
	if !ok {
		return nil, fmt.Errorf("%s: this data path has no shared receive queues for %s devices (rxe and mlx5 have them)", c.dev.Name, c.dev.Driver)
	}
	req := &SRQRequest{Device: c.dev.Name, MaxWR: attr.MaxWR, MaxSGE: attr.MaxSGE}
	var resp abiCreateSRQResp
	created := false
	exec := func(udataIn, udataOut []byte) (uint32, error) {
		cmd := abiCreateSRQ{PDHandle: pd.Handle, MaxWR: req.MaxWR, MaxSGE: req.MaxSGE}
		if err := c.writeCmd(cmdCreateSRQ, rawmem.Of(&cmd), rawmem.Of(&resp), udataIn, udataOut); err != nil {
			return 0, err
		}
		created = true
		return resp.SRQHandle, nil
	}
	p, err := sc.CreateSRQ(req, exec)
	if err != nil {
		if created {
			err = errors.Join(err, c.destroySRQ(resp.SRQHandle))
		}
		return nil, err
	}
	s := &SRQ{ctx: c, handle: resp.SRQHandle, srqn: resp.SRQN, maxWR: max(resp.MaxWR, p.Capacity()), prov: p, recv: p}
	s.key = c.addChild(s.Close)
	return s, nil
}

func (c *Context) destroySRQ(handle uint32) error {
	cmd := abiDestroySRQ{SRQHandle: handle}
	var resp abiDestroySRQResp
	return c.writeCmd(cmdDestroySRQ, rawmem.Of(&cmd), rawmem.Of(&resp), nil, nil)
}

// Handle is the kernel's object handle for the SRQ.
func (s *SRQ) Handle() uint32 { return s.handle }

// SRQN is the SRQ's number.
func (s *SRQ) SRQN() uint32 { return s.srqn }

// MaxWR is how many receive WRs the SRQ holds.
func (s *SRQ) MaxWR() uint32 { return s.maxWR }

// PostRecv posts receive WRs to the SRQ: all of them or none
// (ErrQueueFull when it lacks room).
func (s *SRQ) PostRecv(wrs []RecvWR) error {
	if s.recv == nil {
		return ErrClosed
	}
	return s.recv.PostRecv(wrs)
}

// DetachedRecvQueue returns the provider queue for use while detached
// from the scheduler (detached.go), or false if its provider has none.
func (s *SRQ) DetachedRecvQueue() (RecvQueue, bool) {
	if _, ok := s.prov.(DetachableQueue); !ok || s.prov == nil {
		return nil, false
	}
	return s.prov, true
}

// Close destroys the SRQ (DESTROY_SRQ) and unmaps its ring. It fails
// while QPs created on it are open. Closing twice returns nil.
func (s *SRQ) Close() error {
	if s.prov == nil {
		return nil
	}
	if n := s.qps.Load(); n > 0 {
		return fmt.Errorf("verbs: SRQ %d still has %d QPs; close them first", s.srqn, n)
	}
	if err := s.ctx.destroySRQ(s.handle); err != nil {
		return err
	}
	p := s.prov
	s.prov, s.recv = nil, nil
	s.ctx.removeChild(s.key)
	return p.Release()
}

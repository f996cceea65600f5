package verbs

import (
	"errors"
	"fmt"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// CQ is a completion queue. Create it with Context.CreateCQ, poll it with
// Poll from one goroutine at a time, and Close it after every QP that uses
// it has been closed.
type CQ struct {
	ctx    *Context
	handle uint32
	cqe    int
	prov   ProviderCQ
	key    uint64 // Context child registration
	// ev is the CQ's completion-event state when it was made on a
	// channel (CreateCQOn; compchannel.go); nil: polled only.
	ev *cqEvents
}

// CreateCQ creates a completion queue for at least cqe completions
// (CREATE_CQ, no completion channel: the data path busy-polls). Size it
// for every WR that can complete into it: rxe drops CQEs on overrun.
func (c *Context) CreateCQ(cqe int) (*CQ, error) { return c.createCQ(cqe, nil, 0) }

func (c *Context) createCQ(cqe int, ch *CompChannel, vector uint32) (*CQ, error) {
	if cqe < 1 || cqe > 1<<24 {
		return nil, fmt.Errorf("verbs: CQ size %d out of range 1..%d", cqe, 1<<24)
	}
	pc, err := c.dataPath()
	if err != nil {
		return nil, err
	}
	req := &CQRequest{Device: c.dev.Name, CQE: cqe}
	slot, err := ch.take()
	if err != nil {
		return nil, err
	}
	var handle uint32
	created := false
	exec := func(udataIn, udataOut []byte) (uint32, error) {
		cmd := abiCreateCQ{CQE: uint32(req.CQE), CompVector: vector, CompChannel: -1}
		if ch != nil {
			cmd.CompChannel, cmd.UserHandle = int32(ch.fd), uint64(slot)
		}
		var resp abiCreateCQResp
		if err := c.writeCmd(cmdCreateCQ, rawmem.Of(&cmd), rawmem.Of(&resp), udataIn, udataOut); err != nil {
			return 0, err
		}
		handle, created = resp.CQHandle, true
		req.ActualCQE = resp.CQE
		return resp.CQHandle, nil
	}
	p, err := pc.CreateCQ(req, exec)
	if err != nil {
		if created {
			err = errors.Join(err, c.destroyCQ(handle))
		}
		return nil, err
	}
	cq := &CQ{ctx: c, handle: handle, cqe: int(req.ActualCQE), prov: p}
	if ch != nil {
		cq.ev = ch.attach(slot, c.fd, handle, p)
	}
	cq.key = c.addChild(cq.Close)
	return cq, nil
}

func (c *Context) destroyCQ(handle uint32) error {
	_, err := c.destroyCQResp(handle)
	return err
}

// destroyCQResp is DESTROY_CQ with its response: how many completion
// events the kernel handed to readers of the CQ's channel.
func (c *Context) destroyCQResp(handle uint32) (abiDestroyCQResp, error) {
	cmd := abiDestroyCQ{CQHandle: handle}
	var resp abiDestroyCQResp
	err := c.writeCmd(cmdDestroyCQ, rawmem.Of(&cmd), rawmem.Of(&resp), nil, nil)
	return resp, err
}

// CQE is the CQ's capacity as the kernel granted it (at least the size
// asked for).
func (cq *CQ) CQE() int { return cq.cqe }

// Handle is the kernel's object handle (what `rdma res show cq` lists
// under the context, not a CQ number).
func (cq *CQ) Handle() uint32 { return cq.handle }

// Poll fills wcs from the front with completions and returns how many it
// filled: 0 when the CQ is empty. It does not block, allocate or enter the
// kernel. Check WC.Status of each completion.
func (cq *CQ) Poll(wcs []WC) (int, error) {
	if cq.prov == nil {
		return 0, ErrClosed
	}
	return cq.prov.Poll(wcs)
}

// Close destroys the CQ (DESTROY_CQ) and then releases the provider's
// mapping. It fails with EBUSY while a QP still uses the CQ; close the QPs
// first. Closing twice returns nil.
func (cq *CQ) Close() error {
	if cq.prov == nil {
		return nil
	}
	resp, err := cq.ctx.destroyCQResp(cq.handle)
	if err != nil {
		return err
	}
	p := cq.prov
	cq.prov = nil
	cq.ctx.removeChild(cq.key)
	return errors.Join(p.Release(), cq.ev.destroyed(resp.CompEventsReported))
}

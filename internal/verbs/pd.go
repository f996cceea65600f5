package verbs

import (
	"errors"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// PD is a protection domain (ALLOC_PD).
type PD struct {
	ctx *Context
	// Handle is the kernel handle. 0 is a valid handle (handles are IDR
	// slots from 0, drivers/infiniband/core/rdma_core.c).
	Handle uint32
	// PDN is the device's PD number, which mlx5 returns in ALLOC_PD's
	// udata (mlx5_ib_alloc_pd_resp); 0 on other drivers.
	PDN uint32

	mu     sync.Mutex
	key    uint64
	closed bool
}

// AllocPD allocates a protection domain on the context.
func (c *Context) AllocPD() (*PD, error) {
	exec := func(in, out []byte) (uint32, error) {
		req := uvAllocPD{}
		var resp uvAllocPDResp
		err := c.writeCmd(cmdAllocPD, rawmem.Of(&req), rawmem.Of(&resp), in, out)
		return resp.PDHandle, err
	}
	var handle, pdn uint32
	var err error
	if p := c.dev.Provider; p != nil {
		handle, pdn, err = p.AllocPD(exec)
	} else {
		handle, err = exec(nil, nil)
	}
	if err != nil {
		return nil, err
	}
	pd := &PD{ctx: c, Handle: handle, PDN: pdn}
	pd.key = c.addChild(pd.Close)
	return pd, nil
}

// Context is the context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Close deallocates the PD. Close its MRs, QPs and AHs first (the kernel
// answers EBUSY otherwise). A second Close returns nil.
func (pd *PD) Close() error {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	if pd.closed {
		return nil
	}
	err := pd.ctx.destroyObject(objPD, methPDDestroy, pd.Handle, cmdDeallocPD)
	if err != nil && !errors.Is(err, ErrDeviceGone) && !errors.Is(err, ErrClosed) {
		return err
	}
	pd.closed = true
	pd.ctx.removeChild(pd.key)
	return err
}

// destroyObject destroys an object that has a native ioctl destroy method
// with one IDR attribute and a write() command taking just the handle
// (PD, MR), as rdma-core does: the ioctl first, write() when the method is
// missing.
func (c *Context) destroyObject(obj, method uint16, handle uint32, writeCmd uint32) error {
	if c.useIoctl {
		err := c.ioctl(obj, method, []ioctlAttr{attrIDR(attrDestroyHandle, handle)})
		if !errors.Is(err, unix.EPROTONOSUPPORT) {
			return err
		}
	}
	h := handle
	return c.rawWrite(writeCmd, rawmem.Of(&h), nil, nil, nil)
}

// Package verbs talks to /dev/infiniband/uverbsN directly, without
// libibverbs: the uverbs control path (context.go, cmd.go, query.go, pd.go,
// mr.go, memory.go) and, behind the contract in datapath.go and
// provider.go, the providers' user-space data paths, each a package of
// its own (internal/verbs/provider/rxe, .../mlx5), which a program lists
// (internal/verbs/provider.All).
//
// Use:
//
//	ps := provider.All()                // internal/verbs/provider
//	d, err := ps.LookupDevice("rxe0")   // or ps.Devices()
//	ctx, err := verbs.OpenDevice(d, verbs.Options{}) // GET_CONTEXT; Close releases all
//	attr, _ := ctx.QueryDevice()        // EX QUERY_DEVICE (legacy fallback)
//	port, _ := ctx.QueryPort(1)         // ioctl QUERY_PORT (write fallback)
//	gids, _ := ctx.QueryGIDTable(int(port.GIDTblLen))
//	pd, _ := ctx.AllocPD()
//	buf, _ := verbs.NewBuffer(1 << 20)  // mmap'd, never Go heap
//	mr, _ := pd.RegMR(buf, verbs.AccessAll)
//	defer ctx.Close()                   // MR, PD, ... destroyed newest first
//
// Errors are typed for the command layer: *PermissionError and
// *MemlockError (IsPermission), *DeviceNotFoundError and
// *PortNotFoundError (IsNotFound), ErrUnsupported, ErrDeviceGone,
// *CommandError (with the kernel's errno). The data path (PostSend,
// PostRecv, Poll) checks every index, count and length it reads from
// memory shared with the kernel or the device, and reports a value that
// cannot be right as a *QueueError (errors.Is ErrQueueCorrupt) naming the
// device, never by crashing; the queue then refuses further use
// (queueerror.go).
//
// Inside the package, objects are created with the helpers of cmd.go
// (writeCmd, writeExCmd, rawWrite, ioctl with the attr* builders), register
// with Context.addChild so that Close destroys them in order, and reach
// their provider through Context.dataPath.
package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/kfeat"
	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Context is an open uverbs device with its user context (GET_CONTEXT):
// the parent of every PD, MR, CQ, QP and AH made on it. One fd holds one
// context (a second GET_CONTEXT on it fails with EINVAL). A Context is safe for concurrent use by the control-path
// methods; the data path (providers' queues) has its own rules.
//
// Close destroys, newest first, every object still open on the context
// (children register with addChild), then releases the provider's
// mappings, the async fd, the command scratch and the device fd. There are
// no finalizers: not closing leaks until the process exits, when the
// kernel frees everything of the fd.
type Context struct {
	// mu serialises commands (they share scr) and guards fd, children.
	mu  sync.Mutex
	fd  int // the uverbs fd; -1 once closed
	dev Device
	scr scratch

	asyncFD        int // from write() GET_CONTEXT; -1 if none
	numCompVectors uint32
	coreSupport    uint64 // GET_CONTEXT's IB_UVERBS_CORE_SUPPORT_* (0 by write())
	// useIoctl: the kernel has INVOKE_WRITE and the driver id is known,
	// so write commands are tunnelled through RDMA_VERBS_IOCTL (as
	// rdma-core's libibverbs/cmd_fallback.c does).
	useIoctl bool
	// sysIoctl issues RDMA_VERBS_IOCTL (rdmaVerbsIoctlCall); framing tests
	// put a fake kernel here that sees the bytes.
	sysIoctl func(fd int, buf []byte) unix.Errno

	// prov is the provider's per-context state; nil when the driver has
	// no provider here (queries still work; see dataPath).
	prov ProviderContext

	children []child
	nextKey  uint64
}

// child is an object owned by the context, destroyed by Close if its
// owner has not closed it.
type child struct {
	key     uint64
	destroy func() error
}

// Options change how Open talks to the kernel.
type Options struct {
	// ForceWrite sends every command with write(), never ioctl: the
	// simplest path, which every kernel since 3.x has. Native ioctl
	// methods that write() lacks (QUERY_GID_TABLE) fall back to sysfs.
	ForceWrite bool
}

// OpenDevice opens d as found by Providers.Devices or LookupDevice.
func OpenDevice(d Device, o Options) (*Context, error) {
	c, err := openNode(d)
	if err != nil {
		return nil, err
	}
	if !o.ForceWrite && d.DriverID != 0 {
		c.useIoctl = kfeat.Has(kfeat.UverbsIoctl, c.probeInvokeWrite)
	}
	if err := c.getContext(); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// OpenDeviceWithUData opens d as OpenDevice does, but sends GET_CONTEXT
// through write() (tunnelled through INVOKE_WRITE where the kernel has
// it, never the native ioctl method) with the request udata in, and
// hands the response udata to open, which makes the provider's state for
// the context: a provider's second kind of context, as rdma-core's
// mlx5dv_open_device makes mlx5's DEVX context.
func OpenDeviceWithUData(d Device, in []byte, outLen int, open func(cmdFD int, out []byte) (ProviderContext, error)) (*Context, error) {
	c, err := openNode(d)
	if err != nil {
		return nil, err
	}
	c.useIoctl = kfeat.Has(kfeat.UverbsIoctl, c.probeInvokeWrite)
	out := make([]byte, outLen)
	req := uvGetContext{}
	var resp uvGetContextResp
	if err := c.writeCmd(cmdGetContext, rawmem.Of(&req), rawmem.Of(&resp), in, out); err != nil {
		c.release()
		return nil, err
	}
	c.asyncFD = int(resp.AsyncFD)
	c.numCompVectors = resp.NumCompVectors
	pc, err := open(c.fd, out)
	if err != nil {
		c.release()
		return nil, err
	}
	c.prov = pc
	return c, nil
}

// openNode opens d's uverbs node, checks it is the device's, and reserves
// the command scratch: a Context before GET_CONTEXT.
func openNode(d Device) (*Context, error) {
	if err := d.CheckProviderABI(); err != nil {
		return nil, err
	}
	// O_RDWR: providers mmap this fd (rc:device.c verbs_open_device).
	fd, err := unix.Open(d.Path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return nil, &PermissionError{Device: d.Name, Path: d.Path, Err: err}
		case errors.Is(err, unix.ENOENT):
			return nil, fmt.Errorf("cannot open %s (device %s): no such node: is udev running, or is /dev not devtmpfs?", d.Path, d.Name)
		case errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV):
			return nil, fmt.Errorf("cannot open %s (device %s): %w: the device is going away", d.Path, d.Name, ErrDeviceGone)
		}
		return nil, fmt.Errorf("cannot open %s (device %s): %w", d.Path, d.Name, err)
	}
	c := &Context{fd: fd, dev: d, asyncFD: -1}
	if err := c.checkNode(); err != nil {
		c.release()
		return nil, err
	}
	if err := c.scr.reserve(scratchMin); err != nil {
		c.release()
		return nil, err
	}
	return c, nil
}

// checkNode makes sure the fd is the char device sysfs/netlink named
// (rc:util/open_cdev.c), not whatever a stale or hostile /dev holds.
func (c *Context) checkNode() error {
	var st unix.Stat_t
	if err := unix.Fstat(c.fd, &st); err != nil {
		return fmt.Errorf("%s: fstat %s: %w", c.dev.Name, c.dev.Path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != c.dev.Major || unix.Minor(st.Rdev) != c.dev.Minor {
		return fmt.Errorf("%s: %s is not char device %d:%d as the kernel reports: fix /dev (udev) or remove the stale node",
			c.dev.Name, c.dev.Path, c.dev.Major, c.dev.Minor)
	}
	return nil
}

// probeInvokeWrite asks for INVOKE_WRITE of QUERY_DEVICE with no buffers,
// as rdma-core does (rc:device.c has_ioctl_write): ENOSPC means the method
// exists (and refused the missing buffers); EPROTONOSUPPORT or ENOTTY mean
// it does not.
func (c *Context) probeInvokeWrite() (bool, string) {
	attrs := []ioctlAttr{attrConst(attrWriteCmd, uint64(cmdQueryDevice))}
	err := c.ioctl(objDevice, methInvokeWrite, attrs)
	return errors.Is(err, unix.ENOSPC), fmt.Sprintf("INVOKE_WRITE(QUERY_DEVICE) without buffers on %s: %v", c.dev.Name, errnoName(err))
}

// errnoName is err's errno as its name (ENOSPC), for probe details.
func errnoName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	if err == nil {
		return "success"
	}
	return err.Error()
}

// getContext runs GET_CONTEXT with the provider's udata and hands the
// provider its response. With the ioctl path it uses the native method
// (which makes no async fd: rdmactl reads no async events, and CQ/QP
// creation does not need one); on EPROTONOSUPPORT, or without ioctl, it
// uses write(), whose async fd is kept and closed by Close.
func (c *Context) getContext() error {
	var in []byte
	var out []byte
	p := c.dev.Provider
	if p != nil {
		var outLen int
		in, outLen = p.ContextUData()
		out = make([]byte, outLen)
	}
	done := false
	if c.useIoctl && kfeat.Worth(kfeat.GetContextIoctl) {
		var ncv [4]byte
		var core [8]byte
		attrs := []ioctlAttr{
			attrPtrOut(attrGetContextNumCompVectors, ncv[:]),
			attrPtrOut(attrGetContextCoreSupport, core[:]).optional(),
		}
		if len(in) > 0 {
			attrs = append(attrs, attrPtrIn(attrUHWIn, in))
		}
		if len(out) > 0 {
			attrs = append(attrs, attrPtrOut(attrUHWOut, out))
		}
		err := c.ioctl(objDevice, methGetContext, attrs)
		switch {
		case err == nil:
			c.numCompVectors = binary.NativeEndian.Uint32(ncv[:])
			c.coreSupport = binary.NativeEndian.Uint64(core[:])
			done = true
			kfeat.Set(kfeat.GetContextIoctl, true, "answered on "+c.dev.Name)
		case errors.Is(err, unix.EPROTONOSUPPORT):
			// No native GET_CONTEXT: write() below.
			kfeat.Set(kfeat.GetContextIoctl, false, "EPROTONOSUPPORT")
		default:
			return err
		}
	}
	if !done {
		req := uvGetContext{}
		var resp uvGetContextResp
		if err := c.writeCmd(cmdGetContext, rawmem.Of(&req), rawmem.Of(&resp), in, out); err != nil {
			return err
		}
		c.asyncFD = int(resp.AsyncFD)
		c.numCompVectors = resp.NumCompVectors
	}
	if p != nil {
		pc, err := p.OpenContext(c.fd, out)
		if err != nil {
			return fmt.Errorf("%s: %s provider: %w", c.dev.Name, p.Info().Name, err)
		}
		c.prov = pc
	}
	return nil
}

// FD is the uverbs file descriptor (for providers' mmap and doorbells).
func (c *Context) FD() int { return c.fd }

// Device is what the context was opened from.
func (c *Context) Device() Device { return c.dev }

// DriverID is the device's RDMA_DRIVER_* id (0 if unknown).
func (c *Context) DriverID() uint32 { return c.dev.DriverID }

// NumCompVectors is the number of completion vectors (GET_CONTEXT).
func (c *Context) NumCompVectors() uint32 { return c.numCompVectors }

// UsesIoctl reports whether write commands go through INVOKE_WRITE.
func (c *Context) UsesIoctl() bool { return c.useIoctl }

// dataPath returns the provider context, or a NoDataPathError when the
// driver has no provider here (the context then serves queries only).
func (c *Context) dataPath() (ProviderContext, error) {
	if c.prov == nil {
		return nil, &NoDataPathError{Device: c.dev.Name, Driver: c.dev.Driver}
	}
	return c.prov, nil
}

// addChild registers destroy to be run by Close if the object is still
// open then, and returns the key to pass to removeChild when the object is
// closed by its owner. Objects are destroyed newest first, so an MR goes
// before its PD and a QP before its CQs.
func (c *Context) addChild(destroy func() error) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextKey++
	c.children = append(c.children, child{key: c.nextKey, destroy: destroy})
	return c.nextKey
}

// removeChild forgets the object registered under key.
func (c *Context) removeChild(key uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.children) - 1; i >= 0; i-- {
		if c.children[i].key == key {
			c.children = append(c.children[:i], c.children[i+1:]...)
			return
		}
	}
}

// Close destroys the objects still open on the context (newest first),
// then the provider state, async fd, scratch and fd. It returns the first
// error but always releases everything. Errors saying the device is gone
// are dropped: the kernel has freed the objects already. A second Close
// returns nil.
func (c *Context) Close() error {
	var first error
	for {
		c.mu.Lock()
		if c.fd < 0 {
			c.mu.Unlock()
			return nil
		}
		n := len(c.children)
		if n == 0 {
			c.mu.Unlock()
			break
		}
		ch := c.children[n-1]
		c.mu.Unlock()
		// destroy calls removeChild itself; make sure it is gone even if
		// the destroy failed, so the loop ends.
		if err := ch.destroy(); err != nil && first == nil && !errors.Is(err, ErrDeviceGone) {
			first = err
		}
		c.removeChild(ch.key)
	}
	if c.prov != nil {
		if err := c.prov.Close(); err != nil && first == nil {
			first = err
		}
		c.prov = nil
	}
	c.release()
	return first
}

// release closes the async fd, unmaps the scratch and closes the fd.
func (c *Context) release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.asyncFD >= 0 {
		_ = unix.Close(c.asyncFD)
		c.asyncFD = -1
	}
	c.scr.free()
	if c.fd >= 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
}

// ProbeKernel settles the kernel features (kfeat) that this context's
// commands find out in passing: the native QUERY_PORT and QUERY_GID_TABLE
// methods. `rdmactl version -d` calls it to list them.
func (c *Context) ProbeKernel() {
	if _, err := c.QueryPort(1); err != nil {
		return
	}
	_, _ = c.QueryGIDTable(16)
}

// OptionalAccess says whether the kernel takes optional memory-region
// access flags (AccessRelaxedOrder): GET_CONTEXT's core support has
// IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS from Linux 5.9
// (drivers/infiniband/core/uverbs_std_types_device.c); a context made by
// write() reports nothing, and is taken as without them.
func (c *Context) OptionalAccess() bool { return c.coreSupport&coreSupportOptionalMRAccess != 0 }

// coreSupportOptionalMRAccess is IB_UVERBS_CORE_SUPPORT_OPTIONAL_MR_ACCESS
// (ib_user_ioctl_verbs.h).
const coreSupportOptionalMRAccess = 1 << 0

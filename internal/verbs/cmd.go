package verbs

import (
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Command framing for /dev/infiniband/uverbsN (kernel
// drivers/infiniband/core/uverbs_main.c for write(), uverbs_ioctl.c for
// RDMA_VERBS_IOCTL).
//
// Every command is built in the context's scratch area: anonymous mmap'd
// memory that the Go runtime neither moves nor frees. The kernel reads user
// pointers from inside command buffers (response, attribute data); if those
// buffers were Go values they could sit on a goroutine stack that moves
// when it grows, between building the command and the syscall. Callers
// pass plain byte slices (usually rawmem.Of(&someUVStruct)); the helpers copy
// them into scratch, run the syscall, and copy the outputs back. The
// scratch is per Context and guarded by Context.mu, so the helpers are safe
// for concurrent use and must not be called with c.mu held. This is the
// control path: one copy per command costs nothing next to the syscall. The
// data-path doorbell (rxe POST_SEND) is the provider's own preallocated
// buffer, not this.

const scratchMin = 64 << 10

// scratch is a growable mmap'd area. alloc hands out 8-byte aligned,
// zeroed pieces of it; reset starts over for the next command.
type scratch struct {
	mem []byte
	off int
}

// spareScratch keeps the scratch areas of closed contexts for the next
// OpenDevice: a command that opens every device in turn (dev query, gids,
// -dd link show on a host with 128 functions) maps one area instead of
// mapping and unmapping one per device. munmap is the expensive half (a TLB
// flush in every thread of the process): in the TCG VM at 128 rxe devices
// it was 3.1 s of 15 s in a profile of -d link show (which then asked the
// devices, as -dd does now). alloc clears every piece it hands out, so an
// area needs no clearing between owners.
var spareScratch struct {
	sync.Mutex
	mems [][]byte
}

// maxSpareScratch bounds what is kept: a few areas of scratchMin bytes.
const maxSpareScratch = 4

func (s *scratch) free() {
	if s.mem == nil {
		return
	}
	if len(s.mem) == scratchMin {
		spareScratch.Lock()
		if len(spareScratch.mems) < maxSpareScratch {
			spareScratch.mems = append(spareScratch.mems, s.mem)
			s.mem = nil
		}
		spareScratch.Unlock()
	}
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem = nil
	}
}

// spare is a kept area of scratchMin bytes, or nil.
func spare() []byte {
	spareScratch.Lock()
	defer spareScratch.Unlock()
	n := len(spareScratch.mems)
	if n == 0 {
		return nil
	}
	m := spareScratch.mems[n-1]
	spareScratch.mems = spareScratch.mems[:n-1]
	return m
}

// reserve makes room for n bytes in total for the next command (and resets
// the allocator). It remaps, so nothing handed out before stays valid.
func (s *scratch) reserve(n int) error {
	s.off = 0
	if n <= len(s.mem) {
		return nil
	}
	if s.mem == nil && n <= scratchMin {
		if m := spare(); m != nil {
			s.mem = m
			return nil
		}
	}
	size := scratchMin
	for size < n {
		size *= 2
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("verbs: cannot map %d bytes for command buffers: %w", size, err)
	}
	s.free()
	s.mem = mem
	return nil
}

func (s *scratch) alloc(n int) []byte {
	b := s.mem[s.off : s.off+n : s.off+n]
	clear(b)
	s.off += (n + 7) &^ 7
	return b
}

// pad8 rounds n up to a multiple of 8.
func pad8(n int) int { return (n + 7) &^ 7 }

// writeCmd runs the non-extended write command cmd (cmd* constants):
// req is the core request struct (ib_uverbs_<cmd>); when the command has a
// response, req starts with the __aligned_u64 response field, which
// writeCmd fills in (callers leave it 0). resp receives the core response,
// udataIn is the provider's request data (appended after req) and udataOut
// receives the provider's response data (which the kernel writes right
// after the core response). All lengths must be multiples of 4.
//
// On a kernel with INVOKE_WRITE (5.0+) and a known driver id, the command
// is tunnelled through the ioctl, as rdma-core does on 6.x
// (libibverbs/cmd_fallback.c); else it is a plain write(). The result is
// the same.
func (c *Context) writeCmd(cmd uint32, req, resp, udataIn, udataOut []byte) error {
	if c.useIoctl {
		return c.invokeWrite(cmd, req, resp, udataIn, udataOut)
	}
	return c.rawWrite(cmd, req, resp, udataIn, udataOut)
}

// rawWrite is writeCmd over write() only: [hdr][req][udataIn], with
// in_words counting the header and out_words the core plus provider
// response, both in 4-byte words.
func (c *Context) rawWrite(cmd uint32, req, resp, udataIn, udataOut []byte) error {
	if (len(req)|len(resp)|len(udataIn)|len(udataOut))&3 != 0 {
		return fmt.Errorf("verbs: internal: %s lengths not in 4-byte words", cmdName(cmd))
	}
	in := 8 + len(req) + len(udataIn)
	out := len(resp) + len(udataOut)
	if in/4 > 0xffff || out/4 > 0xffff {
		return fmt.Errorf("verbs: internal: %s too large for write()", cmdName(cmd))
	}
	return c.writeScratch(cmd, in, out, resp, udataOut, func(buf, rbuf []byte) error {
		hdr := uvCmdHdr{Command: cmd, InWords: uint16(in / 4), OutWords: uint16(out / 4)}
		copy(buf, rawmem.Of(&hdr))
		copy(buf[8:], req)
		copy(buf[8+len(req):], udataIn)
		if out > 0 {
			if len(req) < 8 {
				return fmt.Errorf("verbs: internal: %s has a response but no response field", cmdName(cmd))
			}
			*(*uint64)(unsafe.Pointer(&buf[8])) = rawmem.Addr(rbuf)
		}
		return nil
	})
}

// writeScratch runs one write() command of in bytes with a response area
// of out bytes, both in the context's scratch memory, under its lock:
// fill writes the command into buf (given the response area rbuf); the
// response is then copied to resp and udataOut. cmd names the command
// in errors.
func (c *Context) writeScratch(cmd uint32, in, out int, resp, udataOut []byte, fill func(buf, rbuf []byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return ErrClosed
	}
	if err := c.scr.reserve(pad8(in) + pad8(out)); err != nil {
		return err
	}
	buf := c.scr.alloc(in)
	rbuf := c.scr.alloc(out)
	if err := fill(buf, rbuf); err != nil {
		return err
	}
	if err := c.sysWrite(buf); err != nil {
		return cmdError(c.dev.Name, cmdName(cmd), err)
	}
	copy(resp, rbuf)
	copy(udataOut, rbuf[len(resp):])
	return nil
}

// writeExCmd runs the extended write command cmd (the number without
// cmdFlagExtended): req is the core request (no response field: the
// response pointer travels in the ex header), resp the core response
// (zeroed before the call, as rdma-core does), udataIn/udataOut the
// provider's data. All lengths must be multiples of 8.
func (c *Context) writeExCmd(cmd uint32, req, resp, udataIn, udataOut []byte) error {
	if c.useIoctl {
		return c.invokeWrite(cmd|cmdFlagExtended, req, resp, udataIn, udataOut)
	}
	return c.rawWriteEx(cmd, req, resp, udataIn, udataOut)
}

// rawWriteEx is writeExCmd over write(): [hdr][ex_hdr][req][udataIn] with
// in_words/out_words counting the core structs only, in 8-byte words, and
// the provider sizes in the ex header (uverbs_main.c ib_uverbs_write).
func (c *Context) rawWriteEx(cmd uint32, req, resp, udataIn, udataOut []byte) error {
	if (len(req)|len(resp)|len(udataIn)|len(udataOut))&7 != 0 {
		return fmt.Errorf("verbs: internal: %s lengths not in 8-byte words", cmdName(cmd|cmdFlagExtended))
	}
	in := 24 + len(req) + len(udataIn)
	out := len(resp) + len(udataOut)
	return c.writeScratch(cmd|cmdFlagExtended, in, out, resp, udataOut, func(buf, rbuf []byte) error {
		hdr := uvCmdHdr{Command: cmdFlagExtended | cmd, InWords: uint16(len(req) / 8), OutWords: uint16(len(resp) / 8)}
		ex := uvExCmdHdr{
			Response:         rawmem.Addr(rbuf),
			ProviderInWords:  uint16(len(udataIn) / 8),
			ProviderOutWords: uint16(len(udataOut) / 8),
		}
		copy(buf, rawmem.Of(&hdr))
		copy(buf[8:], rawmem.Of(&ex))
		copy(buf[24:], req)
		copy(buf[24+len(req):], udataIn)
		return nil
	})
}

// sysWrite is one write() of a whole command; the kernel accepts all of it
// or fails. Called with c.mu held.
func (c *Context) sysWrite(buf []byte) error {
	n, _, errno := unix.Syscall(unix.SYS_WRITE, uintptr(c.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if errno != 0 {
		return errno
	}
	if int(n) != len(buf) {
		return fmt.Errorf("short write: %d of %d bytes", n, len(buf))
	}
	return nil
}

// invokeWrite runs a write command (cmd, with cmdFlagExtended for ex
// commands) through the INVOKE_WRITE ioctl method (rdma-core
// libibverbs/cmd_fallback.c ioctl_write): CORE_IN is the request as it
// would follow the headers (with the unused response field for non-ex
// commands), CORE_OUT the core response, UHW_IN/UHW_OUT the provider data.
func (c *Context) invokeWrite(cmd uint32, req, resp, udataIn, udataOut []byte) error {
	attrs := make([]ioctlAttr, 0, 5)
	attrs = append(attrs, attrConst(attrWriteCmd, uint64(cmd)))
	if len(req) > 0 {
		attrs = append(attrs, attrPtrIn(attrCoreIn, req))
	}
	if len(resp) > 0 {
		attrs = append(attrs, attrPtrOut(attrCoreOut, resp))
	}
	if len(udataIn) > 0 {
		attrs = append(attrs, attrPtrIn(attrUHWIn, udataIn))
	}
	if len(udataOut) > 0 {
		attrs = append(attrs, attrPtrOut(attrUHWOut, udataOut))
	}
	return c.ioctlNamed(cmdName(cmd), objDevice, methInvokeWrite, attrs)
}

// ioctlAttr is one attribute of an RDMA_VERBS_IOCTL call, built with the
// attr* constructors. After the call, Value holds what the kernel wrote
// back into the attribute's data (the new handle of an IDR-new attribute,
// the new fd of an FD-new one) and OutFlags its flags (attrFValidOutput on
// outputs it filled); ptr-out buffers have been copied back into out.
type ioctlAttr struct {
	id    uint16
	flags uint16
	// kind selects the encoding of data.
	kind  attrKind
	value uint64 // inline value (const, flags, handle, fd), or result
	in    []byte // ptr-in payload
	out   []byte // ptr-out destination

	Value    uint64
	OutFlags uint16
}

type attrKind uint8

const (
	attrKindInline  attrKind = iota // data = value, len 8 (or len given)
	attrKindZero                    // len 0, data = value: IDR and FD (in or new)
	attrKindPtrIn                   // len = len(in); inline if ≤ 8, else a pointer
	attrKindPtrOut                  // len = len(out); always a pointer
	attrKindInline4                 // len 4, data = value (FLAGS_IN u32)
)

// attrConst is a CONST_IN attribute (enums, port numbers, command
// numbers, entry sizes): len 8, the value inline.
func attrConst(id uint16, v uint64) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindInline, value: v}
}

// attrFlags32 is a FLAGS_IN attribute given as a u32 (len 4, inline).
func attrFlags32(id uint16, v uint32) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindInline4, value: uint64(v)}
}

// attrPtrIn is a PTR_IN attribute: b's bytes, inline when ≤ 8 bytes.
func attrPtrIn(id uint16, b []byte) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindPtrIn, in: b}
}

// attrPtrOut is a PTR_OUT attribute; the kernel's output lands in b.
func attrPtrOut(id uint16, b []byte) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindPtrOut, out: b}
}

// attrIDR names an existing object by handle (len 0, data = handle).
func attrIDR(id uint16, handle uint32) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindZero, value: uint64(handle)}
}

// attrNew is an IDR-new or FD-new attribute; read the kernel's handle or
// fd from Value after the call.
func attrNew(id uint16) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindZero}
}

// attrFD passes an fd (FD_IN), e.g. a completion channel.
//
//lint:ignore U1000 for CQ_CREATE with a completion channel (qp/rxe area)
func attrFD(id uint16, fd int) ioctlAttr {
	return ioctlAttr{id: id, flags: attrFMandatory, kind: attrKindZero, value: uint64(int64(fd))}
}

// optional clears UVERBS_ATTR_F_MANDATORY, so that a kernel that does not
// know the attribute ignores it instead of failing with EPROTONOSUPPORT.
func (a ioctlAttr) optional() ioctlAttr {
	a.flags &^= attrFMandatory
	return a
}

// ioctl runs method of obj with attrs through RDMA_VERBS_IOCTL, with the
// context's driver id in the header (the kernel rejects a wrong one with
// EINVAL). attrs is updated in place (Value, OutFlags, out buffers).
func (c *Context) ioctl(obj, method uint16, attrs []ioctlAttr) error {
	return c.ioctlNamed(methodName(obj, method), obj, method, attrs)
}

// DriverMethod runs a method of the driver's own uverbs object (ids in
// the driver's namespace, from 1<<UVERBS_ID_NS_SHIFT) with one PTR_IN
// attribute inID holding in and one PTR_OUT attribute outID receiving
// out, as rdma-core's providers do with DECLARE_COMMAND_BUFFER (mlx5's
// DEVX_OTHER). name names the method in errors.
func (c *Context) DriverMethod(name string, obj, method, inID, outID uint16, in, out []byte) error {
	return c.ioctlNamed(name, obj, method, []ioctlAttr{attrPtrIn(inID, in), attrPtrOut(outID, out)})
}

func (c *Context) ioctlNamed(name string, obj, method uint16, attrs []ioctlAttr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return ErrClosed
	}
	buf, payloads, err := c.buildIoctl(obj, method, attrs)
	if err != nil {
		return err
	}
	call := c.sysIoctl
	if call == nil {
		call = rdmaVerbsIoctlCall
	}
	if errno := call(c.fd, buf); errno != 0 {
		return cmdError(c.dev.Name, name, errno)
	}
	readIoctlResult(buf, attrs, payloads)
	return nil
}

// buildIoctl lays out header, attributes and out-of-line payloads in
// scratch. It returns the command and, per attribute, its payload slice
// in scratch (nil when inline). Called with c.mu held.
func (c *Context) buildIoctl(obj, method uint16, attrs []ioctlAttr) ([]byte, [][]byte, error) {
	n := 24 + 16*len(attrs)
	if n > 4096 {
		return nil, nil, fmt.Errorf("verbs: internal: too many ioctl attributes (%d)", len(attrs))
	}
	total := pad8(n)
	for _, a := range attrs {
		switch {
		case a.kind == attrKindPtrIn && len(a.in) > 8:
			total += pad8(len(a.in))
		case a.kind == attrKindPtrOut:
			total += pad8(len(a.out))
		}
		if len(a.in) > 0xffff || len(a.out) > 0xffff {
			return nil, nil, fmt.Errorf("verbs: internal: ioctl attribute %d longer than 64 KiB", a.id)
		}
	}
	if err := c.scr.reserve(total); err != nil {
		return nil, nil, err
	}
	buf := c.scr.alloc(n)
	payloads := make([][]byte, len(attrs))
	hdr := uvIoctlHdr{Length: uint16(n), ObjectID: obj, MethodID: method, NumAttrs: uint16(len(attrs)), DriverID: c.dev.DriverID}
	copy(buf, rawmem.Of(&hdr))
	for i, a := range attrs {
		ua := uvAttr{AttrID: a.id, Flags: a.flags}
		switch a.kind {
		case attrKindInline:
			ua.Len, ua.Data = 8, a.value
		case attrKindInline4:
			ua.Len, ua.Data = 4, a.value
		case attrKindZero:
			ua.Data = a.value
		case attrKindPtrIn:
			ua.Len = uint16(len(a.in))
			if len(a.in) <= 8 {
				// Inline: the bytes themselves, in memory order.
				copy(rawmem.Of(&ua.Data), a.in)
			} else {
				p := c.scr.alloc(len(a.in))
				copy(p, a.in)
				payloads[i] = p
				ua.Data = rawmem.Addr(p)
			}
		case attrKindPtrOut:
			ua.Len = uint16(len(a.out))
			p := c.scr.alloc(len(a.out))
			payloads[i] = p
			ua.Data = rawmem.Addr(p)
		}
		copy(buf[24+16*i:], rawmem.Of(&ua))
	}
	return buf, payloads, nil
}

// rdmaVerbsIoctlCall issues RDMA_VERBS_IOCTL with the command in buf (in
// scratch).
func rdmaVerbsIoctlCall(fd int, buf []byte) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), rdmaVerbsIoctl, uintptr(unsafe.Pointer(&buf[0])))
	return errno
}

// readIoctlResult copies the kernel's answers back into attrs.
func readIoctlResult(buf []byte, attrs []ioctlAttr, payloads [][]byte) {
	for i := range attrs {
		var ua uvAttr
		copy(rawmem.Of(&ua), buf[24+16*i:])
		attrs[i].Value = ua.Data
		attrs[i].OutFlags = ua.Flags
		if attrs[i].kind == attrKindPtrOut {
			copy(attrs[i].out, payloads[i])
		}
	}
}

// cmdName names a write command for error messages, as the header does.
func cmdName(cmd uint32) string {
	if cmd&cmdFlagExtended != 0 {
		switch cmd &^ cmdFlagExtended {
		case exCmdQueryDevice:
			return "EX_QUERY_DEVICE"
		case exCmdModifyQP:
			return "EX_MODIFY_QP"
		}
		return fmt.Sprintf("EX_CMD_%d", cmd&^cmdFlagExtended)
	}
	switch cmd {
	case cmdGetContext:
		return "GET_CONTEXT"
	case cmdQueryDevice:
		return "QUERY_DEVICE"
	case cmdQueryPort:
		return "QUERY_PORT"
	case cmdAllocPD:
		return "ALLOC_PD"
	case cmdDeallocPD:
		return "DEALLOC_PD"
	case cmdCreateAH:
		return "CREATE_AH"
	case cmdDestroyAH:
		return "DESTROY_AH"
	case cmdRegMR:
		return "REG_MR"
	case cmdDeregMR:
		return "DEREG_MR"
	case cmdCreateCompChan:
		return "CREATE_COMP_CHANNEL"
	case cmdCreateCQ:
		return "CREATE_CQ"
	case cmdDestroyCQ:
		return "DESTROY_CQ"
	case cmdReqNotifyCQ:
		return "REQ_NOTIFY_CQ"
	case cmdCreateQP:
		return "CREATE_QP"
	case cmdQueryQP:
		return "QUERY_QP"
	case cmdModifyQP:
		return "MODIFY_QP"
	case cmdDestroyQP:
		return "DESTROY_QP"
	case cmdPostSend:
		return "POST_SEND"
	case cmdCreateSRQ:
		return "CREATE_SRQ"
	case cmdDestroySRQ:
		return "DESTROY_SRQ"
	}
	return fmt.Sprintf("CMD_%d", cmd)
}

// methodName names an ioctl method for error messages.
func methodName(obj, method uint16) string {
	switch {
	case obj == objDevice && method == methQueryPort:
		return "QUERY_PORT(ioctl)"
	case obj == objDevice && method == methGetContext:
		return "GET_CONTEXT(ioctl)"
	case obj == objDevice && method == methQueryGIDTable:
		return "QUERY_GID_TABLE"
	case obj == objDevice && method == methQueryGIDEntry:
		return "QUERY_GID_ENTRY"
	case obj == objDevice && method == methInvokeWrite:
		return "INVOKE_WRITE"
	case obj == objPD && method == methPDDestroy:
		return "PD_DESTROY"
	case obj == objMR && method == methMRDestroy:
		return "MR_DESTROY"
	case obj == objAsyncEvent && method == methAsyncAlloc:
		return "ASYNC_EVENT_ALLOC"
	case obj == objDMAH && method == methDMAHAlloc:
		return "DMAH_ALLOC"
	}
	return fmt.Sprintf("ioctl(object %d, method %d)", obj, method)
}

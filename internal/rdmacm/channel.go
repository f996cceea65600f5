package rdmacm

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// DevicePath is the UCMA character device (module rdma_ucm).
const DevicePath = "/dev/infiniband/rdma_cm"

// Channel is an open rdma_cm file: librdmacm's rdma_event_channel. Every
// id created on it reports its events here. Commands are written from an
// mmap'd buffer, which the Go runtime never moves: the kernel writes
// responses to the address a command carries (as internal/verbs does for
// uverbs). Safe for concurrent use; WaitEvent may run while commands do.
type Channel struct {
	f   *os.File
	rc  syscall.RawConn
	mem []byte

	mu  sync.Mutex // cmd's half of mem
	emu sync.Mutex // WaitEvent's half
}

const (
	memSize  = 4096
	cmdHalf  = 0    // command (hdr + struct) at 0, its response at 1024
	respOff  = 1024 //
	evCmdOff = 2048 // GET_EVENT's command, its response at 2304
	evResOff = 2304
)

// Open opens the rdma_cm device. The fd is non-blocking, so that waiting
// for an event is a wait in Go's poller, with a deadline and cancellable.
func Open() (*Channel, error) {
	fd, err := unix.Open(DevicePath, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO):
			return nil, &UnsupportedError{Err: fmt.Errorf("%s: %w (load the rdma_ucm module: modprobe rdma_ucm)", DevicePath, err)}
		case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
			return nil, fmt.Errorf("%s: %w", DevicePath, err)
		}
		return nil, fmt.Errorf("%s: %w", DevicePath, err)
	}
	if v, err := os.ReadFile("/sys/class/misc/rdma_cm/abi_version"); err == nil {
		if s := strings.TrimSpace(string(v)); s != fmt.Sprint(abiVersion) {
			_ = unix.Close(fd)
			return nil, &UnsupportedError{Err: fmt.Errorf("the kernel's rdma_cm ABI is version %s; rdmactl speaks %d", s, abiVersion)}
		}
	}
	mem, err := unix.Mmap(-1, 0, memSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("rdma_cm: cannot map a command buffer: %w", err)
	}
	f := os.NewFile(uintptr(fd), DevicePath)
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		_ = unix.Munmap(mem)
		return nil, err
	}
	return &Channel{f: f, rc: rc, mem: mem}, nil
}

// UnsupportedError says the kernel has no (usable) RDMA CM.
type UnsupportedError struct{ Err error }

func (e *UnsupportedError) Error() string { return e.Err.Error() }
func (e *UnsupportedError) Unwrap() error { return e.Err }

// Close closes the file: the kernel destroys every id still open on it
// (and disconnects their connections).
func (c *Channel) Close() error {
	if c == nil || c.f == nil {
		return nil
	}
	err := c.f.Close()
	c.mu.Lock()
	c.emu.Lock()
	_ = unix.Munmap(c.mem)
	c.mem = nil
	c.emu.Unlock()
	c.mu.Unlock()
	c.f = nil
	return err
}

// bytesOf is the memory of a command struct.
func bytesOf[T any](v *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(v)), unsafe.Sizeof(*v))
}

// exec writes command op with its struct req. When resp is not nil, the
// response field at offset respField of req is pointed at the buffer and
// the kernel's answer is copied into resp afterwards. resp's prior content
// goes to the kernel's buffer first, so that fields an older kernel does
// not write keep the caller's sentinels (as librdmacm's ibdev_index).
func (c *Channel) exec(op uint32, req []byte, respField int, resp []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.execLocked(op, req, respField, resp)
}

// execLocked is exec with mu held.
func (c *Channel) execLocked(op uint32, req []byte, respField int, resp []byte) error {
	if c.mem == nil {
		return os.ErrClosed
	}
	hdr := cmdHdr{Cmd: op, In: uint16(len(req)), Out: uint16(len(resp))}
	b := c.mem[cmdHalf : cmdHalf+8+len(req)]
	copy(b, bytesOf(&hdr))
	copy(b[8:], req)
	if resp != nil {
		r := c.mem[respOff : respOff+len(resp)]
		copy(r, resp)
		binary.LittleEndian.PutUint64(b[8+respField:], uint64(uintptr(unsafe.Pointer(&r[0]))))
	}
	var n int
	var werr error
	err := c.rc.Write(func(fd uintptr) bool {
		n, werr = unix.Write(int(fd), b)
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("rdma_cm: short command write (%d of %d bytes)", n, len(b))
	}
	if resp != nil {
		copy(resp, c.mem[respOff:respOff+len(resp)])
	}
	return nil
}

// ID is a CM id: librdmacm's rdma_cm_id without its verbs objects.
type ID struct {
	ch     *Channel
	Handle uint32 // the kernel's id
	UID    uint64 // ours, echoed in its events
	PS     PortSpace
}

var uidSeq struct {
	sync.Mutex
	n uint64
}

// CreateID creates an id in port space ps (PSTCP for RC, PSUDP for UD).
func (c *Channel) CreateID(ps PortSpace) (*ID, error) {
	uid := nextUID()
	qpt := uint8(qpTypeRC)
	if ps == PSUDP {
		qpt = qpTypeUD
	}
	req := createID{UID: uid, PS: uint16(ps), QPType: qpt}
	var resp createIDResp
	if err := c.exec(cmdCreateID, bytesOf(&req), int(unsafe.Offsetof(req.Response)), bytesOf(&resp)); err != nil {
		return nil, fmt.Errorf("rdma_cm CREATE_ID: %w", err)
	}
	return &ID{ch: c, Handle: resp.ID, UID: uid, PS: ps}, nil
}

// Adopt makes an ID of the new id a CONNECT_REQUEST event announced.
// Its events carry a uid of ours from its Accept on.
func (c *Channel) Adopt(ev Event, listener *ID) *ID {
	return &ID{ch: c, Handle: ev.ID, UID: nextUID(), PS: listener.PS}
}

func nextUID() uint64 {
	uidSeq.Lock()
	defer uidSeq.Unlock()
	uidSeq.n++
	return uidSeq.n
}

// Destroy destroys the id (DESTROY_ID); a connected id's connection is
// ended by the kernel. Events still queued for it are dropped by the kernel.
func (id *ID) Destroy() error {
	if id == nil || id.ch == nil {
		return nil
	}
	req := destroyID{ID: id.Handle}
	var resp destroyIDResp
	err := id.ch.exec(cmdDestroyID, bytesOf(&req), int(unsafe.Offsetof(req.Response)), bytesOf(&resp))
	id.ch = nil
	if err != nil {
		return fmt.Errorf("rdma_cm DESTROY_ID: %w", err)
	}
	return nil
}

// sockaddrOf encodes ap as the sockaddr_in or sockaddr_in6 the IP
// commands take.
func sockaddrOf(ap netip.AddrPort) sockaddr6 {
	var s sockaddr6
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		binary.LittleEndian.PutUint16(s[0:], unix.AF_INET)
		binary.BigEndian.PutUint16(s[2:], ap.Port())
		v4 := a.Unmap().As4()
		copy(s[4:8], v4[:])
		return s
	}
	binary.LittleEndian.PutUint16(s[0:], unix.AF_INET6)
	binary.BigEndian.PutUint16(s[2:], ap.Port())
	v6 := a.As16()
	copy(s[8:24], v6[:])
	return s
}

// addrPortOf decodes a sockaddr the kernel returned (zero if neither family).
func addrPortOf(s sockaddr6) netip.AddrPort {
	port := binary.BigEndian.Uint16(s[2:])
	switch binary.LittleEndian.Uint16(s[0:]) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(s[4:8])), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(s[8:24])), port)
	}
	return netip.AddrPort{}
}

// Bind binds the id to a local address and port (BIND_IP); an unspecified
// address (0.0.0.0) listens on every RDMA device.
func (id *ID) Bind(ap netip.AddrPort) error {
	req := bindIP{Addr: sockaddrOf(ap), ID: id.Handle}
	if err := id.ch.exec(cmdBindIP, bytesOf(&req), -1, nil); err != nil {
		if errors.Is(err, unix.EADDRINUSE) {
			return fmt.Errorf("rdma_cm: cannot bind %s: the port is in use (another server on it?)", ap)
		}
		return fmt.Errorf("rdma_cm: cannot bind %s: %w", ap, err)
	}
	return nil
}

// Listen starts listening (LISTEN) with room for backlog pending requests.
func (id *ID) Listen(backlog int) error {
	req := listen{ID: id.Handle, Backlog: uint32(backlog)}
	if err := id.ch.exec(cmdListen, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm LISTEN: %w", err)
	}
	return nil
}

// ResolveAddr starts resolving dst to a local RDMA device and port
// (RESOLVE_IP); src may be zero. It ends with ADDR_RESOLVED or ADDR_ERROR.
func (id *ID) ResolveAddr(src, dst netip.AddrPort, timeout time.Duration) error {
	req := resolveIP{DstAddr: sockaddrOf(dst), ID: id.Handle, TimeoutMs: uint32(timeout / time.Millisecond)}
	if src.IsValid() {
		req.SrcAddr = sockaddrOf(src)
	}
	if err := id.ch.exec(cmdResolveIP, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm RESOLVE_IP: %w", err)
	}
	return nil
}

// ResolveRoute starts resolving the route (RESOLVE_ROUTE), after
// ADDR_RESOLVED. It ends with ROUTE_RESOLVED or ROUTE_ERROR.
func (id *ID) ResolveRoute(timeout time.Duration) error {
	req := resolveRoute{ID: id.Handle, TimeoutMs: uint32(timeout / time.Millisecond)}
	if err := id.ch.exec(cmdResolveRoute, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm RESOLVE_ROUTE: %w", err)
	}
	return nil
}

// noIBDevIndex is what Route.IBDevIndex holds when the kernel does not
// report it (librdmacm's UCMA_INVALID_IB_INDEX).
const noIBDevIndex = 0xffffffff

// Route is what QUERY_ROUTE says of an id: the device and port it is bound
// to and its addresses.
type Route struct {
	NodeGUID   uint64 // host order; 0 while no device is bound
	IBDevIndex uint32 // the device's netlink index; NoIBDevIndex if unknown
	Port       uint8
	Src, Dst   netip.AddrPort
	NumPaths   uint32
}

// NoIBDevIndex is Route.IBDevIndex from a kernel that does not report it.
const NoIBDevIndex = noIBDevIndex

// QueryRoute asks the kernel for the id's device, port and addresses.
func (id *ID) QueryRoute() (Route, error) {
	req := query{ID: id.Handle}
	resp := queryRouteResp{IBDevIndex: noIBDevIndex}
	if err := id.ch.exec(cmdQueryRoute, bytesOf(&req), int(unsafe.Offsetof(req.Response)), bytesOf(&resp)); err != nil {
		return Route{}, fmt.Errorf("rdma_cm QUERY_ROUTE: %w", err)
	}
	// node_guid is __be64 in the kernel's struct (it copies the device's
	// big-endian GUID), so read its bytes in wire order.
	g := bytesOf(&resp.NodeGUID)
	return Route{NodeGUID: binary.BigEndian.Uint64(g), IBDevIndex: resp.IBDevIndex, Port: resp.PortNum,
		Src: addrPortOf(resp.SrcAddr), Dst: addrPortOf(resp.DstAddr), NumPaths: resp.NumPaths}, nil
}

func (p *ConnParam) toKern(qpn uint32) (connParam, error) {
	var k connParam
	if len(p.PrivateData) > maxPrivateData {
		return k, fmt.Errorf("rdma_cm: %d bytes of private data, at most %d", len(p.PrivateData), maxPrivateData)
	}
	k.QPNum, k.QKey = qpn, p.QKey
	copy(k.PrivateData[:], p.PrivateData)
	k.PrivateDataLen = uint8(len(p.PrivateData))
	if p.SRQ {
		k.SRQ = 1
	}
	k.ResponderResources, k.InitiatorDepth = p.ResponderResources, p.InitiatorDepth
	k.FlowControl, k.RetryCount, k.RNRRetryCount = p.FlowControl, p.RetryCount, p.RNRRetryCount
	k.Valid = 1
	return k, nil
}

// Connect sends the connection request for the QP p.QPNum (CONNECT), after
// ROUTE_RESOLVED. The QP must be in INIT. The answer is CONNECT_RESPONSE
// (then: RTR, RTS, Establish), REJECTED, UNREACHABLE or CONNECT_ERROR.
func (id *ID) Connect(p ConnParam) error {
	k, err := p.toKern(p.QPNum)
	if err != nil {
		return err
	}
	req := connect{ConnParam: k, ID: id.Handle}
	if err := id.ch.exec(cmdConnect, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm CONNECT: %w", err)
	}
	return nil
}

// Accept accepts a CONNECT_REQUEST on the new id for QP p.QPNum (ACCEPT),
// once the QP is in RTS. Establish on the active side (after its QP
// reached RTS) is the same command without parameters.
func (id *ID) Accept(p ConnParam) error {
	k, err := p.toKern(p.QPNum)
	if err != nil {
		return err
	}
	req := accept{UID: id.UID, ConnParam: k, ID: id.Handle}
	if err := id.ch.exec(cmdAccept, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm ACCEPT: %w", err)
	}
	return nil
}

// Establish completes an active connection after CONNECT_RESPONSE and the
// QP's move to RTS (librdmacm's ucma_process_conn_resp: ACCEPT with no
// parameters, which sends the RTU).
func (id *ID) Establish() error {
	req := accept{ID: id.Handle}
	if err := id.ch.exec(cmdAccept, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm ACCEPT (establish): %w", err)
	}
	return nil
}

// Reject refuses a CONNECT_REQUEST.
func (id *ID) Reject() error {
	req := reject{ID: id.Handle}
	if err := id.ch.exec(cmdReject, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm REJECT: %w", err)
	}
	return nil
}

// Disconnect ends the connection (DISCONNECT); both sides then get
// DISCONNECTED. The caller moves its QP to ERR first, as librdmacm does.
func (id *ID) Disconnect() error {
	req := disconnect{ID: id.Handle}
	if err := id.ch.exec(cmdDisconnect, bytesOf(&req), -1, nil); err != nil {
		return fmt.Errorf("rdma_cm DISCONNECT: %w", err)
	}
	return nil
}

// WaitEvent returns the next event of any id of the channel, waiting until
// the deadline (zero: none) or ctx's end.
func (c *Channel) WaitEvent(ctx context.Context, deadline time.Time) (Event, error) {
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.mem == nil {
		return Event{}, os.ErrClosed
	}
	if err := c.f.SetReadDeadline(deadline); err != nil {
		return Event{}, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	b, r := c.getEventCmd()
	var werr error
	err := c.rc.Read(func(fd uintptr) bool {
		clear(r)
		_, werr = unix.Write(int(fd), b)
		return werr != unix.EAGAIN
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		if ctx.Err() != nil {
			return Event{}, ctx.Err()
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return Event{}, ErrTimeout
		}
		return Event{}, fmt.Errorf("rdma_cm GET_EVENT: %w", err)
	}
	return DecodeEvent(r)
}

// getEventCmd writes a GET_EVENT command into the channel's memory: b
// is the command to write to the fd, r the response the kernel fills.
// emu is held.
func (c *Channel) getEventCmd() (b, r []byte) {
	hdr := cmdHdr{Cmd: cmdGetEvent, In: uint16(unsafe.Sizeof(getEvent{})), Out: uint16(eventRespSize)}
	b = c.mem[evCmdOff : evCmdOff+8+int(hdr.In)]
	r = c.mem[evResOff : evResOff+eventRespSize]
	copy(b, bytesOf(&hdr))
	binary.LittleEndian.PutUint64(b[8:], uint64(uintptr(unsafe.Pointer(&r[0]))))
	return b, r
}

// PollEvent takes the next queued event without waiting; ok is false
// when none is queued (GET_EVENT on the non-blocking fd: EAGAIN).
// WaitEvent cannot do that: with a deadline already passed Go's poller
// fails the read before the kernel is asked, so it never returns a
// queued event.
func (c *Channel) PollEvent() (ev Event, ok bool, err error) {
	c.emu.Lock()
	defer c.emu.Unlock()
	if c.mem == nil {
		return Event{}, false, os.ErrClosed
	}
	if err := c.f.SetReadDeadline(time.Time{}); err != nil {
		return Event{}, false, err
	}
	b, r := c.getEventCmd()
	var werr error
	err = c.rc.Read(func(fd uintptr) bool {
		clear(r)
		_, werr = unix.Write(int(fd), b)
		return true // one attempt
	})
	if err == nil {
		err = werr
	}
	if errors.Is(err, unix.EAGAIN) {
		return Event{}, false, nil
	}
	if err != nil {
		return Event{}, false, fmt.Errorf("rdma_cm GET_EVENT: %w", err)
	}
	ev, err = DecodeEvent(r)
	return ev, err == nil, err
}

// ErrTimeout is WaitEvent's error when the deadline passed.
var ErrTimeout = errors.New("rdma_cm: no event before the deadline")

// QPAttr is what INIT_QP_ATTR says a QP needs for a transition: the
// attribute mask (enum ib_qp_attr_mask bits) and the attributes it
// selects, in verbs' MODIFY_QP terms (librdmacm's rdma_init_qp_attr fills
// an ibv_qp_attr and a mask the same way). Mask may hold bits above
// verbs' legacy MODIFY_QP range, meant for the kernel's own RoCE code.
type QPAttr struct {
	verbs.ModifyAttr
	Mask verbs.QPAttrMask
}

// QP states for InitQPAttr (enum ib_qp_state).
const (
	StateInit = 1
	StateRTR  = 2
	StateRTS  = 3
)

// InitQPAttr asks the kernel which attributes the id's QP needs to reach
// state (INIT_QP_ATTR): librdmacm's rdma_init_qp_attr.
func (id *ID) InitQPAttr(state uint8) (QPAttr, error) {
	req := initQPAttr{ID: id.Handle, QPState: uint32(state)}
	var r uverbsQPAttr
	if err := id.ch.exec(cmdInitQPAttr, bytesOf(&req), int(unsafe.Offsetof(req.Response)), bytesOf(&r)); err != nil {
		return QPAttr{}, fmt.Errorf("rdma_cm INIT_QP_ATTR (state %d): %w", state, err)
	}
	return decodeQPAttr(&r), nil
}

func decodeQPAttr(r *uverbsQPAttr) QPAttr {
	a := r.AHAttr
	return QPAttr{Mask: verbs.QPAttrMask(r.QPAttrMask), ModifyAttr: verbs.ModifyAttr{State: verbs.QPState(r.QPState),
		CurState: verbs.QPState(r.CurQPState), PathMTU: vocab.MTU(r.PathMTU), QKey: r.QKey,
		RQPSN: r.RQPSN, SQPSN: r.SQPSN, DestQPN: r.DestQPNum, Access: verbs.Access(r.QPAccessFlags),
		PKeyIndex: r.PKeyIndex, Port: r.PortNum, MaxRdAtomic: r.MaxRdAtomic, MaxDestRdAtomic: r.MaxDestRdAtomic,
		MinRNRTimer: r.MinRNRTimer, Timeout: r.Timeout, RetryCnt: r.RetryCnt, RNRRetry: r.RNRRetry,
		Dest: verbs.AHAttr{DGID: a.GRH.DGID, FlowLabel: a.GRH.FlowLabel, SGIDIndex: a.GRH.SGIDIndex,
			HopLimit: a.GRH.HopLimit, TrafficClass: a.GRH.TrafficClass, DLID: a.DLID, SL: a.SL,
			SrcPathBits: a.SrcPathBits, StaticRate: a.StaticRate, IsGlobal: a.IsGlobal != 0, Port: a.PortNum}}}
}

// Option levels and names of SET_OPTION (rdma_user_cm.h).
const (
	optLevelID      = 0 // RDMA_OPTION_ID
	optIDTOS        = 0 // RDMA_OPTION_ID_TOS: u8
	optIDAckTimeout = 3 // RDMA_OPTION_ID_ACK_TIMEOUT: u8
)

// setOptionU8 sets a one-byte option of the id (SET_OPTION; librdmacm's
// rdma_set_option). The value goes by address, so it is put in the
// command buffer's response half, which the runtime never moves.
func (id *ID) setOptionU8(name uint32, v uint8) error {
	c := id.ch
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return os.ErrClosed
	}
	val := &c.mem[respOff]
	*val = v
	req := setOption{OptVal: uint64(uintptr(unsafe.Pointer(val))), ID: id.Handle, Level: optLevelID, OptName: name, OptLen: 1}
	return c.execLocked(cmdSetOption, bytesOf(&req), -1, nil)
}

// SetTOS sets the id's type of service (RDMA_OPTION_ID_TOS): on RoCE the
// traffic class of the path the CM resolves, so it must come before
// RESOLVE_ROUTE (active side) or LISTEN (passive side), as librdmacm's
// users order it.
func (id *ID) SetTOS(tos uint8) error {
	if err := id.setOptionU8(optIDTOS, tos); err != nil {
		return fmt.Errorf("rdma_cm SET_OPTION TOS %d: %w", tos, err)
	}
	return nil
}

// ErrNoAckTimeout says the kernel has no RDMA_OPTION_ID_ACK_TIMEOUT
// (before Linux 4.18 SET_OPTION answers ENOPROTOOPT, some EINVAL).
var ErrNoAckTimeout = errors.New("this kernel's RDMA CM cannot set the ACK timeout (RDMA_OPTION_ID_ACK_TIMEOUT, Linux 4.18+)")

// SetAckTimeout sets the QP's local ACK timeout exponent the CM puts in
// its RTS attributes (RDMA_OPTION_ID_ACK_TIMEOUT; 4.096 us * 2^t), on an
// RC id before INIT_QP_ATTR for RTS.
func (id *ID) SetAckTimeout(t uint8) error {
	err := id.setOptionU8(optIDAckTimeout, t)
	if errors.Is(err, unix.ENOPROTOOPT) || errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("rdma_cm SET_OPTION ACK_TIMEOUT %d: %w (%v)", t, ErrNoAckTimeout, err)
	}
	if err != nil {
		return fmt.Errorf("rdma_cm SET_OPTION ACK_TIMEOUT %d: %w", t, err)
	}
	return nil
}

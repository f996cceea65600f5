package verbs

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// Completion events (perftest -e): a completion channel is an fd
// (CREATE_COMP_CHANNEL) that becomes readable when a CQ created on it
// (CreateCQOn) and armed (CQ.Arm: REQ_NOTIFY_CQ) gets its next
// completion; read() then returns one struct ib_uverbs_comp_event_desc
// per event, whose cq_handle is the user handle given at CREATE_CQ (here
// the CQ's slot on the channel). One event per arming: the CQ must be
// armed again for the next.
//
// Acks: libibverbs makes ibv_destroy_cq wait until every event read has
// been acked (ibv_ack_cq_events), comparing its count with the kernel's
// comp_events_reported from DESTROY_CQ, which counts the events read()
// delivered for the CQ. Here the only reader is Wait, which counts each
// event it reads into the CQ's slot as it reads it (read and acked are
// one step), and CQ.Close checks that count against the kernel's: a
// difference means another reader took events from the channel.
//
// Arm and Wait are the data path: //go:nosplit, no allocation, no
// pointer stores, errors preallocated, so that perf's loops can call them
// detached from the scheduler (detached.go). On rxe Arm is a write() of
// a prebuilt REQ_NOTIFY_CQ command: rxe's req_notify is that command
// (the kernel sets the CQ's notify flag). mlx5 arms in user space, the
// CQ's doorbell record and the UAR's CQ doorbell (provider/mlx5/mlx5_cqarm.go), with the
// events Wait counted for the CQ as its arm sequence number.

// struct ib_uverbs_create_comp_channel (8 B).
type abiCreateCompChannel struct {
	Response uint64
}

// struct ib_uverbs_create_comp_channel_resp (4 B).
type abiCreateCompChannelResp struct {
	FD uint32
}

// struct ib_uverbs_req_notify_cq (8 B). No response.
type abiReqNotifyCQ struct {
	CQHandle      uint32
	SolicitedOnly uint32
}

// struct ib_uverbs_comp_event_desc (8 B): what read() returns per event.
type abiCompEventDesc struct {
	CQHandle uint64
}

// maxChannelCQs bounds the CQs one channel serves (slots are not reused).
const maxChannelCQs = 64

// CompChannel is a completion channel. Create it with
// Context.CreateCompChannel, create CQs on it with CreateCQOn, wait with
// Wait from one goroutine at a time, and Close it after its CQs.
type CompChannel struct {
	ctx  *Context
	fd   int
	mu   sync.Mutex // guards next, live, fd (control path)
	next int        // next slot
	live int        // CQs not yet closed
	st   *chanState
	key  uint64
}

// chanState is what Wait and Arm touch: allocated once, never moved (the
// kernel reads and writes pfd, ts and buf).
type chanState struct {
	pfd              [1]unix.PollFd
	ts               unix.Timespec
	buf              [8]byte
	armed            [maxChannelCQs]bool
	events           [maxChannelCQs]uint64 // events read (and so acked) per slot
	stray            uint64                // events naming no slot of ours
	pollErr, readErr chanError
}

// chanError is a preallocated data-path error: Wait fills in the errno.
type chanError struct {
	dev, op string
	errno   unix.Errno
}

func (e *chanError) Error() string {
	return e.dev + ": completion channel " + e.op + ": " + e.errno.Error()
}

func (e *chanError) Unwrap() error { return e.errno }

// CreateCompChannel creates a completion channel (CREATE_COMP_CHANNEL):
// an fd, non-blocking and close-on-exec here.
func (c *Context) CreateCompChannel() (*CompChannel, error) {
	cmd := abiCreateCompChannel{}
	var resp abiCreateCompChannelResp
	if err := c.writeCmd(cmdCreateCompChan, rawmem.Of(&cmd), rawmem.Of(&resp), nil, nil); err != nil {
		return nil, err
	}
	fd := int(resp.FD)
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("%s: completion channel: O_NONBLOCK: %w", c.dev.Name, err)
	}
	st := &chanState{pfd: [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}}
	st.pollErr = chanError{dev: c.dev.Name, op: "ppoll"}
	st.readErr = chanError{dev: c.dev.Name, op: "read"}
	ch := &CompChannel{ctx: c, fd: fd, st: st}
	ch.key = c.addChild(ch.Close)
	return ch, nil
}

// FD is the channel's file descriptor (-1 once closed).
func (ch *CompChannel) FD() int { return ch.fd }

// take hands out the next slot for a CQ.
func (ch *CompChannel) take() (int, error) {
	if ch == nil {
		return -1, nil
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.fd < 0 {
		return 0, ErrClosed
	}
	if ch.next >= maxChannelCQs {
		return 0, fmt.Errorf("verbs: a completion channel serves at most %d CQs", maxChannelCQs)
	}
	ch.next++
	return ch.next - 1, nil
}

// attach makes the event state of a CQ created in slot, whose provider
// queue is p (a CQArmer is armed through its doorbells).
func (ch *CompChannel) attach(slot int, cmdFD int, handle uint32, p ProviderCQ) *cqEvents {
	e := &cqEvents{ch: ch, st: ch.st, slot: slot, fd: cmdFD}
	e.userArm, _ = p.(CQArmer)
	hdr := uvCmdHdr{Command: cmdReqNotifyCQ, InWords: uint16((8 + unsafe.Sizeof(abiReqNotifyCQ{})) / 4)}
	req := abiReqNotifyCQ{CQHandle: handle}
	copy(e.cmd[:8], rawmem.Of(&hdr))
	copy(e.cmd[8:], rawmem.Of(&req))
	e.armErr = chanError{dev: ch.ctx.dev.Name, op: "REQ_NOTIFY_CQ"}
	ch.mu.Lock()
	ch.live++
	ch.mu.Unlock()
	return e
}

// CreateCQOn creates a CQ as CreateCQ does, whose completion events go
// to ch once armed (CQ.Arm).
func (c *Context) CreateCQOn(cqe int, ch *CompChannel) (*CQ, error) {
	if ch == nil {
		return nil, errors.New("verbs: CreateCQOn needs a completion channel")
	}
	return c.createCQ(cqe, ch, 0)
}

// CreateCQOnVector is CreateCQOn with the CQ's events on completion
// vector vector (CREATE_CQ comp_vector; below NumCompVectors).
func (c *Context) CreateCQOnVector(cqe int, ch *CompChannel, vector uint32) (*CQ, error) {
	if ch == nil {
		return nil, errors.New("verbs: CreateCQOnVector needs a completion channel")
	}
	return c.createCQ(cqe, ch, vector)
}

// cqEvents is a CQ's side of its channel: the prebuilt REQ_NOTIFY_CQ
// command (or the provider's CQ armed in user space) and the slot its events
// are counted in.
type cqEvents struct {
	ch      *CompChannel
	st      *chanState
	slot    int
	fd      int      // the uverbs command fd
	cmd     [16]byte // cmd_hdr + ib_uverbs_req_notify_cq
	userArm CQArmer  // non-nil: arm through its doorbells, not cmd
	armErr  chanError
	// reported is DESTROY_CQ's comp_events_reported, once closed.
	reported uint32
	closed   bool
}

// errNoChannel is Arm's error on a CQ made without a channel.
var errNoChannel = errors.New("verbs: CQ has no completion channel (create it with CreateCQOn)")

// Arm requests an event for the CQ's next completion (REQ_NOTIFY_CQ,
// solicited_only 0) unless it is armed already: did says whether it
// armed now. A completion that arrived before the arming raises no
// event, so poll the CQ once more after arming and before waiting. On
// mlx5 call it from the goroutine that polls the CQ (the arm word
// carries the consumer index).
//
//go:nosplit
func (cq *CQ) Arm() (did bool, err error) {
	e := cq.ev
	if e == nil {
		return false, errNoChannel
	}
	if e.closed {
		return false, ErrClosed // an mlx5 CQ's doorbell record is unmapped
	}
	if e.st.armed[e.slot] {
		return false, nil
	}
	if e.userArm != nil {
		// arm_sn: the events read for this CQ (rdma-core's
		// mlx5_cq_event once per ibv_get_cq_event).
		e.userArm.Arm(uint32(e.st.events[e.slot]), false)
		e.st.armed[e.slot] = true
		return true, nil
	}
	_, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(e.fd), uintptr(unsafe.Pointer(&e.cmd[0])), uintptr(len(e.cmd)))
	if errno != 0 {
		e.armErr.errno = errno
		return false, &e.armErr
	}
	e.st.armed[e.slot] = true
	return true, nil
}

// EventsRead is how many completion events Wait has read for the CQ
// (and so acked, in libibverbs' terms); 0 without a channel.
func (cq *CQ) EventsRead() uint64 {
	if cq.ev == nil {
		return 0
	}
	return cq.ev.st.events[cq.ev.slot]
}

// EventsReported is the kernel's count of the CQ's events delivered to
// readers, from DESTROY_CQ (valid after Close; 0 without a channel).
func (cq *CQ) EventsReported() uint32 {
	if cq.ev == nil {
		return 0
	}
	return cq.ev.reported
}

// destroyed records DESTROY_CQ's count and checks it against ours.
func (e *cqEvents) destroyed(reported uint32) error {
	if e == nil || e.closed {
		return nil
	}
	e.closed, e.reported = true, reported
	e.ch.mu.Lock()
	e.ch.live--
	e.ch.mu.Unlock()
	if read := e.st.events[e.slot]; uint64(reported) != read {
		return fmt.Errorf("%s: DESTROY_CQ: the kernel delivered %d completion events for the CQ, %d were read here (another reader on its channel?)", e.ch.ctx.dev.Name, reported, read)
	}
	return nil
}

// Wait waits up to timeout ns (0: only looks) for the channel to become
// readable and then reads every pending event, disarming each event's CQ
// and counting it. It returns the number of events read (0: timed out or
// interrupted by a signal). attached says whether the caller runs on the
// Go scheduler (the wait then gives up its P as an ordinary system call
// does) or detached from it (perf's loops; a raw system call).
//
//go:nosplit
func (ch *CompChannel) Wait(timeout int64, attached bool) (int, error) {
	st := ch.st
	st.ts.Sec, st.ts.Nsec = timeout/1e9, timeout%1e9
	st.pfd[0].Revents = 0
	var errno unix.Errno
	if attached {
		_, _, errno = unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&st.pfd[0])), 1, uintptr(unsafe.Pointer(&st.ts)), 0, 0, 0)
	} else {
		_, _, errno = unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&st.pfd[0])), 1, uintptr(unsafe.Pointer(&st.ts)), 0, 0, 0)
	}
	if errno == unix.EINTR {
		return 0, nil
	}
	if errno != 0 {
		st.pollErr.errno = errno
		return 0, &st.pollErr
	}
	if st.pfd[0].Revents == 0 {
		return 0, nil
	}
	n := 0
	for {
		r, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(st.pfd[0].Fd), uintptr(unsafe.Pointer(&st.buf[0])), uintptr(len(st.buf)))
		if errno == unix.EAGAIN || errno == unix.EINTR {
			return n, nil
		}
		if errno != 0 {
			st.readErr.errno = errno
			return n, &st.readErr
		}
		slot, ok := parseCompEvent(st.buf[:r])
		if !ok {
			st.stray++
			continue
		}
		st.armed[slot] = false
		st.events[slot]++
		n++
	}
}

// parseCompEvent reads one struct ib_uverbs_comp_event_desc: the slot
// its cq_handle names, ok false for a short read or a handle that is no
// slot (the kernel echoes what CREATE_CQ gave, so neither should occur).
//
//go:nosplit
func parseCompEvent(b []byte) (int, bool) {
	if len(b) != int(unsafe.Sizeof(abiCompEventDesc{})) {
		return 0, false
	}
	h := *(*uint64)(unsafe.Pointer(&b[0])) // host-endian, as the kernel's
	if h >= maxChannelCQs {
		return 0, false
	}
	return int(h), true
}

// Stray is how many events named no CQ of this channel (see
// parseCompEvent).
func (ch *CompChannel) Stray() uint64 { return ch.st.stray }

// Close closes the channel's fd. It fails while CQs made on it are open
// (as ibv_destroy_comp_channel's EBUSY); closing twice returns nil.
func (ch *CompChannel) Close() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.fd < 0 {
		return nil
	}
	if ch.live > 0 {
		return fmt.Errorf("verbs: completion channel still has %d CQs: %w", ch.live, unix.EBUSY)
	}
	err := unix.Close(ch.fd)
	ch.fd = -1
	ch.ctx.removeChild(ch.key)
	return err
}

var (
	_ [8 - unsafe.Sizeof(abiCreateCompChannel{})]struct{}
	_ [unsafe.Sizeof(abiReqNotifyCQ{}) - 8]struct{}
)

package verbs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Async events: the device's port and QP events, which the kernel queues
// on a context's async event file (ib_uverbs_async_handler in
// drivers/infiniband/core/uverbs_main.c) and read() returns one struct
// ib_uverbs_async_event_desc at a time. Port events (PORT_ACTIVE,
// PORT_ERR, ...) go to every async file of the device, whatever created
// the file's objects; element is then the port number. The write()
// GET_CONTEXT makes the file with the context; the ioctl one does not,
// and UVERBS_METHOD_ASYNC_EVENT_ALLOC makes one (rdma-core's
// ibv_cmd_alloc_async_fd, libibverbs/cmd_device.c). The file is pollable
// (ib_uverbs_async_event_poll), so a reader can wait in Go's poller.

// AsyncEventType is enum ib_event_type (include/rdma/ib_verbs.h), the
// event_type of struct ib_uverbs_async_event_desc.
type AsyncEventType uint32

const (
	EventCQErr          AsyncEventType = 0
	EventQPFatal        AsyncEventType = 1
	EventQPReqErr       AsyncEventType = 2
	EventQPAccessErr    AsyncEventType = 3
	EventCommEst        AsyncEventType = 4
	EventSQDrained      AsyncEventType = 5
	EventPathMig        AsyncEventType = 6
	EventPathMigErr     AsyncEventType = 7
	EventDeviceFatal    AsyncEventType = 8
	EventPortActive     AsyncEventType = 9
	EventPortErr        AsyncEventType = 10
	EventLIDChange      AsyncEventType = 11
	EventPKeyChange     AsyncEventType = 12
	EventSMChange       AsyncEventType = 13
	EventSRQErr         AsyncEventType = 14
	EventSRQLimit       AsyncEventType = 15
	EventQPLastWQE      AsyncEventType = 16
	EventClientRereg    AsyncEventType = 17
	EventGIDChange      AsyncEventType = 18
	EventWQFatal        AsyncEventType = 19
	asyncEventTypeCount                = 20
)

var asyncEventNames = [asyncEventTypeCount]string{"CQ_ERR", "QP_FATAL", "QP_REQ_ERR", "QP_ACCESS_ERR",
	"COMM_EST", "SQ_DRAINED", "PATH_MIG", "PATH_MIG_ERR", "DEVICE_FATAL", "PORT_ACTIVE", "PORT_ERR",
	"LID_CHANGE", "PKEY_CHANGE", "SM_CHANGE", "SRQ_ERR", "SRQ_LIMIT_REACHED", "QP_LAST_WQE_REACHED",
	"CLIENT_REREGISTER", "GID_CHANGE", "WQ_FATAL"}

// String is the event's name as ibv_event_type_str prints it, without
// its IBV_EVENT_ prefix.
func (t AsyncEventType) String() string {
	if t < asyncEventTypeCount {
		return asyncEventNames[t]
	}
	return fmt.Sprintf("event %d", uint32(t))
}

// IsPortEvent says whether the event's Element is a port number
// (ib_uverbs_event_handler passes element.port_num for these).
func (t AsyncEventType) IsPortEvent() bool {
	switch t {
	case EventPortActive, EventPortErr, EventLIDChange, EventPKeyChange, EventSMChange, EventClientRereg, EventGIDChange:
		return true
	}
	return false
}

// AsyncEvent is one struct ib_uverbs_async_event_desc (16 B): Element is
// the port number for port events, the object's user handle for QP, CQ,
// SRQ and WQ events, 0 for DEVICE_FATAL.
type AsyncEvent struct {
	Element uint64
	Type    AsyncEventType
}

const asyncEventDescSize = 16

// decodeAsyncEvent reads one struct ib_uverbs_async_event_desc.
func decodeAsyncEvent(b []byte) (AsyncEvent, error) {
	if len(b) != asyncEventDescSize {
		return AsyncEvent{}, fmt.Errorf("async event of %d bytes, want %d", len(b), asyncEventDescSize)
	}
	return AsyncEvent{Element: binary.NativeEndian.Uint64(b), Type: AsyncEventType(binary.NativeEndian.Uint32(b[8:]))}, nil
}

// AsyncEvents reads a context's async events. Read blocks in Go's poller
// (no thread waits in a system call); Pending reads what is queued without
// waiting, from any goroutine; Close ends a blocked Read. It reads its own
// duplicate of the context's async fd, so it may be closed before or after
// the context.
type AsyncEvents struct {
	f  *os.File
	rc syscall.RawConn
}

// AsyncEvents opens the context's async event file for reading. Events
// queued from this call on (and, for a context opened with the write()
// GET_CONTEXT, since the context's creation) are delivered. A kernel
// without ASYNC_EVENT_ALLOC and without the write() path answers
// ErrUnsupported.
func (c *Context) AsyncEvents() (*AsyncEvents, error) {
	fd, err := c.asyncEventFD()
	if err != nil {
		return nil, err
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: async event fd: %w", c.dev.Name, err)
	}
	// Non-blocking, so that os.NewFile hands it to the poller (the flag is
	// on the open file, which only this reader reads).
	if err := unix.SetNonblock(dup, true); err != nil {
		_ = unix.Close(dup)
		return nil, fmt.Errorf("%s: async event fd: %w", c.dev.Name, err)
	}
	f := os.NewFile(uintptr(dup), c.dev.Name+" async events")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &AsyncEvents{f: f, rc: rc}, nil
}

// asyncEventFD is the context's async fd, allocated through the ioctl
// method when GET_CONTEXT made none.
func (c *Context) asyncEventFD() (int, error) {
	c.mu.Lock()
	fd := c.asyncFD
	c.mu.Unlock()
	if fd >= 0 {
		return fd, nil
	}
	attrs := []ioctlAttr{attrNew(0)} // UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE
	if err := c.ioctl(objAsyncEvent, methAsyncAlloc, attrs); err != nil {
		if errors.Is(err, unix.EPROTONOSUPPORT) || errors.Is(err, unix.EOPNOTSUPP) {
			return -1, fmt.Errorf("%s: async events: %w", c.dev.Name, ErrUnsupported)
		}
		return -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		_ = unix.Close(int(attrs[0].Value))
		return -1, ErrClosed
	}
	c.asyncFD = int(attrs[0].Value)
	return c.asyncFD, nil
}

// Read waits for the next event. After Close it returns os.ErrClosed.
func (a *AsyncEvents) Read() (AsyncEvent, error) {
	var b [asyncEventDescSize]byte
	n, err := a.f.Read(b[:])
	if err != nil {
		return AsyncEvent{}, err
	}
	return decodeAsyncEvent(b[:n])
}

// Pending returns the events queued now, without waiting.
func (a *AsyncEvents) Pending() ([]AsyncEvent, error) {
	var out []AsyncEvent
	var rerr error
	err := a.rc.Control(func(fd uintptr) {
		var b [asyncEventDescSize]byte
		for {
			n, err := unix.Read(int(fd), b[:])
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				if err != unix.EAGAIN {
					rerr = err
				}
				return
			}
			ev, err := decodeAsyncEvent(b[:n])
			if err != nil {
				rerr = err
				return
			}
			out = append(out, ev)
		}
	})
	if err == nil {
		err = rerr
	}
	return out, err
}

// Close ends a Read in progress and closes the reader's fd.
func (a *AsyncEvents) Close() error { return a.f.Close() }

// Package nlsock is a netlink socket for short request/answer exchanges:
// blocking, so that waiting for the kernel is one recvmsg and nothing else.
package nlsock

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"time"
	"unsafe"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// blockingSock is a netlink.Socket on a blocking descriptor, so that
// waiting for the kernel's answer is one recvmsg and nothing else. netlink.Dial's socket is non-blocking on Go's
// netpoller, and each request re-armed its read deadline: at 128 devices
// (link show, 129 requests) the poller thread woke for every datagram and
// every timer change, and the scheduler's netpoll was 16% of the profile.
// The wait is bounded by SO_RCVTIMEO instead. Message framing, sequence
// and error checks stay netlink.Conn's. Event sockets (Listen) keep
// netlink.Dial: they block for long and must be interruptible by Close.
type blockingSock struct {
	fd  int
	buf []byte // one datagram; answers are copied out of it
	// recvmsg's arguments, kept here: unix.Recvmsg allocates a sockaddr
	// on every call, 385 times in a -dd link show at 128 devices.
	iov unix.Iovec
	msg unix.Msghdr
}

// netlink.Socket is deprecated as a testing seam that loses Conn features;
// the request socket uses none of them (deadlines, groups, options), and
// keeps Conn's framing, sequence checks and error decoding this way.
//
//lint:ignore SA1019 see above
var _ netlink.Socket = (*blockingSock)(nil)

// RecvBufSize is the one receive buffer of a socket for large dumps, so
// that each datagram is read with one recvmsg instead of a MSG_PEEK for its
// size and a read (at 128 devices, link show made 770 recvmsg for 129
// requests). The kernel caps a netlink datagram at 32 KiB (netlink_recvmsg
// bounds max_recvmsg_len by SKB_WITH_OVERHEAD(32768), and a dump skb is at
// most that); a larger one would be an error (truncated), never silently
// cut.
const RecvBufSize = 64 << 10

// SmallRecv is the receive length of a socket whose every answer fits in
// NLMSG_GOODSIZE, as RDMA netlink's do (its replies are
// nlmsg_new(NLMSG_DEFAULT_SIZE), its dumps ask no min_dump_alloc). The
// kernel sizes each dump datagram by the largest length recvmsg was ever
// given (netlink_dump allocates max_recvmsg_len, at most 32 KiB): with
// RecvBufSize every dump and every later part of one cost a 32 KiB skb
// from the page allocator, zeroed where init_on_alloc is on (Debian's
// default); at 128 rxe devices that was 14% of link show's CPU samples.
// 8192 minus the 320-byte skb_shared_info of x86-64 and arm64 gives an
// skb that fits the 8 KiB slab, and it is at least NLMSG_GOODSIZE on 4
// KiB, 16 KiB and 64 KiB pages alike, so nothing the kernel sends is cut.
const SmallRecv = 8192 - 320

// RecvTimeout bounds a silent kernel, so that a command never hangs: a
// wait longer than this is os.ErrDeadlineExceeded.
const RecvTimeout = 10 * time.Second

// Dial opens and binds a netlink socket of family and returns it as a
// netlink.Conn: Execute, Send and Receive work; deadlines, groups and
// options do not (use netlink.Dial for those). recvLen is the largest
// datagram it reads (SmallRecv or RecvBufSize); a larger one is an error.
func Dial(family, recvLen int) (*netlink.Conn, error) {
	s, err := Open(family, recvLen)
	if err != nil {
		return nil, err
	}
	return netlink.NewConn(s.s, s.pid), nil
}

// Socket is the same blocking socket without netlink.Conn, for a caller
// that reads the answers in place (nldev's batched requests: a datagram
// of answers walked without copying them into messages).
type Socket struct {
	s   *blockingSock
	pid uint32
	seq uint32
}

// Open opens and binds a netlink socket of family; recvLen as for Dial.
func Open(family, recvLen int) (*Socket, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, family)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	tv := unix.NsecToTimeval(RecvTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("setsockopt SO_RCVTIMEO", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("getsockname", err)
	}
	nsa, ok := sa.(*unix.SockaddrNetlink)
	if !ok {
		unix.Close(fd)
		return nil, errors.New("getsockname: not a netlink address")
	}
	return &Socket{s: &blockingSock{fd: fd, buf: make([]byte, recvLen)}, pid: nsa.Pid}, nil
}

// Request sends one request of type typ with flags and payload and
// returns its sequence number (answers carry it, and the socket's PID).
func (s *Socket) Request(typ, flags uint16, payload []byte) (seq uint32, err error) {
	s.seq++
	return s.seq, s.s.send(AppendMessage(nil, typ, flags, s.seq, s.pid, payload))
}

// AppendMessage appends to b one netlink message (struct nlmsghdr and
// payload), padded to 4 bytes.
func AppendMessage(b []byte, typ, flags uint16, seq, pid uint32, payload []byte) []byte {
	var h [16]byte
	binary.NativeEndian.PutUint32(h[0:], uint32(16+len(payload)))
	binary.NativeEndian.PutUint16(h[4:], typ)
	binary.NativeEndian.PutUint16(h[6:], flags)
	binary.NativeEndian.PutUint32(h[8:], seq)
	binary.NativeEndian.PutUint32(h[12:], pid)
	b = append(b, h[:]...)
	b = append(b, payload...)
	return append(b, make([]byte, align4(len(payload))-len(payload))...)
}

// RequestEach sends one request of type typ with flags per payload, all
// in one sendmsg, and returns the first one's sequence number (the others
// follow it). The kernel handles them in order before sendmsg returns and
// queues an answer for each, so the caller bounds how many it sends at
// once by what the receive buffer holds (SO_RCVBUF, at least 200 KiB on
// Linux's defaults); an overflow is ENOBUFS from Recv.
func (s *Socket) RequestEach(typ, flags uint16, payloads [][]byte) (first uint32, err error) {
	n := 0
	for _, p := range payloads {
		n += 16 + align4(len(p))
	}
	b := make([]byte, 0, n)
	first = s.seq + 1
	for _, p := range payloads {
		s.seq++
		b = AppendMessage(b, typ, flags, s.seq, s.pid, p)
	}
	return first, s.s.send(b)
}

// Conn is a netlink.Conn over the same socket, for exchanges that want
// its framing and checks; the caller does not interleave the two.
func (s *Socket) Conn() *netlink.Conn { return netlink.NewConn(s.s, s.pid) }

// Header is a netlink message header (struct nlmsghdr).
type Header struct {
	Type, Flags uint16
	Seq, PID    uint32
}

// Walk calls f with the header and body of each message of datagram b, in
// place, until f returns false. A length that runs past the datagram or
// below a header is an error, as netlink's own parser has it.
func Walk(b []byte, f func(h Header, body []byte) bool) error {
	const hdr = 16
	for len(b) >= hdr {
		l := int(binary.NativeEndian.Uint32(b))
		if l < hdr || l > len(b) {
			return errors.New("malformed netlink message: length out of range")
		}
		h := Header{
			Type: binary.NativeEndian.Uint16(b[4:]), Flags: binary.NativeEndian.Uint16(b[6:]),
			Seq: binary.NativeEndian.Uint32(b[8:]), PID: binary.NativeEndian.Uint32(b[12:]),
		}
		if !f(h, b[hdr:l]) {
			return nil
		}
		b = b[min(align4(l), len(b)):]
	}
	return nil
}

// Recv reads one datagram; the bytes are valid until the next Recv. A
// silent kernel is os.ErrDeadlineExceeded, a datagram longer than the
// receive length an error.
func (s *Socket) Recv() ([]byte, error) { return s.s.recv() }

// PID is the socket's netlink port ID, which answers carry.
func (s *Socket) PID() uint32 { return s.pid }

// Close closes the socket.
func (s *Socket) Close() error { return s.s.Close() }

func (s *blockingSock) Close() error { return unix.Close(s.fd) }

func (s *blockingSock) Send(m netlink.Message) error {
	return s.SendMessages([]netlink.Message{m})
}

func (s *blockingSock) SendMessages(ms []netlink.Message) error {
	var b []byte
	for _, m := range ms {
		mb, err := m.MarshalBinary()
		if err != nil {
			return err
		}
		b = append(b, mb...)
	}
	return s.send(b)
}

func (s *blockingSock) send(b []byte) error {
	for {
		err := unix.Sendto(s.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
		if err != unix.EINTR {
			return os.NewSyscallError("sendto", err)
		}
	}
}

func (s *blockingSock) Receive() ([]netlink.Message, error) {
	var out []netlink.Message
	for m, err := range s.ReceiveIter() {
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// ReceiveIter reads one datagram and yields its messages.
func (s *blockingSock) ReceiveIter() iter.Seq2[netlink.Message, error] {
	return func(yield func(netlink.Message, error) bool) {
		b, err := s.recv()
		if err != nil {
			yield(netlink.Message{}, err)
			return
		}
		msgs, err := splitDatagram(b)
		if err != nil {
			yield(netlink.Message{}, err)
			return
		}
		for _, m := range msgs {
			if !yield(m, nil) {
				return
			}
		}
	}
}

// recv reads one datagram into the receive buffer.
func (s *blockingSock) recv() ([]byte, error) {
	s.iov = unix.Iovec{Base: &s.buf[0]}
	s.iov.SetLen(len(s.buf))
	s.msg = unix.Msghdr{Iov: &s.iov}
	s.msg.SetIovlen(1)
	var n uintptr
	var err unix.Errno
	for {
		// A signal (Go's preemption among them) interrupts a recvmsg
		// that has a timeout instead of restarting it (signal(7)).
		n, _, err = unix.Syscall(unix.SYS_RECVMSG, uintptr(s.fd), uintptr(unsafe.Pointer(&s.msg)), 0)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.EAGAIN:
		return nil, os.ErrDeadlineExceeded // SO_RCVTIMEO ran out
	case err != 0:
		return nil, os.NewSyscallError("recvmsg", err)
	case s.msg.Flags&unix.MSG_TRUNC != 0:
		return nil, fmt.Errorf("netlink datagram larger than the %d-byte receive buffer", len(s.buf))
	}
	return s.buf[:n], nil
}

// splitDatagram copies the messages of one datagram out of the receive
// buffer. A header whose length runs past the datagram or below a header
// is an error, as netlink's own parser has it.
func splitDatagram(b []byte) ([]netlink.Message, error) {
	const hdr = 16
	own := make([]byte, align4(len(b)))
	copy(own, b)
	var out []netlink.Message
	for len(own) >= hdr {
		l := int(binary.NativeEndian.Uint32(own))
		if l < hdr || l > len(own) {
			return nil, errors.New("malformed netlink message: length out of range")
		}
		var m netlink.Message
		if err := m.UnmarshalBinary(own[:align4(l)]); err != nil {
			return nil, err
		}
		out = append(out, m)
		own = own[min(align4(l), len(own)):]
	}
	return out, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

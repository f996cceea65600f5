package nldev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Netlink header flags and message types (linux/netlink.h).
const (
	flagRequest = 0x1
	flagMulti   = 0x2
	flagDump    = 0x300 // NLM_F_ROOT|NLM_F_MATCH

	typeError = 2 // NLMSG_ERROR
	typeDone  = 3 // NLMSG_DONE

	hdrLen = 16 // struct nlmsghdr
)

// message is one netlink message; Data is the payload after nlmsghdr.
type message struct {
	Type  uint16
	Flags uint16
	Seq   uint32
	PID   uint32
	Data  []byte
}

// conn is the transport: send one request, collect its answers until the
// end of a dump (or the single answer of a non-dump request). A kernel
// error comes back as a syscall.Errno.
type conn interface {
	Execute(req message) ([]message, error)
	Close() error
}

// recvTimeout bounds a silent kernel, so that a command never hangs.
const recvTimeout = 10 * time.Second

type sockConn struct {
	fd  int
	buf []byte
}

func dialSocket() (*sockConn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, familyRDMA)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("bind", err)
	}
	tv := unix.NsecToTimeval(recvTimeout.Nanoseconds())
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	// Dump answers are at most a page or two per message (NLMSG_GOODSIZE);
	// 64 KiB holds any batch the kernel sends in one datagram.
	return &sockConn{fd: fd, buf: make([]byte, 1<<16)}, nil
}

func (s *sockConn) Close() error { return unix.Close(s.fd) }

func (s *sockConn) Execute(req message) ([]message, error) {
	b := make([]byte, hdrLen, hdrLen+len(req.Data))
	binary.NativeEndian.PutUint32(b[0:], uint32(hdrLen+len(req.Data)))
	binary.NativeEndian.PutUint16(b[4:], req.Type)
	binary.NativeEndian.PutUint16(b[6:], req.Flags)
	binary.NativeEndian.PutUint32(b[8:], req.Seq)
	b = append(b, req.Data...)
	if err := unix.Sendto(s.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, os.NewSyscallError("sendto", err)
	}
	dump := req.Flags&flagDump == flagDump
	var out []message
	for {
		n, _, err := unix.Recvfrom(s.fd, s.buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err == unix.EAGAIN {
			return nil, fmt.Errorf("no answer from the kernel within %v", recvTimeout)
		}
		if err != nil {
			return nil, os.NewSyscallError("recvfrom", err)
		}
		msgs, err := parseMessages(s.buf[:n])
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if m.Seq != req.Seq {
				continue // a stale answer to an earlier request
			}
			switch m.Type {
			case typeDone:
				// A dump that failed in the kernel ends with NLMSG_DONE
				// carrying the negative errno (netlink_dump_done), not
				// with NLMSG_ERROR: without this check an EINVAL dump
				// looks like an empty table.
				if len(m.Data) >= 4 {
					if e := int32(binary.NativeEndian.Uint32(m.Data)); e < 0 {
						return nil, syscall.Errno(-e)
					}
				}
				return out, nil
			case typeError:
				if len(m.Data) < 4 {
					return nil, errors.New("truncated NLMSG_ERROR")
				}
				if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
					return nil, syscall.Errno(-e)
				}
				return out, nil // an ACK
			}
			// Copy: s.buf is reused by the next read.
			m.Data = append([]byte(nil), m.Data...)
			out = append(out, m)
			if !dump && m.Flags&flagMulti == 0 {
				return out, nil
			}
		}
	}
}

// parseMessages splits one datagram into netlink messages.
func parseMessages(b []byte) ([]message, error) {
	var out []message
	for len(b) >= hdrLen {
		l := int(binary.NativeEndian.Uint32(b))
		if l < hdrLen || l > len(b) {
			return nil, fmt.Errorf("malformed netlink message (length %d of %d bytes)", l, len(b))
		}
		out = append(out, message{
			Type:  binary.NativeEndian.Uint16(b[4:]),
			Flags: binary.NativeEndian.Uint16(b[6:]),
			Seq:   binary.NativeEndian.Uint32(b[8:]),
			PID:   binary.NativeEndian.Uint32(b[12:]),
			Data:  b[hdrLen:l],
		})
		al := (l + 3) &^ 3
		if al > len(b) {
			break
		}
		b = b[al:]
	}
	return out, nil
}

// Package netdev asks the kernel for a netdev's facts by name, through
// the classic socket ioctls (netdevice(7)): what rdmactl wants of a few
// netdevs among possibly thousands (a RoCE port's netdev MTU) costs one
// ioctl each, where a link dump would make the kernel describe every link
// of the namespace.
package netdev

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Socket is a datagram socket for the ioctls, in the network namespace of
// whoever opened it (names are looked up there). Safe for concurrent use.
type Socket struct {
	fd int
}

// Open opens a Socket. AF_UNIX: every kernel has it, and its ioctl hands
// the netdev requests to the core (sock_do_ioctl -> dev_ioctl).
func Open() (*Socket, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netdev: socket: %w", err)
	}
	return &Socket{fd: fd}, nil
}

// Close closes the socket.
func (s *Socket) Close() error { return unix.Close(s.fd) }

// ErrNoDevice is a name the namespace has no netdev of (ENODEV).
var ErrNoDevice = errors.New("no such netdev")

// MTU is netdev name's MTU (SIOCGIFMTU).
func (s *Socket) MTU(name string) (uint32, error) {
	ifr, err := unix.NewIfreq(name) // rejects names too long for IFNAMSIZ
	if err != nil {
		return 0, fmt.Errorf("netdev %q: %w", name, err)
	}
	for {
		err = unix.IoctlIfreq(s.fd, unix.SIOCGIFMTU, ifr)
		if err != unix.EINTR {
			break
		}
	}
	switch {
	case err == unix.ENODEV:
		return 0, fmt.Errorf("netdev %q: %w", name, ErrNoDevice)
	case err != nil:
		return 0, fmt.Errorf("netdev %q: SIOCGIFMTU: %w", name, err)
	}
	return ifr.Uint32(), nil
}

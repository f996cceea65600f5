package nldev

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
	"github.com/rdmactl/rdmactl/internal/nlsock"
)

// Netlink header flags (linux/netlink.h), as NLDEV requests use them.
const (
	flagRequest = uint16(netlink.Request)
	flagDump    = uint16(netlink.Dump) // NLM_F_ROOT|NLM_F_MATCH
)

// recvTimeout bounds a silent kernel (the socket's SO_RCVTIMEO).
const recvTimeout = nlsock.RecvTimeout

// dialConn opens the NETLINK_RDMA socket for events, on Go's netpoller:
// Close must interrupt a Receive waiting for the next one. Message
// framing, sequence checks, multi-part dumps and kernel error codes
// (NLMSG_ERROR, and the errno a failed dump puts in its NLMSG_DONE) are
// mdlayher/netlink's job.
func dialConn() (*netlink.Conn, error) {
	c, err := netlink.Dial(familyRDMA, &netlink.Config{MessageBufferSize: nlsock.RecvBufSize})
	if err != nil {
		return nil, dialErr(err)
	}
	return c, nil
}

// dialSocket opens the NETLINK_RDMA socket for requests: blocking
// (internal/nlsock), read through netlink.Conn for single requests and
// in place for batches (each).
func dialSocket() (*nlsock.Socket, error) {
	s, err := nlsock.Open(familyRDMA, nlsock.SmallRecv)
	if err != nil {
		return nil, dialErr(err)
	}
	return s, nil
}

func dialErr(err error) error {
	if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.EAFNOSUPPORT) {
		return fmt.Errorf("%w: %v", ErrNoRDMA, err)
	}
	return fmt.Errorf("open NETLINK_RDMA socket: %w", err)
}

// execute sends one request and returns its answers (a dump's answers
// until NLMSG_DONE). A kernel silent for recvTimeout is an error (the
// socket's SO_RCVTIMEO); in-memory test connections (nltest) never wait.
func execute(c *netlink.Conn, typ, flags uint16, attrs []byte) ([]netlink.Message, error) {
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(typ), Flags: netlink.HeaderFlags(flags)},
		Data:   attrs,
	})
	if err != nil {
		return nil, timeoutErr(err)
	}
	return msgs, nil
}

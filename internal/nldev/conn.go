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

// dialConn opens the NETLINK_RDMA socket: blocking for requests
// (internal/nlsock), on Go's netpoller for events, whose Close must interrupt
// a Receive waiting for the next one. Message framing, sequence checks,
// multi-part dumps and kernel error codes (NLMSG_ERROR, and the errno a
// failed dump puts in its NLMSG_DONE) are mdlayher/netlink's job.
func dialConn(events bool) (*netlink.Conn, error) {
	var c *netlink.Conn
	var err error
	if events {
		c, err = netlink.Dial(familyRDMA, &netlink.Config{MessageBufferSize: nlsock.RecvBufSize})
	} else {
		c, err = nlsock.Dial(familyRDMA, nlsock.SmallRecv)
	}
	if err != nil {
		if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.EAFNOSUPPORT) {
			return nil, fmt.Errorf("%w: %v", ErrNoRDMA, err)
		}
		return nil, fmt.Errorf("open NETLINK_RDMA socket: %w", err)
	}
	return c, nil
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

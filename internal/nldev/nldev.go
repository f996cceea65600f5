// Package nldev is a small client of the kernel's RDMA netlink device
// interface (NLDEV): the protocol iproute2's rdma tool speaks. It lists
// devices, ports, resources (QPs, CQs, MRs, PDs, CM IDs, contexts, SRQs),
// port statistics, the uverbs char device of a device and the system
// settings, as typed values.
//
// Wire format (include/uapi/rdma/rdma_netlink.h): socket family
// NETLINK_RDMA (20); nlmsg_type = RDMA_NL_NLDEV (5) << 10 | command; no
// generic-netlink header, the payload is directly a list of netlink
// attributes (nested tables for resources).
//
// Decoding is tolerant: an attribute with the wrong length for its type
// leaves that field missing (nil pointer or "") and the rest of the message
// still decodes; a truncated attribute list stops at the damage. Nothing
// the kernel (or a fuzzer) sends makes a decoder panic.
//
// The transport is github.com/mdlayher/netlink (tests dial an in-memory
// kernel with its nltest package). Attribute decoding is our own (attr.go)
// rather than netlink.AttributeDecoder, because a malformed attribute must
// leave only that field missing, not fail the whole message.
package nldev

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"
	"github.com/rdmactl/rdmactl/internal/nlsock"
)

// NETLINK_RDMA, the netlink family of the RDMA subsystem.
const familyRDMA = 20

// rdmaNLNLDEV is RDMA_NL_NLDEV, the NLDEV client of NETLINK_RDMA.
const rdmaNLNLDEV = 5

// msgType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op).
func msgType(op uint16) uint16 { return rdmaNLNLDEV<<10 | op }

// NLDEV commands (enum rdma_nldev_command).
const (
	cmdGet        = 1  // RDMA_NLDEV_CMD_GET, can dump
	cmdPortGet    = 5  // RDMA_NLDEV_CMD_PORT_GET, dump needs DEV_INDEX
	cmdSysGet     = 6  // RDMA_NLDEV_CMD_SYS_GET
	cmdResGet     = 9  // RDMA_NLDEV_CMD_RES_GET, summary, can dump
	cmdResQPGet   = 10 // RDMA_NLDEV_CMD_RES_QP_GET
	cmdResCMIDGet = 11 // RDMA_NLDEV_CMD_RES_CM_ID_GET
	cmdResCQGet   = 12 // RDMA_NLDEV_CMD_RES_CQ_GET
	cmdResMRGet   = 13 // RDMA_NLDEV_CMD_RES_MR_GET
	cmdResPDGet   = 14 // RDMA_NLDEV_CMD_RES_PD_GET
	cmdGetChardev = 15 // RDMA_NLDEV_CMD_GET_CHARDEV
	cmdStatGet    = 17 // RDMA_NLDEV_CMD_STAT_GET
	cmdResCtxGet  = 22 // RDMA_NLDEV_CMD_RES_CTX_GET
	cmdResSRQGet  = 23 // RDMA_NLDEV_CMD_RES_SRQ_GET
)

// NLDEV attributes (enum rdma_nldev_attr; comments give the kernel's type).
const (
	attrDevIndex           = 1  // u32
	attrDevName            = 2  // string
	attrPortIndex          = 3  // u32 (in CMD_GET: number of ports)
	attrCapFlags           = 4  // u64
	attrFWVersion          = 5  // string
	attrNodeGUID           = 6  // u64
	attrSysImageGUID       = 7  // u64
	attrSubnetPrefix       = 8  // u64
	attrLID                = 9  // u32
	attrSMLID              = 10 // u32
	attrLMC                = 11 // u8
	attrPortState          = 12 // u8
	attrPortPhysState      = 13 // u8
	attrDevNodeType        = 14 // u8
	attrResSummary         = 15 // nested
	attrResSummaryEntry    = 16 // nested
	attrResSummaryName     = 17 // string
	attrResSummaryCurr     = 18 // u64
	attrResQP              = 19 // nested
	attrResQPEntry         = 20 // nested
	attrResLQPN            = 21 // u32
	attrResRQPN            = 22 // u32
	attrResRQPSN           = 23 // u32
	attrResSQPSN           = 24 // u32
	attrResPathMigState    = 25 // u8
	attrResType            = 26 // u8
	attrResState           = 27 // u8
	attrResPID             = 28 // u32
	attrResKernName        = 29 // string
	attrResCMID            = 30 // nested
	attrResCMIDEntry       = 31 // nested
	attrResPS              = 32 // u32
	attrResSrcAddr         = 33 // __kernel_sockaddr_storage
	attrResDstAddr         = 34 // __kernel_sockaddr_storage
	attrResCQ              = 35 // nested
	attrResCQEntry         = 36 // nested
	attrResCQE             = 37 // u32
	attrResUseCnt          = 38 // u64
	attrResPollCtx         = 39 // u8
	attrResMR              = 40 // nested
	attrResMREntry         = 41 // nested
	attrResRKey            = 42 // u32
	attrResLKey            = 43 // u32
	attrResIOVA            = 44 // u64
	attrResMRLen           = 45 // u64
	attrResPD              = 46 // nested
	attrResPDEntry         = 47 // nested
	attrResLocalDMALKey    = 48 // u32
	attrResUnsafeGlobRKey  = 49 // u32
	attrNdevIndex          = 50 // u32
	attrNdevName           = 51 // string
	attrResPDN             = 60 // u32
	attrResCQN             = 61 // u32
	attrResMRN             = 62 // u32
	attrResCMIDN           = 63 // u32
	attrResCtxN            = 64 // u32
	attrSysNetnsMode       = 66 // u8
	attrDevProtocol        = 67 // string
	attrChardevType        = 69 // string
	attrChardevName        = 70 // string
	attrChardevABI         = 71 // u64
	attrChardev            = 72 // u64 (huge_encode_dev)
	attrUverbsDriverID     = 73 // u64 in the header, put as u32 by ib_uverbs
	attrStatHWCounters     = 80 // nested
	attrStatHWCounterEntry = 81 // nested
	attrStatHWCounterName  = 82 // string
	attrStatHWCounterValue = 83 // u64
	attrDevDIM             = 84 // u8
	attrResCtx             = 86 // nested
	attrResCtxEntry        = 87 // nested
	attrResSRQ             = 88 // nested
	attrResSRQEntry        = 89 // nested
	attrResSRQN            = 90 // u32
	attrMinRange           = 91 // u32
	attrMaxRange           = 92 // u32
	attrSysCopyOnFork      = 93 // u8
	attrSysPrivQKeyMode    = 96 // u8 (mainline 6.5+; some stable kernels, Debian 6.1 among them)
)

// ErrNoRDMA means the NETLINK_RDMA socket cannot be opened: the kernel has
// no RDMA core (ib_core not loaded or not built).
var ErrNoRDMA = errors.New("this kernel has no RDMA netlink (NETLINK_RDMA socket refused; is ib_core loaded?)")

// Client talks NLDEV over one netlink socket. It is not safe for
// concurrent use.
type Client struct {
	c             *netlink.Conn
	raw           *nlsock.Socket // c's socket where Dial made it (batches), else nil
	driverDetails bool           // resource dumps ask for driver details (SetDriverDetails)
	dialed        bool           // made by Dial, so Fork can open another like it
}

// SetDriverDetails makes resource dumps ask for the driver's details, as
// rdma -dd does (RDMA_NLDEV_ATTR_DRIVER_DETAILS): kernels from 6.9 on then
// also list objects only the driver knows. The DRIVER tables themselves
// come whether asked or not.
func (c *Client) SetDriverDetails(on bool) { c.driverDetails = on }

// Dial opens a NETLINK_RDMA socket. A kernel without RDMA gives an error
// matching ErrNoRDMA.
func Dial() (*Client, error) {
	s, err := dialSocket()
	if err != nil {
		return nil, err
	}
	return &Client{c: s.Conn(), raw: s, dialed: true}, nil
}

// ErrNoFork: Fork of a client over a connection the caller supplied.
var ErrNoFork = errors.New("nldev: Fork needs a client made by Dial")

// Fork opens another socket like c's, for requests in parallel with c's
// (a Client serves one goroutine). Only a client made by Dial can: one
// over a caller's connection (NewClient, nltest fakes) gives ErrNoFork.
func (c *Client) Fork() (*Client, error) {
	if !c.dialed {
		return nil, ErrNoFork
	}
	n, err := Dial()
	if err != nil {
		return nil, err
	}
	n.driverDetails = c.driverDetails
	return n, nil
}

// NewClient talks NLDEV over c: a socket the caller opened, or an nltest
// fake in another package's tests.
func NewClient(c *netlink.Conn) *Client { return &Client{c: c} }

// Close releases the socket.
func (c *Client) Close() error { return c.c.Close() }

// KernelError is an error the kernel returned for a request (the errno of
// an NLMSG_ERROR), with the command it answered.
type KernelError struct {
	Op    string
	Errno syscall.Errno
}

func (e *KernelError) Error() string { return fmt.Sprintf("netlink %s: %v", e.Op, e.Errno) }
func (e *KernelError) Unwrap() error { return e.Errno }

var opNames = map[uint16]string{
	cmdGet: "GET", cmdPortGet: "PORT_GET", cmdSysGet: "SYS_GET", cmdResGet: "RES_GET",
	cmdResQPGet: "RES_QP_GET", cmdResCMIDGet: "RES_CM_ID_GET", cmdResCQGet: "RES_CQ_GET",
	cmdResMRGet: "RES_MR_GET", cmdResPDGet: "RES_PD_GET", cmdGetChardev: "GET_CHARDEV",
	cmdStatGet: "STAT_GET", cmdResCtxGet: "RES_CTX_GET", cmdResSRQGet: "RES_SRQ_GET",
	cmdResQPGetRaw: "RES_QP_GET_RAW", cmdResCQGetRaw: "RES_CQ_GET_RAW", cmdResMRGetRaw: "RES_MR_GET_RAW",
	cmdResSRQGetRaw: "RES_SRQ_GET_RAW",
	// The writes (write.go).
	cmdSet: "SET", cmdNewLink: "NEWLINK", cmdDelLink: "DELLINK", cmdSysSet: "SYS_SET",
	cmdStatSet: "STAT_SET", cmdStatDel: "STAT_DEL", cmdStatGetStatus: "STAT_GET_STATUS",
}

// exchange is execute with a kernel's errno as a *KernelError naming op.
func (c *Client) exchange(op, flags uint16, attrs []byte) ([]netlink.Message, error) {
	msgs, err := execute(c.c, msgType(op), flags, attrs)
	if err != nil {
		var en syscall.Errno
		if errors.As(err, &en) {
			return nil, &KernelError{Op: opNames[op], Errno: en}
		}
		return nil, fmt.Errorf("netlink %s: %w", opNames[op], err)
	}
	return msgs, nil
}

// do sends one request and returns the attribute payloads of the answers.
func (c *Client) do(op uint16, dump bool, attrs []byte) ([][]byte, error) {
	flags := flagRequest
	if dump {
		flags |= flagDump
	}
	msgs, err := c.exchange(op, flags, attrs)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(msgs))
	for _, m := range msgs {
		if uint16(m.Header.Type) != msgType(op) {
			continue // not an NLDEV answer to this op; ignore it
		}
		out = append(out, m.Data)
	}
	return out, nil
}

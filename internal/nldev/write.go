package nldev

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/mdlayher/netlink"
)

// Writes: the NLDEV commands that change the system. The kernel requires
// CAP_NET_ADMIN for each (RDMA_NL_ADMIN_PERM in nldev.c's table) and
// answers EPERM without it. Each request carries the attributes, in the
// order and with the flags (NLM_F_REQUEST|NLM_F_ACK), that iproute2's rdma
// sends for the same command line, so that the kernel sees the same
// request from both tools (the VM tests compare them byte for byte).

// NLDEV commands of the writes (enum rdma_nldev_command).
const (
	cmdSet           = 2  // RDMA_NLDEV_CMD_SET: rename, netns, DIM
	cmdNewLink       = 3  // RDMA_NLDEV_CMD_NEWLINK
	cmdDelLink       = 4  // RDMA_NLDEV_CMD_DELLINK
	cmdSysSet        = 7  // RDMA_NLDEV_CMD_SYS_SET
	cmdStatSet       = 16 // RDMA_NLDEV_CMD_STAT_SET
	cmdStatDel       = 18 // RDMA_NLDEV_CMD_STAT_DEL
	cmdStatGetStatus = 24 // RDMA_NLDEV_CMD_STAT_GET_STATUS (5.18+)
)

// Attributes of the writes and of the counter commands (enum
// rdma_nldev_attr).
const (
	attrLinkType           = 65 // string: "rxe", "siw"
	attrNetNSFD            = 68 // u32
	attrStatMode           = 74 // u32, enum rdma_nl_counter_mode
	attrStatRes            = 75 // u32, the RES_* attribute of the object (RES_QP, RES_MR)
	attrStatAutoModeMask   = 76 // u32, enum rdma_nl_counter_mask
	attrStatCounter        = 77 // nested table
	attrStatCounterEntry   = 78 // nested
	attrStatCounterID      = 79 // u32
	attrStatHWCounterIndex = 94 // u32
	attrStatHWCounterDyn   = 95 // u8: optional counter, enabled or not
	attrStatOpCounterOn    = 103
)

// NLA_F_NESTED: libmnl's mnl_attr_nest_start sets it on nested attributes
// of requests; the kernel accepts either.
const nlaFNested = 0x8000

// doAck sends one request with NLM_F_ACK, as rdma does, and returns the
// NLDEV answers that came before the acknowledgement. Commands that
// answer (STAT_SET, STAT_GET) send their answer and then the ack in two
// datagrams; reading up to the ack leaves nothing behind on the socket
// for the next request.
func (c *Client) doAck(op uint16, attrs []byte) ([][]byte, error) {
	wrap := func(err error) error {
		var en syscall.Errno
		if errors.As(err, &en) {
			return &KernelError{Op: opNames[op], Errno: en}
		}
		return fmt.Errorf("netlink %s: %w", opNames[op], err)
	}
	req, err := c.c.Send(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(msgType(op)), Flags: netlink.Request | netlink.Acknowledge},
		Data:   attrs,
	})
	if err != nil {
		return nil, wrap(err)
	}
	var out [][]byte
	for range 64 { // a bound: an ack never comes after more than a few answers
		msgs, err := c.c.Receive()
		if err != nil {
			return nil, wrap(timeoutErr(err))
		}
		for _, m := range msgs {
			if m.Header.Sequence != req.Header.Sequence {
				continue // a stale answer of an earlier request
			}
			if m.Header.Type == netlink.Error {
				return out, nil // the ack (an error would have been returned by Receive)
			}
			if uint16(m.Header.Type) == msgType(op) {
				out = append(out, m.Data)
			}
		}
	}
	return nil, wrap(errors.New("no acknowledgement from the kernel"))
}

// NewLink creates a software RDMA device: "rdma link add NAME type TYPE
// netdev NETDEV". The kernel loads rdma-link-TYPE on demand; an unknown
// type is EINVAL, an unknown netdev ENODEV, a netdev that already has a
// device of that type EEXIST.
func (c *Client) NewLink(name, typ, netdev string) error {
	var e encoder
	e.str(attrDevName, name)
	e.str(attrLinkType, typ)
	e.str(attrNdevName, netdev)
	_, err := c.doAck(cmdNewLink, e.b)
	return err
}

// DelLink unregisters a software device (the kernel refuses, EINVAL,
// devices without IBK_ALLOW_USER_UNREG: everything but rxe and siw).
func (c *Client) DelLink(dev uint32) error {
	var e encoder
	e.u32(attrDevIndex, dev)
	_, err := c.doAck(cmdDelLink, e.b)
	return err
}

// Rename renames a device (EEXIST when the name is taken).
func (c *Client) Rename(dev uint32, name string) error {
	return c.setDev(dev, func(e *encoder) { e.str(attrDevName, name) })
}

// setDev sends RDMA_NLDEV_CMD_SET for device dev with the attributes add
// puts after its index.
func (c *Client) setDev(dev uint32, add func(e *encoder)) error {
	var e encoder
	e.u32(attrDevIndex, dev)
	add(&e)
	_, err := c.doAck(cmdSet, e.b)
	return err
}

// SetNetns moves a device to the network namespace open at nsFD. The
// kernel refuses (EOPNOTSUPP) in shared netns mode and for drivers that
// cannot disassociate user contexts (rxe, siw).
func (c *Client) SetNetns(dev uint32, nsFD int) error {
	return c.setDev(dev, func(e *encoder) { e.u32(attrNetNSFD, uint32(nsFD)) })
}

// SetDIM turns adaptive interrupt moderation of the device's kernel CQs
// on or off.
func (c *Client) SetDIM(dev uint32, on bool) error {
	return c.setDev(dev, func(e *encoder) { e.u8(attrDevDIM, b2u8(on)) })
}

// SetNetnsMode sets the subsystem's netns mode: shared (devices visible
// in every namespace) or exclusive. The kernel answers EBUSY while any
// network namespace besides init_net exists.
func (c *Client) SetNetnsMode(shared bool) error {
	var e encoder
	e.u8(attrSysNetnsMode, b2u8(shared))
	_, err := c.doAck(cmdSysSet, e.b)
	return err
}

// SetPrivilegedQKey lets unprivileged processes use the privileged Q_Key
// (or not). Kernels without the setting (System().PrivilegedQKey nil)
// refuse the attribute with EINVAL.
func (c *Client) SetPrivilegedQKey(on bool) error {
	var e encoder
	e.u8(attrSysPrivQKeyMode, b2u8(on))
	_, err := c.doAck(cmdSysSet, e.b)
	return err
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

func timeoutErr(err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("no answer from the kernel within %v", recvTimeout)
	}
	return err
}

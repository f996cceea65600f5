package nldev

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/mdlayher/netlink"

	"github.com/rdmactl/rdmactl/internal/kfeat"
)

// Notifications: since Linux 6.12 the kernel multicasts an NLDEV message
// (type RDMA_NLDEV_CMD_MONITOR, attribute EVENT_TYPE) to the netlink
// group RDMA_NL_GROUP_NOTIFY when a device registers or unregisters and
// when a port's netdev is attached or detached; 6.13 adds device and
// netdev renames. Port state changes are never sent. (drivers/infiniband/
// core/nldev.c rdma_nl_notify_event; device.c sends them.)
//
// Joining the group cannot tell whether the kernel sends anything: every
// kernel accepts the groups up to 32. What tells is SYS_GET, whose answer
// has RDMA_NLDEV_SYS_ATTR_MONITOR_MODE = 1 exactly on the kernels that
// send events (the same series added both; iproute2's rdma monitor asks
// the same way).

const (
	groupNotify        = 4   // RDMA_NL_GROUP_NOTIFY
	cmdMonitor         = 28  // RDMA_NLDEV_CMD_MONITOR: the type of event messages
	attrEventType      = 102 // RDMA_NLDEV_ATTR_EVENT_TYPE, u8
	attrSysMonitorMode = 103 // RDMA_NLDEV_SYS_ATTR_MONITOR_MODE, u8
)

// NotifyType is enum rdma_nl_notify_event_type.
type NotifyType uint8

// The event types the kernel sends.
const (
	NotifyRegister     NotifyType = 0 // device index, name
	NotifyUnregister   NotifyType = 1 // device index, name
	NotifyNetdevAttach NotifyType = 2 // device, port, netdev index and name
	NotifyNetdevDetach NotifyType = 3 // device, port (the netdev is gone already)
	NotifyRename       NotifyType = 4 // device index, new name (6.13+)
	NotifyNetdevRename NotifyType = 5 // device, port, netdev index and new name (6.13+)
)

var notifyNames = []string{"REGISTER", "UNREGISTER", "NETDEV_ATTACH", "NETDEV_DETACH", "RENAME", "NETDEV_RENAME"}

func (t NotifyType) String() string {
	if int(t) < len(notifyNames) {
		return notifyNames[t]
	}
	return fmt.Sprintf("UNKNOWN(%d)", uint8(t))
}

// Notification is one event message of the notify group.
type Notification struct {
	Type        NotifyType
	DevIndex    uint32
	DevName     string  // the name now (the new one for RENAME)
	Port        *uint32 // netdev events only
	NetdevIndex *uint32 // ATTACH, NETDEV_RENAME
	NetdevName  string
}

// DecodeNotification decodes the payload of a message of type typ. A
// message that is not an event, or has no event type or device index, is
// an error; an event type this code does not know decodes (the caller
// decides), as do missing optional attributes.
func DecodeNotification(typ uint16, b []byte) (Notification, error) {
	if typ != msgType(cmdMonitor) {
		return Notification{}, fmt.Errorf("netlink message type %#x is not an NLDEV event", typ)
	}
	a := parseAttrs(b)
	et := a.u8(attrEventType)
	idx := a.u32(attrDevIndex)
	if et == nil || idx == nil {
		return Notification{}, errors.New("NLDEV event without event type or device index")
	}
	return Notification{Type: NotifyType(*et), DevIndex: *idx, DevName: a.str(attrDevName), Port: a.u32(attrPortIndex),
		NetdevIndex: a.u32(attrNdevIndex), NetdevName: a.str(attrNdevName)}, nil
}

// ErrNoNotify: the kernel sends no NLDEV events (before 6.12), or
// kfeat.NLDEVNotify is forced absent.
var ErrNoNotify = errors.New("this kernel sends no RDMA device events (RDMA netlink notify group, Linux 6.12+)")

// Notifies reports whether the kernel sends NLDEV events, probed once per
// process (kfeat.NLDEVNotify) with a SYS_GET.
func (c *Client) Notifies() bool {
	sys := kfeat.Worth(kfeat.NLDEVSystem) // not inside the probe: kfeat holds its lock there
	return kfeat.Has(kfeat.NLDEVNotify, func() (bool, string) {
		if !sys {
			return false, "needs " + kfeat.NLDEVSystem
		}
		msgs, err := c.do(cmdSysGet, false, nil)
		if err != nil {
			return false, "SYS_GET: " + errName(err)
		}
		for _, m := range msgs {
			if v := parseAttrs(m).u8(attrSysMonitorMode); v != nil {
				return *v != 0, fmt.Sprintf("SYS_GET: MONITOR_MODE %d", *v)
			}
		}
		return false, "SYS_GET has no MONITOR_MODE"
	})
}

// ErrEventsLost: the socket's buffer overflowed (ENOBUFS) and the kernel
// dropped events; the listener keeps working.
var ErrEventsLost = errors.New("RDMA netlink events were lost (socket buffer overrun)")

// Listener receives the kernel's NLDEV events on a socket of its own (a
// request socket joined to the group would find events among answers).
type Listener struct {
	c *netlink.Conn
}

// Listen joins the notify group. It does not ask whether the kernel sends
// anything (Notifies does).
func Listen() (*Listener, error) {
	c, err := dialConn()
	if err != nil {
		return nil, err
	}
	if err := c.JoinGroup(groupNotify); err != nil {
		c.Close()
		return nil, fmt.Errorf("join the RDMA netlink notify group: %w", err)
	}
	return &Listener{c: c}, nil
}

// NewListener receives events on c (tests: an nltest fake).
func NewListener(c *netlink.Conn) *Listener { return &Listener{c: c} }

// Receive blocks until events arrive and returns them in the kernel's
// order. Messages that are not events are skipped; ENOBUFS is
// ErrEventsLost; after Close it returns an error.
func (l *Listener) Receive() ([]Notification, error) {
	msgs, err := l.c.Receive()
	if err != nil {
		if errors.Is(err, syscall.ENOBUFS) {
			return nil, ErrEventsLost
		}
		return nil, fmt.Errorf("receive RDMA netlink events: %w", err)
	}
	var out []Notification
	for _, m := range msgs {
		n, err := DecodeNotification(uint16(m.Header.Type), m.Data)
		if err != nil {
			continue
		}
		out = append(out, n)
	}
	return out, nil
}

// Close leaves the group; a Receive blocked in another goroutine returns.
func (l *Listener) Close() error { return l.c.Close() }

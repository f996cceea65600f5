package nldev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/nlsock"
)

// batchMax bounds the requests of one sendmsg. The kernel queues all their
// answers before sendmsg returns; an NLDEV answer is one
// nlmsg_new(NLMSG_DEFAULT_SIZE) skb, at most about 8.5 KiB of receive
// buffer before netlink trims it, so 16 stay well inside the default
// SO_RCVBUF (208 KiB). A smaller buffer that overflows costs a resync and
// errors for the lost answers (each), never wrong answers.
const batchMax = 16

// errLost is the answer of a request whose answer the kernel dropped
// (receive buffer overrun).
var errLost = errors.New("answer lost (netlink receive buffer overrun)")

// each sends request op once per payload of reqs (not dumps) and calls
// f(k, body, nil) with the answer to reqs[k], or f(k, nil, err), for every
// k in order. On a socket of its own (Dial) up to batchMax requests go in
// one sendmsg and their answers are read in place: at 128 rxe devices 128
// PORT_GET dumps took 13.5 ms where these took 4.1 (a dump costs the
// kernel a dump context and the client a second datagram for its
// NLMSG_DONE; a request each costs a sendmsg). A client over a caller's
// connection (NewClient, nltest fakes) asks one at a time.
func (c *Client) each(op uint16, reqs [][]byte, f func(k int, body []byte, err error)) {
	if c.raw == nil {
		for k, r := range reqs {
			b, err := c.one(op, r)
			f(k, b, err)
		}
		return
	}
	for lo := 0; lo < len(reqs); lo += batchMax {
		hi := min(lo+batchMax, len(reqs))
		c.batch(op, reqs[lo:hi], func(k int, b []byte, err error) { f(lo+k, b, err) })
	}
}

// one is one request through netlink.Conn: its first NLDEV answer.
func (c *Client) one(op uint16, req []byte) ([]byte, error) {
	msgs, err := c.exchange(op, flagRequest, req)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		if isNLDEV(uint16(m.Header.Type)) {
			return m.Data, nil
		}
	}
	return nil, fmt.Errorf("netlink %s: no answer", opNames[op])
}

// batch is one sendmsg of each. The kernel answers in order: an answer
// or an NLMSG_ERROR per request (no acknowledgement is asked for).
func (c *Client) batch(op uint16, reqs [][]byte, f func(k int, body []byte, err error)) {
	name := opNames[op]
	next := 0 // the first request not answered yet
	fail := func(err error) {
		for ; next < len(reqs); next++ {
			f(next, nil, err)
		}
	}
	first, err := c.raw.RequestEach(msgType(op), flagRequest, reqs)
	if err != nil {
		fail(fmt.Errorf("netlink %s: %w", name, err))
		return
	}
	pid := c.raw.PID()
	for next < len(reqs) {
		b, err := c.raw.Recv()
		if err == nil {
			err = answers(b, op, pid, first, len(reqs), &next, f)
		}
		if err != nil {
			fail(fmt.Errorf("netlink %s: %w", name, timeoutErr(err)))
			c.resync()
			return
		}
	}
}

// isNLDEV: typ is an NLDEV message. An answer's type need not be its
// request's: the kernel answers a PORT_GET for one port with type GET
// (nldev_port_get_doit, every kernel since 4.16).
func isNLDEV(typ uint16) bool { return typ>>10 == rdmaNLNLDEV }

// answers hands the messages of datagram b that answer requests first ..
// first+n-1 of port pid to f, from request *next on, and advances *next
// past each answered one. An answer is an NLDEV message (isNLDEV) or an
// NLMSG_ERROR with an errno; acknowledgements, other exchanges' and stale
// messages are skipped. The kernel answers in order, so an answer to a
// later request means the ones between were lost: f gets errLost for them.
func answers(b []byte, op uint16, pid, first uint32, n int, next *int, f func(k int, body []byte, err error)) error {
	name := opNames[op]
	return nlsock.Walk(b, func(h nlsock.Header, body []byte) bool {
		k := h.Seq - first
		if h.PID != pid || k >= uint32(n) || int(k) < *next {
			return true
		}
		var errno int32
		switch {
		case isNLDEV(h.Type):
		case h.Type == unix.NLMSG_ERROR:
			if len(body) >= 4 {
				errno = int32(binary.NativeEndian.Uint32(body))
			}
			if errno >= 0 {
				return true // an acknowledgement, not an answer
			}
		default:
			return true
		}
		for ; *next < int(k); *next++ {
			f(*next, nil, fmt.Errorf("netlink %s: %w", name, errLost))
		}
		if errno < 0 {
			f(int(k), nil, &KernelError{Op: name, Errno: syscall.Errno(-errno)})
		} else {
			f(int(k), body, nil)
		}
		*next++
		return true
	})
}

// resync replaces the socket after a batch lost answers, so that none of
// them arrives late as the answer to a later request.
func (c *Client) resync() {
	s, err := dialSocket()
	if err != nil {
		return // keep the old one: netlink.Conn still checks sequence numbers
	}
	c.c.Close()
	c.raw, c.c = s, s.Conn()
}

// MaxEachPorts bounds a device's port count that callers walk port by
// port (PortsOfEach's requests, the inventory's rate files): a count
// beyond any device's (IB port numbers are 8-bit) from a broken or
// hostile answer is asked with a dump instead of billions of requests.
const MaxEachPorts = 1024

// PortsOfEach is PortsOf for each of devs (as Devices lists them): one
// PORT_GET request per port, batched (each), instead of a dump per
// device. A device whose port count is unknown (or absurd) is dumped. errs[i] is set
// where any of device i's ports failed (a device gone since the list, a
// lost answer), and ports[i] is then nil.
func (c *Client) PortsOfEach(devs []Device) (ports [][]Port, errs []error) {
	ports, errs = make([][]Port, len(devs)), make([]error, len(devs))
	var reqs [][]byte
	var owner []int
	for i, d := range devs {
		if d.NumPorts == nil || *d.NumPorts > MaxEachPorts {
			ports[i], errs[i] = c.PortsOf(d.Index)
			continue
		}
		ports[i] = []Port{}
		for p := uint32(1); p <= *d.NumPorts; p++ {
			var e encoder
			e.u32(attrDevIndex, d.Index)
			e.u32(attrPortIndex, p)
			reqs, owner = append(reqs, e.b), append(owner, i)
		}
	}
	c.each(cmdPortGet, reqs, func(k int, b []byte, err error) {
		i := owner[k]
		switch {
		case err != nil:
			if errs[i] == nil {
				errs[i] = err
			}
		default:
			if p := decodePort(b); p.Port != 0 {
				ports[i] = append(ports[i], p)
			}
		}
	})
	for i := range errs {
		if errs[i] != nil {
			ports[i] = nil
		}
	}
	return ports, errs
}

// ChardevEach is Chardev(idx, typ) for each of idxs, batched (each).
func (c *Client) ChardevEach(idxs []uint32, typ string) ([]*Chardev, []error) {
	out, errs := make([]*Chardev, len(idxs)), make([]error, len(idxs))
	reqs := make([][]byte, len(idxs))
	for i, idx := range idxs {
		var e encoder
		e.u32(attrDevIndex, idx)
		e.str(attrChardevType, typ)
		reqs[i] = e.b
	}
	c.each(cmdGetChardev, reqs, func(k int, b []byte, err error) {
		if err != nil {
			errs[k] = err
			return
		}
		ch := decodeChardev(b)
		out[k] = &ch
	})
	return out, errs
}

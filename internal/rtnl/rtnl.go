// Package rtnl asks the kernel's routing netlink for the few netdev facts
// rdmactl needs of many netdevs at once.
package rtnl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nlsock"
	"golang.org/x/sys/unix"
)

// ifinfomsg is struct ifinfomsg's size (linux/rtnetlink.h): family, pad,
// type, index, flags, change.
const ifinfomsgLen = 16

// rtextFilterSkipStats (RTEXT_FILTER_SKIP_STATS) leaves the link
// statistics, most of each answer, out; kernels that predate it ignore it.
const rtextFilterSkipStats = 1 << 3

// nlaTypeMask (NLA_TYPE_MASK) clears the nested and byte-order flags of an
// attribute type.
const nlaTypeMask = 0x3fff

// LinkMTUs dumps the links of this network namespace (one RTM_GETLINK
// dump) and returns each one's MTU by interface index. A RoCE port's
// active MTU derives from its netdev's: at 128 ports this is one request
// instead of 128 sysfs files. The answers (about 1.3 KiB a link, of which
// it wants 8 bytes) are read in place, not copied into messages: through
// netlink.Conn the dump was a third of what a 128-device link show
// allocated.
func LinkMTUs() (map[uint32]uint32, error) {
	s, err := nlsock.Open(unix.NETLINK_ROUTE, nlsock.RecvBufSize) // its dumps may ask a larger min_dump_alloc
	if err != nil {
		return nil, fmt.Errorf("open NETLINK_ROUTE socket: %w", err)
	}
	defer s.Close()
	req := make([]byte, ifinfomsgLen, ifinfomsgLen+8)
	req = binary.NativeEndian.AppendUint16(req, 8) // struct rtattr: IFLA_EXT_MASK, u32
	req = binary.NativeEndian.AppendUint16(req, unix.IFLA_EXT_MASK)
	req = binary.NativeEndian.AppendUint32(req, rtextFilterSkipStats)
	seq, err := s.Request(unix.RTM_GETLINK, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, req)
	if err != nil {
		return nil, fmt.Errorf("RTM_GETLINK: %w", err)
	}
	out := map[uint32]uint32{}
	for {
		b, err := s.Recv()
		if err != nil {
			return nil, fmt.Errorf("RTM_GETLINK: %w", err)
		}
		done, err := parseLinkDump(b, seq, s.PID(), out)
		if err != nil {
			return nil, err
		}
		if done {
			return out, nil
		}
	}
}

// parseLinkDump reads one datagram of the dump answering request seq of
// port pid: each RTM_NEWLINK's index and MTU into out; done at NLMSG_DONE.
// Messages of other requests are skipped; NLMSG_ERROR, a DONE carrying an
// error, and framing that runs past the datagram are errors.
func parseLinkDump(b []byte, seq, pid uint32, out map[uint32]uint32) (done bool, err error) {
	werr := nlsock.Walk(b, func(h nlsock.Header, body []byte) bool {
		if h.Seq != seq || h.PID != pid {
			return true
		}
		switch h.Type {
		case unix.NLMSG_DONE, unix.NLMSG_ERROR:
			var en int32
			if len(body) >= 4 {
				en = int32(binary.NativeEndian.Uint32(body))
			}
			switch {
			case en < 0:
				err = fmt.Errorf("RTM_GETLINK: %w", syscall.Errno(-en))
			case h.Type == unix.NLMSG_ERROR:
				err = errors.New("RTM_GETLINK: unexpected acknowledgement")
			default:
				done = true
			}
			return false
		case unix.RTM_NEWLINK:
			idx, mtu, derr := decodeLinkMTU(body)
			if derr != nil {
				err = derr
				return false
			}
			out[idx] = mtu
		}
		return true
	})
	if werr != nil {
		return false, fmt.Errorf("RTM_GETLINK: %w", werr)
	}
	if err != nil {
		return false, err
	}
	return done, nil
}

// decodeLinkMTU reads the interface index and IFLA_MTU of one
// RTM_NEWLINK payload; a link without IFLA_MTU is an error (every kernel
// sends it).
func decodeLinkMTU(b []byte) (index, mtu uint32, err error) {
	if len(b) < ifinfomsgLen {
		return 0, 0, errors.New("RTM_NEWLINK: shorter than struct ifinfomsg")
	}
	index = binary.NativeEndian.Uint32(b[4:8])
	found := false
	for a := b[ifinfomsgLen:]; len(a) > 0; {
		if len(a) < 4 {
			return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: truncated attribute", index)
		}
		l, typ := int(binary.NativeEndian.Uint16(a)), binary.NativeEndian.Uint16(a[2:])&nlaTypeMask
		if l < 4 || l > len(a) {
			return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: attribute length %d out of range", index, l)
		}
		if typ == unix.IFLA_MTU {
			if l != 8 {
				return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: IFLA_MTU of %d bytes", index, l-4)
			}
			mtu, found = binary.NativeEndian.Uint32(a[4:]), true
		}
		a = a[min(align4(l), len(a)):]
	}
	if !found {
		return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: no IFLA_MTU", index)
	}
	return index, mtu, nil
}

func align4(n int) int { return (n + 3) &^ 3 }

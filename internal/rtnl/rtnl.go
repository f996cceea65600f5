// Package rtnl asks the kernel's routing netlink for the few netdev facts
// rdmactl needs of many netdevs at once.
package rtnl

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/mdlayher/netlink"
	"github.com/rdmactl/rdmactl/internal/nlsock"
	"golang.org/x/sys/unix"
)

// ifinfomsg is struct ifinfomsg's size (linux/rtnetlink.h): family, pad,
// type, index, flags, change.
const ifinfomsgLen = 16

// rtextFilterSkipStats (RTEXT_FILTER_SKIP_STATS) leaves the link
// statistics, most of each answer, out; kernels that predate it ignore it.
const rtextFilterSkipStats = 1 << 3

// LinkMTUs dumps the links of this network namespace (one RTM_GETLINK
// dump) and returns each one's MTU by interface index. A RoCE port's
// active MTU derives from its netdev's: at 128 ports this is one request
// instead of 128 sysfs files.
func LinkMTUs() (map[uint32]uint32, error) {
	c, err := nlsock.Dial(unix.NETLINK_ROUTE, nlsock.RecvBufSize) // its dumps may ask a larger min_dump_alloc
	if err != nil {
		return nil, fmt.Errorf("open NETLINK_ROUTE socket: %w", err)
	}
	defer c.Close()
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(unix.IFLA_EXT_MASK, rtextFilterSkipStats)
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.Execute(netlink.Message{
		Header: netlink.Header{Type: unix.RTM_GETLINK, Flags: netlink.Request | netlink.Dump},
		Data:   append(make([]byte, ifinfomsgLen), attrs...),
	})
	if err != nil {
		return nil, fmt.Errorf("RTM_GETLINK: %w", err)
	}
	out := make(map[uint32]uint32, len(msgs))
	for _, m := range msgs {
		if m.Header.Type != unix.RTM_NEWLINK {
			continue
		}
		idx, mtu, err := decodeLinkMTU(m.Data)
		if err != nil {
			return nil, err
		}
		out[idx] = mtu
	}
	return out, nil
}

// decodeLinkMTU reads the interface index and IFLA_MTU of one
// RTM_NEWLINK payload; a link without IFLA_MTU is an error (every kernel
// sends it).
func decodeLinkMTU(b []byte) (index, mtu uint32, err error) {
	if len(b) < ifinfomsgLen {
		return 0, 0, errors.New("RTM_NEWLINK: shorter than struct ifinfomsg")
	}
	index = binary.NativeEndian.Uint32(b[4:8])
	ad, err := netlink.NewAttributeDecoder(b[ifinfomsgLen:])
	if err != nil {
		return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: %w", index, err)
	}
	found := false
	for ad.Next() {
		if ad.Type() == unix.IFLA_MTU {
			if len(ad.Bytes()) != 4 {
				return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: IFLA_MTU of %d bytes", index, len(ad.Bytes()))
			}
			mtu, found = ad.Uint32(), true
		}
	}
	if err := ad.Err(); err != nil {
		return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: %w", index, err)
	}
	if !found {
		return 0, 0, fmt.Errorf("RTM_NEWLINK of ifindex %d: no IFLA_MTU", index)
	}
	return index, mtu, nil
}

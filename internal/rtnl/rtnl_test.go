package rtnl

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

func newlink(index uint32, attrs func(ae *netlink.AttributeEncoder)) []byte {
	b := make([]byte, ifinfomsgLen)
	binary.NativeEndian.PutUint32(b[4:], index)
	ae := netlink.NewAttributeEncoder()
	attrs(ae)
	a, _ := ae.Encode()
	return append(b, a...)
}

func TestDecodeLinkMTU(t *testing.T) {
	b := newlink(7, func(ae *netlink.AttributeEncoder) {
		ae.String(unix.IFLA_IFNAME, "vrxe0")
		ae.Uint32(unix.IFLA_MTU, 9000)
	})
	i, m, err := decodeLinkMTU(b)
	if err != nil || i != 7 || m != 9000 {
		t.Fatalf("got %d %d %v", i, m, err)
	}
	for name, bad := range map[string][]byte{
		"short":     b[:8],
		"no mtu":    newlink(3, func(ae *netlink.AttributeEncoder) { ae.String(unix.IFLA_IFNAME, "x") }),
		"mtu width": newlink(3, func(ae *netlink.AttributeEncoder) { ae.Uint16(unix.IFLA_MTU, 1500) }),
		"truncated": b[:len(b)-2],
	} {
		if _, _, err := decodeLinkMTU(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// This host's kernel answers RTM_GETLINK (no RDMA needed): the MTUs equal
// what the net package reads.
func TestLinkMTUsMatchNetInterfaces(t *testing.T) {
	got, err := LinkMTUs()
	if err != nil {
		t.Skipf("no NETLINK_ROUTE here: %v", err)
	}
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	if len(ifs) == 0 || len(got) != len(ifs) {
		t.Fatalf("%d links from RTM_GETLINK, %d from net.Interfaces", len(got), len(ifs))
	}
	for _, i := range ifs {
		if m, ok := got[uint32(i.Index)]; !ok || int(m) != i.MTU {
			t.Errorf("%s (index %d): MTU %d %v, net says %d", i.Name, i.Index, m, ok, i.MTU)
		}
	}
}

func FuzzDecodeLinkMTU(f *testing.F) {
	f.Add(newlink(7, func(ae *netlink.AttributeEncoder) { ae.Uint32(unix.IFLA_MTU, 1500) }))
	f.Add(newlink(1, func(ae *netlink.AttributeEncoder) { ae.String(unix.IFLA_IFNAME, "lo") }))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = decodeLinkMTU(b)
	})
}

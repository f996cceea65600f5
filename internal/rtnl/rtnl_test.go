package rtnl

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/nlsock"
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

// nlmsg frames a payload as the kernel does: header, payload, padding.
func nlmsg(typ uint16, seq, pid uint32, payload []byte) []byte {
	return nlsock.AppendMessage(nil, typ, 0, seq, pid, payload)
}

func errno(en int32) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(en)) }

func TestParseLinkDump(t *testing.T) {
	mtu := func(i, m uint32) []byte {
		return newlink(i, func(ae *netlink.AttributeEncoder) {
			ae.String(unix.IFLA_IFNAME, "vrxe")
			ae.Uint32(unix.IFLA_MTU, m)
		})
	}
	out := map[uint32]uint32{}
	d := append(nlmsg(unix.RTM_NEWLINK, 5, 77, mtu(1, 65536)), nlmsg(unix.RTM_NEWLINK, 5, 77, mtu(4, 1500))...)
	d = append(d, nlmsg(unix.RTM_NEWLINK, 4, 77, mtu(9, 9000))...) // another request's: skipped
	if done, err := parseLinkDump(d, 5, 77, out); done || err != nil || len(out) != 2 || out[1] != 65536 || out[4] != 1500 {
		t.Fatalf("first datagram: done %v, %v, %v", done, err, out)
	}
	if done, err := parseLinkDump(nlmsg(unix.NLMSG_DONE, 5, 77, errno(0)), 5, 77, out); !done || err != nil {
		t.Fatalf("DONE: %v %v", done, err)
	}
	for name, c := range map[string][]byte{
		"dump error": nlmsg(unix.NLMSG_DONE, 5, 77, errno(-int32(unix.EINTR))),
		"error":      nlmsg(unix.NLMSG_ERROR, 5, 77, errno(-int32(unix.EPERM))),
		"ack":        nlmsg(unix.NLMSG_ERROR, 5, 77, errno(0)),
		"no mtu":     nlmsg(unix.RTM_NEWLINK, 5, 77, newlink(3, func(ae *netlink.AttributeEncoder) { ae.String(unix.IFLA_IFNAME, "x") })),
		"past the end": func() []byte {
			b := nlmsg(unix.RTM_NEWLINK, 5, 77, mtu(1, 1500))
			binary.NativeEndian.PutUint32(b, uint32(len(b)+8))
			return b
		}(),
		"below a header": func() []byte {
			b := nlmsg(unix.RTM_NEWLINK, 5, 77, mtu(1, 1500))
			binary.NativeEndian.PutUint32(b, 8)
			return b
		}(),
	} {
		if _, err := parseLinkDump(c, 5, 77, map[uint32]uint32{}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := parseLinkDump(nlmsg(unix.NLMSG_ERROR, 5, 77, errno(-int32(unix.EPERM))), 5, 77, out); !errors.Is(err, unix.EPERM) {
		t.Errorf("NLMSG_ERROR: %v, want EPERM", err)
	}
}

func FuzzParseLinkDump(f *testing.F) {
	f.Add(nlmsg(unix.RTM_NEWLINK, 1, 2, newlink(7, func(ae *netlink.AttributeEncoder) { ae.Uint32(unix.IFLA_MTU, 1500) })))
	f.Add(nlmsg(unix.NLMSG_DONE, 1, 2, errno(0)))
	f.Add(nlmsg(unix.NLMSG_ERROR, 1, 2, errno(-1)))
	f.Add([]byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseLinkDump(b, 1, 2, map[uint32]uint32{})
	})
}

package sysfs

import (
	"fmt"
	"net/netip"
	"path/filepath"
)

// GID type strings exactly as the kernel writes gid_attrs/types/N
// (drivers/infiniband/core/cache.c gid_type_str).
const (
	SysfsTypeIBRoCEv1 = "IB/RoCE v1"
	SysfsTypeRoCEv2   = "RoCE v2"
)

// Kinds of GID entry, as rdmactl shows them. sysfs writes "IB/RoCE v1" for
// both IB and RoCE v1 GIDs (IB_GID_TYPE_IB == IB_GID_TYPE_ROCE in the
// kernel); the port's link layer tells them apart: on an InfiniBand port it
// is an IB GID, on an Ethernet port a RoCE v1 GID.
const (
	KindIB     = "IB"
	KindRoCEv1 = "RoCE v1"
	KindRoCEv2 = "RoCE v2"
)

// GID is one slot of a port's GID table.
type GID struct {
	Index uint32
	// Raw is the GID in network byte order. RawOK is false when gids/N could
	// not be read or parsed; the entry is then reported with nothing else.
	Raw   [16]byte
	RawOK bool
	// Type is gid_attrs/types/N verbatim ("IB/RoCE v1", "RoCE v2"), or ""
	// when the read failed (the kernel fails it with EINVAL for empty slots)
	// or the kernel has no gid_attrs.
	Type string
	// Kind is Type mapped with the port's link layer: KindIB, KindRoCEv1,
	// KindRoCEv2, or "" when unknown. On an InfiniBand port without
	// gid_attrs (old kernels) a populated GID is KindIB.
	Kind string
	// Netdev is gid_attrs/ndevs/N: the netdev a RoCE GID belongs to ("" for IB
	// or unreadable).
	Netdev string
}

// Empty reports whether the slot holds no GID: unreadable, or all zeros.
func (g GID) Empty() bool { return !g.RawOK || g.Raw == [16]byte{} }

// String formats the GID as sysfs and ibv_devinfo do:
// "fe80:0000:0000:0000:a86c:01ff:fecc:54ed". It is "" when !RawOK.
func (g GID) String() string {
	if !g.RawOK {
		return ""
	}
	r := g.Raw
	return fmt.Sprintf("%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x",
		r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13], r[14], r[15])
}

// Addr is the GID as an IP address: the IPv4 address for an IPv4-mapped
// GID (::ffff:a.b.c.d, how RoCE stores IPv4), the IPv6 address otherwise.
// It is the zero Addr for an empty slot.
func (g GID) Addr() netip.Addr {
	if g.Empty() {
		return netip.Addr{}
	}
	return netip.AddrFrom16(g.Raw).Unmap()
}

// IPv4 is the IPv4 address of an IPv4-mapped GID, or the zero Addr.
func (g GID) IPv4() netip.Addr {
	if a := g.Addr(); a.Is4() {
		return a
	}
	return netip.Addr{}
}

// IPv6 is the GID as an IPv6 address when it is not IPv4-mapped (for RoCE
// the netdev's IPv6 address, for IB the subnet prefix plus port GUID), or
// the zero Addr.
func (g GID) IPv6() netip.Addr {
	if a := g.Addr(); a.Is6() {
		return a
	}
	return netip.Addr{}
}

// LinkLocal reports whether the GID is a link-local address (fe80::/10 or
// 169.254.0.0/16 mapped), as perftest's GID selection defines it.
func (g GID) LinkLocal() bool {
	a := g.Addr()
	return a.IsValid() && a.IsLinkLocalUnicast()
}

// gidKind maps the sysfs type string with the port's link layer.
func gidKind(typ, linkLayer string, empty bool) string {
	switch typ {
	case SysfsTypeRoCEv2:
		return KindRoCEv2
	case SysfsTypeIBRoCEv1:
		if linkLayer == "InfiniBand" {
			return KindIB
		}
		return KindRoCEv1
	case "":
		if !empty && linkLayer == "InfiniBand" {
			return KindIB
		}
	}
	return ""
}

// GIDs reads every slot of the port's GID table (gids/N with
// gid_attrs/types/N and gid_attrs/ndevs/N), sorted by index, empty slots
// included (see GID.Empty). An unreadable slot is returned with RawOK false.
func (f *FS) GIDs(dev string, port uint32) ([]GID, error) {
	if err := f.checkPort(dev, port); err != nil {
		return nil, err
	}
	dir := f.portDir(dev, port)
	ll := readOpt(filepath.Join(dir, "link_layer"))
	idx := indexEntries(filepath.Join(dir, "gids"))
	gids := make([]GID, 0, len(idx))
	for _, i := range idx {
		n := itoa(i)
		g := GID{Index: i}
		if s, ok := readString(filepath.Join(dir, "gids", n)); ok {
			g.Raw, g.RawOK = parseGID(s)
		}
		if !g.Empty() {
			// Empty slots fail these reads with EINVAL; do not even try.
			g.Type, _ = readString(filepath.Join(dir, "gid_attrs", "types", n))
			if g.Type != SysfsTypeIBRoCEv1 && g.Type != SysfsTypeRoCEv2 {
				g.Type = ""
			}
			g.Netdev, _ = readString(filepath.Join(dir, "gid_attrs", "ndevs", n))
		}
		g.Kind = gidKind(g.Type, ll, g.Empty())
		gids = append(gids, g)
	}
	return gids, nil
}

// BestGID picks the GID a benchmark should use when the user gives no GID
// index, with the scoring of perftest's get_best_gid_index
// (perftest_resources.c): among non-empty entries, +100 if the address
// family matches the preference (IPv4-mapped unless preferIPv6), +10 if not
// link-local (fe80::/10, 169.254/16), +2 for RoCE v2 or +1 for RoCE v1/IB.
// The highest score wins; ties go to the lowest index (perftest scans in
// index order and only replaces on a strictly higher score). ok is false
// when there is no non-empty GID.
func BestGID(gids []GID, preferIPv6 bool) (best GID, ok bool) {
	bestScore := -1
	for _, g := range gids {
		if g.Empty() {
			continue
		}
		score := 0
		a := g.Addr()
		if a.Is4() != preferIPv6 {
			score += 100
		}
		if !g.LinkLocal() {
			score += 10
		}
		switch g.Kind {
		case KindRoCEv2:
			score += 2
		case KindRoCEv1, KindIB:
			score++
		}
		if score > bestScore {
			best, bestScore, ok = g, score, true
		}
	}
	return best, ok
}

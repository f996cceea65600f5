package sysfs

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// GID is one slot of a port's GID table.
type GID struct {
	Index uint32
	// Raw is the GID in network byte order. RawOK is false when gids/N could
	// not be read or parsed; the entry is then reported with nothing else.
	Raw   [16]byte
	RawOK bool
	// Type is gid_attrs/types/N verbatim (vocab.SysfsGIDTypeIBRoCEv1,
	// vocab.SysfsGIDTypeRoCEv2), or "" when the read failed (the kernel
	// fails it with EINVAL for empty slots) or the kernel has no gid_attrs.
	Type string
	// Kind is Type mapped with the port's link layer (vocab.ParseSysfsGIDType:
	// sysfs writes "IB/RoCE v1" for both IB and RoCE v1 GIDs), or
	// vocab.GIDTypeUnknown. On an InfiniBand port without gid_attrs (old
	// kernels) a populated GID is IB. A GID built by hand must set it: the
	// zero value is IB.
	Kind vocab.GIDType
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

// GIDKind maps a sysfs GID type string with the port's link layer
// ("InfiniBand", "Ethernet"); a populated GID of unknown type on an
// InfiniBand port is IB. Otherwise unknown types are vocab.GIDTypeUnknown.
func GIDKind(typ, linkLayer string, empty bool) vocab.GIDType {
	ll, _ := vocab.ParseLinkLayer(linkLayer)
	if t, ok := vocab.ParseSysfsGIDType(typ, ll); ok {
		return t
	}
	if typ == "" && !empty && ll == vocab.LinkLayerInfiniBand {
		return vocab.GIDTypeIB
	}
	return vocab.GIDTypeUnknown
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
			if g.Type != vocab.SysfsGIDTypeIBRoCEv1 && g.Type != vocab.SysfsGIDTypeRoCEv2 {
				g.Type = ""
			}
			g.Netdev, _ = readString(filepath.Join(dir, "gid_attrs", "ndevs", n))
		}
		g.Kind = GIDKind(g.Type, ll, g.Empty())
		gids = append(gids, g)
	}
	return gids, nil
}

// GID reads slot index of the port's GID table (gids/N) alone, without
// its gid_attrs; RawOK is false when the slot cannot be read or parsed.
func (f *FS) GID(dev string, port, index uint32) (GID, error) {
	if err := f.checkPort(dev, port); err != nil {
		return GID{}, err
	}
	g := GID{Index: index}
	if s, ok := readString(filepath.Join(f.portDir(dev, port), "gids", itoa(index))); ok {
		g.Raw, g.RawOK = parseGID(s)
	}
	return g, nil
}

// GIDTableLen is the number of slots of the port's GID table (the entries
// of gids/), populated or not: one directory read, no slot read.
func (f *FS) GIDTableLen(dev string, port uint32) (int, error) {
	if err := f.checkPort(dev, port); err != nil {
		return 0, err
	}
	return len(indexEntries(filepath.Join(f.portDir(dev, port), "gids"))), nil
}

// BestGID picks the GID a benchmark uses when the user gives no GID index,
// as perftest's get_best_gid_index (src/perftest_communication.c) does
// since perftest commit 57927ab (2026-04). Each non-empty entry scores
// 100 if its family is the preferred one (IPv4: IPv4-mapped, or perftest's
// ff0e::ffff:a.b.c.d multicast form; IPv6 with preferIPv6), plus 10 if it
// is not link-local (fe80::/10; 169.254/16 for IPv4), plus 2 for RoCE v2
// and 1 for RoCE v1 or IB (0 for a type that cannot be read); the highest
// score wins, the lowest index among equals. Older
// perftest (6.06, Debian 12's) has no link-local rule: on a port whose
// IPv6 GIDs are fe80:: and a global address (and no IPv4 one) it takes
// the fe80:: entry where this takes the global one (docs/perf.md). ok is
// false when there is no non-empty GID.
func BestGID(gids []GID, preferIPv6 bool) (best GID, ok bool) {
	bestScore := -1
	for _, g := range gids {
		if g.Empty() {
			continue
		}
		if sc := gidScore(g, preferIPv6); sc > bestScore {
			best, bestScore, ok = g, sc, true
		}
	}
	return best, ok
}

// gidScore is perftest's compute_gid_score.
func gidScore(g GID, preferIPv6 bool) int {
	v4 := perftestV4(g)
	sc := rank(g)
	if v4 != preferIPv6 {
		sc += 100
	}
	r := g.Raw
	linkLocal := r[0] == 0xfe && r[1]&0xc0 == 0x80
	if v4 {
		linkLocal = r[12] == 169 && r[13] == 254
	}
	if !linkLocal {
		sc += 10
	}
	return sc
}

// perftestV4 is perftest's ipv6_addr_v4mapped: ::ffff:a.b.c.d, or the
// IPv4-encoded multicast ff0e::ffff:a.b.c.d.
func perftestV4(g GID) bool {
	r := g.Raw
	tail := r[8] == 0 && r[9] == 0 && r[10] == 0xff && r[11] == 0xff
	zero4 := r[4] == 0 && r[5] == 0 && r[6] == 0 && r[7] == 0
	return tail && zero4 && ((r[0] == 0 && r[1] == 0 && r[2] == 0 && r[3] == 0) ||
		(r[0] == 0xff && r[1] == 0x0e && r[2] == 0 && r[3] == 0))
}

// rank orders GID types as perftest's roce_versions_sorted: v2 above v1/IB;
// 0 means the type could not be read (perftest then adds nothing).
func rank(g GID) int {
	switch g.Kind {
	case vocab.GIDTypeRoCEv2:
		return 2
	case vocab.GIDTypeRoCEv1, vocab.GIDTypeIB:
		return 1
	}
	return 0
}

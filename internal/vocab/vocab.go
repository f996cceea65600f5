// Package vocab is rdmactl's vocabulary of RDMA values: GID type, port
// state, physical state, link layer, MTU, rate and GUID as typed values
// with the strings rdmactl prints, and (counters.go) what each counter
// name counts. sysfs, netlink, uverbs, perf and the commands all speak it,
// so a value is parsed and named in one place.
//
// Numbers are the kernel's: include/rdma/ib_verbs.h (enum ib_port_state,
// ib_port_phys_state, rdma_link_layer, ib_mtu) and the UAPI
// /usr/include/rdma/ib_user_ioctl_verbs.h (enum ib_uverbs_gid_type).
// Only the standard library is imported.
package vocab

import (
	"fmt"
	"strconv"
	"strings"
)

// GIDType is enum ib_uverbs_gid_type (rdma/ib_user_ioctl_verbs.h), what
// QUERY_GID_TABLE reports. GIDTypeUnknown stands for "not known" (an
// unreadable gid_attrs/types/N): it is no kernel value.
type GIDType uint32

// GID types.
const (
	GIDTypeIB      GIDType = 0 // IB_UVERBS_GID_TYPE_IB
	GIDTypeRoCEv1  GIDType = 1 // IB_UVERBS_GID_TYPE_ROCE_V1
	GIDTypeRoCEv2  GIDType = 2 // IB_UVERBS_GID_TYPE_ROCE_V2
	GIDTypeUnknown GIDType = 0xffffffff
)

// GID type strings exactly as the kernel writes gid_attrs/types/N
// (drivers/infiniband/core/cache.c gid_type_str): IB and RoCE v1 share
// one, since IB_GID_TYPE_IB == IB_GID_TYPE_ROCE in the kernel.
const (
	SysfsGIDTypeIBRoCEv1 = "IB/RoCE v1"
	SysfsGIDTypeRoCEv2   = "RoCE v2"
)

// String is the name rdmactl shows: "IB", "RoCE v1", "RoCE v2"; "" for
// GIDTypeUnknown and "type N" for a value no kernel defines.
func (t GIDType) String() string {
	switch t {
	case GIDTypeIB:
		return "IB"
	case GIDTypeRoCEv1:
		return "RoCE v1"
	case GIDTypeRoCEv2:
		return "RoCE v2"
	case GIDTypeUnknown:
		return ""
	}
	return "type " + strconv.FormatUint(uint64(t), 10)
}

// Known reports whether t is one of the three kernel GID types.
func (t GIDType) Known() bool { return t <= GIDTypeRoCEv2 }

// Sysfs is the gid_attrs/types/N text of t ("" for none of the three).
func (t GIDType) Sysfs() string {
	switch t {
	case GIDTypeIB, GIDTypeRoCEv1:
		return SysfsGIDTypeIBRoCEv1
	case GIDTypeRoCEv2:
		return SysfsGIDTypeRoCEv2
	}
	return ""
}

// OnLink is t as shown on a port of link layer ll: sysfs (and the sysfs
// fallback of a GID table read) cannot tell IB from RoCE v1, so on an
// InfiniBand port a RoCE v1 GID is IB.
func (t GIDType) OnLink(ll LinkLayer) GIDType {
	if t == GIDTypeRoCEv1 && ll == LinkLayerInfiniBand {
		return GIDTypeIB
	}
	return t
}

// ParseSysfsGIDType maps gid_attrs/types/N on a port of link layer ll:
// "RoCE v2" is RoCE v2; "IB/RoCE v1" is IB on an InfiniBand port and RoCE
// v1 elsewhere. Anything else is GIDTypeUnknown, ok false.
func ParseSysfsGIDType(s string, ll LinkLayer) (t GIDType, ok bool) {
	switch s {
	case SysfsGIDTypeRoCEv2:
		return GIDTypeRoCEv2, true
	case SysfsGIDTypeIBRoCEv1:
		return GIDTypeRoCEv1.OnLink(ll), true
	}
	return GIDTypeUnknown, false
}

// ParseGIDTypeFlag reads a user's GID type: v1, v2 or ib (and the
// spelled-out forms "roce v2", "rocev2", "roce-v2"), any case.
func ParseGIDTypeFlag(s string) (GIDType, bool) {
	switch strings.ToLower(s) {
	case "v1", "rocev1", "roce-v1", "roce v1":
		return GIDTypeRoCEv1, true
	case "v2", "rocev2", "roce-v2", "roce v2":
		return GIDTypeRoCEv2, true
	case "ib":
		return GIDTypeIB, true
	}
	return GIDTypeUnknown, false
}

// PortState is enum ib_port_state (ib_verbs.h; IBV_PORT_* in verbs.h).
type PortState uint8

// Port states.
const (
	PortNOP         PortState = 0
	PortDown        PortState = 1
	PortInit        PortState = 2
	PortArmed       PortState = 3
	PortActive      PortState = 4
	PortActiveDefer PortState = 5
)

// String is rdma's name (iproute2 rdma/link.c): "DOWN", "ACTIVE"...,
// "UNKNOWN" past ACTIVE_DEFER.
func (s PortState) String() string {
	names := [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
	if int(s) < len(names) {
		return names[s]
	}
	return "UNKNOWN"
}

// Devinfo is ibv_devinfo's name (rdma-core libibverbs/examples/devinfo.c
// port_state_str): "PORT_ACTIVE"..., "invalid state" otherwise.
func (s PortState) Devinfo() string {
	switch s {
	case PortDown:
		return "PORT_DOWN"
	case PortInit:
		return "PORT_INIT"
	case PortArmed:
		return "PORT_ARMED"
	case PortActive:
		return "PORT_ACTIVE"
	}
	return "invalid state"
}

// PhysState is enum ib_port_phys_state (ib_verbs.h), with the OPA values
// rdma names too.
type PhysState uint8

// Physical port states.
const (
	PhysSleep             PhysState = 1
	PhysPolling           PhysState = 2
	PhysDisabled          PhysState = 3
	PhysConfigTraining    PhysState = 4
	PhysLinkUp            PhysState = 5
	PhysLinkErrorRecovery PhysState = 6
	PhysPhyTest           PhysState = 7
)

// String is rdma's name (iproute2 rdma/link.c phys_state_to_str):
// "LINK_UP", "DISABLED"..., "UNKNOWN" where it has none. Index 4 really is
// "ARMED" there, kept so that output matches rdma's.
func (s PhysState) String() string {
	names := [...]string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
		"LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}
	if int(s) < len(names) {
		return names[s]
	}
	return "UNKNOWN"
}

// Devinfo is ibv_devinfo's name (devinfo.c port_phy_state_str, its typos
// kept), "invalid physical state" otherwise.
func (s PhysState) Devinfo() string {
	names := [...]string{"", "SLEEP", "POLLING", "DISABLED", "PORT_CONFIGURATION TRAINNING",
		"LINK_UP", "LINK_ERROR_RECOVERY", "PHY TEST"}
	if s >= 1 && int(s) < len(names) {
		return names[s]
	}
	return "invalid physical state"
}

// LinkLayer is enum rdma_link_layer (ib_verbs.h; IBV_LINK_LAYER_* in
// verbs.h), the link_layer of QUERY_PORT.
type LinkLayer uint8

// Link layers.
const (
	LinkLayerUnspecified LinkLayer = 0
	LinkLayerInfiniBand  LinkLayer = 1
	LinkLayerEthernet    LinkLayer = 2
)

// String is the name sysfs's link_layer file gives ("InfiniBand",
// "Ethernet"); "Unspecified" for 0, "Unknown" past Ethernet.
func (l LinkLayer) String() string {
	switch l {
	case LinkLayerUnspecified:
		return "Unspecified"
	case LinkLayerInfiniBand:
		return "InfiniBand"
	case LinkLayerEthernet:
		return "Ethernet"
	}
	return "Unknown"
}

// ParseLinkLayer reads ports/N/link_layer ("InfiniBand", "Ethernet");
// anything else (the kernel's "Unknown", a missing file) is not ok.
func ParseLinkLayer(s string) (LinkLayer, bool) {
	switch s {
	case "InfiniBand":
		return LinkLayerInfiniBand, true
	case "Ethernet":
		return LinkLayerEthernet, true
	}
	return LinkLayerUnspecified, false
}

// MTU is enum ib_mtu (ib_verbs.h; IBV_MTU_* in verbs.h): 1 = 256 ... 5 =
// 4096 bytes, what QUERY_PORT reports and MODIFY_QP's path_mtu takes.
type MTU uint8

// MTUs.
const (
	MTU256  MTU = 1
	MTU512  MTU = 2
	MTU1024 MTU = 3
	MTU2048 MTU = 4
	MTU4096 MTU = 5
)

// Valid reports whether m is one of the five MTUs.
func (m MTU) Valid() bool { return m >= MTU256 && m <= MTU4096 }

// Bytes is the MTU in bytes, 0 for an invalid value.
func (m MTU) Bytes() uint32 {
	if !m.Valid() {
		return 0
	}
	return 128 << m
}

// String is the byte count ("1024", as ibv_devinfo prints it), "invalid
// MTU" for an invalid value.
func (m MTU) String() string {
	if !m.Valid() {
		return "invalid MTU"
	}
	return strconv.FormatUint(uint64(m.Bytes()), 10)
}

// MTUFromBytes is the enum of 256, 512, 1024, 2048 or 4096 bytes; ok is
// false for any other size.
func MTUFromBytes(b int) (MTU, bool) {
	for m := MTU256; m <= MTU4096; m++ {
		if int(m.Bytes()) == b {
			return m, true
		}
	}
	return 0, false
}

// Rate is a port's rate as ports/N/rate gives it.
type Rate struct {
	Gbps  float64
	Width string // "4X"
	Speed string // "EDR"; "" where the kernel names none (RoCE on old kernels)
}

// MaxRateGbps bounds a parsed rate: far above any link (800 Gb/s XDR
// 4X), below what would make the float lose integer precision.
const MaxRateGbps = 1e9

// ParseRate parses ports/N/rate as the kernel's rate_show
// (drivers/infiniband/core/sysfs.c) prints it: "%d%s Gb/sec (%dX%s)",
// e.g. "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "40 Gb/sec (4X)".
// The parenthesis may be missing; inside it at most width and speed.
func ParseRate(s string) (Rate, bool) {
	num, rest, found := strings.Cut(s, " Gb/sec")
	if !found {
		return Rate{}, false
	}
	g, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || g < 0 || g != g || g > MaxRateGbps {
		return Rate{}, false
	}
	r := Rate{Gbps: g}
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return r, true
	}
	in, okp := strings.CutPrefix(rest, "(")
	in, okc := strings.CutSuffix(in, ")")
	f := strings.Fields(in)
	if !okp || !okc || len(f) > 2 || strings.ContainsAny(in, "()") {
		return Rate{}, false
	}
	if len(f) >= 1 {
		r.Width = f[0]
	}
	if len(f) == 2 {
		r.Speed = f[1]
	}
	return r, true
}

// RateOf is the rate a port's active speed and width make (enum
// ib_port_speed and ib_port_width, as QUERY_PORT answers them), derived as
// the kernel's rate_show derives ports/N/rate (ib_port_attr_to_speed_info):
// a speed it does not know counts as SDR; a width it does not know gives
// false (rate_show fails with EINVAL). Older kernels' rate_show names no
// speed for SDR; RateOf names it, as current ones do.
func RateOf(speed uint32, width uint8) (Rate, bool) {
	lanes, ok := widthLanes[width]
	if !ok {
		return Rate{}, false
	}
	sp, ok := laneSpeeds[speed]
	if !ok {
		sp = laneSpeeds[1]
	}
	return Rate{Gbps: float64(sp.deci*lanes) / 10, Width: strconv.Itoa(lanes) + "X", Speed: sp.name}, true
}

// widthLanes: enum ib_port_width to lanes (ib_width_enum_to_int).
var widthLanes = map[uint8]int{1: 1, 16: 2, 2: 4, 4: 8, 8: 12}

// laneSpeeds: enum ib_port_speed to its name and a lane's rate in tenths
// of Gb/s (ib_speed_attrs).
var laneSpeeds = map[uint32]struct {
	name string
	deci int
}{
	1: {"SDR", 25}, 2: {"DDR", 50}, 4: {"QDR", 100}, 8: {"FDR10", 100}, 16: {"FDR", 140},
	32: {"EDR", 250}, 64: {"HDR", 500}, 128: {"NDR", 1000}, 256: {"XDR", 2000},
}

// String is the rate as link show prints it: "100 Gb/s 4X EDR" (with a
// trailing blank when there is neither width nor speed).
func (r Rate) String() string {
	return strconv.FormatFloat(r.Gbps, 'f', -1, 64) + " Gb/s " + strings.TrimSpace(r.Width+" "+r.Speed)
}

// GUID is a 64-bit GUID in host order (as netlink carries it).
type GUID uint64

// String is "xxxx:xxxx:xxxx:xxxx", as sysfs, rdma and ibv_devinfo print
// GUIDs.
func (g GUID) String() string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", uint64(g)>>48, uint64(g)>>32&0xffff, uint64(g)>>16&0xffff, uint64(g)&0xffff)
}

// GUIDFromBytes reads a GUID in network order (uverbs' node_guid).
func GUIDFromBytes(b [8]byte) GUID {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return GUID(v)
}

// ParseGUID parses node_guid/sys_image_guid: four groups of exactly four
// hex digits ("a86c:01ff:fecc:54ed", the kernel's "%04x:%04x:%04x:%04x").
func ParseGUID(s string) (GUID, bool) {
	groups := strings.Split(s, ":")
	if len(groups) != 4 {
		return 0, false
	}
	var v uint64
	for _, g := range groups {
		if len(g) != 4 {
			return 0, false
		}
		x, err := strconv.ParseUint(g, 16, 16)
		if err != nil {
			return 0, false
		}
		v = v<<16 | x
	}
	return GUID(v), true
}

// ParseDevNum parses a sysfs dev file, "major:minor" in decimal
// ("231:192"; surrounding white space allowed).
func ParseDevNum(s string) (major, minor uint32, ok bool) {
	a, b, found := strings.Cut(strings.TrimSpace(s), ":")
	if !found {
		return 0, 0, false
	}
	ma, err1 := strconv.ParseUint(a, 10, 32)
	mi, err2 := strconv.ParseUint(b, 10, 32)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(ma), uint32(mi), true
}

package render

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// DevInfos converts what the devices answered (inventory.Source.Query)
// into the JSON of `rdmactl -j dev query`, which is also what DevInfoText
// prints.
func DevInfos(qs []inventory.DeviceQuery) []DevInfo {
	out := make([]DevInfo, 0, len(qs))
	for i := range qs {
		out = append(out, NewDevInfo(&qs[i]))
	}
	return out
}

// NewDevInfo converts one device's answer.
func NewDevInfo(q *inventory.DeviceQuery) DevInfo {
	j := deviceJSON(q.Device, q.NodeType, q.BoardID, q.Attr)
	j.NumCompVectors = q.NumCompVectors
	j.Ports = make([]DevInfoPort, 0, len(q.Ports))
	for _, p := range q.Ports {
		pj := portJSON(p.Attr)
		pj.GIDs = []DevInfoGID{}
		for _, g := range p.GIDs {
			pj.GIDs = append(pj.GIDs, DevInfoGID{Index: g.Index, GID: g.Addr().String(), Type: g.Type.OnLink(p.Attr.LinkLayer).String(), NetdevIfindex: g.NetdevIfindex})
		}
		j.Ports = append(j.Ports, pj)
	}
	return *j
}

// DevInfoText prints devices in the layout of ibv_devinfo -v, a blank
// line between two devices.
func DevInfoText(out io.Writer, devs []DevInfo) error {
	// One write per buffer, not per line (about 170 lines per device).
	w := bufio.NewWriterSize(out, 32<<10)
	for i := range devs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		writeDevInfo(w, &devs[i])
	}
	return w.Flush()
}

// DevInfo is one device in `rdmactl -j dev query`.
//
// Keys are the names ibv_devinfo -v prints, except the device name, which
// is "ifname" as in `rdma -j dev show`. Numbers are numbers. Where
// ibv_devinfo prints "NAME (n)" (state, MTUs, atomic_cap, widths, speeds,
// phys_state, transport, max_vl_num) the key holds n and "<key>_name" the
// text. Flag words are a number plus "<key>_names", the names ibv_devinfo
// (or verbs.h for port flags) uses, with one "0x..." entry last for the
// bits it has no name for (its "Unknown flags: 0x..." line; the table
// prints that line). Keys ibv_devinfo prints only sometimes (max_srq_wr,
// max_map_per_fmr, tag matching, cq moderation, supported_qp lists) are
// always present. Extra facts ibv_devinfo does not print: uverbs, driver,
// abi_version, max_map_per_fmr always, the supported_qpts numbers,
// ex_response_length, driver_response_length, active_speed_ex, port
// flags (GRH_REQUIRED), and each GID's netdev_ifindex. tso_caps,
// packet_pacing_caps and rss_caps.rx_hash_* are not in the kernel's
// core answer but in mlx5's provider part of it: other drivers report
// 0, as libibverbs does for them.
type DevInfo struct {
	Ifname        string  `json:"ifname"`
	Uverbs        string  `json:"uverbs"`
	Driver        string  `json:"driver"`
	ABIVersion    uint32  `json:"abi_version"`
	Transport     int     `json:"transport"`
	TransportName string  `json:"transport_name"`
	FWVer         string  `json:"fw_ver"`
	NodeGUID      string  `json:"node_guid"`
	SysImageGUID  string  `json:"sys_image_guid"`
	VendorID      uint32  `json:"vendor_id"`
	VendorPartID  uint32  `json:"vendor_part_id"`
	HWVer         uint32  `json:"hw_ver"`
	BoardID       *string `json:"board_id"`
	PhysPortCnt   uint8   `json:"phys_port_cnt"`

	MaxMRSize             uint64   `json:"max_mr_size"`
	PageSizeCap           uint64   `json:"page_size_cap"`
	MaxQP                 uint32   `json:"max_qp"`
	MaxQPWR               uint32   `json:"max_qp_wr"`
	DeviceCapFlags        uint32   `json:"device_cap_flags"`
	DeviceCapFlagsNames   []string `json:"device_cap_flags_names"`
	MaxSGE                uint32   `json:"max_sge"`
	MaxSGERd              uint32   `json:"max_sge_rd"`
	MaxCQ                 uint32   `json:"max_cq"`
	MaxCQE                uint32   `json:"max_cqe"`
	MaxMR                 uint32   `json:"max_mr"`
	MaxPD                 uint32   `json:"max_pd"`
	MaxQPRdAtom           uint32   `json:"max_qp_rd_atom"`
	MaxEERdAtom           uint32   `json:"max_ee_rd_atom"`
	MaxResRdAtom          uint32   `json:"max_res_rd_atom"`
	MaxQPInitRdAtom       uint32   `json:"max_qp_init_rd_atom"`
	MaxEEInitRdAtom       uint32   `json:"max_ee_init_rd_atom"`
	AtomicCap             uint32   `json:"atomic_cap"`
	AtomicCapName         string   `json:"atomic_cap_name"`
	MaxEE                 uint32   `json:"max_ee"`
	MaxRDD                uint32   `json:"max_rdd"`
	MaxMW                 uint32   `json:"max_mw"`
	MaxRawIPv6QP          uint32   `json:"max_raw_ipv6_qp"`
	MaxRawEthyQP          uint32   `json:"max_raw_ethy_qp"`
	MaxMcastGrp           uint32   `json:"max_mcast_grp"`
	MaxMcastQPAttach      uint32   `json:"max_mcast_qp_attach"`
	MaxTotalMcastQPAttach uint32   `json:"max_total_mcast_qp_attach"`
	MaxAH                 uint32   `json:"max_ah"`
	MaxFMR                uint32   `json:"max_fmr"`
	MaxMapPerFMR          uint32   `json:"max_map_per_fmr"`
	MaxSRQ                uint32   `json:"max_srq"`
	MaxSRQWR              uint32   `json:"max_srq_wr"`
	MaxSRQSGE             uint32   `json:"max_srq_sge"`
	MaxPkeys              uint16   `json:"max_pkeys"`
	LocalCAAckDelay       uint8    `json:"local_ca_ack_delay"`

	// From EX QUERY_DEVICE (zero when the kernel only has the legacy one;
	// ex_response_length then is 0).
	ExResponseLength uint32 `json:"ex_response_length"`
	// Bytes of provider (mlx5) data in the answer: 0 when the driver has
	// none; tso_caps, rss_caps.rx_hash_* and packet_pacing_caps are then 0.
	DriverResponseLength    uint32        `json:"driver_response_length"`
	GeneralODPCaps          uint64        `json:"general_odp_caps"`
	GeneralODPCapsNames     []string      `json:"general_odp_caps_names"`
	RCODPCaps               uint32        `json:"rc_odp_caps"`
	RCODPCapsNames          []string      `json:"rc_odp_caps_names"`
	UCODPCaps               uint32        `json:"uc_odp_caps"`
	UCODPCapsNames          []string      `json:"uc_odp_caps_names"`
	UDODPCaps               uint32        `json:"ud_odp_caps"`
	UDODPCapsNames          []string      `json:"ud_odp_caps_names"`
	XRCODPCaps              uint32        `json:"xrc_odp_caps"`
	XRCODPCapsNames         []string      `json:"xrc_odp_caps_names"`
	CompletionTimestampMask uint64        `json:"completion_timestamp_mask"`
	HCACoreClock            uint64        `json:"hca_core_clock"` // kHz, 0 = not supported
	RawPacketCaps           uint32        `json:"raw_packet_caps"`
	RawPacketCapsNames      []string      `json:"raw_packet_caps_names"`
	DeviceCapFlagsEx        uint64        `json:"device_cap_flags_ex"`
	DeviceCapFlagsExNames   []string      `json:"device_cap_flags_ex_names"`
	TSOCaps                 TSOCaps       `json:"tso_caps"`
	RSSCaps                 RSSCaps       `json:"rss_caps"`
	MaxWQTypeRQ             uint32        `json:"max_wq_type_rq"`
	PacketPacingCaps        PacingCaps    `json:"packet_pacing_caps"`
	TMCaps                  TMCaps        `json:"tm_caps"`
	CQModerationCaps        CQModCaps     `json:"cq_moderation_caps"`
	MaxDMSize               uint64        `json:"max_dm_size"`
	NumCompVectors          uint32        `json:"num_comp_vectors"`
	Ports                   []DevInfoPort `json:"ports"`
}

type TSOCaps struct {
	MaxTSO             uint32   `json:"max_tso"` // bytes
	SupportedQPTs      uint32   `json:"supported_qpts"`
	SupportedQPTsNames []string `json:"supported_qpts_names"`
}

type RSSCaps struct {
	SupportedQPTs              uint32   `json:"supported_qpts"`
	SupportedQPTsNames         []string `json:"supported_qpts_names"`
	MaxRWQIndirectionTables    uint32   `json:"max_rwq_indirection_tables"`
	MaxRWQIndirectionTableSize uint32   `json:"max_rwq_indirection_table_size"`
	RxHashFunction             uint8    `json:"rx_hash_function"`
	RxHashFieldsMask           uint64   `json:"rx_hash_fields_mask"`
}

type PacingCaps struct {
	QPRateLimitMin     uint32   `json:"qp_rate_limit_min"` // kbps
	QPRateLimitMax     uint32   `json:"qp_rate_limit_max"` // kbps
	SupportedQPTs      uint32   `json:"supported_qpts"`
	SupportedQPTsNames []string `json:"supported_qpts_names"`
}

type TMCaps struct {
	MaxRndvHdrSize uint32   `json:"max_rndv_hdr_size"`
	MaxNumTags     uint32   `json:"max_num_tags"`
	MaxOps         uint32   `json:"max_ops"`
	MaxSGE         uint32   `json:"max_sge"`
	Flags          uint32   `json:"flags"`
	FlagsNames     []string `json:"flags_names"`
}

type CQModCaps struct {
	MaxCQCount  uint16 `json:"max_cq_count"`
	MaxCQPeriod uint16 `json:"max_cq_period"` // µs
}

// DevInfoPort is one port of a device in `rdmactl -j dev query`.
type DevInfoPort struct {
	Port               uint8        `json:"port"`
	State              uint8        `json:"state"`
	StateName          string       `json:"state_name"`
	MaxMTU             uint8        `json:"max_mtu"`
	MaxMTUName         string       `json:"max_mtu_name"`
	ActiveMTU          uint8        `json:"active_mtu"`
	ActiveMTUName      string       `json:"active_mtu_name"`
	SMLID              uint16       `json:"sm_lid"`
	PortLID            uint16       `json:"port_lid"`
	PortLMC            uint8        `json:"port_lmc"`
	LinkLayer          uint8        `json:"link_layer"`
	LinkLayerName      string       `json:"link_layer_name"`
	MaxMsgSz           uint32       `json:"max_msg_sz"`
	PortCapFlags       uint32       `json:"port_cap_flags"`
	PortCapFlagsNames  []string     `json:"port_cap_flags_names"`
	PortCapFlags2      uint16       `json:"port_cap_flags2"`
	PortCapFlags2Names []string     `json:"port_cap_flags2_names"`
	MaxVLNum           uint8        `json:"max_vl_num"`
	MaxVLNumName       string       `json:"max_vl_num_name"`
	BadPkeyCntr        uint32       `json:"bad_pkey_cntr"`
	QkeyViolCntr       uint32       `json:"qkey_viol_cntr"`
	SMSL               uint8        `json:"sm_sl"`
	PkeyTblLen         uint16       `json:"pkey_tbl_len"`
	GIDTblLen          uint32       `json:"gid_tbl_len"`
	SubnetTimeout      uint8        `json:"subnet_timeout"`
	InitTypeReply      uint8        `json:"init_type_reply"`
	ActiveWidth        uint8        `json:"active_width"`
	ActiveWidthName    string       `json:"active_width_name"`
	ActiveSpeed        uint32       `json:"active_speed"` // active_speed_ex when set, as ibv_devinfo
	ActiveSpeedName    string       `json:"active_speed_name"`
	ActiveSpeedEx      uint32       `json:"active_speed_ex"`
	PhysState          uint8        `json:"phys_state"`
	PhysStateName      string       `json:"phys_state_name"`
	Flags              uint8        `json:"flags"`
	FlagsNames         []string     `json:"flags_names"`
	GIDs               []DevInfoGID `json:"gids"`
}

// DevInfoGID is one populated GID (keys as in `rdmactl -j gids`).
type DevInfoGID struct {
	Index         uint32 `json:"index"`
	GID           string `json:"gid"`
	Type          string `json:"type"`
	NetdevIfindex uint32 `json:"netdev_ifindex"`
}

func deviceJSON(d verbs.Device, nodeType uint8, boardID string, a *verbs.DeviceAttr) *DevInfo {
	tr := transportOf(nodeType)
	j := &DevInfo{
		Ifname: d.Name, Uverbs: d.Uverbs, Driver: d.Driver, ABIVersion: d.ABI,
		Transport: tr, TransportName: transportNames[tr],
		FWVer: a.FWVerString(d), NodeGUID: vocab.GUIDFromBytes(a.NodeGUID).String(), SysImageGUID: vocab.GUIDFromBytes(a.SysImageGUID).String(),
		VendorID: a.VendorID, VendorPartID: a.VendorPartID, HWVer: a.HWVer, PhysPortCnt: a.PhysPortCnt,
		MaxMRSize: a.MaxMRSize, PageSizeCap: a.PageSizeCap, MaxQP: a.MaxQP, MaxQPWR: a.MaxQPWR,
		DeviceCapFlags: a.DeviceCapFlags, DeviceCapFlagsNames: flagNames(uint64(a.DeviceCapFlags), deviceCapNames),
		MaxSGE: a.MaxSGE, MaxSGERd: a.MaxSGERd, MaxCQ: a.MaxCQ, MaxCQE: a.MaxCQE, MaxMR: a.MaxMR, MaxPD: a.MaxPD,
		MaxQPRdAtom: a.MaxQPRdAtom, MaxEERdAtom: a.MaxEERdAtom, MaxResRdAtom: a.MaxResRdAtom,
		MaxQPInitRdAtom: a.MaxQPInitRdAtom, MaxEEInitRdAtom: a.MaxEEInitRdAtom,
		AtomicCap: a.AtomicCap, AtomicCapName: enumName(atomicCapNames, uint64(a.AtomicCap), "invalid atomic capability"),
		MaxEE: a.MaxEE, MaxRDD: a.MaxRDD, MaxMW: a.MaxMW, MaxRawIPv6QP: a.MaxRawIPv6QP, MaxRawEthyQP: a.MaxRawEthyQP,
		MaxMcastGrp: a.MaxMcastGrp, MaxMcastQPAttach: a.MaxMcastQPAttach, MaxTotalMcastQPAttach: a.MaxTotalMcastQPAttach,
		MaxAH: a.MaxAH, MaxFMR: a.MaxFMR, MaxMapPerFMR: a.MaxMapPerFMR,
		MaxSRQ: a.MaxSRQ, MaxSRQWR: a.MaxSRQWR, MaxSRQSGE: a.MaxSRQSGE, MaxPkeys: a.MaxPkeys, LocalCAAckDelay: a.LocalCAAckDelay,

		ExResponseLength: a.ResponseLength, DriverResponseLength: a.DriverResponseLength,
		GeneralODPCaps: a.ODPGeneralCaps, GeneralODPCapsNames: flagNames(a.ODPGeneralCaps, odpGeneralNames),
		RCODPCaps: a.ODPRCCaps, RCODPCapsNames: flagNames(uint64(a.ODPRCCaps), odpTransportNames),
		UCODPCaps: a.ODPUCCaps, UCODPCapsNames: flagNames(uint64(a.ODPUCCaps), odpTransportNames),
		UDODPCaps: a.ODPUDCaps, UDODPCapsNames: flagNames(uint64(a.ODPUDCaps), odpTransportNames),
		XRCODPCaps: a.XRCODPCaps, XRCODPCapsNames: flagNames(uint64(a.XRCODPCaps), odpTransportNames),
		CompletionTimestampMask: a.TimestampMask, HCACoreClock: a.HCACoreClock,
		RawPacketCaps: a.RawPacketCaps, RawPacketCapsNames: flagNames(uint64(a.RawPacketCaps), rawPacketNames),
		DeviceCapFlagsEx: a.DeviceCapFlagsEx, DeviceCapFlagsExNames: flagNames(a.DeviceCapFlagsEx, deviceCapExNames),
		TSOCaps: TSOCaps{MaxTSO: a.TSOMaxTSO, SupportedQPTs: a.TSOSupportedQPTs,
			SupportedQPTsNames: flagNames(uint64(a.TSOSupportedQPTs), qptNames)},
		RSSCaps: RSSCaps{SupportedQPTs: a.RSSSupportedQPTs, SupportedQPTsNames: flagNames(uint64(a.RSSSupportedQPTs), qptNames),
			MaxRWQIndirectionTables: a.MaxRWQIndirectionTables, MaxRWQIndirectionTableSize: a.MaxRWQIndirectionTableSize,
			RxHashFunction: a.RSSRxHashFunction, RxHashFieldsMask: a.RSSRxHashFieldsMask},
		MaxWQTypeRQ: a.MaxWQTypeRQ,
		PacketPacingCaps: PacingCaps{QPRateLimitMin: a.PacketPacingRateMin, QPRateLimitMax: a.PacketPacingRateMax,
			SupportedQPTs: a.PacketPacingSupportedQPTs, SupportedQPTsNames: flagNames(uint64(a.PacketPacingSupportedQPTs), pacingQPTNames)},
		TMCaps: TMCaps{MaxRndvHdrSize: a.TMMaxRndvHdrSize, MaxNumTags: a.TMMaxNumTags, MaxOps: a.TMMaxOps, MaxSGE: a.TMMaxSGE,
			Flags: a.TMFlags, FlagsNames: flagNames(uint64(a.TMFlags), tmCapNames)},
		CQModerationCaps: CQModCaps{MaxCQCount: a.MaxCQModerationCount, MaxCQPeriod: a.MaxCQModerationPeriod},
		MaxDMSize:        a.MaxDMSize,
	}
	if boardID != "" {
		j.BoardID = &boardID
	}
	return j
}

func portJSON(p *verbs.PortAttr) DevInfoPort {
	speed := uint32(p.ActiveSpeed)
	if p.ActiveSpeedEx != 0 {
		speed = p.ActiveSpeedEx
	}
	return DevInfoPort{
		Port: p.Port, State: uint8(p.State), StateName: p.State.Devinfo(),
		MaxMTU: uint8(p.MaxMTU), MaxMTUName: p.MaxMTU.String(),
		ActiveMTU: uint8(p.ActiveMTU), ActiveMTUName: p.ActiveMTU.String(),
		SMLID: p.SMLID, PortLID: p.LID, PortLMC: p.LMC,
		LinkLayer: uint8(p.LinkLayer), LinkLayerName: p.LinkLayer.String(),
		MaxMsgSz:     p.MaxMsgSz,
		PortCapFlags: p.PortCapFlags, PortCapFlagsNames: flagNames(uint64(p.PortCapFlags), portCapNames),
		PortCapFlags2: p.PortCapFlags2, PortCapFlags2Names: flagNames(uint64(p.PortCapFlags2), portCap2Names),
		MaxVLNum: p.MaxVLNum, MaxVLNumName: enumName(vlNames, uint64(p.MaxVLNum), "invalid value"),
		BadPkeyCntr: p.BadPkeyCntr, QkeyViolCntr: p.QkeyViolCntr, SMSL: p.SMSL,
		PkeyTblLen: p.PkeyTblLen, GIDTblLen: p.GIDTblLen, SubnetTimeout: p.SubnetTimeout, InitTypeReply: p.InitTypeReply,
		ActiveWidth: p.ActiveWidth, ActiveWidthName: enumName(widthNames, uint64(p.ActiveWidth), "invalid width"),
		ActiveSpeed: speed, ActiveSpeedName: enumName(speedNames, uint64(speed), "invalid speed"), ActiveSpeedEx: p.ActiveSpeedEx,
		PhysState: uint8(p.PhysState), PhysStateName: p.PhysState.Devinfo(),
		Flags: p.Flags, FlagsNames: flagNames(uint64(p.Flags), portFlagNames),
	}
}

// transportOf maps the sysfs node type to enum ibv_transport_type as
// libibverbs does: CA/switch/router are InfiniBand (RoCE included).
func transportOf(nodeType uint8) int {
	switch nodeType {
	case 1, 2, 3:
		return 0
	case 4:
		return 1
	case 5:
		return 2
	case 6:
		return 3
	}
	return 4
}

// The names below are ibv_devinfo's (rc:libibverbs/examples/devinfo.c) and
// verbs.h's (port capability flags, which ibv_devinfo prints as hex only).
var (
	transportNames = map[int]string{0: "InfiniBand", 1: "iWARP", 2: "usNIC", 3: "usNIC UDP", 4: "unspecified"}
	atomicCapNames = map[uint64]string{0: "ATOMIC_NONE", 1: "ATOMIC_HCA", 2: "ATOMIC_GLOB"}
	widthNames     = map[uint64]string{1: "1X", 2: "4X", 4: "8X", 8: "12X", 16: "2X"}
	speedNames     = map[uint64]string{1: "2.5 Gbps", 2: "5.0 Gbps", 4: "10.0 Gbps", 8: "10.0 Gbps", 16: "14.0 Gbps",
		32: "25.0 Gbps", 64: "50.0 Gbps", 128: "100.0 Gbps", 256: "200.0 Gbps"}
	vlNames = map[uint64]string{1: "1", 2: "2", 3: "4", 4: "8", 5: "15"}

	deviceCapNames = []flagName{
		{0, "RESIZE_MAX_WR"}, {1, "BAD_PKEY_CNTR"}, {2, "BAD_QKEY_CNTR"}, {3, "RAW_MULTI"},
		{4, "AUTO_PATH_MIG"}, {5, "CHANGE_PHY_PORT"}, {6, "UD_AV_PORT_ENFORCE"}, {7, "CURR_QP_STATE_MOD"},
		{8, "SHUTDOWN_PORT"}, {9, "INIT_TYPE"}, {10, "PORT_ACTIVE_EVENT"}, {11, "SYS_IMAGE_GUID"},
		{12, "RC_RNR_NAK_GEN"}, {13, "SRQ_RESIZE"}, {14, "N_NOTIFY_CQ"}, {17, "MEM_WINDOW"},
		{18, "UD_IP_CSUM"}, {20, "XRC"}, {21, "MEM_MGT_EXTENSIONS"}, {23, "MEM_WINDOW_TYPE_2A"},
		{24, "MEM_WINDOW_TYPE_2B"}, {25, "RC_IP_CSUM"}, {26, "RAW_IP_CSUM"}, {29, "MANAGED_FLOW_STEERING"},
	}
	// device_cap_flags_ex repeats device_cap_flags in its low 32 bits;
	// ibv_devinfo names only the bits above (deviceCapExHighNames).
	deviceCapExHighNames = []flagName{{34, "RAW_SCATTER_FCS"}, {36, "PCI_WRITE_END_PADDING"}, {41, "CC_DMA_BOUNCE"}}
	deviceCapExNames     = append(append([]flagName{}, deviceCapNames...), deviceCapExHighNames...)
	// supported_qpts words: bit n is enum ibv_qp_type n (RC 2, UD 4,
	// RAW_PACKET 8), in ibv_devinfo's order; packet pacing also knows RC.
	qptNames          = []flagName{{8, "SUPPORT_RAW_PACKET"}, {4, "SUPPORT_UD"}}
	pacingQPTNames    = []flagName{{8, "SUPPORT_RAW_PACKET"}, {4, "SUPPORT_UD"}, {2, "SUPPORT_RC"}}
	odpGeneralNames   = []flagName{{0, "ODP_SUPPORT"}, {1, "ODP_SUPPORT_IMPLICIT"}}
	odpTransportNames = []flagName{{0, "SUPPORT_SEND"}, {1, "SUPPORT_RECV"}, {2, "SUPPORT_WRITE"}, {3, "SUPPORT_READ"},
		{4, "SUPPORT_ATOMIC"}, {5, "SUPPORT_SRQ"}, {6, "SUPPORT_FLUSH"}, {7, "SUPPORT_ATOMIC_WRITE"}}
	rawPacketNames = []flagName{{0, "C-VLAN stripping offload"}, {1, "Scatter FCS offload"}, {2, "IP csum offload"}, {3, "Delay drop"}}
	tmCapNames     = []flagName{{0, "IBV_TM_CAP_RC"}}
	portCapNames   = []flagName{
		{1, "SM"}, {2, "NOTICE_SUP"}, {3, "TRAP_SUP"}, {4, "OPT_IPD_SUP"}, {5, "AUTO_MIGR_SUP"},
		{6, "SL_MAP_SUP"}, {7, "MKEY_NVRAM"}, {8, "PKEY_NVRAM"}, {9, "LED_INFO_SUP"}, {10, "SM_DISABLED"},
		{11, "SYS_IMAGE_GUID_SUP"}, {12, "PKEY_SW_EXT_PORT_TRAP_SUP"}, {14, "EXTENDED_SPEEDS_SUP"},
		{15, "CAP_MASK2_SUP"}, {16, "CM_SUP"}, {17, "SNMP_TUNNEL_SUP"}, {18, "REINIT_SUP"},
		{19, "DEVICE_MGMT_SUP"}, {20, "VENDOR_CLASS_SUP"}, {21, "DR_NOTICE_SUP"}, {22, "CAP_MASK_NOTICE_SUP"},
		{23, "BOOT_MGMT_SUP"}, {24, "LINK_LATENCY_SUP"}, {25, "CLIENT_REG_SUP"}, {26, "IP_BASED_GIDS"},
	}
	portCap2Names = []flagName{{0, "SET_NODE_DESC_SUP"}, {1, "INFO_EXT_SUP"}, {2, "VIRT_SUP"},
		{3, "SWITCH_PORT_STATE_TABLE_SUP"}, {4, "LINK_WIDTH_2X_SUP"}, {5, "LINK_SPEED_HDR_SUP"},
		{10, "LINK_SPEED_NDR_SUP"}, {12, "LINK_SPEED_XDR_SUP"}}
	portFlagNames = []flagName{{0, "GRH_REQUIRED"}}
)

// rdma-core 44's devinfo.c (libibverbs/examples/devinfo.c) knows only the
// first entries of some tables above, which later versions grew: six ODP
// transport caps, two device_cap_flags_ex bits above 32, and for packet
// pacing the same two QP types as TSO and RSS. The bits it does not know
// it prints as "Unknown flags". These decode as it does ("0x..." last).

// ODPTransportNames44 decodes an rc/uc/ud/xrc_odp_caps word.
func ODPTransportNames44(v uint32) []string { return flagNames(uint64(v), odpTransportNames[:6]) }

// DeviceCapExHighNames44 decodes device_cap_flags_ex above bit 31.
func DeviceCapExHighNames44(v uint64) []string {
	return flagNames(v&^0xffffffff, deviceCapExHighNames[:2])
}

// QPTNames44 decodes a supported_qpts word (TSO, RSS, packet pacing).
func QPTNames44(v uint32) []string { return flagNames(uint64(v), qptNames) }

type flagName struct {
	bit  uint
	name string
}

// flagNames lists the names of v's set bits in table order; unknown bits
// come last as one "0x..." entry. Never nil, so JSON shows [].
func flagNames(v uint64, names []flagName) []string {
	out := []string{}
	known := uint64(0)
	for _, n := range names {
		known |= 1 << n.bit
		if v&(1<<n.bit) != 0 {
			out = append(out, n.name)
		}
	}
	if rest := v &^ known; rest != 0 {
		out = append(out, fmt.Sprintf("0x%X", rest))
	}
	return out
}

func enumName(m map[uint64]string, v uint64, unknown string) string {
	if s, ok := m[v]; ok {
		return s
	}
	return unknown
}

// writeDevInfo prints one device in the layout of ibv_devinfo -v (same
// names and order, aligned columns instead of tabs), then what it does not
// print, marked "(extended)" in the Long help's sense.
func writeDevInfo(w io.Writer, j *DevInfo) {
	kv := func(indent int, k string, v any) {
		line := fmt.Sprintf("%s%-*s %v", strings.Repeat("  ", indent), 30-2*indent, k+":", v)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	flags := func(_ int, names []string) {
		for _, n := range names {
			if strings.HasPrefix(n, "0x") {
				n = "Unknown flags: " + n // as ibv_devinfo words it
			}
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", 33), n) // under the values, indented
		}
	}
	fmt.Fprintf(w, "hca_id: %s\n", j.Ifname)
	kv(1, "transport", fmt.Sprintf("%s (%d)", j.TransportName, j.Transport))
	kv(1, "fw_ver", j.FWVer)
	kv(1, "node_guid", j.NodeGUID)
	kv(1, "sys_image_guid", j.SysImageGUID)
	kv(1, "vendor_id", fmt.Sprintf("0x%04x", j.VendorID))
	kv(1, "vendor_part_id", j.VendorPartID)
	kv(1, "hw_ver", fmt.Sprintf("0x%X", j.HWVer))
	if j.BoardID != nil {
		kv(1, "board_id", *j.BoardID)
	}
	kv(1, "phys_port_cnt", j.PhysPortCnt)
	kv(1, "max_mr_size", fmt.Sprintf("0x%x", j.MaxMRSize))
	kv(1, "page_size_cap", fmt.Sprintf("0x%x", j.PageSizeCap))
	kv(1, "max_qp", j.MaxQP)
	kv(1, "max_qp_wr", j.MaxQPWR)
	kv(1, "device_cap_flags", fmt.Sprintf("0x%08x", j.DeviceCapFlags))
	flags(1, j.DeviceCapFlagsNames)
	for _, f := range []struct {
		k string
		v uint32
	}{
		{"max_sge", j.MaxSGE}, {"max_sge_rd", j.MaxSGERd}, {"max_cq", j.MaxCQ}, {"max_cqe", j.MaxCQE},
		{"max_mr", j.MaxMR}, {"max_pd", j.MaxPD}, {"max_qp_rd_atom", j.MaxQPRdAtom},
		{"max_ee_rd_atom", j.MaxEERdAtom}, {"max_res_rd_atom", j.MaxResRdAtom},
		{"max_qp_init_rd_atom", j.MaxQPInitRdAtom}, {"max_ee_init_rd_atom", j.MaxEEInitRdAtom},
	} {
		kv(1, f.k, f.v)
	}
	kv(1, "atomic_cap", fmt.Sprintf("%s (%d)", j.AtomicCapName, j.AtomicCap))
	for _, f := range []struct {
		k string
		v uint32
	}{
		{"max_ee", j.MaxEE}, {"max_rdd", j.MaxRDD}, {"max_mw", j.MaxMW}, {"max_raw_ipv6_qp", j.MaxRawIPv6QP},
		{"max_raw_ethy_qp", j.MaxRawEthyQP}, {"max_mcast_grp", j.MaxMcastGrp},
		{"max_mcast_qp_attach", j.MaxMcastQPAttach}, {"max_total_mcast_qp_attach", j.MaxTotalMcastQPAttach},
		{"max_ah", j.MaxAH}, {"max_fmr", j.MaxFMR}, {"max_map_per_fmr", j.MaxMapPerFMR}, {"max_srq", j.MaxSRQ},
		{"max_srq_wr", j.MaxSRQWR}, {"max_srq_sge", j.MaxSRQSGE},
	} {
		kv(1, f.k, f.v)
	}
	kv(1, "max_pkeys", j.MaxPkeys)
	kv(1, "local_ca_ack_delay", j.LocalCAAckDelay)
	odp := func(k string, v uint64, names []string) {
		if len(names) == 0 {
			names = []string{"NO SUPPORT"}
		}
		kv(1, k, fmt.Sprintf("0x%x", v))
		flags(1, names)
	}
	odp("general_odp_caps", j.GeneralODPCaps, j.GeneralODPCapsNames)
	odp("rc_odp_caps", uint64(j.RCODPCaps), j.RCODPCapsNames)
	odp("uc_odp_caps", uint64(j.UCODPCaps), j.UCODPCapsNames)
	odp("ud_odp_caps", uint64(j.UDODPCaps), j.UDODPCapsNames)
	odp("xrc_odp_caps", uint64(j.XRCODPCaps), j.XRCODPCapsNames)
	if j.CompletionTimestampMask != 0 {
		kv(1, "completion_timestamp_mask", fmt.Sprintf("0x%016x (%d bits)", j.CompletionTimestampMask, bits.Len64(j.CompletionTimestampMask)))
	} else {
		kv(1, "completion_timestamp_mask", "not supported")
	}
	if j.HCACoreClock != 0 {
		kv(1, "hca_core_clock", fmt.Sprintf("%d kHz", j.HCACoreClock))
	} else {
		kv(1, "hca_core_clock", "not supported")
	}
	kv(1, "raw_packet_caps", fmt.Sprintf("0x%x", j.RawPacketCaps))
	flags(1, j.RawPacketCapsNames)
	kv(1, "device_cap_flags_ex", fmt.Sprintf("0x%X", j.DeviceCapFlagsEx))
	// Like ibv_devinfo, only the bits above device_cap_flags' 32.
	flags(1, flagNames(j.DeviceCapFlagsEx&^0xffffffff, deviceCapExHighNames))
	kv(1, "tso_caps", "")
	kv(2, "max_tso", j.TSOCaps.MaxTSO)
	if j.TSOCaps.MaxTSO != 0 {
		kv(2, "supported_qp", "")
		flags(2, j.TSOCaps.SupportedQPTsNames)
	}
	kv(1, "rss_caps", "")
	kv(2, "supported_qpts", fmt.Sprintf("0x%x", j.RSSCaps.SupportedQPTs))
	kv(2, "max_rwq_indirection_tables", j.RSSCaps.MaxRWQIndirectionTables)
	kv(2, "max_rwq_indirection_table_size", j.RSSCaps.MaxRWQIndirectionTableSize)
	kv(2, "rx_hash_function", fmt.Sprintf("0x%x", j.RSSCaps.RxHashFunction))
	kv(2, "rx_hash_fields_mask", fmt.Sprintf("0x%X", j.RSSCaps.RxHashFieldsMask))
	if j.RSSCaps.SupportedQPTs != 0 {
		kv(2, "supported_qp", "")
		flags(2, j.RSSCaps.SupportedQPTsNames)
	}
	kv(1, "max_wq_type_rq", j.MaxWQTypeRQ)
	kv(1, "packet_pacing_caps", "")
	kv(2, "qp_rate_limit_min", fmt.Sprintf("%d kbps", j.PacketPacingCaps.QPRateLimitMin))
	kv(2, "qp_rate_limit_max", fmt.Sprintf("%d kbps", j.PacketPacingCaps.QPRateLimitMax))
	if j.PacketPacingCaps.QPRateLimitMax != 0 {
		kv(2, "supported_qp", "")
		flags(2, j.PacketPacingCaps.SupportedQPTsNames)
	}
	if j.TMCaps.MaxNumTags != 0 {
		kv(1, "tag_matching", "")
		kv(2, "max_rndv_hdr_size", j.TMCaps.MaxRndvHdrSize)
		kv(2, "max_num_tags", j.TMCaps.MaxNumTags)
		kv(2, "max_ops", j.TMCaps.MaxOps)
		kv(2, "max_sge", j.TMCaps.MaxSGE)
		kv(2, "flags", strings.Join(j.TMCaps.FlagsNames, " "))
	} else {
		kv(1, "tag_matching", "not supported")
	}
	if j.CQModerationCaps.MaxCQCount != 0 && j.CQModerationCaps.MaxCQPeriod != 0 {
		kv(1, "cq_moderation", fmt.Sprintf("max_cq_count %d, max_cq_period %d us", j.CQModerationCaps.MaxCQCount, j.CQModerationCaps.MaxCQPeriod))
	} else {
		kv(1, "cq_moderation", "not supported")
	}
	kv(1, "max_dm_size", fmt.Sprintf("%d bytes", j.MaxDMSize))
	kv(1, "num_comp_vectors", j.NumCompVectors)
	kv(1, "uverbs", fmt.Sprintf("%s (driver %s, ABI %d)", j.Uverbs, j.Driver, j.ABIVersion))
	for _, p := range j.Ports {
		kv(1, "port", p.Port)
		kv(2, "state", fmt.Sprintf("%s (%d)", p.StateName, p.State))
		kv(2, "max_mtu", fmt.Sprintf("%s (%d)", p.MaxMTUName, p.MaxMTU))
		kv(2, "active_mtu", fmt.Sprintf("%s (%d)", p.ActiveMTUName, p.ActiveMTU))
		kv(2, "sm_lid", p.SMLID)
		kv(2, "port_lid", p.PortLID)
		kv(2, "port_lmc", fmt.Sprintf("0x%02x", p.PortLMC))
		kv(2, "link_layer", p.LinkLayerName)
		kv(2, "max_msg_sz", fmt.Sprintf("0x%x", p.MaxMsgSz))
		kv(2, "port_cap_flags", fmt.Sprintf("0x%08x", p.PortCapFlags))
		flags(2, p.PortCapFlagsNames)
		kv(2, "port_cap_flags2", fmt.Sprintf("0x%04x", p.PortCapFlags2))
		flags(2, p.PortCapFlags2Names)
		kv(2, "max_vl_num", fmt.Sprintf("%s (%d)", p.MaxVLNumName, p.MaxVLNum))
		kv(2, "bad_pkey_cntr", fmt.Sprintf("0x%x", p.BadPkeyCntr))
		kv(2, "qkey_viol_cntr", fmt.Sprintf("0x%x", p.QkeyViolCntr))
		kv(2, "sm_sl", p.SMSL)
		kv(2, "pkey_tbl_len", p.PkeyTblLen)
		kv(2, "gid_tbl_len", p.GIDTblLen)
		kv(2, "subnet_timeout", p.SubnetTimeout)
		kv(2, "init_type_reply", p.InitTypeReply)
		kv(2, "active_width", fmt.Sprintf("%s (%d)", p.ActiveWidthName, p.ActiveWidth))
		kv(2, "active_speed", fmt.Sprintf("%s (%d)", p.ActiveSpeedName, p.ActiveSpeed))
		kv(2, "phys_state", fmt.Sprintf("%s (%d)", p.PhysStateName, p.PhysState))
		kv(2, "flags", fmt.Sprintf("0x%x", p.Flags))
		flags(2, p.FlagsNames)
		for _, g := range p.GIDs {
			kv(2, fmt.Sprintf("GID[%3d]", g.Index), fmt.Sprintf("%s, %s", g.GID, g.Type))
		}
	}
}

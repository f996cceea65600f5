package verbs

// This file holds the kernel ABI: command numbers, ioctl object/method/
// attribute ids, and Go mirrors of the UAPI structs of
// /usr/include/rdma/ib_user_verbs.h and ib_user_ioctl_{cmds,verbs}.h.
//
// The structs are host-endian, as the kernel's (fields the kernel declares
// __be64 are byte arrays here so that nobody reads them as numbers by
// mistake). Their sizes and offsets are checked against the C headers by
// layout_test.go (gcc builds testdata/layout/layout.c); every struct added
// here must be added there too. They are named uv<CName> to keep them apart
// from the package's public types and from the providers' own structs.

// Global uverbs ABI version (IB_USER_VERBS_ABI_VERSION); the only one this
// package speaks.
const uverbsABIVersion = 6

// Legacy write() command numbers (enum ib_uverbs_write_cmds).
const (
	cmdGetContext     uint32 = 0
	cmdQueryDevice    uint32 = 1
	cmdQueryPort      uint32 = 2
	cmdAllocPD        uint32 = 3
	cmdDeallocPD      uint32 = 4
	cmdCreateAH       uint32 = 5
	cmdDestroyAH      uint32 = 8
	cmdRegMR          uint32 = 9
	cmdDeregMR        uint32 = 13
	cmdCreateCompChan uint32 = 17
	cmdCreateCQ       uint32 = 18
	cmdDestroyCQ      uint32 = 20
	cmdReqNotifyCQ    uint32 = 23
	cmdCreateQP       uint32 = 24
	cmdQueryQP        uint32 = 25
	cmdModifyQP       uint32 = 26
	cmdDestroyQP      uint32 = 27
	cmdPostSend       uint32 = 28
	cmdAttachMcast    uint32 = 30
	cmdDetachMcast    uint32 = 31

	// cmdFlagExtended marks an "ex" command (IB_USER_VERBS_CMD_FLAG_EXTENDED).
	cmdFlagExtended uint32 = 0x80000000
	// Extended command numbers (enum ib_uverbs_ex_write_cmds), without the flag.
	exCmdQueryDevice uint32 = 1
	exCmdModifyQP    uint32 = 10
)

// ioctl request number: _IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr).
const rdmaVerbsIoctl = 0xC0181B01

// ioctl objects (enum uverbs_default_objects).
const (
	objDevice     uint16 = 0
	objPD         uint16 = 1
	objCQ         uint16 = 3
	objQP         uint16 = 4
	objMR         uint16 = 7
	objAsyncEvent uint16 = 16
)

// Methods of objDevice (enum uverbs_methods_device).
const (
	methInvokeWrite   uint16 = 0
	methInfoHandles   uint16 = 1
	methQueryPort     uint16 = 2
	methGetContext    uint16 = 3
	methQueryContext  uint16 = 4
	methQueryGIDTable uint16 = 5
	methQueryGIDEntry uint16 = 6
)

// Destroy methods, each with one IDR attribute (id 0).
const (
	methPDDestroy  uint16 = 0 // UVERBS_METHOD_PD_DESTROY
	methMRDestroy  uint16 = 1 // UVERBS_METHOD_MR_DESTROY
	methAsyncAlloc uint16 = 0 // UVERBS_METHOD_ASYNC_EVENT_ALLOC
)

// Attribute ids.
const (
	attrCoreIn   uint16 = 0 // UVERBS_ATTR_CORE_IN
	attrCoreOut  uint16 = 1 // UVERBS_ATTR_CORE_OUT
	attrWriteCmd uint16 = 2 // UVERBS_ATTR_WRITE_CMD
	attrUHWIn    uint16 = 0x1000
	attrUHWOut   uint16 = 0x1001

	attrQueryPortNum  uint16 = 0
	attrQueryPortResp uint16 = 1

	attrGetContextNumCompVectors uint16 = 0
	attrGetContextCoreSupport    uint16 = 1

	attrGIDTableEntrySize     uint16 = 0
	attrGIDTableFlags         uint16 = 1
	attrGIDTableRespEntries   uint16 = 2
	attrGIDTableRespNumEntrie uint16 = 3

	attrDestroyHandle uint16 = 0 // *_DESTROY_HANDLE, every object
)

// ioctl attribute flags.
const (
	attrFMandatory   uint16 = 1 // UVERBS_ATTR_F_MANDATORY
	attrFValidOutput uint16 = 2 // UVERBS_ATTR_F_VALID_OUTPUT
)

// uvCmdHdr is struct ib_uverbs_cmd_hdr (8 B), the head of every write().
type uvCmdHdr struct {
	Command  uint32
	InWords  uint16
	OutWords uint16
}

// uvExCmdHdr is struct ib_uverbs_ex_cmd_hdr (16 B), after uvCmdHdr for "ex"
// commands.
type uvExCmdHdr struct {
	Response         uint64
	ProviderInWords  uint16
	ProviderOutWords uint16
	CmdHdrReserved   uint32
}

// uvIoctlHdr is struct ib_uverbs_ioctl_hdr (24 B); the attributes follow it.
type uvIoctlHdr struct {
	Length    uint16
	ObjectID  uint16
	MethodID  uint16
	NumAttrs  uint16
	Reserved1 uint64
	DriverID  uint32
	Reserved2 uint32
}

// uvAttr is struct ib_uverbs_attr (16 B).
type uvAttr struct {
	AttrID   uint16
	Len      uint16
	Flags    uint16
	AttrData uint16 // enum_data.elem_id in byte 0, reserved byte 1
	Data     uint64
}

type uvGetContext struct{ Response uint64 }

type uvGetContextResp struct {
	AsyncFD        uint32
	NumCompVectors uint32
}

type uvQueryDevice struct{ Response uint64 }

// uvQueryDeviceResp is struct ib_uverbs_query_device_resp (176 B), which
// DeviceAttr carries as the kernel wrote it.
type uvQueryDeviceResp = DeviceCaps

// uvExQueryDevice is struct ib_uverbs_ex_query_device (8 B).
type uvExQueryDevice struct {
	CompMask uint32
	Reserved uint32
}

type uvODPCaps struct {
	GeneralCaps uint64
	RCODPCaps   uint32
	UCODPCaps   uint32
	UDODPCaps   uint32
	Reserved    uint32
}

type uvRSSCaps struct {
	SupportedQPTs              uint32
	MaxRWQIndirectionTables    uint32
	MaxRWQIndirectionTableSize uint32
	Reserved                   uint32
}

type uvTMCaps struct {
	MaxRndvHdrSize uint32
	MaxNumTags     uint32
	Flags          uint32
	MaxOps         uint32
	MaxSGE         uint32
	Reserved       uint32
}

type uvCQModerationCaps struct {
	MaxCQModerationCount  uint16
	MaxCQModerationPeriod uint16
	Reserved              uint32
}

// uvExQueryDeviceResp is struct ib_uverbs_ex_query_device_resp (304 B on
// 6.1 headers). Older kernels fill only a prefix and say how much in
// ResponseLength.
type uvExQueryDeviceResp struct {
	Base             uvQueryDeviceResp
	CompMask         uint32
	ResponseLength   uint32
	ODPCaps          uvODPCaps
	TimestampMask    uint64
	HCACoreClock     uint64 // kHz
	DeviceCapFlagsEx uint64
	RSSCaps          uvRSSCaps
	MaxWQTypeRQ      uint32
	RawPacketCaps    uint32
	TMCaps           uvTMCaps
	CQModerationCaps uvCQModerationCaps
	MaxDMSize        uint64
	XRCODPCaps       uint32
	Reserved         uint32
}

// uvQueryPort is struct ib_uverbs_query_port (16 B).
type uvQueryPort struct {
	Response uint64
	PortNum  uint8
	Reserved [7]uint8
}

// uvQueryPortResp is struct ib_uverbs_query_port_resp (40 B), which
// PortAttr embeds.
type uvQueryPortResp = PortCaps

// uvQueryPortRespEx is struct ib_uverbs_query_port_resp_ex (48 B), the
// answer of the ioctl QUERY_PORT. The 6.1 headers declare reserved[6] after
// port_cap_flags2; newer ones split it into reserved[2] and active_speed_ex
// at offset 44, which is what this mirrors (same size).
type uvQueryPortRespEx struct {
	LegacyResp    uvQueryPortResp
	PortCapFlags2 uint16
	Reserved      [2]uint8
	ActiveSpeedEx uint32
}

type uvAllocPD struct{ Response uint64 }

type uvAllocPDResp struct{ PDHandle uint32 }

type uvDeallocPD struct{ PDHandle uint32 }

// uvRegMR is struct ib_uverbs_reg_mr (40 B).
type uvRegMR struct {
	Response    uint64
	Start       uint64
	Length      uint64
	HCAVA       uint64
	PDHandle    uint32
	AccessFlags uint32
}

type uvRegMRResp struct {
	MRHandle uint32
	LKey     uint32
	RKey     uint32
}

type uvDeregMR struct{ MRHandle uint32 }

// uvGIDEntry is struct ib_uverbs_gid_entry (32 B). The C struct declares the
// GID as __aligned_u64 gid[2]: the bytes are in network order, and the
// 8-byte alignment does not change any offset or the size.
type uvGIDEntry struct {
	GID           [16]byte
	GIDIndex      uint32
	PortNum       uint32
	GIDType       uint32
	NetdevIfindex uint32
}

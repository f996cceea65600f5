package rdmacm

// Go mirrors of the UCMA ABI in <rdma/rdma_user_cm.h> (RDMA_USER_CM_ABI_VERSION
// 4) and the two ib_user_verbs.h structs INIT_QP_ATTR answers with. Every
// struct is checked against the header by TestLayout (testdata/layout.c).
// A command is written to the rdma_cm fd as a cmdHdr followed by the
// command's struct; hdr.In is the struct's size, hdr.Out the size of the
// response the kernel writes at the struct's Response address.

// Command numbers (enum in rdma_user_cm.h).
const (
	cmdCreateID     = 0
	cmdDestroyID    = 1
	cmdBindIP       = 2
	cmdResolveIP    = 3
	cmdResolveRoute = 4
	cmdQueryRoute   = 5
	cmdConnect      = 6
	cmdListen       = 7
	cmdAccept       = 8
	cmdReject       = 9
	cmdDisconnect   = 10
	cmdInitQPAttr   = 11
	cmdGetEvent     = 12
	cmdSetOption    = 14
)

// PortSpace is enum rdma_ucm_port_space.
type PortSpace uint16

const (
	PSTCP PortSpace = 0x0106 // reliable connections (RC)
	PSUDP PortSpace = 0x0111 // datagrams (UD)
)

// qpTypeRC and qpTypeUD are enum ib_qp_type values CREATE_ID takes
// (librdmacm: RC for RDMA_PS_TCP, UD for RDMA_PS_UDP).
const (
	qpTypeRC = 2
	qpTypeUD = 4
)

// maxPrivateData is RDMA_MAX_PRIVATE_DATA.
const maxPrivateData = 256

// abiVersion is RDMA_USER_CM_ABI_VERSION; the kernel publishes its own in
// /sys/class/misc/rdma_cm/abi_version.
const abiVersion = 4

// sockaddr6 is a struct sockaddr_in6 (28 bytes). The legacy IP commands
// (BIND_IP, RESOLVE_IP) carry a struct sockaddr_in in its first 16 bytes
// for IPv4, as librdmacm writes it.
type sockaddr6 [28]byte

type cmdHdr struct {
	Cmd uint32
	In  uint16
	Out uint16
}

type createID struct {
	UID      uint64
	Response uint64
	PS       uint16
	QPType   uint8
	Reserved [5]uint8
}

type createIDResp struct {
	ID uint32
}

type destroyID struct {
	Response uint64
	ID       uint32
	Reserved uint32
}

type destroyIDResp struct {
	EventsReported uint32
}

type bindIP struct {
	Response uint64
	Addr     sockaddr6
	ID       uint32
}

type resolveIP struct {
	SrcAddr   sockaddr6
	DstAddr   sockaddr6
	ID        uint32
	TimeoutMs uint32
}

type resolveRoute struct {
	ID        uint32
	TimeoutMs uint32
}

type query struct {
	Response uint64
	ID       uint32
	Option   uint32
}

// userPathRec is struct ib_user_path_rec (ib_user_sa.h), kept raw: only
// its size matters here.
type userPathRec [64]byte

type queryRouteResp struct {
	NodeGUID   uint64
	IBRoute    [2]userPathRec
	SrcAddr    sockaddr6
	DstAddr    sockaddr6
	NumPaths   uint32
	PortNum    uint8
	Reserved   [3]uint8
	IBDevIndex uint32
	Reserved1  uint32
}

type connParam struct {
	QPNum              uint32
	QKey               uint32
	PrivateData        [maxPrivateData]uint8
	PrivateDataLen     uint8
	SRQ                uint8
	ResponderResources uint8
	InitiatorDepth     uint8
	FlowControl        uint8
	RetryCount         uint8
	RNRRetryCount      uint8
	Valid              uint8
}

// uverbsGlobalRoute is struct ib_uverbs_global_route.
type uverbsGlobalRoute struct {
	DGID         [16]uint8
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
	Reserved     uint8
}

// uverbsAHAttr is struct ib_uverbs_ah_attr.
type uverbsAHAttr struct {
	GRH         uverbsGlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    uint8
	PortNum     uint8
	Reserved    uint8
}

type udParam struct {
	QPNum          uint32
	QKey           uint32
	AHAttr         uverbsAHAttr
	PrivateData    [maxPrivateData]uint8
	PrivateDataLen uint8
	Reserved       [7]uint8
}

type ece struct {
	VendorID uint32
	AttrMod  uint32
}

type connect struct {
	ConnParam connParam
	ID        uint32
	Reserved  uint32
	ECE       ece
}

type listen struct {
	ID      uint32
	Backlog uint32
}

type accept struct {
	UID       uint64
	ConnParam connParam
	ID        uint32
	Reserved  uint32
	ECE       ece
}

type reject struct {
	ID             uint32
	PrivateDataLen uint8
	Reason         uint8
	Reserved       [2]uint8
	PrivateData    [maxPrivateData]uint8
}

type disconnect struct {
	ID uint32
}

type initQPAttr struct {
	Response uint64
	ID       uint32
	QPState  uint32
}

type getEvent struct {
	Response uint64
}

// eventResp is struct rdma_ucm_event_resp. Param is the union of
// rdma_ucm_conn_param and rdma_ucm_ud_param (the larger), at offset 20:
// the header says none of its members may need 8-byte alignment.
type eventResp struct {
	UID      uint64
	ID       uint32
	Event    uint32
	Status   uint32
	Param    [304]byte
	Reserved uint32
	ECE      ece
}

type setOption struct {
	OptVal  uint64
	ID      uint32
	Level   uint32
	OptName uint32
	OptLen  uint32
}

// uverbsQPAttr is struct ib_uverbs_qp_attr: INIT_QP_ATTR's response.
type uverbsQPAttr struct {
	QPAttrMask       uint32
	QPState          uint32
	CurQPState       uint32
	PathMTU          uint32
	PathMigState     uint32
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	AHAttr           uverbsAHAttr
	AltAHAttr        uverbsAHAttr
	MaxSendWR        uint32
	MaxRecvWR        uint32
	MaxSendSGE       uint32
	MaxRecvSGE       uint32
	MaxInlineData    uint32
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	EnSQDAsyncNotify uint8
	SQDraining       uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	Reserved         [5]uint8
}

package mlx5

// mlx5 provider udata (rdma/mlx5-abi.h), mirrored field for field.
// mlx5_test.go compares every size and offset with what gcc computes from
// the installed header (testdata/mlx5/golden.c, "layout" mode).

// struct mlx5_ib_alloc_ucontext_req_v2 (32 bytes).
type mlx5AllocUcontextReq struct {
	TotalNumBfregs      uint32
	NumLowLatencyBfregs uint32
	Flags               uint32
	CompMask            uint32
	MaxCQEVersion       uint8
	Reserved0           uint8
	Reserved1           uint16
	Reserved2           uint32
	LibCaps             uint64
}

// struct mlx5_ib_alloc_ucontext_resp (72 bytes).
type mlx5AllocUcontextResp struct {
	QPTabSize          uint32
	BfRegSize          uint32
	TotBfregs          uint32
	CacheLineSize      uint32
	MaxSQDescSz        uint16
	MaxRQDescSz        uint16
	MaxSendWQEBB       uint32
	MaxRecvWR          uint32
	MaxSRQRecvWR       uint32
	NumPorts           uint16
	FlowActionFlags    uint16
	CompMask           uint32
	ResponseLength     uint32
	CQEVersion         uint8
	CmdsSuppUHW        uint8
	EthMinInline       uint8
	ClockInfoVersions  uint8
	HCACoreClockOffset uint64
	LogUARSize         uint32
	NumUARsPerPage     uint32
	NumDynBfregs       uint32
	DumpFillMkey       uint32
}

// struct mlx5_ib_create_cq (32 bytes).
type mlx5CreateCQ struct {
	BufAddr          uint64
	DBAddr           uint64
	CQESize          uint32
	CQECompEn        uint8
	CQECompResFormat uint8
	Flags            uint16
	UARPageIndex     uint16
	Reserved0        uint16
	Reserved1        uint32
}

// struct mlx5_ib_create_cq_resp (8 bytes).
type mlx5CreateCQResp struct {
	CQN      uint32
	Reserved uint32
}

// struct mlx5_ib_create_qp (56 bytes).
type mlx5CreateQP struct {
	BufAddr    uint64
	DBAddr     uint64
	SQWQECount uint32
	RQWQECount uint32
	RQWQEShift uint32
	Flags      uint32
	UIdx       uint32
	BfregIndex uint32
	SQBufAddr  uint64 // union with access_key
	ECEOptions uint32
	DCIStreams uint16 // struct mlx5_ib_create_qp_dci_streams: two u8 logs
	Reserved   uint16
}

// struct mlx5_ib_create_qp_resp (40 bytes).
type mlx5CreateQPResp struct {
	BfregIndex uint32
	ECEOptions uint32
	CompMask   uint32
	TIRN       uint32
	TISN       uint32
	RQN        uint32
	SQN        uint32
	Reserved1  uint32
	TIRICMAddr uint64
}

const (
	mlx5LibCap4KUAR = 1 << 0 // MLX5_LIB_CAP_4K_UAR

	// rdma-core's defaults (providers/mlx5/mlx5.c): MLX5_DEF_TOT_UUARS and
	// the low-latency share.
	mlx5DefTotBfregs   = 16
	mlx5DefLowLatency  = 4
	mlx5MaxCQEVersion  = 1
	mlx5DefaultUIdx    = 0xffffff // MLX5_IB_DEFAULT_UIDX: "no user index" with cqe_version 0
	mlx5MmapRegularPg  = 0        // MLX5_IB_MMAP_REGULAR_PAGE
	mlx5MmapCmdShift   = 8        // MLX5_IB_MMAP_CMD_SHIFT
	mlx5AdapterPage    = 4096     // MLX5_ADAPTER_PAGE_SIZE: one UAR
	mlx5BFOffset       = 0x800    // MLX5_BF_OFFSET within a UAR
	mlx5BfregsPerUAR   = 4        // MLX5_NUM_BFREGS_PER_UAR
	mlx5NonFPBfregsUAR = 2        // MLX5_NUM_NON_FP_BFREGS_PER_UAR
)

// mlx5UARMmapOffset is the mmap offset of static UAR page idx (< 256): the
// command sits above bit 8 of the page offset, the index below (mlx5-abi.h
// MLX5_IB_MMAP_CMD_SHIFT; kernel get_command/get_index; rdma-core
// get_uar_mmap_offset with set_command/set_index). Only the ALLOC_WC
// command has "extended" indexes ≥ 256, and this provider does not use it.
func mlx5UARMmapOffset(cmd, idx uint32, pageSize int) int64 {
	pgoff := int64(cmd)<<mlx5MmapCmdShift | int64(idx&0xff)
	return pgoff * int64(pageSize)
}

// struct mlx5_ib_tso_caps (8 bytes).
type mlx5TSOCaps struct {
	MaxTSO        uint32
	SupportedQPTs uint32
}

// struct mlx5_ib_rss_caps (16 bytes).
type mlx5RSSCaps struct {
	RxHashFieldsMask uint64
	RxHashFunction   uint8
	Reserved         [7]uint8
}

// struct mlx5_packet_pacing_caps (16 bytes).
type mlx5PacketPacingCaps struct {
	QPRateLimitMin uint32
	QPRateLimitMax uint32 // kbps
	SupportedQPTs  uint32
	CapFlags       uint8
	Reserved       [3]uint8
}

// struct mlx5_ib_query_device_resp (104 bytes): the provider part of EX
// QUERY_DEVICE's answer, after ib_uverbs_ex_query_device_resp. The kernel
// fills a prefix and says how long in ResponseLength (counted from the
// start of this struct); what lies beyond is absent.
type mlx5QueryDeviceResp struct {
	CompMask                      uint32
	ResponseLength                uint32
	TSOCaps                       mlx5TSOCaps
	RSSCaps                       mlx5RSSCaps
	CQECompCaps                   [2]uint32 // struct mlx5_ib_cqe_comp_caps: max_num, supported_format
	PacketPacingCaps              mlx5PacketPacingCaps
	MLX5IBSupportMultiPktSendWQEs uint32
	Flags                         uint32
	SWParsingCaps                 [2]uint32 // struct mlx5_ib_sw_parsing_caps
	StridingRQCaps                [6]uint32 // struct mlx5_ib_striding_rq_caps
	TunnelOffloadsCaps            uint32
	DCIStreamsCaps                [2]uint8 // struct mlx5_ib_dci_streams_caps
	Reserved                      uint16
}

// mlx5UserCmdsSuppUHWQueryDevice is MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE
// in alloc_ucontext's cmds_supp_uhw: the kernel accepts (and fills)
// provider data on QUERY_DEVICE.
const mlx5UserCmdsSuppUHWQueryDevice = 1 << 0

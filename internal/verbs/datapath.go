package verbs

import "errors"

// This file is the contract between the uverbs control path (this package),
// the providers' user-space data paths (rxe now, mlx5 beside it) and the
// benchmark engine. Keep it small and stable: providers and internal/perf
// are written against it.
//
// The hot-path rules: PostSend, PostRecv and Poll take slices of
// preallocated values, never allocate, never lock, and never call into the
// kernel except for a provider's doorbell (rxe's empty POST_SEND write).

// Opcode is the operation of a send work request. The values are the
// kernel's IB_UVERBS_WR_* numbers (ib_user_verbs.h), which rxe stores in its
// send WQEs as they are.
type Opcode uint32

const (
	OpRDMAWrite    Opcode = 0 // IB_UVERBS_WR_RDMA_WRITE
	OpRDMAWriteImm Opcode = 1 // IB_UVERBS_WR_RDMA_WRITE_WITH_IMM
	OpSend         Opcode = 2 // IB_UVERBS_WR_SEND
	OpSendImm      Opcode = 3 // IB_UVERBS_WR_SEND_WITH_IMM
	OpRDMARead     Opcode = 4 // IB_UVERBS_WR_RDMA_READ
	// The atomics (atomic.go): 8 bytes at RemoteAddr, the old value
	// returned into the SGE.
	OpAtomicCmpSwap  Opcode = 5 // IB_UVERBS_WR_ATOMIC_CMP_AND_SWP
	OpAtomicFetchAdd Opcode = 6 // IB_UVERBS_WR_ATOMIC_FETCH_AND_ADD
)

// SendFlags are the IB_UVERBS_SEND_* flags of a send work request.
type SendFlags uint32

const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3
)

// SGE is one scatter/gather element: Length bytes at Addr in a memory region
// whose local key is LKey.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR is one send work request. It carries a single SGE: that is what
// every benchmark and tool here needs, and it keeps posting allocation-free.
// With SendInline the SGE's bytes are copied into the WQE at post time.
type SendWR struct {
	WRID   uint64
	Opcode Opcode
	Flags  SendFlags
	// Imm is the immediate data for the *Imm opcodes, in host order; the
	// provider puts it on the wire in network order, as libibverbs users
	// expect after htonl().
	Imm uint32
	SGE SGE
	// RemoteAddr and RKey name the peer's memory for RDMA WRITE and READ
	// and the atomics.
	RemoteAddr uint64
	RKey       uint32
	// CompareAdd and Swap are the atomics' operands: the value added
	// (FETCH_AND_ADD), or the value compared with and the one stored if
	// equal (CMP_AND_SWAP).
	CompareAdd uint64
	Swap       uint64
	// UD only: the destination.
	AH         *AH
	RemoteQPN  uint32
	RemoteQKey uint32
}

// RecvWR is one receive work request with a single SGE. On UD QPs the
// first 40 bytes of every receive buffer get the GRH (on RoCE v2 over IPv4:
// 20 zero bytes, then the IPv4 header), so post payload+40 bytes; WC.ByteLen
// counts them.
type RecvWR struct {
	WRID uint64
	SGE  SGE
}

// WCStatus is ibv_wc_status.
type WCStatus uint32

// WCOpcode is ibv_wc_opcode: send-side values 0..n, receive-side from 128.
type WCOpcode uint32

const (
	WCSend            WCOpcode = 0
	WCRDMAWrite       WCOpcode = 1
	WCRDMARead        WCOpcode = 2
	WCCompSwap        WCOpcode = 3
	WCFetchAdd        WCOpcode = 4
	WCRecv            WCOpcode = 128
	WCRecvRDMAWithImm WCOpcode = 129
)

// WC flags (ibv_wc_flags).
const (
	WCWithGRH uint32 = 1 << 0
	WCWithImm uint32 = 1 << 1
)

// WC is one work completion, laid out as struct ib_uverbs_wc (48 bytes) so
// that providers whose CQE is that struct (rxe) can copy it field by field.
type WC struct {
	WRID      uint64
	Status    WCStatus
	Opcode    WCOpcode
	VendorErr uint32
	ByteLen   uint32
	Imm       uint32 // host order
	QPNum     uint32
	SrcQP     uint32
	Flags     uint32
	PKeyIndex uint16
	SLID      uint16
	SL        uint8
	DLIDBits  uint8
	PortNum   uint8
}

// ErrQueueFull is returned by PostSend and PostRecv, without blocking and
// without posting any of the WRs, when the queue lacks room for all of them.
// Send queue slots are freed as the provider retires WQEs (on rxe when the
// ACK arrives, whether or not the WR was signaled), so poll the CQ and try
// again. Compare with errors.Is. A post of more WRs than the queue can
// ever hold fails with another error, since retrying it cannot succeed.
var ErrQueueFull = errors.New("verbs: work queue full: poll the completion queue, then post again")

// SendQueue posts send work requests. One call publishes all of wrs and
// rings the doorbell once.
type SendQueue interface {
	PostSend(wrs []SendWR) error
}

// RecvQueue posts receive work requests.
type RecvQueue interface {
	PostRecv(wrs []RecvWR) error
}

// CompletionQueue is polled for completions: Poll fills wcs from the front
// and returns how many it filled (0 when the CQ is empty).
type CompletionQueue interface {
	Poll(wcs []WC) (int, error)
}

package perf

import (
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Device is what a benchmark needs from an RDMA device. device_verbs.go
// implements it over internal/verbs; tests use an in-memory fake. The
// control path may allocate; the data path (the queues in Resources) is
// the allocation-free datapath.go contract.
type Device interface {
	// Port describes the port the run uses.
	Port() (PortAttr, error)
	// Setup creates the PD, maps and registers BufSize bytes of memory
	// (once, for the whole run), creates the CQs and the QPs (moved to
	// INIT).
	Setup(cfg SetupConfig) (*Resources, error)
	// Connect moves QP i to RTR and RTS towards remote (RC/UC), or to
	// RTS (UD).
	Connect(i int, cfg ConnectConfig) error
	// CreateAH builds the address handle of a UD destination.
	CreateAH(remote *Dest, cfg ConnectConfig) (*verbs.AH, error)
	// Close destroys everything Setup and CreateAH created, in order.
	Close() error
}

// PortAttr is what perftest reads from ibv_query_port and the GID table.
type PortAttr struct {
	LinkLayer  vocab.LinkLayer // Ethernet or InfiniBand
	ActiveMTU  int             // bytes
	LID        uint16
	GIDs       []GIDEntry // non-zero entries of the GID table
	MaxOutRead int        // max_qp_rd_atom (device)
	// VendorPartID is the device's vendor_part_id, which perftest's
	// defaults depend on (ResolveInline).
	VendorPartID uint32
	// PKeys is the port's P_Key table length (0: unknown), which
	// --pkey_index must stay below.
	PKeys int
}

// GIDEntry is one GID table entry.
type GIDEntry struct {
	Index int
	GID   [16]byte
	// Type is the GID's type as the device reports it (RoCE v1 and IB
	// rank alike in BestGID).
	Type vocab.GIDType
}

// SetupConfig is what Setup creates.
type SetupConfig struct {
	BufSize  int
	Type     verbs.QPType
	NumQPs   int
	SendWR   int // send queue depth per QP
	RecvWR   int // receive queue depth per QP
	CQE      int // per CQ
	Inline   int
	OutReads int
	// Atomic: the MR and the QPs allow remote atomics (perf atomic).
	Atomic bool
	// SRQ: the QPs receive from one shared receive queue of RecvWR
	// receives (--use-srq), which is every QP's RecvQueue.
	SRQ bool

	// Events (-e): make the CQs on a completion channel
	// (Resources.Events).
	Events bool
	// CompVector (-X) is the CQs' completion vector with Events.
	CompVector int
	// HugePages (--use_hugepages): the buffer is huge pages
	// (verbs.NewHugeBuffer).
	HugePages bool
	// RelaxedOrdering registers the memory with PCIe relaxed ordering
	// (verbs.AccessRelaxedOrder; Params.relaxedOrdering).
	RelaxedOrdering bool
	// MmapFile (--mmap): the buffer is this file's pages from MmapOffset
	// (verbs.NewFileBuffer; not with HugePages, and never NUMA-bound).
	MmapFile   string
	MmapOffset int64
	// MRPerQP (--mr_per_qp): a memory region a QP (Resources.QPKeys).
	MRPerQP bool
	// OnNUMANode: the buffer's pages are on NUMA node NUMANode
	// (verbs.NewBufferOnNode; not with HugePages).
	OnNUMANode bool
	NUMANode   int
	// ODP (--odp): register the memory with On-Demand Paging
	// (verbs.AccessOnDemand); Setup refuses a device whose odp_caps
	// lack RC sends and receives (verbs.ErrUnsupported).
	ODP bool
	// PKeyIndex is the QPs' P_Key index (INIT; --pkey_index).
	PKeyIndex uint16
}

// ConnectConfig carries the perftest QP attributes (ctx_modify_qp_to_rtr/
// rts): path MTU, GID index, the peer's out_reads, our PSN.
type ConnectConfig struct {
	MTU          int
	GIDIndex     int // -1: no GRH (InfiniBand without -x)
	Local        Dest
	Remote       Dest
	QKey         uint32
	Timeout      uint8 // -u, 14
	TrafficClass uint8
	// The rest of the QoS options (qos.go): the path's flow label and SL
	// (RTR and UD AHs), the RC retry count (RTS). RetryCnt counts only
	// with RetrySet (0 is a valid count); else perftest's 7, so that a
	// config built without QoS options keeps perftest's attributes.
	FlowLabel uint32
	SL        uint8
	RetryCnt  uint8
	RetrySet  bool
	// StaticRate is the address vector's static rate (enum ibv_rate; 0:
	// the port's), perftest's HW rate limiter on InfiniBand.
	StaticRate uint8
}

// QP is one queue pair's data path.
type QP struct {
	verbs.SendQueue
	verbs.RecvQueue
	QPN uint32
}

// Optional methods of a Device's queues (Resources.QPs' SendQueue and
// the CQs), which *verbs.QP and *verbs.CQ implement: the provider queues
// fit to run detached from the Go scheduler (internal/verbs/detached.go;
// rxe has them, mlx5 not yet). ok false: the loops run attached (the
// plain loop). A fake may implement them only with queues that keep the
// detached rules (nosplit, no allocation, no pointer stores).
type (
	// DetachableQP is a QP with detached send and receive queues.
	DetachableQP interface {
		DetachedSendQueue() (verbs.SendQueue, bool)
		DetachedRecvQueue() (verbs.RecvQueue, bool)
	}
	// DetachableCQ is a CQ with a detached provider CQ.
	DetachableCQ interface {
		DetachedCQ() (verbs.CompletionQueue, bool)
	}
	// WatchableCQ is a CQ whose ring's producer and consumer index words
	// a latency loop may spin on (equal: empty) before it polls.
	WatchableCQ interface {
		DetachedWatch() (prod, cons *uint32, ok bool)
	}
)

var (
	_ DetachableQP = (*verbs.QP)(nil)
	_ DetachableCQ = (*verbs.CQ)(nil)
	_ WatchableCQ  = (*verbs.CQ)(nil)
)

// Resources are the objects of one run.
type Resources struct {
	Buf  []byte // registered memory
	Addr uint64 // virtual address of Buf[0]
	LKey uint32
	RKey uint32
	QPs  []QP
	// QPKeys are each QP's own keys (--mr_per_qp: a memory region a
	// QP); nil: every QP uses LKey and RKey.
	QPKeys []QPKeys
	SendCQ verbs.CompletionQueue
	RecvCQ verbs.CompletionQueue

	// Events is the completion channel of SendCQ and RecvCQ (which then
	// implement EventCQ) when SetupConfig.Events; nil otherwise.
	Events EventChannel
}

// QPKeys are one QP's memory region keys.
type QPKeys struct{ LKey, RKey uint32 }

// lkey and rkey are QP i's keys.
func (r *Resources) lkey(i int) uint32 {
	if r.QPKeys != nil {
		return r.QPKeys[i].LKey
	}
	return r.LKey
}

func (r *Resources) rkey(i int) uint32 {
	if r.QPKeys != nil {
		return r.QPKeys[i].RKey
	}
	return r.RKey
}

// udQKey is perftest's DEF_QKEY.
const udQKey = 0x11111111

// udGRH is the space a UD receive needs in front of the payload
// (UD_ADDITION).
const udGRH = 40

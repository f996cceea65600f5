package verbs

// A provider is the user-space half of an RDMA driver, as in rdma-core's
// providers/: the driver-specific data ("udata") it adds to uverbs commands,
// and the data path over the queues it maps from the kernel (rxe) or builds
// in its own memory and hands to the device (mlx5).
//
// The core (this package) owns the kernel objects and their handles; a
// provider owns its rings, buffers and doorbells. For each object the core
// calls the provider, which prepares its udata, runs the core command through
// the exec callback, and then maps or initialises its queues. If anything
// fails after exec succeeded, the provider returns the error and the core
// destroys the kernel object; the provider must already have released what
// it allocated. This keeps every error path in one place per side.

// execFunc runs the core uverbs command with the provider's request udata
// and a buffer for its response udata (of the length the provider wants).
// It returns the new object's handle.
type execFunc func(udataIn, udataOut []byte) (handle uint32, err error)

// cqRequest is what the core knows about a CQ being created.
type cqRequest struct {
	CQE int // requested capacity
}

// qpRequest is what the core knows about a QP being created.
type qpRequest struct {
	Type          QPType
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	SigAll        bool
	// Send and Recv are the provider queues of the QP's CQs.
	SendCQ, RecvCQ providerCQ
}

// QPType is the transport of a queue pair (enum ib_qp_type values).
type QPType uint8

const (
	QPTypeRC QPType = 2 // IB_QPT_RC
	QPTypeUC QPType = 3 // IB_QPT_UC
	QPTypeUD QPType = 4 // IB_QPT_UD
)

// providerCQ is a provider's completion queue.
type providerCQ interface {
	CompletionQueue
	// release unmaps and frees the provider's memory; the core calls it
	// after DESTROY_CQ (or after a failed create).
	release() error
}

// providerQP is a provider's queue pair.
type providerQP interface {
	SendQueue
	RecvQueue
	// qpCreated tells the provider the kernel's response (QPN, granted
	// caps) after a successful create.
	release() error
}

// provider is implemented once per driver (rxe.go, mlx5.go) and looked up by
// the driver id NLDEV reports (RDMA_DRIVER_*).
type provider interface {
	// name is the provider's name, "rxe" or "mlx5".
	name() string
	// contextUData returns the GET_CONTEXT request udata and the length of
	// the response udata.
	contextUData() (in []byte, outLen int)
	// openContext receives GET_CONTEXT's response udata and returns the
	// provider's per-context state (for mlx5: the mapped UARs).
	openContext(cmdFD int, out []byte) (providerContext, error)
}

// providerContext is a provider's state for one open device context.
type providerContext interface {
	createCQ(req *cqRequest, exec execFunc) (providerCQ, error)
	createQP(req *qpRequest, exec execFunc) (providerQP, error)
	// close releases the context's own mappings; called after every CQ and
	// QP of the context has been released.
	close() error
}

// Driver ids (enum rdma_driver_id in ib_user_ioctl_verbs.h).
const (
	DriverMLX5 uint32 = 1
	DriverRXE  uint32 = 14
)

// providers maps a driver id to its provider. Providers add themselves from
// init() in their own file.
var providers = map[uint32]provider{}

package verbs

import "fmt"

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

// ExecFunc runs the core uverbs command with the provider's request udata
// and a buffer for its response udata (of the length the provider wants).
// It returns the new object's handle.
type ExecFunc func(udataIn, udataOut []byte) (handle uint32, err error)

// CQRequest is what the core knows about a CQ being created.
type CQRequest struct {
	// Device names the device in the provider's data path errors.
	Device string
	// CQE is the requested capacity. A provider may change it before
	// calling exec (mlx5 sends ncqe-1 of its rounded ring); exec sends
	// the value it finds here.
	CQE int
	// ActualCQE is filled in by exec on success: the kernel's resp.cqe.
	ActualCQE uint32
}

// QPRequest is what the core knows about a QP being created.
type QPRequest struct {
	Device        string // for the provider's data path errors
	Type          QPType
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
	SigAll        bool
	// Send and Recv are the provider queues of the QP's CQs.
	SendCQ, RecvCQ ProviderCQ
	// SRQ is the provider queue of the QP's SRQ (nil: none; srq.go).
	SRQ ProviderSRQ

	// Filled in by exec on success, from the core CREATE_QP response:
	// the QP number and the capabilities the kernel granted (rxe grants
	// more inline space than asked for; it echoes the WR counts, so the
	// real ring capacity comes from the provider's own queues).
	QPN     uint32
	Granted QPCaps
}

// QPCaps are a QP's queue capabilities (struct ib_uverbs_qp_cap).
type QPCaps struct {
	MaxSendWR     uint32
	MaxRecvWR     uint32
	MaxSendSGE    uint32
	MaxRecvSGE    uint32
	MaxInlineData uint32
}

// QPType is the transport of a queue pair (enum ib_qp_type values).
type QPType uint8

const (
	QPTypeRC QPType = 2 // IB_QPT_RC
	QPTypeUC QPType = 3 // IB_QPT_UC
	QPTypeUD QPType = 4 // IB_QPT_UD
)

// ProviderCQ is a provider's completion queue.
type ProviderCQ interface {
	CompletionQueue
	// Release unmaps and frees the provider's memory; the core calls it
	// after DESTROY_CQ (or after a failed create).
	Release() error
}

// ProviderQP is a provider's queue pair.
type ProviderQP interface {
	SendQueue
	RecvQueue
	// Release unmaps and frees the provider's memory; the core calls it
	// after DESTROY_QP (or after a failed create). The kernel's answer to
	// CREATE_QP (QPN, granted caps) reaches the provider through the
	// qpRequest fields exec fills in.
	Release() error
	// SendCapacity and recvCapacity are how many WRs the provider's
	// queues really hold (the kernel's CREATE_QP response only echoes the
	// request on rxe).
	SendCapacity() uint32
	RecvCapacity() uint32
}

// QPModifyObserver is implemented by provider QPs that keep state tied to
// the QP state (mlx5 zeroes its doorbell record and indices on RESET, as
// rdma-core's mlx5_modify_qp does). The core calls modified after every
// successful MODIFY_QP.
type QPModifyObserver interface {
	Modified(attr *ModifyAttr, mask QPAttrMask)
}

// CQArmer is implemented by provider CQs that are armed in user space, not
// with REQ_NOTIFY_CQ: mlx5 writes the CQ's arm doorbell record and rings
// the UAR (rdma-core providers/mlx5/cq.c, mlx5_arm_cq). sn is the number
// of events read for the CQ so far; solicited arms for solicited
// completions only.
type CQArmer interface {
	Arm(sn uint32, solicited bool)
}

// AHRequest is what the core knows about an address handle being created.
type AHRequest struct {
	Attr AHAttr
}

// ProviderAH is a provider's per-AH state, kept in AH.prov.
type ProviderAH interface {
	Release() error
}

// AHCreator is implemented by provider contexts whose UD sends need
// something from CREATE_AH's udata (rxe: the AH number the kernel looks the
// address vector up by; mlx5 would build its AV from the attributes and the
// response's dmac). A context without it gets CREATE_AH with no udata and
// AH.num 0.
type AHCreator interface {
	CreateAH(req *AHRequest, exec ExecFunc) (prov ProviderAH, ahNum uint32, err error)
}

// Provider is implemented once per driver, each in a package of its own
// (internal/verbs/provider/rxe, .../mlx5), and found by the driver id
// NLDEV reports (RDMA_DRIVER_*). Everything the core does
// differently per driver asks it, as rdma-core's verbs_device_ops.
type Provider interface {
	// Info is what the core knows of the provider before it opens a
	// device.
	Info() ProviderInfo
	// AllocPD runs ALLOC_PD with the provider's udata and returns the
	// handle and the PD number the driver reports (0 if none).
	AllocPD(exec ExecFunc) (handle, pdn uint32, err error)
	// ContextUData returns the GET_CONTEXT request udata and the length of
	// the response udata.
	ContextUData() (in []byte, outLen int)
	// OpenContext receives GET_CONTEXT's response udata and returns the
	// provider's per-context state (for mlx5: the mapped UARs).
	OpenContext(cmdFD int, out []byte) (ProviderContext, error)
}

// DeviceQuerier is implemented by provider contexts whose QUERY_DEVICE
// takes response udata (mlx5, when the kernel says it fills it): out is
// the buffer, fill copies what the kernel wrote into the attributes.
// Others get none: rxe refuses QUERY_DEVICE with udata (EINVAL).
type DeviceQuerier interface {
	QueryDeviceUData() (out []byte, fill func(*DeviceAttr))
}

// ProviderContext is a provider's state for one open device context.
type ProviderContext interface {
	CreateCQ(req *CQRequest, exec ExecFunc) (ProviderCQ, error)
	CreateQP(req *QPRequest, exec ExecFunc) (ProviderQP, error)
	// Close releases the context's own mappings; called after every CQ and
	// QP of the context has been released.
	Close() error
}

// What siw would need (not available on the Debian 6.1 VM kernel): siw,
// like rxe, maps its SQ, RQ and CQ from the kernel (siw_uresp_create_qp /
// siw_uresp_create_cq carry mmap keys and sizes) and rings a POST_SEND
// doorbell, but its WQEs (struct siw_sqe, 64 B + inline) and CQEs (struct
// siw_cqe) are owned per slot through a flags word (SIW_WQE_VALID) rather
// than producer/consumer indices, and receives are posted in a separate
// RQ mapping. A siw provider fits this contract as rxe does: udata out in
// exec, mmap after, release unmaps.

// Driver ids (enum rdma_driver_id in ib_user_ioctl_verbs.h).
const (
	DriverMLX5 uint32 = 1
	DriverRXE  uint32 = 14
)

// ProviderInfo describes a provider as rdma-core's verbs_device_ops and
// hca_table do: which devices are its and which ABI it speaks.
type ProviderInfo struct {
	// ID is the driver id NLDEV reports for the provider's devices
	// (enum rdma_driver_id: DriverRXE, DriverMLX5); Name is "rxe" or
	// "mlx5".
	ID   uint32
	Name string
	// MinABI..MaxABI is the range of the driver's uverbs ABI versions
	// the provider speaks (match_min_abi_version, match_max_abi_version).
	MinABI, MaxABI uint32
	// KernelModule is the driver module behind the device's parent
	// device (mlx5_core), "" for a software device, which has no parent;
	// NamePrefix is the name such a device gets ("rxe"). They name the
	// driver when netlink does not (guessDriverID).
	KernelModule, NamePrefix string
	// FWSubminorDigits is the width the provider's libibverbs pads the
	// firmware version's third field to (0: none).
	FWSubminorDigits int
}

// FWVersion formats the firmware version from its three 16-bit fields,
// as the provider's libibverbs does.
func (i ProviderInfo) FWVersion(major, minor, sub uint64) string {
	return fmt.Sprintf("%d.%d.%0*d", major, minor, i.FWSubminorDigits, sub)
}

// Providers is the set of providers a program has, in the order messages
// name them: as rdma-core's static builds name theirs
// (ibv_static_providers), a program lists them (internal/verbs/provider),
// and finds its devices with them (Devices, LookupDevice, NewDevice).
type Providers []Provider

// byID is the provider of driver id, or nil.
func (ps Providers) byID(id uint32) Provider {
	for _, p := range ps {
		if p.Info().ID == id {
			return p
		}
	}
	return nil
}

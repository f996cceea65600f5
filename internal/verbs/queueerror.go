package verbs

import (
	"errors"
	"fmt"
)

// The data path reads indices, counters and completion fields from memory
// it shares with the kernel (rxe's rings) or the device (mlx5's CQ). None
// of them is trusted: every value used as an index, a count or a length is
// checked against what is possible before it is used, and a value beyond
// that is reported as a *QueueError rather than followed (an index past a
// ring's mask would read or write outside the mapping). Nothing is
// recovered from a signal: the checks are plain comparisons.
//
// A queue that reported a QueueError stays broken: every later PostSend,
// PostRecv or Poll on it returns the same error without touching the ring.
// Close the QP and CQ; what the ring held cannot be relied on.
//
// Each provider queue embeds its QueueError, with the device and queue
// named when the queue is created, so that reporting a fault stores only
// integers and allocates nothing (the detached data path's rules,
// detached.go). Error() formats the message when it is called.

// ErrQueueCorrupt is matched (errors.Is) by every *QueueError.
var ErrQueueCorrupt = errors.New("verbs: a work or completion queue holds values that cannot be right")

// QueueFault says what a QueueError found.
type QueueFault uint8

const (
	FaultNone QueueFault = iota
	// FaultProducerIndex: a ring's producer index (Value) beyond its
	// index mask (Limit).
	FaultProducerIndex
	// FaultConsumerIndex: a ring's consumer index (Value) beyond its
	// index mask (Limit).
	FaultConsumerIndex
	// FaultCompletionStatus: a completion's status (Value) is no
	// ibv_wc_status (the last is Limit).
	FaultCompletionStatus
	// FaultCompletionOpcode: a completion's opcode (Value) is not one
	// this data path can have caused.
	FaultCompletionOpcode
	// FaultCompletionQP: a completion names QP number Value, which does
	// not complete into this CQ.
	FaultCompletionQP
	// FaultCompletionLength: a completion reports Value bytes, more than
	// the Limit bytes posted for it.
	FaultCompletionLength
	// FaultNoReceiveQueue: a receive completion for a QP without a
	// receive queue.
	FaultNoReceiveQueue
	// FaultNoSendQueue: a send completion for a QP without a send queue.
	FaultNoSendQueue
	// FaultNoReceivePosted: a receive completion while the QP had no
	// receive work request outstanding (rxe: while none was ever posted
	// on the CQ's receive queues).
	FaultNoReceivePosted
	// FaultNoSendPosted: a send completion while no send was ever posted
	// on the CQ's send queues.
	FaultNoSendPosted
	// FaultWQECounter: a send completion's WQE counter (Value) is not
	// among the outstanding WQEs, Base up to (not including) Limit.
	FaultWQECounter
	// FaultWQEStart: a send completion's WQE counter (Value) points into
	// the middle of a posted WQE rather than at its start.
	FaultWQEStart
	// FaultCQEFormat: an mlx5 CQE in a format (Value: 1, 2 inline
	// scatter, 3 compressed) this provider never asked the device for.
	FaultCQEFormat
)

// QueueError reports a value read from shared memory that the data path
// refused to use. Fields beyond Device, Queue and Fault are meaningful as
// the Fault's documentation says.
type QueueError struct {
	Device string // "rxe0"
	Queue  string // "rxe CQ ring", "rxe SQ ring", "mlx5 CQ"
	Fault  QueueFault
	QPN    uint32 // the QP the completion names, where there is one
	Value  uint64 // the value found
	Limit  uint64 // the bound it broke
	Base   uint64 // FaultWQECounter: the oldest outstanding WQE
	// poison is 1<<31 once a fault is recorded: rxe's index checks OR it
	// in, so that one comparison also refuses a broken queue.
	poison uint32
}

func (e *QueueError) Error() string {
	var what string
	switch e.Fault {
	case FaultProducerIndex:
		what = fmt.Sprintf("producer index %#x beyond index_mask %#x", e.Value, e.Limit)
	case FaultConsumerIndex:
		what = fmt.Sprintf("consumer index %#x beyond index_mask %#x", e.Value, e.Limit)
	case FaultCompletionStatus:
		what = fmt.Sprintf("completion for QP %#x has status %d, not an ibv_wc_status (0..%d)", e.QPN, e.Value, e.Limit)
	case FaultCompletionOpcode:
		what = fmt.Sprintf("completion for QP %#x has opcode %d, which no work request posted here produces", e.QPN, e.Value)
	case FaultCompletionQP:
		what = fmt.Sprintf("completion names QP %#x, which does not complete into this CQ", e.Value)
	case FaultCompletionLength:
		what = fmt.Sprintf("completion for QP %#x reports %d bytes, more than the %d posted", e.QPN, e.Value, e.Limit)
	case FaultNoReceiveQueue:
		what = fmt.Sprintf("receive completion for QP %#x, which has no receive queue", e.QPN)
	case FaultNoSendQueue:
		what = fmt.Sprintf("send completion for QP %#x, which has no send queue", e.QPN)
	case FaultNoReceivePosted:
		what = fmt.Sprintf("receive completion for QP %#x, which had no receive posted", e.QPN)
	case FaultNoSendPosted:
		what = fmt.Sprintf("send completion for QP %#x, but no send was posted", e.QPN)
	case FaultWQECounter:
		if e.Base == e.Limit {
			what = fmt.Sprintf("send completion for QP %#x has wqe_counter %#x when no send WQE was outstanding (next counter %#x)", e.QPN, e.Value, e.Base)
		} else {
			what = fmt.Sprintf("send completion for QP %#x has wqe_counter %#x, outside the outstanding WQEs %#x..%#x", e.QPN, e.Value, e.Base, (e.Limit-1)&0xffff)
		}
	case FaultWQEStart:
		what = fmt.Sprintf("send completion for QP %#x has wqe_counter %#x, which is not the start of a posted WQE", e.QPN, e.Value)
	case FaultCQEFormat:
		what = fmt.Sprintf("CQE for QP %#x in format %d (inline scatter or compressed), which this CQ never asked for", e.QPN, e.Value)
	default:
		what = fmt.Sprintf("fault %d", e.Fault)
	}
	dev := e.Device
	if dev == "" {
		dev = "verbs"
	}
	return dev + ": " + e.Queue + ": " + what + "; the queue is unusable from here on: close its QP and CQ"
}

// Is makes errors.Is(err, ErrQueueCorrupt) true.
// Poison is 1<<31 once a fault is recorded, else 0: a provider ORs it into
// the indices it checks against its ring's mask, so that one compare on
// the hot path also stops a queue that has failed.
//
//go:nosplit
func (e *QueueError) Poison() uint32 { return e.poison }

func (e *QueueError) Is(target error) bool { return target == ErrQueueCorrupt }

// Record records a fault (integers only) and returns e. A queue keeps the
// first fault it found.
//
// Part of the detached data path (detached.go): nosplit.
//
//go:nosplit
func (e *QueueError) Record(f QueueFault, qpn uint32, value, limit uint64) error {
	if e.Fault == FaultNone {
		e.Fault, e.QPN, e.Value, e.Limit, e.poison = f, qpn, value, limit, 1<<31
	}
	return e
}

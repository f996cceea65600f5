package verbs

// The detached data path.
//
// A latency loop spends most of its time spinning on memory for a few
// microseconds at a time. While a goroutine runs, the Go runtime's
// monitor thread (sysmon) wakes every 10 ms to watch it; on a machine
// whose CPUs are all busy (both ends of a benchmark on one host, or a
// VM) every wake-up preempts someone's loop, and they make most of the
// latency tail that perftest, which has no such thread, does not have.
// A goroutine that enters a blocking system call gives its P back, and
// with no P running, sysmon sleeps until it is needed. internal/perf runs
// its loops that way (internal/perf/rtloop, unless its plain mode is
// chosen): runtime.entersyscallblock before the loop,
// runtime.exitsyscall after it, the loop in between detached from the
// scheduler like a C thread. perf reaches these methods through optional
// interfaces (perf.DetachableQP, DetachableCQ, WatchableCQ).
//
// Code that runs detached must not grow the stack, allocate or write
// pointers into the heap (the runtime has no P to do it with): every
// function on the path is //go:nosplit (the runtime throws at once if a
// function that checks the stack is called), errors are preallocated,
// and only integers and bytes are stored. DetachedSendQueue,
// DetachedRecvQueue and DetachedCQ hand out the provider queues that
// keep to this; PostSend, PostRecv and Poll on them skip the QP and CQ
// wrappers' checks (state, closed) and their error wrapping, so the
// caller must keep the QP in RTS and everything open for the duration.

// DetachableQueue marks provider queues whose PostSend, PostRecv or Poll keep
// to the rules above. rxe does; mlx5 does not yet (its doorbell and BlueFlame
// helpers are not audited), and tests' fakes do not.
type DetachableQueue interface{ Detachable() }

// DetachedSendQueue returns the provider send queue of qp for use while
// detached from the scheduler, or false if its provider has no such path.
func (qp *QP) DetachedSendQueue() (SendQueue, bool) {
	if _, ok := qp.send.(DetachableQueue); !ok || qp.state < QPStateRTS {
		return nil, false
	}
	return qp.send, true
}

// DetachedRecvQueue returns the provider receive queue of qp for use
// while detached from the scheduler, or false if its provider has no
// such path (or the QP has no receive queue, or is in RESET).
func (qp *QP) DetachedRecvQueue() (RecvQueue, bool) {
	if _, ok := qp.recv.(DetachableQueue); !ok || qp.state == QPStateReset {
		return nil, false
	}
	return qp.recv, true
}

// DetachedCQ returns the provider CQ of cq for use while detached from
// the scheduler, or false if its provider has no such path.
func (cq *CQ) DetachedCQ() (CompletionQueue, bool) {
	if _, ok := cq.prov.(DetachableQueue); !ok {
		return nil, false
	}
	return cq.prov, true
}

// IndexWatcher is implemented by provider CQs that show new completions
// as a producer index in memory (rxe's CQ ring, rdma_user_rxe.h): Watch
// returns the words holding the ring's producer and consumer indices.
type IndexWatcher interface {
	Watch() (prod, cons *uint32)
}

// DetachedWatch returns, when cq's provider shows new completions as a
// producer index in memory (IndexWatcher), the words holding the CQ
// ring's producer and consumer indices: while they are equal the CQ is
// empty. A detached loop can so wait for a completion with two loads a
// round and no call, and then Poll it. ok is false for other providers.
func (cq *CQ) DetachedWatch() (prod, cons *uint32, ok bool) {
	w, ok := cq.prov.(IndexWatcher)
	if !ok {
		return nil, nil, false
	}
	prod, cons = w.Watch()
	return prod, cons, true
}

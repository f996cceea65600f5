package verbs

import "golang.org/x/sys/unix"

// Two objects without kernel objects behind them, so that a provider's
// tests (in its own package) can drive the core's CQ methods over the
// provider's own queues; nothing else uses them.

// NewPipeChannel is a completion channel reading struct
// ib_uverbs_comp_event_desc records from fd (a pipe's read end, written
// as the kernel writes its channel fd), named after device dev.
func NewPipeChannel(fd int, dev string) *CompChannel {
	st := &chanState{pfd: [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}}
	return &CompChannel{ctx: &Context{dev: Device{Name: dev}}, fd: fd, st: st}
}

// NewUnownedCQ is a CQ over provider queue p. With ch (NewPipeChannel),
// it is slot's CQ there and Arm arms it (a CQArmer in user space, others
// through a REQ_NOTIFY_CQ write to fd -1, which fails).
func NewUnownedCQ(p ProviderCQ, ch *CompChannel, slot int) *CQ {
	cq := &CQ{prov: p}
	if ch != nil {
		cq.ev = ch.attach(slot, -1, 0, p)
	}
	return cq
}

// NewUnownedQP is a QP in RTS over provider queue p, so that its
// PostSend and PostRecv go through the core's checks to p.
func NewUnownedQP(p ProviderQP) *QP {
	return &QP{state: QPStateRTS, prov: p, send: p, recv: p}
}

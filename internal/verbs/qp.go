package verbs

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs/rawmem"
)

// QPAttr describes a queue pair to create.
type QPAttr struct {
	Type           QPType // QPTypeRC, QPTypeUC or QPTypeUD
	SendCQ, RecvCQ *CQ    // may be the same CQ
	MaxSendWR      uint32
	MaxRecvWR      uint32
	MaxSendSGE     uint32 // 0 means 1; the data path posts one SGE per WR
	MaxRecvSGE     uint32 // 0 means 1
	MaxInlineData  uint32 // bytes of inline payload per send WR
	SigAll         bool   // every send WR completes with a CQE, SendSignaled or not
	// SRQ: receives come from this shared receive queue (srq.go); the
	// QP has no receive queue of its own (MaxRecvWR is ignored).
	SRQ *SRQ
}

// QP is a queue pair.
//
// Lifecycle: CreateQP leaves it in RESET. Move it to RTS with Connect (both
// sides exchange PathInfo first) or step by step with ToInit, ToRTR and
// ToRTS, or with Modify for anything else. Receives may be posted from
// INIT on; sends need RTS. Close destroys it; close QPs before their CQs
// and PD.
//
// PostSend and PostRecv are the provider's data path: they do not
// allocate, do not block, and are not locked. One goroutine at a time may
// post sends and one (possibly another) may post receives.
type QP struct {
	ctx    *Context
	handle uint32
	qpn    uint32
	typ    QPType
	caps   QPCaps
	state  QPState
	prov   ProviderQP
	send   SendQueue // = prov, kept as the interface PostSend calls through
	recv   RecvQueue
	srq    *SRQ         // QPAttr.SRQ
	key    uint64       // Context child registration
	mcast  []mcastGroup // attached multicast groups (AttachMcast)
}

// Provider is the provider's queue pair behind qp (nil once closed), for
// a provider's own extensions and tests, as rdma-core's providers reach
// theirs from an ibv_qp (to_mqp).
func (qp *QP) Provider() ProviderQP { return qp.prov }

// CreateQP creates a QP of attr.Type on pd (CREATE_QP over write()) and
// maps its queues. On any failure everything created so far is destroyed.
func (c *Context) CreateQP(pd *PD, attr QPAttr) (*QP, error) {
	switch attr.Type {
	case QPTypeRC, QPTypeUC, QPTypeUD:
	default:
		return nil, fmt.Errorf("verbs: QP type %d is not RC (2), UC (3) or UD (4)", attr.Type)
	}
	if pd == nil || attr.SendCQ == nil || attr.RecvCQ == nil {
		return nil, errors.New("verbs: CreateQP needs a PD, a send CQ and a receive CQ")
	}
	if attr.SendCQ.prov == nil || attr.RecvCQ.prov == nil {
		return nil, ErrClosed
	}
	if attr.SRQ != nil {
		if attr.SRQ.prov == nil {
			return nil, ErrClosed
		}
		if attr.Type == QPTypeUD {
			return nil, errors.New("verbs: this data path has SRQ for RC and UC QPs only")
		}
		attr.MaxRecvWR, attr.MaxRecvSGE = 0, 1
	}
	if attr.MaxSendWR == 0 && attr.MaxRecvWR == 0 && attr.SRQ == nil {
		return nil, errors.New("verbs: CreateQP with no send and no receive work requests")
	}
	if attr.MaxSendSGE == 0 {
		attr.MaxSendSGE = 1
	}
	if attr.MaxRecvSGE == 0 {
		attr.MaxRecvSGE = 1
	}
	pc, err := c.dataPath()
	if err != nil {
		return nil, err
	}
	req := &QPRequest{
		Device: c.dev.Name, Type: attr.Type, MaxSendWR: attr.MaxSendWR, MaxRecvWR: attr.MaxRecvWR,
		MaxSendSGE: attr.MaxSendSGE, MaxRecvSGE: attr.MaxRecvSGE, MaxInlineData: attr.MaxInlineData,
		SigAll: attr.SigAll, SendCQ: attr.SendCQ.prov, RecvCQ: attr.RecvCQ.prov,
	}
	var srqHandle uint32
	if attr.SRQ != nil {
		req.SRQ, srqHandle = attr.SRQ.prov, attr.SRQ.handle
	}
	var handle uint32
	created := false
	exec := func(udataIn, udataOut []byte) (uint32, error) {
		cmd := abiCreateQP{
			PDHandle: pd.Handle, SendCQHandle: attr.SendCQ.handle, RecvCQHandle: attr.RecvCQ.handle,
			MaxSendWR: req.MaxSendWR, MaxRecvWR: req.MaxRecvWR, MaxSendSGE: req.MaxSendSGE,
			MaxRecvSGE: req.MaxRecvSGE, MaxInlineData: req.MaxInlineData,
			SQSigAll: boolU8(req.SigAll), QPType: uint8(req.Type),
			SRQHandle: srqHandle, IsSRQ: boolU8(req.SRQ != nil),
		}
		var resp abiCreateQPResp
		if err := c.writeCmd(cmdCreateQP, rawmem.Of(&cmd), rawmem.Of(&resp), udataIn, udataOut); err != nil {
			return 0, err
		}
		handle, created = resp.QPHandle, true
		req.QPN = resp.QPN
		req.Granted = QPCaps{MaxSendWR: resp.MaxSendWR, MaxRecvWR: resp.MaxRecvWR, MaxSendSGE: resp.MaxSendSGE,
			MaxRecvSGE: resp.MaxRecvSGE, MaxInlineData: resp.MaxInlineData}
		return resp.QPHandle, nil
	}
	p, err := pc.CreateQP(req, exec)
	if err != nil {
		if created {
			err = errors.Join(err, c.destroyQP(handle))
		}
		return nil, err
	}
	caps := req.Granted
	// The kernel's WR counts are what was asked for (rxe echoes them);
	// the provider knows how many its rings really hold.
	caps.MaxSendWR = max(caps.MaxSendWR, p.SendCapacity())
	caps.MaxRecvWR = max(caps.MaxRecvWR, p.RecvCapacity())
	qp := &QP{ctx: c, handle: handle, qpn: req.QPN, typ: attr.Type, caps: caps, prov: p, send: p, recv: p}
	if attr.SRQ != nil {
		// Receives go to the SRQ, never to this QP.
		qp.recv, qp.srq = nil, attr.SRQ
		attr.SRQ.qps.Add(1)
	}
	qp.key = c.addChild(qp.Close)
	return qp, nil
}

func (c *Context) destroyQP(handle uint32) error {
	cmd := abiDestroyQP{QPHandle: handle}
	var resp abiDestroyQPResp
	return c.writeCmd(cmdDestroyQP, rawmem.Of(&cmd), rawmem.Of(&resp), nil, nil)
}

// QPN is the QP number the peer addresses (DestQPN / RemoteQPN).
func (qp *QP) QPN() uint32 { return qp.qpn }

// Handle is the kernel's object handle for the QP.
func (qp *QP) Handle() uint32 { return qp.handle }

// Type is the QP's transport.
func (qp *QP) Type() QPType { return qp.typ }

// Caps are the granted capabilities: MaxInlineData as the kernel granted
// it (rxe grants at least 16 per SGE), the WR counts as the rings really
// hold them (at least what was asked for).
func (qp *QP) Caps() QPCaps { return qp.caps }

// State is the state the last successful Modify moved the QP to. (An
// error completion may have moved it to ERR since.)
func (qp *QP) State() QPState { return qp.state }

// Modify sends MODIFY_QP with the fields of attr selected by mask.
func (qp *QP) Modify(attr *ModifyAttr, mask QPAttrMask) error {
	if qp.prov == nil {
		return ErrClosed
	}
	cmd := buildModifyQP(qp.handle, attr, mask)
	if err := qp.ctx.writeCmd(cmdModifyQP, rawmem.Of(&cmd), nil, nil, nil); err != nil {
		return err
	}
	if mask&QPAttrState != 0 {
		qp.state = attr.State
	}
	if o, ok := qp.prov.(QPModifyObserver); ok {
		o.Modified(attr, mask)
	}
	return nil
}

// ToInit moves the QP from RESET to INIT. RC/UC use a.Access, UD a.QKey.
func (qp *QP) ToInit(a InitAttr) error {
	m, mask := initMods(qp.typ, a)
	return qp.wrapTransition("RESET->INIT", qp.Modify(&m, mask))
}

// ToRTR moves the QP from INIT to RTR (ready to receive). UD needs no
// attributes; RC/UC need the peer's address, QPN and PSN.
func (qp *QP) ToRTR(a RTRAttr) error {
	m, mask := rtrMods(qp.typ, a)
	return qp.wrapTransition("INIT->RTR", qp.Modify(&m, mask))
}

// ToRTS moves the QP from RTR to RTS (ready to send).
func (qp *QP) ToRTS(a RTSAttr) error {
	m, mask := rtsMods(qp.typ, a)
	return qp.wrapTransition("RTR->RTS", qp.Modify(&m, mask))
}

// Connect runs RESET -> INIT -> RTR -> RTS with the defaults documented on
// ConnectAttr: the usual way to bring up an RC or UC QP once both sides
// know each other's PathInfo (for UD, Remote is ignored and QKey is used).
func (qp *QP) Connect(a ConnectAttr) error {
	a = a.withDefaults()
	ini, rtr, rts := a.stages()
	if err := qp.ToInit(ini); err != nil {
		return err
	}
	if err := qp.ToRTR(rtr); err != nil {
		return err
	}
	return qp.ToRTS(rts)
}

func (qp *QP) wrapTransition(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("QP %d %s: %w", qp.qpn, what, err)
}

// PostSend posts send WRs: all of them or, with an error, none. It returns
// ErrQueueFull when the send queue lacks room for all of wrs.
func (qp *QP) PostSend(wrs []SendWR) error {
	if qp.send == nil {
		return ErrClosed
	}
	if qp.state < QPStateRTS {
		// The kernel would refuse the doorbell (EINVAL below RTS), but
		// only after the WQEs are in the ring, where they would run at the
		// next doorbell. Refuse before writing anything instead.
		return qp.notReady()
	}
	if err := qp.send.PostSend(wrs); err != nil {
		return qp.postError(err)
	}
	return nil
}

func (qp *QP) notReady() error {
	return fmt.Errorf("%w: QP %d is in %v; sends need RTS (Connect or ToRTS first)",
		cmdError(qp.ctx.dev.Name, "POST_SEND", unix.EINVAL), qp.qpn, qp.state)
}

// postError names the device in a provider's failed doorbell syscall
// (rxe: POST_SEND fails with EINVAL below RTS). Only the failure path
// allocates.
func (qp *QP) postError(err error) error {
	var de *DoorbellError
	if errors.As(err, &de) {
		return cmdError(qp.ctx.dev.Name, "POST_SEND", de.Errno)
	}
	return err
}

// PostRecv posts receive WRs (from INIT on): all of them or none.
func (qp *QP) PostRecv(wrs []RecvWR) error {
	if qp.recv == nil {
		if qp.srq != nil {
			return errRecvOnSRQQP
		}
		return ErrClosed
	}
	if qp.state == QPStateReset {
		return errRecvInReset
	}
	return qp.recv.PostRecv(wrs)
}

var errRecvOnSRQQP = errors.New("verbs: this QP receives from its SRQ; post receives to the SRQ")

var errRecvInReset = errors.New("verbs: receives cannot be posted while the QP is in RESET; move it to INIT first")

// Close destroys the QP (DESTROY_QP) and then unmaps its queues. Closing
// twice returns nil.
func (qp *QP) Close() error {
	if qp.prov == nil {
		return nil
	}
	if err := qp.detachAll(); err != nil {
		return err
	}
	if err := qp.ctx.destroyQP(qp.handle); err != nil {
		return err
	}
	p := qp.prov
	qp.prov, qp.send, qp.recv = nil, nil, nil
	if qp.srq != nil {
		qp.srq.qps.Add(-1)
		qp.srq = nil
	}
	qp.ctx.removeChild(qp.key)
	return p.Release()
}

package perf

// RDMA CM mode (-R, perftest's --rdma_cm), as perftest 6.06 (v4.5-0.17)
// runs it, which decides interop:
//
//   - -R implies perftest's -z: the exchange itself leaves TCP. Each side
//     connects one RC "comm" QP through the RDMA CM to the server's -p
//     port (rdma_client_connect / rdma_server_connect), and every record
//     of the usual exchange is one SEND on it (ctx_xchg_data_rdma): the
//     same records and order as over TCP, except the key records, which
//     are the raw struct pingpong_dest with big-endian fields (56 bytes,
//     rdma_write_keys), and no "done" at the end. perftest's receive
//     buffer for them is 56 bytes, so nothing larger goes to it (the
//     256-byte parameter record goes only to rdmactl peers).
//   - Then create_rdma_cm_connection: a key round with a zeroed record,
//     the data QPs connected by the CM to the same port (the server
//     listens again, with backlog -q), and another zeroed key round. The
//     usual key rounds follow, but perftest modifies no QP itself: the CM
//     moved them to RTS (INIT_QP_ATTR for each transition, as librdmacm's
//     rdma_create_qp, rdma_accept and its CONNECT_RESPONSE handling do).
//   - The device is the one the CM resolves the address to, not -d.
//   - -z alone (perftest's use_rdma_cm without work_rdma_cm) is the first
//     point only: the exchange over the comm QP, keys in the same 56-byte
//     form, and -d's QPs connected from them as over TCP, on any
//     transport (connectComm).
//
// Only RC: perftest refuses UC with -R, and its UD path (address handles
// from CM events) is not implemented here.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/rdmactl/rdmactl/internal/rdmacm"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// keySizeCM is sizeof(struct pingpong_dest) in perftest 6.06 on LP64;
// keySizeCMTail in perftest 6.29, which added tail_markers_vaddr after
// vaddr (src/perftest_resources.h) and sends it in every -R record.
const (
	keySizeCM     = 56
	keySizeCMTail = 64
)

// encodeKeyCM is rdma_write_keys' record: lid, out_reads, qpn, psn, rkey
// (int32 BE), 4 bytes of padding, vaddr (u64 BE), with tail the tail
// markers' address (u64 BE), then the GID, srqn and gid_index (int32 BE).
func encodeKeyCM(d *Dest, gidIndex int, tail bool) []byte {
	n, g := keySizeCM, 32 // g: where the GID starts
	if tail {
		n, g = keySizeCMTail, 40
	}
	b := make([]byte, n)
	be := binary.BigEndian
	be.PutUint32(b[0:], uint32(d.LID))
	be.PutUint32(b[4:], uint32(d.OutReads))
	be.PutUint32(b[8:], d.QPN)
	be.PutUint32(b[12:], d.PSN)
	be.PutUint32(b[16:], d.RKey)
	be.PutUint64(b[24:], d.VAddr)
	if tail {
		be.PutUint64(b[32:], d.TailMarkers)
	}
	copy(b[g:g+16], d.GID[:])
	be.PutUint32(b[g+16:], d.SRQN)
	be.PutUint32(b[g+20:], uint32(int32(gidIndex)))
	return b
}

// parseKeyCM decodes the fields rdma_read_keys uses (it ignores srqn and
// gid_index, and so do we), validating their ranges; a 64-byte record
// has perftest 6.29's tail markers.
func parseKeyCM(b []byte) (Dest, error) {
	if len(b) != keySizeCM && len(b) != keySizeCMTail {
		return Dest{}, fmt.Errorf("key record is %d bytes, want %d (perftest 6.06) or %d (6.29)", len(b), keySizeCM, keySizeCMTail)
	}
	be := binary.BigEndian
	lid, outs, qpn, psn := be.Uint32(b[0:]), be.Uint32(b[4:]), be.Uint32(b[8:]), be.Uint32(b[12:])
	switch {
	case lid > 0xffff:
		return Dest{}, fmt.Errorf("key record: LID %#x is out of range", lid)
	case outs > 0xffff:
		return Dest{}, fmt.Errorf("key record: out_reads %d is out of range", outs)
	case qpn > 0xffffff || psn > 0xffffff:
		return Dest{}, fmt.Errorf("key record: QPN %#x or PSN %#x exceeds 24 bits", qpn, psn)
	}
	d := Dest{LID: uint16(lid), OutReads: uint16(outs), QPN: qpn, PSN: psn, RKey: be.Uint32(b[16:]), VAddr: be.Uint64(b[24:])}
	g := 32
	if len(b) == keySizeCMTail {
		d.TailMarkers = be.Uint64(b[32:])
		g = 40
	}
	copy(d.GID[:], b[g:g+16])
	return d, nil
}

// cmTailKey says whether this run's -R records are perftest 6.29's, with
// the tail markers: always against perftest 6.29 and later, and with
// --data_validation, which needs them (and whose peer is rdmactl or
// perftest 6.29, Session.prefix).
func (s *Session) cmTailKey() bool {
	if s.P.DataValidation {
		return true
	}
	v := s.conn.peerVer
	return !v.Rdmactl && v.Number >= perftest629
}

// perftest629 is the exchange version of perftest 6.29, the first with
// --data_validation, --write_with_imm and the 64-byte -R key record.
const perftest629 = 6.29

// cmTimeout bounds each address and route resolution (perftest: 2000 ms).
const cmTimeout = 2 * time.Second

// cmSlot is the size of each comm receive buffer; cmSlots are posted.
const (
	cmSlot  = 1024
	cmSlots = 4
)

// cmLink is the comm connection: an RC QP of its own, on its own verbs
// context of the resolved device, driven as a net.Conn for Conn. Read
// returns exactly one received message and fails when its size is not
// the record's (a peer with another exchange); Write sends one message.
type cmLink struct {
	ch    *rdmacm.Channel
	id    *rdmacm.ID
	route rdmacm.Route
	vd    verbs.Device
	vctx  *verbs.Context
	pd    *verbs.PD
	buf   *verbs.Buffer
	mr    *verbs.MR
	scq   *verbs.CQ
	rcq   *verbs.CQ
	qp    *verbs.QP
	peer  netip.AddrPort
	local netip.AddrPort
	src   netip.AddrPort // the client's --bind: the source the CM resolves from (zero: the route's)
	rdl   atomic.Int64   // read deadline, unix ns; 0: none (newConn's goroutine sets it too)
	wdl   atomic.Int64
	gone  bool // the peer disconnected the comm connection
	ctx   context.Context
	data  []*rdmacm.ID // the data QPs' ids (connectDataCM)
	// pending are events checkEvents took while polling that belong to
	// another id (a data QP's connection request that came early).
	pending []rdmacm.Event
	wc      [1]verbs.WC
	closed  bool
}

// cmAddr is a net.Addr for an RDMA CM endpoint.
type cmAddr netip.AddrPort

func (a cmAddr) Network() string { return "rdma_cm" }
func (a cmAddr) String() string  { return netip.AddrPort(a).String() }

func (l *cmLink) LocalAddr() net.Addr  { return cmAddr(l.local) }
func (l *cmLink) RemoteAddr() net.Addr { return cmAddr(l.peer) }
func (l *cmLink) SetDeadline(t time.Time) error {
	l.rdl.Store(unixNano(t))
	l.wdl.Store(unixNano(t))
	return nil
}
func (l *cmLink) SetReadDeadline(t time.Time) error  { l.rdl.Store(unixNano(t)); return nil }
func (l *cmLink) SetWriteDeadline(t time.Time) error { l.wdl.Store(unixNano(t)); return nil }

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// open creates the comm QP's objects on the route's device and moves the
// QP to INIT as the CM says (librdmacm's rdma_create_qp).
func (l *cmLink) open(id *rdmacm.ID, resolve func(rdmacm.Route) (verbs.Device, error)) error {
	r, err := id.QueryRoute()
	if err != nil {
		return err
	}
	l.route = r
	if l.vd, err = resolve(r); err != nil {
		return err
	}
	if l.vctx, err = verbs.OpenDevice(l.vd, verbs.Options{}); err != nil {
		return err
	}
	if l.pd, err = l.vctx.AllocPD(); err != nil {
		return err
	}
	if l.buf, err = verbs.NewBuffer((cmSlots + 1) * cmSlot); err != nil {
		return err
	}
	if l.mr, err = l.pd.RegMR(l.buf, verbs.AccessLocalWrite); err != nil {
		return err
	}
	if l.scq, err = l.vctx.CreateCQ(cmSlots); err != nil {
		return err
	}
	if l.rcq, err = l.vctx.CreateCQ(cmSlots); err != nil {
		return err
	}
	if l.qp, err = l.vctx.CreateQP(l.pd, verbs.QPAttr{Type: verbs.QPTypeRC, SendCQ: l.scq, RecvCQ: l.rcq,
		MaxSendWR: cmSlots, MaxRecvWR: cmSlots, MaxSendSGE: 1, MaxRecvSGE: 1}); err != nil {
		return err
	}
	if _, err := cmModify(id, l.qp, rdmacm.StateInit, -1); err != nil {
		return err
	}
	for i := 0; i < cmSlots; i++ {
		if err := l.postRecv(i); err != nil {
			return err
		}
	}
	return nil
}

func (l *cmLink) postRecv(slot int) error {
	return l.qp.PostRecv([]verbs.RecvWR{{WRID: uint64(slot), SGE: verbs.SGE{Addr: l.buf.Addr() + uint64(slot*cmSlot), Length: cmSlot, LKey: l.mr.LKey}}})
}

// cmModify applies the attributes INIT_QP_ATTR gives for state to qp.
// rd >= 0 overrides the RDMA READ depth of the transition, as librdmacm's
// rdma_accept does with the accepting side's own values (RTR: responder
// resources; RTS: initiator depth).
func cmModify(id *rdmacm.ID, qp *verbs.QP, state uint8, rd int) (rdmacm.QPAttr, error) {
	a, err := id.InitQPAttr(state)
	if err != nil {
		return a, err
	}
	m, mask := a.ModifyAttr, a.Mask&legacyMask
	if rd >= 0 {
		switch state {
		case rdmacm.StateRTR:
			m.MaxDestRdAtomic = uint8(rd)
		case rdmacm.StateRTS:
			m.MaxRdAtomic = uint8(rd)
		}
	}
	if err := qp.Modify(&m, mask); err != nil {
		return a, fmt.Errorf("QP %d to %s as the RDMA CM says: %w", qp.QPN(), verbs.QPState(state), err)
	}
	return a, nil
}

// legacyMask is the attribute mask MODIFY_QP (not the extended command)
// takes: bits up to IB_QP_DEST_QPN. The CM may set higher ones meant for
// the kernel's own RoCE code (librdmacm masks 21-23 off on InfiniBand).
const legacyMask = 1<<21 - 1

// cmConn is what a data or comm QP's connection parameters carry
// (perftest's conn_param in rdma_cm_route_handler and
// rdma_cm_connection_request_handler).
type cmConn struct {
	// rd is the responder resources and initiator depth: -o (or the
	// device's max_qp_rd_atom) for READ and atomics, 0 otherwise. The
	// kernel's CM gives the passive QP remote READ and ATOMIC access only
	// when the REQ's initiator depth is not 0 (cm_init_qp_init_attr), and
	// each side's max_rd_atomic / max_dest_rd_atomic come from it.
	rd uint8
	// retry is the retry and RNR retry count (perftest: both
	// --retry_count).
	retry uint8
	// srq says the QP receives through an SRQ: the conn_param's srq flag,
	// as librdmacm sets it from the QP (!!id->qp->srq).
	srq bool
}

func (c cmConn) param(qp *verbs.QP) rdmacm.ConnParam {
	return rdmacm.ConnParam{QPNum: qp.QPN(), ResponderResources: c.rd, InitiatorDepth: c.rd,
		RetryCount: c.retry, RNRRetryCount: c.retry, SRQ: c.srq}
}

// activeConnect runs the active side of one connection for qp on id, whose
// route is resolved: CONNECT, then on CONNECT_RESPONSE the QP to INIT
// again (the access flags now follow the REP's depth), RTR and RTS, and
// the RTU (librdmacm: rdma_connect, ucma_process_conn_resp).
func (l *cmLink) activeConnect(ctx context.Context, id *rdmacm.ID, qp *verbs.QP, c cmConn, deadline time.Time) (rtr, rts rdmacm.QPAttr, err error) {
	if err = id.Connect(c.param(qp)); err != nil {
		return
	}
	ev, err := l.wait(ctx, id, deadline)
	if err != nil {
		return
	}
	if ev.Type != rdmacm.EventConnectResponse {
		err = ev.Err()
		return
	}
	if _, err = cmModify(id, qp, rdmacm.StateInit, -1); err != nil {
		return
	}
	if rtr, err = cmModify(id, qp, rdmacm.StateRTR, -1); err != nil {
		return
	}
	if rts, err = cmModify(id, qp, rdmacm.StateRTS, -1); err != nil {
		return
	}
	err = id.Establish()
	return
}

// passiveAccept accepts the request on id for qp (in INIT): RTR and RTS
// with our READ depth, then ACCEPT (librdmacm's rdma_accept).
func passiveAccept(id *rdmacm.ID, qp *verbs.QP, c cmConn) (rtr, rts rdmacm.QPAttr, err error) {
	if _, err = cmModify(id, qp, rdmacm.StateInit, -1); err != nil {
		return
	}
	if rtr, err = cmModify(id, qp, rdmacm.StateRTR, int(c.rd)); err != nil {
		return
	}
	if rts, err = cmModify(id, qp, rdmacm.StateRTS, int(c.rd)); err != nil {
		return
	}
	err = id.Accept(c.param(qp))
	return
}

// wait returns the next event of id (by its handle), or for a listening
// id its next connection request, first from the events checkEvents kept;
// other ids' events are dropped (an ESTABLISHED of an accepted id, a late
// DISCONNECTED).
func (l *cmLink) wait(ctx context.Context, id *rdmacm.ID, deadline time.Time) (rdmacm.Event, error) {
	mine := func(ev rdmacm.Event) bool {
		if ev.Type == rdmacm.EventConnectRequest {
			return ev.UID == id.UID
		}
		return ev.ID == id.Handle
	}
	for i, ev := range l.pending {
		if mine(ev) {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			return ev, nil
		}
	}
	for {
		ev, err := l.ch.WaitEvent(ctx, deadline)
		if err != nil {
			return ev, err
		}
		if mine(ev) {
			return ev, nil
		}
	}
}

// errCMOption marks a failed SET_OPTION: a local refusal, not the peer's.
var errCMOption = errors.New("the RDMA CM refused the option")

// resolve runs ADDR and ROUTE resolution of dst on id; tos >= 0 is set
// between them (perftest's rdma_cm_address_handler), so that the route
// carries it as its traffic class.
func (l *cmLink) resolve(ctx context.Context, id *rdmacm.ID, dst netip.AddrPort, tos int) error {
	if err := id.ResolveAddr(l.src, dst, cmTimeout); err != nil {
		return fmt.Errorf("%s has no RDMA route from this host (%w)", dst.Addr(), err)
	}
	ev, err := l.wait(ctx, id, time.Now().Add(2*cmTimeout))
	if err != nil {
		return err
	}
	if ev.Type != rdmacm.EventAddrResolved || ev.Status != 0 {
		return fmt.Errorf("%s has no RDMA route from this host: %w", dst.Addr(), ev.Err())
	}
	if tos >= 0 {
		if err := id.SetTOS(uint8(tos)); err != nil {
			return fmt.Errorf("-T %d: %w: %w", tos, errCMOption, err)
		}
	}
	if err := id.ResolveRoute(cmTimeout); err != nil {
		return err
	}
	if ev, err = l.wait(ctx, id, time.Now().Add(2*cmTimeout)); err != nil {
		return err
	}
	if ev.Type != rdmacm.EventRouteResolved || ev.Status != 0 {
		return fmt.Errorf("route to %s: %w", dst.Addr(), ev.Err())
	}
	return nil
}

// cmServerAddr is the address the client connects to: perftest resolves
// the name to IPv4 only (AF_INET hints).
func cmServerAddr(host string, port int) (netip.AddrPort, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("cannot resolve %s: %v", host, err)
	}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(v4)), uint16(port)), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("%s has no IPv4 address (perftest's -R uses IPv4)", host)
}

// dialCM connects the comm QP to the server, retrying a refused connection
// until timeout (the TCP dial does the same).
// bind, when not empty, is the source address (the client's --bind).
func dialCM(ctx context.Context, host, bind string, port int, timeout time.Duration, resolve func(rdmacm.Route) (verbs.Device, error)) (*cmLink, error) {
	dst, err := cmServerAddr(host, port)
	if err != nil {
		return nil, &PeerError{Err: err}
	}
	var src netip.AddrPort
	if bind != "" {
		if src, err = cmBindAddr(bind, 0); err != nil {
			return nil, err
		}
	}
	ch, err := rdmacm.Open()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(timeout)
	for {
		l := &cmLink{ch: ch, ctx: ctx, peer: dst, src: src}
		err := l.dialOnce(ctx, dst, deadline, resolve)
		if err == nil {
			return l, nil
		}
		l.closeLink(false)
		var ee *rdmacm.EventError
		refused := errors.As(err, &ee) && ee.Refused()
		if !refused || time.Now().Add(200*time.Millisecond).After(deadline) || ctx.Err() != nil {
			_ = ch.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if refused {
				return nil, peerErrorf("cannot connect to %s over RDMA CM: %v (is the server running, with -R? start it first with the same test)", dst, err)
			}
			var pe *PeerError
			if errors.As(err, &pe) {
				return nil, err
			}
			if ee != nil || errors.Is(err, rdmacm.ErrTimeout) {
				return nil, peerErrorf("cannot connect to %s over RDMA CM: %v", dst, err)
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
			_ = ch.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (l *cmLink) dialOnce(ctx context.Context, dst netip.AddrPort, deadline time.Time, resolve func(rdmacm.Route) (verbs.Device, error)) error {
	var err error
	if l.id, err = l.ch.CreateID(rdmacm.PSTCP); err != nil {
		return err
	}
	if err := l.resolve(ctx, l.id, dst, -1); err != nil {
		return &PeerError{Err: err}
	}
	if err := l.open(l.id, resolve); err != nil {
		return err
	}
	l.local = l.route.Src
	_, _, err = l.activeConnect(ctx, l.id, l.qp, cmConn{retry: 7}, deadline.Add(5*time.Second))
	return err
}

// listenCM waits for one client's comm connection on bind:port and
// accepts it (perftest: rdma_server_connect; the listening id is gone
// afterwards, so the data QPs can listen on the port again).
func listenCM(ctx context.Context, bind string, port int, resolve func(rdmacm.Route) (verbs.Device, error)) (*cmLink, error) {
	ap, err := cmBindAddr(bind, port)
	if err != nil {
		return nil, err
	}
	ch, err := rdmacm.Open()
	if err != nil {
		return nil, err
	}
	lid, err := listenOn(ch, ap, 1, -1)
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	l := &cmLink{ch: ch, ctx: ctx}
	ev, err := l.wait(ctx, lid, time.Time{})
	_ = lid.Destroy()
	if err != nil {
		_ = ch.Close()
		return nil, err
	}
	l.id = ch.Adopt(ev, lid)
	if err := l.open(l.id, resolve); err != nil {
		_ = l.id.Reject()
		l.closeLink(true)
		return nil, err
	}
	l.local, l.peer = l.route.Src, l.route.Dst
	if _, _, err := passiveAccept(l.id, l.qp, cmConn{retry: 7}); err != nil {
		l.closeLink(true)
		return nil, err
	}
	return l, nil
}

func cmBindAddr(bind string, port int) (netip.AddrPort, error) {
	if bind == "" {
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(port)), nil
	}
	a, err := netip.ParseAddr(bind)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("--bind %q: with -R, an IP address", bind)
	}
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), nil
}

// listenOn listens on ap; tos >= 0 is set before LISTEN, as librdmacm
// orders it (the kernel copies it to the per-device listeners).
func listenOn(ch *rdmacm.Channel, ap netip.AddrPort, backlog, tos int) (*rdmacm.ID, error) {
	lid, err := ch.CreateID(rdmacm.PSTCP)
	if err != nil {
		return nil, err
	}
	if tos >= 0 {
		if err := lid.SetTOS(uint8(tos)); err != nil {
			_ = lid.Destroy()
			return nil, err
		}
	}
	if err := lid.Bind(ap); err != nil {
		_ = lid.Destroy()
		return nil, err
	}
	if err := lid.Listen(backlog); err != nil {
		_ = lid.Destroy()
		return nil, err
	}
	return lid, nil
}

// Write sends b as one message and waits for its completion.
func (l *cmLink) Write(b []byte) (int, error) {
	if l.closed {
		return 0, os.ErrClosed
	}
	if len(b) > cmSlot {
		return 0, fmt.Errorf("record of %d bytes exceeds the %d-byte comm buffer", len(b), cmSlot)
	}
	send := l.buf.Bytes()[cmSlots*cmSlot:]
	copy(send, b)
	wr := []verbs.SendWR{{WRID: 99, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
		SGE: verbs.SGE{Addr: l.buf.Addr() + cmSlots*cmSlot, Length: uint32(len(b)), LKey: l.mr.LKey}}}
	if err := l.qp.PostSend(wr); err != nil {
		return 0, err
	}
	wc, err := l.poll(l.scq, &l.wdl)
	if err != nil {
		return 0, err
	}
	if wc.Status != 0 {
		return 0, l.statusErr("sending", wc.Status)
	}
	return len(b), nil
}

// Read receives one message into b, which must be exactly its size.
func (l *cmLink) Read(b []byte) (int, error) {
	if l.closed {
		return 0, os.ErrClosed
	}
	wc, err := l.poll(l.rcq, &l.rdl)
	if err != nil {
		return 0, err
	}
	if wc.Status != 0 {
		return 0, l.statusErr("receiving", wc.Status)
	}
	slot := int(wc.WRID)
	if slot < 0 || slot >= cmSlots {
		return 0, fmt.Errorf("comm receive completion with unknown id %d", wc.WRID)
	}
	n := int(wc.ByteLen)
	msg := l.buf.Bytes()[slot*cmSlot : slot*cmSlot+min(n, cmSlot)]
	copy(b, msg)
	if err := l.postRecv(slot); err != nil {
		return 0, err
	}
	if n != len(b) {
		return 0, &PeerError{Err: fmt.Errorf("peer sent a %d-byte record where %d bytes were due (a perftest with another -R exchange, or other options?)", n, len(b))}
	}
	return n, nil
}

func (l *cmLink) statusErr(verb string, st verbs.WCStatus) error {
	if l.gone {
		return &PeerError{Err: errors.New("the peer disconnected")}
	}
	return &PeerError{Err: fmt.Errorf("comm QP failed %s (completion status %d): the peer is gone or refused the message", verb, st)}
}

// poll waits for one completion on cq until dl (zero: none). It sleeps
// between polls, up to a millisecond: the exchange is not timed, and a
// long wait (the peer's whole run) must leave the CPU to the loops. Now
// and then it looks for a DISCONNECTED of the comm id: a peer that ended
// makes the wait fail at once, as a TCP FIN does.
func (l *cmLink) poll(cq *verbs.CQ, deadline *atomic.Int64) (verbs.WC, error) {
	sleep := 10 * time.Microsecond
	next := time.Now().Add(20 * time.Millisecond)
	for {
		n, err := cq.Poll(l.wc[:])
		if err != nil {
			return verbs.WC{}, err
		}
		if n == 1 {
			return l.wc[0], nil
		}
		now := time.Now()
		if dl := deadline.Load(); dl != 0 && now.UnixNano() > dl {
			if l.ctx.Err() != nil {
				return verbs.WC{}, l.ctx.Err()
			}
			return verbs.WC{}, os.ErrDeadlineExceeded
		}
		if l.gone {
			return verbs.WC{}, errPeerGoneCM
		}
		if now.After(next) {
			next = now.Add(20 * time.Millisecond)
			l.checkEvents()
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, time.Millisecond)
	}
}

// errPeerGoneCM reads as the end of the stream: the peer disconnected.
var errPeerGoneCM = fmt.Errorf("peer disconnected: %w", io.EOF)

// checkEvents takes the queued CM events without waiting and notes a
// DISCONNECTED (or DEVICE_REMOVAL) of the comm id.
func (l *cmLink) checkEvents() {
	for {
		ev, ok, err := l.ch.PollEvent()
		if err != nil || !ok {
			return
		}
		l.noteEvent(ev, false)
	}
}

// noteEvent files ev: the end of the comm connection (or, with data,
// of a data QP's) sets gone and is reported; another id's event is kept
// for wait. A peer whose process dies loses its ids, and the kernel
// disconnects their connections (a DREQ): the event is DISCONNECTED.
func (l *cmLink) noteEvent(ev rdmacm.Event, data bool) (ended bool) {
	end := ev.Type == rdmacm.EventDisconnected || ev.Type == rdmacm.EventDeviceRemoval
	if ev.ID == l.id.Handle {
		l.gone = l.gone || end
		return end
	}
	if data && end {
		for _, id := range l.data {
			if ev.ID == id.Handle {
				l.gone = true
				return true
			}
		}
	}
	l.pending = append(l.pending, ev)
	return false
}

// Close ends the data connections and the comm connection (QPs to ERR,
// DISCONNECT, DESTROY_ID; librdmacm's rdma_disconnect and rdma_destroy_id)
// and frees the comm QP's objects and the channel.
func (l *cmLink) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	for _, id := range l.data {
		_ = id.Disconnect()
		_ = id.Destroy()
	}
	l.data = nil
	l.closeLink(true)
	return l.ch.Close()
}

// closeLink frees the comm connection's id and verbs objects (not the
// channel); disconnect says whether the id was connected.
func (l *cmLink) closeLink(disconnect bool) {
	if l.qp != nil {
		_ = l.qp.Modify(&verbs.ModifyAttr{State: verbs.QPStateErr}, verbs.QPAttrState)
	}
	if l.id != nil {
		if disconnect {
			_ = l.id.Disconnect()
		}
		_ = l.id.Destroy()
		l.id = nil
	}
	if l.qp != nil {
		_ = l.qp.Close()
	}
	if l.scq != nil {
		_ = l.scq.Close()
	}
	if l.rcq != nil {
		_ = l.rcq.Close()
	}
	if l.mr != nil {
		_ = l.mr.Close()
	}
	if l.pd != nil {
		_ = l.pd.Close()
	}
	if l.buf != nil {
		_ = l.buf.Close()
	}
	if l.vctx != nil {
		_ = l.vctx.Close()
	}
	l.qp, l.scq, l.rcq, l.mr, l.pd, l.buf, l.vctx = nil, nil, nil, nil, nil, nil, nil
}

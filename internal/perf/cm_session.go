package perf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rdmactl/rdmactl/internal/rdmacm"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// The Session's -R path (cm.go explains the protocol).

// cmDevice is a Device whose QPs the RDMA CM moves through their states:
// Setup leaves them in RESET, and the CM path modifies them itself.
type cmDevice interface {
	manageByCM()
	cmQP(i int) *verbs.QP
}

func (d *verbsDevice) manageByCM()          { d.cm = true }
func (d *verbsDevice) cmQP(i int) *verbs.QP { return d.qps[i] }

// connectComm replaces connect with -z (and is connectCM's first step
// with -R): the comm connection through the RDMA CM, on the device its
// route resolves to, which carries the exchange (cm.go).
func (s *Session) connectComm(ctx context.Context) error {
	p := s.P
	if s.CMDevice == nil {
		return errors.New("-R, -z: no way to map an RDMA CM route to a device (Session.CMDevice)")
	}
	var l *cmLink
	var err error
	if p.Server {
		if s.Out != nil {
			fmt.Fprint(s.Out, "\n************************************\n* Waiting for client to connect... *\n************************************\n")
		}
		l, err = listenCM(ctx, p.Bind, p.Port, s.CMDevice)
	} else {
		l, err = dialCM(ctx, p.Host, p.Bind, p.Port, s.DialTimeout, s.CMDevice)
	}
	if err != nil {
		return err
	}
	s.cm = l
	s.conn = newConn(ctx, l, !p.Server, s.StepTimeout)
	s.conn.noDone = true // ctx_close_connection writes no "done" over the CM
	return nil
}

// connectCM replaces connect with -R: the comm connection, whose route
// names the device the run uses (opened here; -d does not choose it).
func (s *Session) connectCM(ctx context.Context) error {
	p := s.P
	if err := s.connectComm(ctx); err != nil {
		return err
	}
	l := s.cm
	if s.Dev != nil {
		_ = s.Dev.Close()
		s.Dev = nil
	}
	if p.Device != "" && p.Device != l.vd.Name {
		s.cmNote = fmt.Sprintf("-R: the RDMA CM reaches %s through %s port %d; -d %s is not used (as in perftest)", l.peer.Addr(), l.vd.Name, l.route.Port, p.Device)
	}
	p.Device, p.IBPort = l.vd.Name, int(l.route.Port)
	dev, err := OpenDevice(l.vd, p.IBPort)
	if err != nil {
		return err
	}
	s.Dev = dev
	cd, ok := dev.(cmDevice)
	if !ok {
		return errors.New("-R needs a verbs device")
	}
	cd.manageByCM()
	return nil
}

// cmSync is the key round around the CM connection of the data QPs
// (create_rdma_cm_connection's ctx_hand_shake with a zeroed record).
func (s *Session) cmSync(what string) error {
	var zero Dest
	rec := encodeKeyCM(&zero, 0, s.cmTailKey())
	_, err := s.conn.xchg(what, rec, len(rec), false)
	return err
}

// cmRetries and cmRetryDelay are perftest's rdma_cm_client_connection
// retries: its server listens for the data QPs only after the first sync,
// so a client's first request may find nobody yet.
const (
	cmRetries    = 10
	cmRetryDelay = 100 * time.Millisecond
)

// connectDataCM connects the data QPs through the CM, between two sync
// rounds, and fills s.my with what the CM chose (the SQ PSN, the GID).
func (s *Session) connectDataCM(ctx context.Context) error {
	p, l := s.P, s.cm
	cd := s.Dev.(cmDevice)
	c := dataConnCM(p, s.my[0].OutReads)
	var lid *rdmacm.ID
	if p.Server {
		// Listen before the sync, so that a client never finds the port
		// closed (perftest listens after it and relies on the retries).
		ap, err := cmBindAddr(p.Bind, p.Port)
		if err != nil {
			return err
		}
		if lid, err = listenOn(l.ch, ap, p.QPs, p.QoS.cm().TOS); err != nil {
			return err
		}
		defer func() { _ = lid.Destroy() }()
	}
	if err := s.cmSync("the sync before the RDMA CM connection"); err != nil {
		return err
	}
	for i := range s.my {
		qp := cd.cmQP(i)
		var rtr, rts rdmacm.QPAttr
		var err error
		if p.Server {
			rtr, rts, err = s.acceptDataQP(ctx, lid, qp, c)
		} else {
			rtr, rts, err = s.dialDataQP(ctx, qp, c)
		}
		if err != nil {
			return fmt.Errorf("QP %d over RDMA CM: %w", i, err)
		}
		s.my[i].PSN = rts.SQPSN & 0xffffff
		s.gidIndex = int(rtr.Dest.SGIDIndex)
		s.my[i].GID = s.gid()
	}
	return s.cmSync("the sync after the RDMA CM connection")
}

// dataConnCM is the data QPs' connection parameters. READ and the
// atomics need responder resources on the target and an initiator depth
// on the poster: both are the depth -o (or the device) gave, as perftest
// sets them for READ || ATOMIC, and since 6.29 for --data_validation,
// whose chunks end with an atomic (src/perftest_communication.c); other
// tests 0. The srq flag is set where this side's QPs receive through an
// SRQ.
func dataConnCM(p *Params, outReads uint16) cmConn {
	c := cmConn{retry: p.QoS.cm().Retry, srq: p.srqSide()}
	if p.Verb.isReadLike() || p.DataValidation {
		c.rd = uint8(min(int(outReads), 255))
	}
	return c
}

func (s *Session) dialDataQP(ctx context.Context, qp *verbs.QP, c cmConn) (rtr, rts rdmacm.QPAttr, err error) {
	l := s.cm
	for try := 1; ; try++ {
		var id *rdmacm.ID
		if id, err = l.ch.CreateID(rdmacm.PSTCP); err != nil {
			return
		}
		if err = s.prepareDataQP(ctx, id, qp, false); err == nil {
			rtr, rts, err = l.activeConnect(ctx, id, qp, c, time.Now().Add(s.StepTimeout))
		}
		if err == nil {
			l.data = append(l.data, id)
			return
		}
		_ = id.Destroy()
		_ = qp.Modify(&verbs.ModifyAttr{State: verbs.QPStateReset}, verbs.QPAttrState)
		var ee *rdmacm.EventError
		if !errors.As(err, &ee) || !ee.Refused() || try == cmRetries || ctx.Err() != nil {
			if ee != nil {
				err = &PeerError{Err: err}
			}
			return
		}
		time.Sleep(cmRetryDelay)
	}
}

func (s *Session) acceptDataQP(ctx context.Context, lid *rdmacm.ID, qp *verbs.QP, c cmConn) (rtr, rts rdmacm.QPAttr, err error) {
	l := s.cm
	ev, err := l.wait(ctx, lid, time.Now().Add(s.StepTimeout))
	if errors.Is(err, rdmacm.ErrTimeout) {
		err = peerErrorf("the peer did not connect its QP over RDMA CM within %v", s.StepTimeout)
	}
	if err != nil {
		return
	}
	id := l.ch.Adopt(ev, lid)
	if err = s.prepareDataQP(ctx, id, qp, true); err == nil {
		rtr, rts, err = passiveAccept(id, qp, c)
	}
	if err != nil {
		_ = id.Reject()
		_ = id.Destroy()
		return
	}
	l.data = append(l.data, id)
	// perftest: the RNR timer of its own QP attributes (MIN_RNR_TIMER 12),
	// which the CM's do not set.
	err = qp.Modify(&verbs.ModifyAttr{MinRNRTimer: 12}, verbs.QPAttrMinRNRTimer)
	return
}

// prepareDataQP resolves (client) or reads (server) the data id's route,
// checks that it is the comm connection's device, and moves the QP to
// INIT (librdmacm's rdma_create_qp).
func (s *Session) prepareDataQP(ctx context.Context, id *rdmacm.ID, qp *verbs.QP, server bool) error {
	l, q := s.cm, s.P.QoS.cm()
	if !server {
		if err := l.resolve(ctx, id, l.peer, q.TOS); err != nil {
			if errors.Is(err, errCMOption) {
				return err // ours, not the peer's
			}
			return &PeerError{Err: err}
		}
	}
	// -u: the ACK timeout the CM puts in the RTS attributes (perftest has
	// no way to pass -u with -R); set on each side's own id.
	if q.AckTimeout >= 0 {
		if err := id.SetAckTimeout(uint8(q.AckTimeout)); err != nil {
			return fmt.Errorf("-u %d: %w", q.AckTimeout, err)
		}
	}
	r, err := id.QueryRoute()
	if err != nil {
		return err
	}
	if r.NodeGUID != l.route.NodeGUID || r.Port != l.route.Port {
		return fmt.Errorf("the RDMA CM put the data QP on another device or port (GUID %016x port %d) than the exchange (%016x port %d)",
			r.NodeGUID, r.Port, l.route.NodeGUID, l.route.Port)
	}
	_, err = cmModify(id, qp, rdmacm.StateInit, -1)
	return err
}

// watchPeerCM is watchPeer with -R: a peer that ends during the run (its
// process died: the kernel destroyed its ids and disconnected them) shows
// as a DISCONNECTED of the comm id or a data QP's id. The goroutine waits
// in GET_EVENT through Go's poller (no thread sleeps in a system call),
// as watchPeer waits on the socket; other events are kept for later.
func (s *Session) watchPeerCM() func() {
	l := s.cm
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ev, err := l.ch.WaitEvent(ctx, time.Time{})
			if err != nil {
				return // stopped, or the channel failed (the next exchange says so)
			}
			if !l.noteEvent(ev, true) {
				continue
			}
			s.peerLeft(done) // as watchPeer: the loop may be about to end on its own
			return
		}
	}()
	return func() {
		close(done)
		cancel()
		wg.Wait()
	}
}

package perf

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// --use-srq for send tests, as perftest has it: a side that receives
// (the bandwidth server, both sides with -b or --lat) creates one shared
// receive queue of RX depth (-r) receives and its QPs on it; each QP's
// receive WR is posted RX depth / QPs times to it, and re-posted as its
// receives complete (the WR, not the QP a message came to, says whose it
// was, as perftest's wr_id). A side that only sends has no SRQ.
//
// Byte check: a sender fills its source areas with srqPattern; a
// receiver whose peer is rdmactl checks, after the run, that every
// receive area a message landed in holds the pattern. (perftest's
// payload is random.)

// srqSide says whether this side receives through an SRQ.
func (p *Params) srqSide() bool {
	return p.UseSRQ && p.Verb == VerbSend && (p.Test == TestLat || p.passive() || p.Bidir)
}

// rxPerQP is how many receives each QP keeps posted: RX depth, shared
// among the QPs with an SRQ (perftest's size_per_qp).
func (p *Params) rxPerQP() uint64 {
	if p.srqSide() {
		return uint64(max(1, p.RxDepth/p.QPs))
	}
	return uint64(p.RxDepth)
}

// srqPattern is byte k of every message an --use-srq sender sends.
func srqPattern(k uint64) byte { return byte(k*131 + k>>8 + 17) }

// fillSRQPattern writes the pattern into each QP's source area, unless
// the user's payload (--payload_file_path) is what is sent: the
// parameter record then says so, and an SRQ receiver checks nothing.
func (r *runner) fillSRQPattern() {
	if len(r.p.Payload) > 0 {
		return
	}
	for i := range r.res.QPs {
		b := r.res.Buf[r.srcOff(i) : r.srcOff(i)+r.blk]
		for k := range b {
			b[k] = srqPattern(uint64(k))
		}
	}
}

// SRQCheck is the byte check of an --use-srq receiver (JSON "srq").
type SRQCheck struct {
	// Received counts messages per QP receive WR (the WRs share the SRQ,
	// so a WR's count need not be its QP's).
	Received []uint64 `json:"received"`
	// PayloadChecked: the peer is rdmactl, whose payload is srqPattern;
	// PayloadOK: every receive area used holds it.
	PayloadChecked bool `json:"payload_checked"`
	PayloadOK      bool `json:"payload_ok"`
}

// checkSRQ fills s.result.SRQ after a run on an SRQ side and fails on a
// payload that is not what an rdmactl peer sent.
func (s *Session) checkSRQ(r *runner) error {
	if !s.P.srqSide() {
		return nil
	}
	c := &SRQCheck{Received: append([]uint64(nil), r.rcnt...), PayloadOK: true}
	if s.P.Test == TestLat {
		c.Received[0] = r.ccnt[0] // the latency loop counts its receives there
	}
	s.result.SRQ = c
	if s.conn == nil || !s.conn.peerVer.Rdmactl || s.peerPayload {
		return nil
	}
	c.PayloadChecked = true
	for q, n := range c.Received {
		if n == 0 {
			continue
		}
		b := r.res.Buf[r.dstOff(q) : r.dstOff(q)+r.size]
		for k := range b {
			if b[k] != srqPattern(uint64(k)) {
				c.PayloadOK = false
				return peerErrorf("--use-srq: receive area %d byte %d is %#x, want %#x (what the peer sent)", q, k, b[k], srqPattern(uint64(k)))
			}
		}
	}
	return nil
}

// detachedRecv is a receive queue with a detached provider queue (a QP's
// own, or an SRQ's).
type detachedRecv interface {
	DetachedRecvQueue() (verbs.RecvQueue, bool)
}

var (
	_ detachedRecv = (*verbs.QP)(nil)
	_ detachedRecv = (*verbs.SRQ)(nil)
)

// detachedRecvQueue is q's detached receive queue: its RecvQueue's (an
// SRQ's, with --use-srq), else none.
func detachedRecvQueue(q QP) (verbs.RecvQueue, bool) {
	d, ok := q.RecvQueue.(detachedRecv)
	if !ok {
		return nil, false
	}
	return d.DetachedRecvQueue()
}

func (s *SRQCheck) String() string {
	return fmt.Sprintf("received %v, payload checked %t ok %t", s.Received, s.PayloadChecked, s.PayloadOK)
}

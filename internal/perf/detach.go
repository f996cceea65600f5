package perf

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// The measurement loops, and how they run (package rtloop): detached from
// the Go scheduler when the process's mode is rtloop.Detached and the
// provider has queues fit for it (rxe), else attached on a locked thread
// (rtloop.Plain; mlx5 and the tests' fakes always), where they yield
// about once a millisecond. One loop function per test serves both: it
// is //go:nosplit, allocates nothing, stores no pointers and reads the
// clock with rtloop.Now.

// detachOK says whether loops may run detached in this process
// (rtloop.Selected is Detached); the queues decide the rest.
func detachOK() bool { return rtloop.Selected() == rtloop.Detached }

// latLoopArgs returns what a latency loop needs, with QP 0's queues: the
// provider's detached queues when the mode and the provider allow it
// (detach: run it detached), else the ordinary ones, with which the same
// loop runs attached and yields about once a millisecond: a nosplit
// function is never preempted, so without that a spinning loop would
// keep its P from every other goroutine (the tests' write_lat_all took
// 10 s instead of 0.07). withRecv: the loop also receives (send).
func (r *runner) latLoopArgs(withRecv bool) (a latArgs, detach bool) {
	q := r.res.QPs[0]
	if r.ev != nil {
		r.ev.attached = true // until the detached queues are found
	}
	a = latArgs{sq: q.SendQueue, rq: q.RecvQueue, scq: r.res.SendCQ, rcq: r.res.RecvCQ,
		wr: r.wrs[0][:1], wcs: r.wcs, iters: r.p.Iters, posted: r.posted,
		stop: r.stop, prog: &r.progress, stall: int64(r.stall), yielder: yielder{yield: true}, ev: r.ev,
		gap: int64(r.p.LatencyGap), wantImm: r.p.SendImm || r.p.WriteImm}
	if withRecv {
		a.rwr, a.recvLen, a.rposted, a.rdone = r.rwrs[0], r.recvLen, r.rposted[0], r.ccnt[0]
	} else {
		a.rq, a.rcq = nil, nil
	}
	if p := r.p; p.Duration > 0 {
		now := rtloop.Now()
		a.iters, a.hist = math.MaxUint64, r.hist
		a.tSample, a.tSampleEnd, a.tStop = now+int64(p.Margin), now+int64(p.Duration-p.Margin), now+int64(p.Duration)
	}
	if !detachOK() {
		return a, false
	}
	vq, ok := q.SendQueue.(DetachableQP)
	if !ok {
		return a, false
	}
	d := a
	if d.sq, ok = vq.DetachedSendQueue(); !ok {
		return a, false
	}
	if d.scq, ok = detachedCQ(r.res.SendCQ); !ok {
		return a, false
	}
	if withRecv {
		if d.rcq, ok = detachedCQ(r.res.RecvCQ); !ok {
			return a, false
		}
		if w, ok := r.res.RecvCQ.(WatchableCQ); ok && r.ev == nil {
			d.rcqProd, d.rcqCons, _ = w.DetachedWatch()
		}
		if d.rq, ok = detachedRecvQueue(q); !ok { // the QP's, or its SRQ's
			return a, false
		}
	}
	d.yield = false // no P to yield
	if r.ev != nil {
		r.ev.attached = false
	}
	return d, true
}

// latResult is how a latency loop ended: end, the samples it took and,
// for endPostErr/endPollErr, the provider's (preallocated) error. It
// comes back on the stack (rtloop.Run).
type latResult struct {
	end detachedEnd
	ns  int
	err error
}

// runLatLoop runs verb's latency loop, detached from the scheduler if
// detach, and turns how it ended into runLatWrite's, runLatSend's or
// runLatRead's result. With r.thr (a sole session), a detached loop
// runs on that thread (rtloop.Thread).
func (r *runner) runLatLoop(a *latArgs, verb Verb, detach bool) error {
	var res latResult
	a.verb = verb
	switch verb {
	case VerbWrite:
		a.first = r.isSrv
	case VerbSend:
		// send_lat: the client; write with immediate data, which runs
		// send's loop: the server, as perftest 6.29's
		// run_iter_lat_write_imm (src/perftest_resources.c: the server
		// does not wait for a receive before its first post).
		a.first = !r.isSrv != r.p.WriteImm
	}
	switch {
	case detach && r.thr != nil:
		res = r.thr.Run(runLat, a)
	default:
		res = rtloop.Run(runLat, a, detach, true)
	}
	r.countLoop(detach)
	r.nSamples = res.ns
	if res.err == nil && res.end == endDone && a.inflight {
		r.drainLat(a)
	}
	if a.rq != nil {
		r.rposted[0], r.ccnt[0] = a.rposted, a.rdone
	}
	return r.loopEnd(res.end, res.err)
}

// countLoop counts a loop that ran detached or attached (the plain loop).
func (r *runner) countLoop(detach bool) {
	if detach {
		r.detached++
	} else {
		r.plain++
	}
}

// loopMode is the loop that ran: "detached" if any of the runner's loops
// ran detached, else "plain" (also before any ran).
func (r *runner) loopMode() string {
	if r.detached > 0 {
		return rtloop.Detached.String()
	}
	return rtloop.Plain.String()
}

// drainLat waits up to a second for the completion of the send a
// duration run stopped waiting for at its deadline, so that the run ends
// with nothing outstanding on its send queue (the next run on the same
// QP would find it full: one WQE deep for latency).
func (r *runner) drainLat(a *latArgs) {
	deadline := r.now() + int64(time.Second)
	for r.now() < deadline {
		n, err := a.scq.Poll(a.wcs[:1])
		if err != nil || n > 0 {
			a.inflight = err != nil
			r.latDrained++
			return
		}
		runtime.Gosched()
	}
}

// runLat runs a.verb's latency loop on a: pingPongDetached (write, send)
// or latReadDetached.
//
//go:nosplit
func runLat(a *latArgs) latResult {
	var res latResult
	if a.verb == VerbRead {
		res.end, res.ns, res.err = latReadDetached(a)
	} else {
		res.end, res.ns, res.err = pingPongDetached(a)
	}
	return res
}

// loopEnd is the error of a nosplit loop that ended with end (err: the
// provider's, for endPostErr and endPollErr).
func (r *runner) loopEnd(end detachedEnd, err error) error {
	switch end {
	case endDone:
		return nil
	case endPostErr, endPollErr:
		return err
	case endWCErr:
		r.checkWC(&r.wcs[0])
		return errWC
	case endLength:
		r.wcErr = r.wcs[0]
		return errLength
	case endNoImm:
		r.wcErr = r.wcs[0]
		return errNoImm
	case endStopped:
		return errStopped
	case endDeadline:
		return errDeadline
	default:
		return errStalled
	}
}

// yielder is how an attached loop lets other goroutines run: a nosplit
// loop is never preempted, so with yield set it calls runtime.Gosched
// about once a millisecond (maybeYield, t from the loop's clock). A
// detached loop has no P to yield.
type yielder struct {
	yield   bool
	yielded int64 // t of the last Gosched
}

// maybeYield is called from the nosplit loops; runtime.Gosched may be
// called there only attached, which is when yield is set.
//
//go:nosplit
func (y *yielder) maybeYield(t int64) {
	if y.yield && t-y.yielded >= int64(time.Millisecond) {
		yieldPreemptible()
		y.yielded = t
	}
}

// yieldPreemptible is maybeYield's yield, and also a point where the
// runtime can stop the loop's goroutine: unlike runtime.Gosched (nosplit,
// no check), its prologue checks for a pending preemption, which is how a
// GC asks to scan a goroutine's stack. Without it a GC could scan the loop
// only in the moment between Gosched and its return, which on busy CPUs it
// often missed: a runtime.GC beside a spinning loop (two Ps, as two
// sessions in one test process) took up to 414 ms, and a peer session's
// prepare waited out the loop's whole -D run (TestGCWhileLoopSpins).
//
//go:noinline
func yieldPreemptible() {
	runtime.Gosched()
}

// How a detached loop ended. The loop cannot build errors (that
// allocates), so it returns one of these and loopEnd makes the error.
type detachedEnd int

const (
	endDone     detachedEnd = iota
	endPostErr              // PostSend or PostRecv failed: err
	endPollErr              // Poll failed: err
	endWCErr                // a completion with an error status: wcs[0]
	endLength               // a receive of the wrong length: wcs[0]
	endStopped              // stop was set (Ctrl-C, peer gone)
	endStalled              // no progress for stall ns
	endDeadline             // duration mode: a wait reached the end of the run
	endNoImm                // --send_with_imm: a receive without immediate data: wcs[0]
)

// latArgs is what a detached latency loop reads and writes; filled
// before detaching, on the caller's stack.
type latArgs struct {
	sq       verbs.SendQueue
	rq       verbs.RecvQueue // send: re-posts receives
	scq, rcq verbs.CompletionQueue
	wr       []verbs.SendWR
	rwr      []verbs.RecvWR
	recvLen  uint32 // send: what a receive must report
	wcs      []verbs.WC
	// write: the byte the peer writes, and the one this side writes
	pollW   *uint32
	pollSh  uint32
	buf     []byte
	postOff uint64

	iters  uint64
	verb   Verb
	first  bool    // write server, send client, write-imm server: posts first (runLatLoop)
	posted []int64 // samples out (iteration mode)
	// duration mode (tStop != 0): samples go to hist while the clock
	// (rtloop.Now) is in [tSample, tSampleEnd), the margins; the loop ends
	// at tStop, and so does a wait (endDeadline): the peer stops on its
	// own clock.
	hist                       *histogram
	tSample, tSampleEnd, tStop int64
	stop                       *atomic.Bool
	prog                       *atomic.Uint64
	stall                      int64  // ns
	rposted                    uint64 // send: receives posted (in and out)
	// inflight: the signaled send posted last has not been polled yet
	// (a duration run can stop waiting for it at its deadline; see
	// runner.drainLat)
	inflight bool
	rdone    uint64 // send: receives completed (in and out)
	// send: the receive CQ's producer and consumer index words when its
	// provider has them (WatchableCQ), for recvOneDetached's
	// wait; nil: it polls
	rcqProd, rcqCons *uint32
	// spins counts empty rounds over the whole run, not per wait: on
	// fast hardware a wait can be shorter than the 4096 rounds between
	// checks of stop, and Ctrl-C must still end a long run.
	spins uint32
	// ev: -e, wait for completions on the channel (nil: spin)
	ev *evWait
	// gap: --latency_gap, ns spun before each post (latencygap.go)
	gap int64
	// wantImm: --send_with_imm, every receive must carry immediate data
	wantImm bool
	yielder
}

// pingPongDetached is the loop of runLatWrite and runLatSend (see
// there), fit for a detached goroutine: nosplit, no allocation, no
// pointer stores, the clock from rtloop.Now. Each iteration waits for the
// peer's message (waitPeer: the polled byte for write, a receive for
// send), except the first side's first, then posts its own and times
// post to post. The side that posts first (a.first: the write server,
// the send client, the write-with-immediate server) does not time its
// first period, which holds the peer's start, and in iteration mode
// waits for the peer's last message without timing it, so it takes
// iters-2 samples and the other side iters-1. It returns how it ended,
// the samples taken into a.posted and, for endPostErr/endPollErr, the
// provider's (preallocated) error.
//
//go:nosplit
func pingPongDetached(a *latArgs) (end detachedEnd, ns int, err error) {
	var prev int64
	var waits uint64
	for i := uint64(1); i <= a.iters; i++ {
		if !(i == 1 && a.first) {
			waits++
			if end, err = waitPeer(a, waits); end != endDone {
				return end, ns, err
			}
		}
		// The clock is read before the post, as perftest reads its
		// cycle counter before ibv_post_send: a sample is the period
		// between two posts' starts, one round trip. Read after the
		// post, the period moves with how much of the round trip the
		// post's own system call carries (on rxe the requester runs in
		// it, and sometimes the packet's way to the peer and back), and
		// kernels differ there: on 6.12, periods from post end to post
		// end of 5-13 us appeared beside 50 us round trips (t_min 4.67
		// us against perftest's 46.18 in the same run). The side that starts
		// skips its first period: it also holds the peer's start
		// (perftest's latency tests calibrate their clock for about
		// 220 ms after the last handshake, so against an ib_write_lat
		// client that sample was a 220 ms "round trip").
		if a.gap != 0 { // tested here: no call per message without a gap
			latencyGap(a) // before the clock, as perftest: the gap is in the period
		}
		t := rtloop.Now()
		if prev != 0 && !(i == 2 && a.first) {
			if a.hist == nil { // iteration mode
				a.posted[ns] = t - prev
				ns++
			} else {
				a.histSample(t-prev, t)
			}
		}
		prev = t
		if a.buf != nil {
			a.buf[a.postOff] = byte(i) // write: what the peer polls for
		}
		if err = a.sq.PostSend(a.wr); err != nil {
			return endPostErr, ns, err
		}
		a.inflight = true
		if end, err = pollDetached(a, a.scq, evSend); end != endDone {
			return a.pollEnd(end), ns, err
		}
		a.inflight = false
		a.prog.Store(i)
		if a.tStop != 0 && t >= a.tStop {
			return endDone, ns, nil
		}
	}
	if a.first && a.tStop == 0 {
		// The peer's last message must land before this side tears its
		// QP down (a send would fail on the peer), as perftest waits
		// for it. Not a sample: from after the last post it is not a
		// period between two posts, and on rxe the post's system call
		// sometimes carries the whole round trip, which left this
		// "sample" at 3-5 us where the others were about 50 (VM, send_lat).
		if end, err = waitPeer(a, waits+1); end != endDone {
			return end, ns, err
		}
	}
	return endDone, ns, nil
}

// waitPeer waits for the peer's n-th message: a receive (send), or the
// polled byte reading n (write).
//
//go:nosplit
func waitPeer(a *latArgs, n uint64) (detachedEnd, error) {
	if a.rq != nil {
		return recvOneDetached(a)
	}
	return spinDetached(a, byte(n)), nil
}

// latReadDetached is runLatRead's loop, as pingPongDetached. One clock
// read per READ: the sample is the time from one READ's completion (when
// the next is posted) to the next's, as perftest's post-to-post time.
//
//go:nosplit
func latReadDetached(a *latArgs) (end detachedEnd, ns int, err error) {
	t := rtloop.Now()
	for i := uint64(1); i <= a.iters; i++ {
		if a.gap != 0 {
			latencyGap(a) // in the sample, as perftest's (its clock is read after the gap)
		}
		if err = a.sq.PostSend(a.wr); err != nil {
			return endPostErr, ns, err
		}
		a.inflight = true
		if end, err = pollDetached(a, a.scq, evSend); end != endDone {
			return a.pollEnd(end), ns, err
		}
		a.inflight = false
		t2 := rtloop.Now()
		if a.hist == nil {
			a.posted[ns] = t2 - t
			ns++
		} else {
			a.histSample(t2-t, t2)
		}
		if a.tStop != 0 && t2 >= a.tStop {
			return endDone, ns, nil
		}
		t = t2
		a.prog.Store(i)
	}
	return endDone, ns, nil
}

// histSample adds a duration-mode latency sample d that ended at t to the
// histogram if t lies within the margins. (Iteration mode stores samples
// inline in the loops: a call per iteration there is not free under TCG.)
//
//go:nosplit
func (a *latArgs) histSample(d, t int64) {
	if t >= a.tSample && t < a.tSampleEnd {
		a.hist.add(d)
	}
}

// pollEnd is how a loop ends when waiting for its own completion ended
// with end: in duration mode a failure after the sampling window is the
// peer having stopped on its own clock and torn down its QP, not an error
// (Ctrl-C still is an interruption).
//
//go:nosplit
func (a *latArgs) pollEnd(end detachedEnd) detachedEnd {
	if a.tStop != 0 && end != endStopped && rtloop.Now() >= a.tSampleEnd {
		if end == endWCErr {
			// The send's completion came, failed: nothing for drainLat
			// to wait for (it waited its whole second for nothing).
			a.inflight = false
		}
		return endDone
	}
	return end
}

// recvOneDetached waits for one receive and re-posts it while more are due.
//
//go:nosplit
func recvOneDetached(a *latArgs) (detachedEnd, error) {
	if a.rcqProd != nil {
		// Wait as spinDetached does (see there for why), then poll.
		if end := a.waitRing(a.rcqProd, a.rcqCons); end != endDone {
			return end, nil
		}
	}
	if end, err := pollDetached(a, a.rcq, evRecv); end != endDone {
		return end, err
	}
	if a.wcs[0].ByteLen != a.recvLen {
		return endLength, nil
	}
	if a.wantImm && a.wcs[0].Flags&verbs.WCWithImm == 0 {
		return endNoImm, nil
	}
	a.rdone++
	if a.rposted < a.iters {
		if err := a.rq.PostRecv(a.rwr); err != nil {
			return endPostErr, err
		}
		a.rposted++
	}
	return endDone, nil
}

// pollDetached polls cq until one completion arrives; with -e it waits
// for an event (mask: which CQ) when a poll comes back empty.
//
//go:nosplit
func pollDetached(a *latArgs, cq verbs.CompletionQueue, mask int) (detachedEnd, error) {
	var since int64
	for {
		cnt, err := cq.Poll(a.wcs[:1])
		if err != nil {
			return endPollErr, err
		}
		if cnt > 0 {
			if a.wcs[0].Status != 0 {
				return endWCErr, nil
			}
			return endDone, nil
		}
		if a.ev != nil {
			waited, err := a.ev.step(mask)
			if err != nil {
				return endPollErr, err
			}
			if waited {
				if end := a.checkNow(&since); end != endDone {
					return end, nil
				}
			}
			continue
		}
		if end := checkDetached(a, &since); end != endDone {
			return end, nil
		}
	}
}

// spinDetached waits until the polled byte reads v. A round is a load, a
// shift, a compare and a branch, with the count of rounds in a register:
// no call and no store, as perftest's wait.
//
// Why: under TCG both vCPUs are threads on the host's CPUs, and while
// this side spins, the other vCPU carries the peer's message through rxe
// (the NET_RX softirq). With a call per round (its return is an indirect
// jump, which the emulator looks up) that softirq ran slower. Measured in
// the VM, 2-byte write_lat, 20 alternating rounds of perftest, the old
// wait and this one in one boot: against the old wait, the softirq's
// median time gmean 0.843 (95% CI 0.73-0.97), the latency median 0.797
// (0.66-0.96) and p99 0.819 (0.70-0.96).
//
//go:nosplit
func spinDetached(a *latArgs, v byte) detachedEnd {
	var since int64
	p, sh, n := a.pollW, a.pollSh, a.spins
	for byte(atomic.LoadUint32(p)>>sh) != v {
		n++
		if n&4095 == 0 {
			a.spins = n
			if end := a.checkNow(&since); end != endDone {
				return end
			}
		}
	}
	a.spins = n
	return endDone
}

// waitRing waits until a ring's producer index (*prod) differs from its
// consumer index (*cons): a completion is there. A round is two loads, a
// compare and a branch; checkNow every 4096 rounds of the run.
//
//go:nosplit
func (a *latArgs) waitRing(prod, cons *uint32) detachedEnd {
	var since int64
	n := a.spins
	for atomic.LoadUint32(prod) == atomic.LoadUint32(cons) {
		n++
		if n&4095 == 0 {
			a.spins = n
			if end := a.checkNow(&since); end != endDone {
				return end
			}
		}
	}
	a.spins = n
	return endDone
}

// checkDetached counts an empty round and, every 4096 of them over the
// run, calls checkNow.
//
//go:nosplit
func checkDetached(a *latArgs, since *int64) detachedEnd {
	a.spins++
	if a.spins&4095 != 0 {
		return endDone
	}
	return a.checkNow(since)
}

// checkNow ends a wait on Ctrl-C or when the peer vanished (stop), at the
// end of a duration run, or after the stall limit without progress since
// this wait's first check (*since); attached, it yields about once a ms.
//
//go:nosplit
func (a *latArgs) checkNow(since *int64) detachedEnd {
	if a.stop.Load() {
		return endStopped
	}
	t := rtloop.Now()
	if a.tStop != 0 && t >= a.tStop {
		return endDeadline
	}
	if *since == 0 {
		*since = t
	} else if t-*since > a.stall {
		return endStalled
	}
	a.maybeYield(t)
	return endDone
}

// bwArgs is what the bandwidth loops (bwDetached, bwRecvDetached) read
// and write; filled before detaching, on the caller's stack.
type bwArgs struct {
	sqs   []verbs.SendQueue // per QP
	scq   verbs.CompletionQueue
	wrs   [][]verbs.SendWR // per QP: one post list
	wcs   []verbs.WC
	scnt  []uint64
	ccnt  []uint64
	iters uint64 // per QP
	pl    uint64 // post list
	cqMod uint64
	tx    uint64 // TX depth
	base  int64  // runner.base: the loops' clock is rtloop.Now()-base
	stop  *atomic.Bool
	prog  *atomic.Uint64
	stall int64
	// receiving (rqs != nil): the send receiver's loop, and -b send's
	// sender, which also receives the peer's iters per QP (perftest's
	// run_iter_bi), re-posting each receive while the run needs more
	rqs     []verbs.RecvQueue
	rcq     verbs.CompletionQueue
	rwrs    [][]verbs.RecvWR // per QP: the list re-posted at once
	rposted []uint64
	rcnt    []uint64
	runused []uint64 // received and not yet re-posted
	recvLen uint32
	// duration mode (duration != 0, ns): messages count only between
	// the margins, from the sender's start or the receiver's first
	// message
	duration, margin int64
	// out: the first post (or, in duration mode, the first completion
	// event in the window) and the last event; one (time, completed)
	// event per poll that returned completions (iteration mode, sender)
	tStart, tEnd int64
	evT          []int64
	evC          []uint64
	nEv          int
	done         uint64 // messages counted (see count; receiver: received)
	// ev: -e, wait for completions on the channel (nil: spin)
	ev *evWait
	// the software rate limiter (ratelimit.go; rlGap 0: off): bursts of
	// rlBurst messages, each rlGap ns after the previous one began
	rlGap, rlNext   int64
	rlBurst, rlSent uint64
	rlSending       bool
	// wantImm: --send_with_imm, every receive must carry immediate data
	wantImm bool
	// dv: --data_validation's posts (validation.go); nil: wrs as they are
	dv *dvLoop
	yielder
}

// bwLoopArgs returns the bandwidth loops' arguments: the QPs' detached
// queues and CQs when the mode and the provider allow it (detach), else
// the ordinary ones, with which the loops run attached and yield about
// once a millisecond (they cannot be preempted; see latLoopArgs).
// withRecv: the loop receives (the send receiver, -b send). The queues
// are found once per runner.
func (r *runner) bwLoopArgs(withRecv bool) (bwArgs, bool) {
	if r.bwq == nil {
		r.bwq = r.bwQueues()
	}
	q, p := r.bwq, r.p
	a := bwArgs{sqs: q.sqs, scq: q.scq, wrs: r.wrs, wcs: r.wcs, scnt: r.scnt, ccnt: r.ccnt,
		iters: p.Iters, pl: uint64(p.PostList), cqMod: uint64(p.CQMod), tx: uint64(p.TxDepth),
		base: r.base, stop: r.stop, prog: &r.progress, stall: int64(r.stall),
		evT: r.evT, evC: r.evC, yielder: yielder{yield: !q.detach}, ev: r.ev, wantImm: p.SendImm || p.WriteImm, dv: r.dv}
	if r.ev != nil {
		r.ev.attached = !q.detach
	}
	if withRecv {
		a.rqs, a.rcq, a.rwrs, a.rposted, a.rcnt, a.runused, a.recvLen = q.rqs, q.rcq, r.rwrs, r.rposted, r.rcnt, r.runused, r.recvLen
	}
	if p.Duration > 0 {
		a.iters, a.duration, a.margin = durationIters(len(q.sqs)), int64(p.Duration), int64(p.Margin)
	}
	if gap, burst, err := p.swGap(r.size); err == nil && gap > 0 { // Validate checked the sizes
		a.rlGap, a.rlBurst = int64(gap), burst
	}
	return a, q.detach
}

// durationIters is a duration run's message count per QP for n QPs:
// the loops stop at the clock, never at the count, and their total
// (iters * n) must not wrap to 0, as 1<<62 per QP did for four QPs.
func durationIters(n int) uint64 {
	return (1 << 62) / uint64(max(n, 1))
}

// bwQueues are the bandwidth loops' queues: detached ones if the mode
// allows and the provider has them for every QP and CQ the run uses.
type bwQueues struct {
	sqs    []verbs.SendQueue
	rqs    []verbs.RecvQueue
	scq    verbs.CompletionQueue
	rcq    verbs.CompletionQueue
	detach bool
}

func (r *runner) bwQueues() *bwQueues {
	n := len(r.res.QPs)
	q := &bwQueues{sqs: make([]verbs.SendQueue, n), rqs: make([]verbs.RecvQueue, n), scq: r.res.SendCQ, rcq: r.res.RecvCQ}
	for i := range r.res.QPs {
		q.sqs[i], q.rqs[i] = r.res.QPs[i].SendQueue, r.res.QPs[i].RecvQueue
	}
	if !detachOK() {
		return q
	}
	d := &bwQueues{sqs: make([]verbs.SendQueue, n), rqs: make([]verbs.RecvQueue, n), detach: true}
	var ok bool
	for i := range r.res.QPs {
		vq, isQP := r.res.QPs[i].SendQueue.(DetachableQP)
		if !isQP {
			return q
		}
		if d.sqs[i], ok = vq.DetachedSendQueue(); !ok {
			return q
		}
		if r.p.recvComp() {
			if d.rqs[i], ok = detachedRecvQueue(r.res.QPs[i]); !ok { // the QP's, or its SRQ's
				return q
			}
		}
	}
	if d.scq, ok = detachedCQ(r.res.SendCQ); !ok {
		return q
	}
	if r.p.recvComp() { // only send and write with immediate receive
		if d.rcq, ok = detachedCQ(r.res.RecvCQ); !ok {
			return q
		}
	}
	return d
}

// detachedCQ is cq's detached provider CQ, if it has one.
func detachedCQ(cq verbs.CompletionQueue) (verbs.CompletionQueue, bool) {
	vc, ok := cq.(DetachableCQ)
	if !ok {
		return nil, false
	}
	return vc.DetachedCQ()
}

// bwResult is how a bandwidth loop ended (on the stack, as latResult).
type bwResult struct {
	end detachedEnd
	err error
}

// runBWLoop runs the sender's (bwDetached) or the send receiver's
// (bwRecvDetached) loop, detached from the scheduler if detach, and
// records its results. a is r.bw: on the heap already, so that passing
// it through rtloop.Run's func value allocates nothing per run.
func (r *runner) runBWLoop(a *bwArgs, recv, detach bool) error {
	loop := bwSendLoop
	if recv {
		loop = bwRecvLoop
	}
	res := rtloop.Run(loop, a, detach, false)
	r.countLoop(detach)
	r.tStart, r.tEnd, r.nEv, r.nDone = a.tStart, a.tEnd, a.nEv, a.done
	return r.loopEnd(res.end, res.err)
}

//go:nosplit
func bwSendLoop(a *bwArgs) bwResult {
	end, err := bwDetached(a)
	return bwResult{end, err}
}

//go:nosplit
func bwRecvLoop(a *bwArgs) bwResult {
	end, err := bwRecvDetached(a)
	return bwResult{end, err}
}

// bwDetached is runBW's loop (see there), fit for a detached goroutine:
// nosplit, no allocation, no pointer stores. A failed completion is
// copied to wcs[0].
//
//go:nosplit
func bwDetached(a *bwArgs) (detachedEnd, error) {
	n := len(a.sqs)
	total := a.iters * uint64(n)
	var totS, totC, totR, cntStart, rStart uint64
	var spins uint32
	var tSample, tSampleEnd, tStop int64
	inWindow := false
	lastProgress := rtloop.Now() - a.base
	if a.duration != 0 {
		tSample, tSampleEnd, tStop = lastProgress+a.margin, lastProgress+a.duration-a.margin, lastProgress+a.duration
	}
	for totC < total || a.rqs != nil && totR < total {
		for q := 0; q < n; q++ {
			for a.scnt[q] < a.iters && a.scnt[q]-a.ccnt[q]+a.pl <= a.tx {
				if a.rlGap != 0 && !a.rlSending {
					// A burst starts no earlier than rlGap after the
					// last one did; until then, poll (run_iter_bw).
					now := rtloop.Now()
					if now < a.rlNext {
						break
					}
					a.rlNext, a.rlSent, a.rlSending = now+a.rlGap, 0, true
				}
				wrs := a.wrs[q]
				s := a.scnt[q]
				for k := range wrs {
					idx := s + uint64(k) + 1
					if idx%a.cqMod == 0 || idx == a.iters {
						wrs[k].Flags |= verbs.SendSignaled
					} else {
						wrs[k].Flags &^= verbs.SendSignaled
					}
				}
				if totS == 0 {
					a.tStart = rtloop.Now() - a.base
				}
				var err error
				if a.dv != nil {
					err = a.dv.post(a.sqs[q], q)
				} else {
					err = a.sqs[q].PostSend(wrs)
				}
				if err != nil {
					a.done = a.count(totC, cntStart, totR, rStart)
					return endPostErr, err
				}
				a.scnt[q] += a.pl
				totS += a.pl
				if a.rlGap != 0 {
					if a.rlSent += a.pl; a.rlSent >= a.rlBurst {
						a.rlSending = false
					}
				}
			}
		}
		var got uint64
		if a.rqs != nil && totR < total {
			var end detachedEnd
			var err error
			got, end, err = bwRecvSome(a)
			if end != endDone {
				a.done = a.count(totC, cntStart, totR, rStart)
				return end, err
			}
			if got > 0 {
				totR += got
				lastProgress = rtloop.Now() - a.base
			}
		}
		cnt, err := a.scq.Poll(a.wcs)
		if err != nil {
			a.done = a.count(totC, cntStart, totR, rStart)
			return endPollErr, err
		}
		if cnt == 0 {
			if a.ev != nil && got == 0 {
				mask := 0
				if totC < total {
					mask |= evSend
				}
				if a.rqs != nil && totR < total {
					mask |= evRecv
				}
				waited, err := a.ev.step(mask)
				if err != nil {
					a.done = a.count(totC, cntStart, totR, rStart)
					return endPollErr, err
				}
				if !waited {
					continue
				}
				spins |= 1023 // a wait: check now
			}
			spins++
			if spins&1023 == 0 {
				if a.stop.Load() {
					a.done = a.count(totC, cntStart, totR, rStart)
					return endStopped, nil
				}
				t := rtloop.Now() - a.base
				if t-lastProgress > a.stall {
					a.done = a.count(totC, cntStart, totR, rStart)
					return endStalled, nil
				}
				if tStop != 0 && t >= tStop {
					break // no completion since the window closed
				}
				a.maybeYield(t)
			}
			continue
		}
		t := rtloop.Now() - a.base
		lastProgress = t
		for i := 0; i < cnt; i++ {
			wc := &a.wcs[i]
			if wc.Status != 0 {
				a.wcs[0] = *wc
				a.done = a.count(totC, cntStart, totR, rStart)
				return endWCErr, nil
			}
			q := wc.WRID
			if q >= uint64(n) {
				continue
			}
			credit := min(a.cqMod, a.iters-a.ccnt[q])
			a.ccnt[q] += credit
			totC += credit
		}
		if a.nEv < len(a.evT) {
			a.evT[a.nEv], a.evC[a.nEv] = t, totC
			a.nEv++
		}
		a.prog.Store(totC)
		if a.duration != 0 {
			// Count from the first event in the window to the first
			// past it.
			if !inWindow && t >= tSample {
				cntStart, rStart, a.tStart, inWindow = totC, totR, t, true
			}
			a.tEnd = t
			if t >= tSampleEnd {
				break
			}
			if a.stop.Load() {
				a.done = a.count(totC, cntStart, totR, rStart)
				return endStopped, nil
			}
		} else if spins&63 == 0 && a.stop.Load() {
			a.done = totC
			return endStopped, nil
		}
		spins++
	}
	a.done = a.count(totC, cntStart, totR, rStart)
	return endDone, nil
}

// count is what the sender reports: the messages completed (in duration
// mode, in the window) and, with -b send in duration mode, also those
// received in the window, as perftest's run_iter_bi counts both there
// (it exchanges no reports in -D mode; in iteration mode each side counts
// its sending half and both print the sum).
//
//go:nosplit
func (a *bwArgs) count(totC, cntStart, totR, rStart uint64) uint64 {
	n := totC - cntStart
	if a.duration != 0 && a.rqs != nil {
		n += totR - rStart
	}
	return n
}

// bwRecvSome polls the receive CQ once, checks each completion (a
// failed or wrong-length one is copied to wcs[0]) and re-posts receives
// while the run needs more (iters per QP). It returns how many messages
// arrived.
//
//go:nosplit
func bwRecvSome(a *bwArgs) (uint64, detachedEnd, error) {
	cnt, err := a.rcq.Poll(a.wcs)
	if err != nil {
		return 0, endPollErr, err
	}
	n := uint64(len(a.rqs))
	var got uint64
	for i := 0; i < cnt; i++ {
		wc := &a.wcs[i]
		if wc.Status != 0 {
			a.wcs[0] = *wc
			return got, endWCErr, nil
		}
		q := wc.WRID
		if q >= n {
			continue
		}
		if wc.ByteLen != a.recvLen {
			a.wcs[0] = *wc
			return got, endLength, nil
		}
		if a.wantImm && wc.Flags&verbs.WCWithImm == 0 {
			a.wcs[0] = *wc
			return got, endNoImm, nil
		}
		a.rcnt[q]++
		got++
		// Re-post once a whole list is free, while the run needs it
		// (perftest's run_iter_bw_server, unused_recv_for_qp).
		a.runused[q]++
		if k := uint64(len(a.rwrs[q])); a.runused[q] >= k && a.rposted[q]+k <= a.iters {
			if err := a.rqs[q].PostRecv(a.rwrs[q]); err != nil {
				return got, endPostErr, err
			}
			a.rposted[q] += k
			a.runused[q] -= k
		}
	}
	return got, endDone, nil
}

// bwRecvDetached is runBWRecv's loop, as bwDetached: it counts received
// messages (iters per QP) from the first to the last. In duration mode
// the window opens a margin after the first message and closes two
// margins before the end: the sender started earlier, on its own clock.
//
//go:nosplit
func bwRecvDetached(a *bwArgs) (detachedEnd, error) {
	total := a.iters * uint64(len(a.rqs))
	var totR, cntStart uint64
	var spins uint32
	var tSample, tSampleEnd, tStop int64
	first, inWindow := true, false
	lastProgress := rtloop.Now() - a.base
	for totR < total {
		got, end, err := bwRecvSome(a)
		if end != endDone {
			a.done = totR - cntStart
			return end, err
		}
		if got == 0 {
			if a.ev != nil {
				waited, err := a.ev.step(evRecv)
				if err != nil {
					a.done = totR - cntStart
					return endPollErr, err
				}
				if !waited {
					continue
				}
				spins |= 1023 // a wait: check now
			}
			spins++
			if spins&1023 == 0 {
				if a.stop.Load() {
					a.done = totR - cntStart
					return endStopped, nil
				}
				t := rtloop.Now() - a.base
				a.maybeYield(t)
				if a.duration != 0 && !first && (t >= tStop || t-lastProgress > a.stall) {
					break // the sender stopped on its own clock
				}
				if t-lastProgress > a.stall {
					a.done = totR - cntStart
					return endStalled, nil
				}
			}
			continue
		}
		t := rtloop.Now() - a.base
		lastProgress = t
		if first {
			first = false
			a.tStart = t
			if a.duration != 0 {
				tSample, tSampleEnd, tStop = t+a.margin, t+a.duration-2*a.margin, t+a.duration
			}
		}
		totR += got
		a.prog.Store(totR)
		a.tEnd = t
		if a.duration != 0 {
			if !inWindow && t >= tSample {
				cntStart, a.tStart, inWindow = totR, t, true
			}
			if inWindow && t >= tSampleEnd {
				break
			}
		}
	}
	a.done = totR - cntStart
	return endDone, nil
}

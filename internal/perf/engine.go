package perf

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// The measurement loops. Everything they touch is allocated by newRunner
// (or by prepare for a message size): work requests, completion arrays,
// timestamp arrays. The loops themselves post, poll, read the clock and
// check an atomic stop flag; they never allocate, lock or print. Errors are
// returned as preallocated sentinel values or built only on the way out.

// ErrStalled is returned when no completion arrives for stallTimeout.
var errStalled = errors.New("no progress")

// stallMinRate (bytes/s) is the slowest transfer a run may make before a
// wait without completions counts as a stall (runner.prepare).
const stallMinRate = 1_000_000

// runner holds one side's state for the loops.
type runner struct {
	p      *Params
	res    *Resources
	remote []Dest
	ahs    []*verbs.AH

	blk  uint64 // per-QP area: max(max message size, cycle buffer)
	size uint64 // current message size
	// recvLen is what a receive of size bytes reports (UD: + the GRH).
	recvLen uint32
	base    int64 // nanotime at newRunner
	// stall: how long a wait may go without progress before the run
	// fails; stallBase (Session.Stall) plus prepare's allowance for the
	// data one completion can stand for.
	stall, stallBase time.Duration
	// detached and plain count the loops run detached from the
	// scheduler and attached (package rtloop); tests check that the VM's
	// rxe runs take the path the process's mode selects.
	detached, plain int
	// latDrained counts duration latency loops that ended with their
	// last send still to be polled (drainLat).
	latDrained int
	bwq        *bwQueues    // bwLoopArgs' queues, found once
	stop       *atomic.Bool // set on Ctrl-C or when the peer vanished
	isSrv      bool
	isLat      bool
	// thr is where detached latency loops run (rtloop.Thread); nil: on
	// the calling goroutine's thread. lat and bw are the loops'
	// arguments, kept here so that handing them to rtloop allocates
	// nothing.
	thr *loopThread
	lat latArgs
	bw  bwArgs
	// ev is -e's state (events.go); nil: the loops spin.
	ev *evWait
	// infinite: --run_infinitely, the duration loop runs again and
	// again; runBW leaves the send queue full between periods.
	infinite bool
	// dv is --data_validation's sender (validation.go); nil: none.
	dv *dvLoop

	wrs  [][]verbs.SendWR // per QP: one post list
	rwrs [][]verbs.RecvWR // per QP: one receive list (--recv_post_list long)
	wcs  []verbs.WC

	scnt, ccnt, rposted []uint64
	rcnt                []uint64 // received per QP (send: the receiving side, -b)
	runused             []uint64 // received per QP and not yet re-posted

	// Iteration mode. Bandwidth: one (time, messages completed so far)
	// event per poll that returned completions; the clock is read once
	// per such poll and once before the first post, never per message
	// (on a guest whose clocksource is not vDSO-capable every read is a
	// system call). Latency: one sample per iteration.
	evT    []int64
	evC    []uint64
	nEv    int
	posted []int64
	hist   *histogram

	// progress is the number of completed messages (bw) or iterations
	// (lat), published for the progress/interval goroutine.
	progress atomic.Uint64

	// Results of the last run.
	nDone     uint64 // messages (bw) / samples (lat) measured
	tStart    int64
	tEnd      int64
	nSamples  int
	wcErr     verbs.WC
	errDetail string
}

// now is the loops' clock (rtloop.Now) in ns since the runner was made.
func (r *runner) now() int64 { return rtloop.Now() - r.base }

// loopThread is the thread a sole session's detached latency loops run on.
type loopThread = rtloop.Thread[latArgs, latResult]

// srcOff and dstOff are the offsets of QP i's source area and of its
// target area (what the key record advertises as vaddr), as perftest's
// buffer layout: [N source areas][N target areas].
func (r *runner) srcOff(i int) uint64 { return uint64(i) * r.blk }
func (r *runner) dstOff(i int) uint64 { return uint64(len(r.res.QPs)+i) * r.blk }

// bufSize is the buffer a run needs (plus the UD GRH room).
func bufSize(p *Params, cycle uint64) uint64 {
	blk := max(p.maxSize()+udGRH, cycle)
	return 2 * uint64(p.QPs) * blk
}

func blockSize(p *Params, cycle uint64) uint64 { return max(p.maxSize()+udGRH, cycle) }

func newRunner(p *Params, res *Resources, remote []Dest, ahs []*verbs.AH, cycle uint64, stop *atomic.Bool) *runner {
	n := len(res.QPs)
	rtloop.Selected() // the mode, and so the clock, before the first reading
	r := &runner{
		p: p, res: res, remote: remote, ahs: ahs, blk: blockSize(p, cycle),
		base: rtloop.Now(), stall: 10 * time.Second, stallBase: 10 * time.Second, stop: stop,
		isSrv: p.passive(), isLat: p.Test == TestLat,
		wrs: make([][]verbs.SendWR, n), rwrs: make([][]verbs.RecvWR, n),
		wcs:  make([]verbs.WC, cqePoll(p)),
		scnt: make([]uint64, n), ccnt: make([]uint64, n), rposted: make([]uint64, n), rcnt: make([]uint64, n),
		runused: make([]uint64, n),
	}
	if p.Duration > 0 && p.Test == TestLat {
		r.hist = newHistogram()
	}
	if p.UseEvent {
		r.ev = newEvWait(res)
	}
	r.infinite = p.RunInfinitely
	if p.Duration == 0 {
		per := p.Iters
		if p.Test == TestBW {
			per *= uint64(n)
		}
		if p.Test == TestBW {
			r.evT = make([]int64, per+1)
			r.evC = make([]uint64, per+1)
		} else {
			r.posted = make([]int64, per+1)
		}
	}
	for i := range r.wrs {
		r.wrs[i] = make([]verbs.SendWR, p.PostList)
		r.rwrs[i] = make([]verbs.RecvWR, p.recvList())
	}
	prefault(r.posted)
	prefault(r.evT)
	prefault(r.evC)
	prefault(r.wcs)
	if r.hist != nil {
		prefault(r.hist.counts)
	}
	return r
}

// cqePoll is how many completions a bandwidth loop asks each poll for:
// --cqe_poll, else 64.
func cqePoll(p *Params) int {
	if p.CQEPoll > 0 {
		return p.CQEPoll
	}
	return 64
}

// prefault writes to every page of s, so that its first use in a loop
// does not fault the page in.
//
// Why: make returns fresh heap memory, and the loops are the first to
// write to it. Each first write to a page is a page fault that allocates
// and zeroes a page, and in a loop that is a latency outlier: traced in
// the VM (8 pairs of 1000-iteration 2-byte write_lat), rdmactl's loops
// faulted 2-3 times each (the sample array every 512 samples, the
// completion array at the first poll; each fault a gap of over 150 us
// under TCG, so up to 3 of the 11 largest samples, where p99 of 1000
// lies), perftest's never.
// s must come fresh from make: it writes zero bytes (a read would only
// map the shared zero page and leave the write fault for later), every
// 4 KiB, the smallest page size.
func prefault[T any](s []T) {
	if len(s) == 0 {
		return
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
	b[len(b)-1] = 0
}

// prepare sets up the work requests for message size sz.
func (r *runner) prepare(sz uint64) {
	r.size = sz
	p := r.p
	r.recvLen = uint32(sz)
	if p.Conn == UD {
		r.recvLen += udGRH
	}
	for i := range r.wrs {
		for k := range r.wrs[i] {
			wr := &r.wrs[i][k]
			*wr = verbs.SendWR{
				WRID: uint64(i),
				SGE:  verbs.SGE{Addr: r.res.Addr + r.srcOff(i), Length: uint32(sz), LKey: r.res.lkey(i)},
			}
			switch p.Verb {
			case VerbSend:
				wr.Opcode = verbs.OpSend
				if p.SendImm {
					wr.Opcode = verbs.OpSendImm // immediate data 0, as perftest's zeroed WR
				}
			case VerbWrite:
				wr.Opcode = verbs.OpRDMAWrite
				if p.WriteImm {
					wr.Opcode = verbs.OpRDMAWriteImm // immediate data 0, as perftest's zeroed WR
				}
			case VerbRead:
				wr.Opcode = verbs.OpRDMARead
			case VerbAtomic:
				p.setAtomicWR(wr)
			}
			if p.Verb != VerbSend && i < len(r.remote) {
				wr.RemoteAddr = r.remote[i].VAddr
				wr.RKey = r.remote[i].RKey
			}
			if p.Conn == UD && i < len(r.ahs) && i < len(r.remote) {
				wr.AH = r.ahs[i]
				wr.RemoteQPN = r.remote[i].QPN
				wr.RemoteQKey = udQKey
			}
			if !p.Verb.isReadLike() && sz <= uint64(p.Inline) {
				wr.Flags |= verbs.SendInline
			}
		}
		off := r.dstOff(i)
		ln := sz
		if p.Conn == UD {
			ln += udGRH
		}
		for k := range r.rwrs[i] { // one place for all: perftest's receives share theirs too
			r.rwrs[i][k] = verbs.RecvWR{WRID: uint64(i), SGE: verbs.SGE{Addr: r.res.Addr + off, Length: uint32(ln), LKey: r.res.lkey(i)}}
		}
	}
	if r.dv != nil {
		r.dv.prepare(r)
	}
	// One completion can stand for CQMod messages of every QP (with -a,
	// 100 RDMA READs of 1 MiB and up, which rxe under TCG moves at
	// ~8 MB/s: 12 s without a completion, and ib_read_bw has no limit).
	// Allow for moving them at 1 MB/s on top of the base limit.
	// (Latency loops wait for one message at a time.)
	per := uint64(p.CQMod)
	if r.isLat {
		per = 1
	}
	batch := per * sz * uint64(max(len(r.res.QPs), 1))
	r.stall = r.stallBase + time.Duration(batch/stallMinRate)*time.Second + time.Duration(batch%stallMinRate)*time.Second/stallMinRate
	clear(r.scnt)
	clear(r.ccnt)
	clear(r.rposted)
	clear(r.rcnt)
	clear(r.runused)
	r.nDone, r.tStart, r.tEnd, r.nSamples, r.nEv = 0, 0, 0, 0, 0
	r.progress.Store(0)
	if r.hist != nil {
		r.hist.reset()
	}
	// Start each size on a clean heap: the setup's garbage would otherwise
	// trigger a concurrent mark during the timed loop, whose workers take
	// CPU (a quarter of GOMAXPROCS) from the poller and the peer. Here,
	// before the sessions' start barrier, and not at the loop, so that a
	// receiver is not still collecting when the sender starts.
	runtime.GC()
}

// loopErr turns a loop failure into a message (allocates; only on the way
// out).
func (r *runner) loopErr(err error, what string) error {
	switch {
	case err == errStalled:
		return &PeerError{Err: fmt.Errorf("%s: no completion for %v (peer stopped, or messages lost on %s)", what, r.stall, r.p.Conn)}
	case err == errStopped:
		return errStopped
	case err == errNoImm:
		return &PeerError{Err: fmt.Errorf("%s: a message arrived without immediate data: run the peer with --send_with_imm too (perftest: SYMMETRIC)", what)}
	case err == errLength:
		got, want := uint64(r.wcErr.ByteLen), r.size
		if r.p.Conn == UD {
			got -= udGRH
		}
		return &PeerError{Err: fmt.Errorf("%s: the peer sends %d-byte messages, this side expects %d; use the same -s (and -a) on both sides", what, got, want)}
	case err == errWC:
		return &PeerError{Err: fmt.Errorf("%s: work completion error: %s (status %d, vendor error 0x%x, qpn 0x%x)%s", what, wcStatusName(r.wcErr.Status), r.wcErr.Status, r.wcErr.VendorErr, r.wcErr.QPNum, r.errDetail)}
	}
	return fmt.Errorf("%s: %w", what, err)
}

var (
	errLength   = errors.New("message length")
	errNoImm    = errors.New("no immediate data")
	errDeadline = errors.New("duration over")
	errStopped  = errors.New("stopped")
	errWC       = errors.New("completion error")
)

func wcStatusName(s verbs.WCStatus) string {
	names := [...]string{"success", "local length error", "local QP operation error", "local EEC operation error",
		"local protection error", "WR flush error", "memory window bind error", "bad response error",
		"local access error", "remote invalid request error", "remote access error", "remote operation error",
		"transport retry counter exceeded (peer gone?)", "RNR retry counter exceeded", "local RDD violation error",
		"remote invalid RD request", "remote aborted error", "invalid EE context number", "invalid EE context state",
		"fatal error", "response timeout error", "general error"}
	if int(s) < len(names) {
		return names[s]
	}
	return "unknown status"
}

// checkWC records a failed completion.
func (r *runner) checkWC(wc *verbs.WC) bool {
	if wc.Status != 0 {
		r.wcErr = *wc
		return false
	}
	return true
}

// ---- bandwidth: the sending side (write, read, send client) ----

// runBW posts iters messages per QP (or for Duration) keeping up to
// TxDepth outstanding per QP, signalling every CQMod-th WR, and records
// one (time, completed) event per poll that returned completions. With
// -b and send (perftest's run_iter_bi) it also receives the peer's iters
// per QP in the same loop; this side's BW is its sending half (in -D
// mode, what it sent and received; see bwArgs.count). The loop
// is bwDetached (detach.go), in every mode.
func (r *runner) runBW() error {
	var detach bool
	r.bw, detach = r.bwLoopArgs(r.p.Bidir && r.p.recvComp())
	err := r.runBWLoop(&r.bw, false, detach)
	if err == nil && r.p.Duration > 0 && !r.infinite {
		r.drainSend() // duration mode stops mid-stream
	}
	return err
}

// drainSend waits briefly for outstanding signaled sends (duration mode
// stops mid-stream).
func (r *runner) drainSend() {
	deadline := r.now() + int64(time.Second)
	for r.now() < deadline {
		outstanding := false
		for q := range r.scnt {
			if r.scnt[q] > r.ccnt[q] {
				outstanding = true
			}
		}
		if !outstanding {
			return
		}
		cnt, err := r.res.SendCQ.Poll(r.wcs)
		if err != nil {
			return
		}
		for i := 0; i < cnt; i++ {
			q := r.wcs[i].WRID
			if q < uint64(len(r.ccnt)) {
				r.ccnt[q] += min(uint64(r.p.CQMod), r.scnt[q]-r.ccnt[q])
			}
		}
	}
}

// ---- bandwidth: the receiving side of send ----

// postRecvs fills each QP's receive queue with up to RxDepth receives
// (not more than the run needs), a receive list (--recv_post_list) at a
// time.
func (r *runner) postRecvs(limit uint64) error {
	for q := range r.res.QPs {
		k := uint64(len(r.rwrs[q]))
		for r.rposted[q]+k <= r.p.rxPerQP() && r.rposted[q]+k <= limit {
			if err := r.res.QPs[q].PostRecv(r.rwrs[q]); err != nil {
				return err
			}
			r.rposted[q] += k
		}
	}
	return nil
}

// runBWRecv counts received messages (iters per QP) from the first to the
// last, re-posting receives as they complete, with bwRecvDetached.
func (r *runner) runBWRecv() error {
	var detach bool
	r.bw, detach = r.bwLoopArgs(true)
	return r.runBWLoop(&r.bw, true, detach)
}

// ---- latency ----

// byteAt returns a pointer to the aligned 32-bit word that holds
// Buf[off] and the byte's shift in it: the peer's RDMA WRITE changes that
// memory behind the compiler's back, so it is read atomically.
func (r *runner) byteAt(off uint64) (*uint32, uint32) {
	w := (*uint32)(unsafe.Pointer(&r.res.Buf[off&^3]))
	return w, uint32(off&3) * 8
}

// runLatWrite is perftest's run_iter_lat_write: each side RDMA-writes size
// bytes whose last byte is the iteration number into the peer's target
// area and spins on the last byte of its own; the server writes first.
// Samples are post-to-post times (one round trip). The loop is
// pingPongDetached (detach.go), in both modes.
func (r *runner) runLatWrite() error {
	sz := r.size
	r.wrs[0][0].Flags |= verbs.SendSignaled
	a, detach := r.latLoopArgs(false)
	a.pollW, a.pollSh = r.byteAt(r.dstOff(0) + sz - 1)
	a.buf, a.postOff = r.res.Buf, r.srcOff(0)+sz-1
	r.lat = a
	return r.runLatLoop(&r.lat, VerbWrite, detach)
}

// runLatSend is perftest's run_iter_lat_send: ping-pong of SENDs, the
// client sends first; receives were posted before the sync. The loop is
// pingPongDetached, in both modes.
func (r *runner) runLatSend() error {
	r.wrs[0][0].Flags |= verbs.SendSignaled
	var detach bool
	r.lat, detach = r.latLoopArgs(true)
	return r.runLatLoop(&r.lat, VerbSend, detach)
}

// runLatRead times RDMA READs one at a time (a full round trip each),
// with latReadDetached in both modes.
func (r *runner) runLatRead() error {
	r.wrs[0][0].Flags |= verbs.SendSignaled
	var detach bool
	r.lat, detach = r.latLoopArgs(false)
	return r.runLatLoop(&r.lat, VerbRead, detach)
}

package perf

import (
	"sync/atomic"
	_ "unsafe" // for go:linkname

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// Running a latency loop detached from the Go scheduler (see
// internal/verbs/detached.go for why and for the rules such code keeps).
//
// runLatWrite calls runtime.entersyscallblock, which hands the goroutine's
// P to the scheduler at once as for a blocking system call, runs the loop
// (latWriteDetached, //go:nosplit throughout), and calls
// runtime.exitsyscall, which takes a P back. In between, the watcher,
// Ctrl-C and progress goroutines run on the freed P in other threads, and
// with no P running the runtime's monitor thread sleeps instead of waking
// every 10 ms. Both runtime functions are exported to x/sys, the syscall
// package and gVisor this way and Go keeps their signatures (go.dev/issue/67401),
// as it does for nanotime, the monotonic clock time.Now reads.

//go:linkname entersyscallblock runtime.entersyscallblock
func entersyscallblock()

//go:linkname exitsyscall runtime.exitsyscall
func exitsyscall()

//go:linkname nanotime runtime.nanotime
func nanotime() int64

// growStack makes room on the goroutine's stack for the detached loop's
// frames: nosplit code cannot grow it, and it is not shrunk while the
// goroutine is in a system call.
//
//go:noinline
func growStack() byte {
	var pad [16 << 10]byte
	pad[len(pad)-1] = 1
	return pad[len(pad)-1] + pad[0]
}

// detachedQueues returns QP 0's send queue and the send CQ for a detached
// loop, or false when the provider has no detached path (mlx5, the tests'
// fakes) or the run has more than one QP.
func (r *runner) detachedQueues() (verbs.SendQueue, verbs.CompletionQueue, bool) {
	if len(r.res.QPs) != 1 {
		return nil, nil, false
	}
	vq, ok := r.res.QPs[0].SendQueue.(*verbs.QP)
	if !ok {
		return nil, nil, false
	}
	vc, ok := r.res.SendCQ.(*verbs.CQ)
	if !ok {
		return nil, nil, false
	}
	sq, ok := vq.DetachedSendQueue()
	if !ok {
		return nil, nil, false
	}
	cq, ok := vc.DetachedCQ()
	if !ok {
		return nil, nil, false
	}
	return sq, cq, true
}

// How a detached loop ended. The loop cannot build errors (that
// allocates), so it returns one of these and runLatWrite makes the error.
type detachedEnd int

const (
	endDone    detachedEnd = iota
	endPostErr             // PostSend failed: err
	endPollErr             // Poll failed: err
	endWCErr               // a completion with an error status: wcs[0]
	endStopped             // stop was set (Ctrl-C, peer gone)
	endStalled             // no progress for stall ns
)

// latWriteArgs is what latWriteDetached reads; filled before detaching.
type latWriteArgs struct {
	sq      verbs.SendQueue
	cq      verbs.CompletionQueue
	wr      []verbs.SendWR
	wcs     []verbs.WC
	buf     []byte
	pollW   *uint32
	pollSh  uint32
	postOff uint64
	iters   uint64
	isSrv   bool
	posted  []int64 // samples out
	stop    *atomic.Bool
	prog    *atomic.Uint64
	stall   int64 // ns
}

// latWriteDetached is runLatWrite's iteration mode (see there) for a
// detached goroutine: nosplit, no allocation, no pointer stores, the
// clock from nanotime. It returns how it ended, the samples taken and,
// for endPostErr/endPollErr, the provider's (preallocated) error.
//
//go:nosplit
func latWriteDetached(a *latWriteArgs) (end detachedEnd, ns int, err error) {
	var prev int64
	var rcnt uint64
	for i := uint64(1); i <= a.iters; i++ {
		if !(i == 1 && a.isSrv) {
			rcnt++
			if end = spinDetached(a, byte(rcnt)); end != endDone {
				return end, ns, nil
			}
		}
		a.buf[a.postOff] = byte(i)
		if err = a.sq.PostSend(a.wr); err != nil {
			return endPostErr, ns, err
		}
		t := nanotime()
		if prev != 0 {
			a.posted[ns] = t - prev
			ns++
		}
		prev = t
		var spins uint32
		var since int64
		for {
			cnt, err := a.cq.Poll(a.wcs[:1])
			if err != nil {
				return endPollErr, ns, err
			}
			if cnt > 0 {
				if a.wcs[0].Status != 0 {
					return endWCErr, ns, nil
				}
				break
			}
			spins++
			if end = checkDetached(a, spins, &since); end != endDone {
				return end, ns, nil
			}
		}
		a.prog.Store(i)
	}
	if a.isSrv {
		// The server posted first, so it also times the last round trip.
		if end = spinDetached(a, byte(a.iters)); end != endDone {
			return end, ns, nil
		}
		a.posted[ns] = nanotime() - prev
		ns++
	}
	return endDone, ns, nil
}

// spinDetached waits until the polled byte reads v.
//
//go:nosplit
func spinDetached(a *latWriteArgs, v byte) detachedEnd {
	var spins uint32
	var since int64
	for byte(atomic.LoadUint32(a.pollW)>>a.pollSh) != v {
		spins++
		if end := checkDetached(a, spins, &since); end != endDone {
			return end
		}
	}
	return endDone
}

// checkDetached is waiting's part that a detached loop can do, every
// 4096 empty rounds of one wait: stop, and the stall limit.
//
//go:nosplit
func checkDetached(a *latWriteArgs, spins uint32, since *int64) detachedEnd {
	if spins&4095 != 0 {
		return endDone
	}
	if a.stop.Load() {
		return endStopped
	}
	t := nanotime()
	if *since == 0 {
		*since = t
	} else if t-*since > a.stall {
		return endStalled
	}
	return endDone
}

// detachedErr is the error of a detached loop that ended with end.
func (r *runner) detachedErr(end detachedEnd, err error) error {
	switch end {
	case endDone:
		return nil
	case endPostErr, endPollErr:
		return err
	case endWCErr:
		r.checkWC(&r.wcs[0])
		return errWC
	case endStopped:
		return errStopped
	default:
		return errStalled
	}
}

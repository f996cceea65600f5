package perf

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// --perform_warm_up (perftest's perform_warm_up, src/perftest_resources.c):
// before each measurement of an RDMA write or read bandwidth test, each
// QP posts a send queue's worth of the run's work requests (TxDepth, in
// post lists of PostList) and waits for their completions, so that the
// measurement starts with warm caches and translations. perftest does it
// on the sides that post (the client; both with -b), for write, read and
// atomic BW; rdmactl does it for write and read (an atomic warm-up would
// change the words perf atomic's byte check reads, atomic.go).

// validateWarmUp is Validate for --perform_warm_up (after Defaults, which
// drops it where perftest ignores it).
func (p *Params) validateWarmUp() error {
	switch {
	case !p.WarmUp:
		return nil
	case p.Verb == VerbAtomic:
		return errors.New("--perform_warm_up: not with perf atomic yet (the warm-up's atomics would change the words its byte check reads)")
	}
	return nil
}

// warmUp runs the warm-up on every QP, one after the other (as perftest),
// with the work requests prepare made for this size, each signalled.
// Outside the measurement: it allocates, and reads the wall clock.
func (r *runner) warmUp(stall time.Duration) error {
	p := r.p
	n := max(p.TxDepth/p.PostList, 1) * p.PostList
	for q := range r.res.QPs {
		batch := make([]verbs.SendWR, len(r.wrs[q]))
		copy(batch, r.wrs[q])
		for k := range batch {
			batch[k].Flags |= verbs.SendSignaled
		}
		for posted := 0; posted < n; posted += len(batch) {
			if err := r.res.QPs[q].PostSend(batch); err != nil {
				return fmt.Errorf("--perform_warm_up: posting on QP %d: %w", q, err)
			}
		}
		deadline := time.Now().Add(stall)
		for done := 0; done < n; {
			cnt, err := r.res.SendCQ.Poll(r.wcs)
			if err != nil {
				return fmt.Errorf("--perform_warm_up: %w", err)
			}
			for i := 0; i < cnt; i++ {
				if !r.checkWC(&r.wcs[i]) {
					return r.loopErr(errWC, "--perform_warm_up")
				}
			}
			done += cnt
			if cnt > 0 {
				deadline = time.Now().Add(stall)
			} else if time.Now().After(deadline) {
				return r.loopErr(errStalled, "--perform_warm_up")
			}
			runtime.Gosched()
		}
	}
	return nil
}

package perf

import (
	"errors"
	"fmt"
	"time"
)

// Completion events (-e, perftest's --use_event): the CQs are made on a
// completion channel, and a loop whose poll came back empty waits in the
// kernel for the next completion instead of spinning. Where perftest
// waits (ctx_notify_events before ibv_poll_cq in every run_iter_*, on
// both sides), the loops here call evWait.step; the memory spin of
// write latency stays a spin, as perftest's. The order is arm, poll
// again, then wait: a completion that came before the arming raises no
// event, so waiting without the second poll could wait for ever.

// EventCQ is a CQ that can raise completion events (*verbs.CQ made with
// CreateCQOn). Arm is called from the loops: nosplit, no allocation.
type EventCQ interface {
	Arm() (did bool, err error)
}

// EventChannel is the completion channel of -e (*verbs.CompChannel).
// Wait is called from the loops: nosplit, no allocation.
type EventChannel interface {
	Wait(timeout int64, attached bool) (int, error)
}

// Which CQs a wait is for (evWait.step's mask).
const (
	evSend = 1 << iota
	evRecv
)

// evSlice is the longest single wait: the loops check Ctrl-C, the stall
// limit and the end of a duration run between waits.
const evSlice = 50 * time.Millisecond

// evWait is a runner's -e state, built once (newRunner); the loops
// only write integers in it.
type evWait struct {
	ch       EventChannel
	cqs      [2]EventCQ // send, recv
	attached bool       // the loop runs on the scheduler (set per loop)
	events   uint64     // events read over the runner's life
	waits    uint64     // waits (ended by an event or the slice)
}

// newEvWait is res's -e state, or nil when res has no channel or its CQs
// cannot be armed.
func newEvWait(res *Resources) *evWait {
	if res.Events == nil {
		return nil
	}
	s, ok1 := res.SendCQ.(EventCQ)
	r, ok2 := res.RecvCQ.(EventCQ)
	if !ok1 || !ok2 {
		return nil
	}
	return &evWait{ch: res.Events, cqs: [2]EventCQ{s, r}}
}

// step is one empty round of a loop with -e, for the CQs in mask: it
// arms those not armed and returns waited false (the caller polls
// again), else waits up to evSlice for an event and returns waited true
// (the caller then runs its checks).
//
//go:nosplit
func (e *evWait) step(mask int) (waited bool, err error) {
	armed := false
	for i := 0; i < 2; i++ {
		if mask&(1<<i) == 0 {
			continue
		}
		did, err := e.cqs[i].Arm()
		if err != nil {
			return false, err
		}
		armed = armed || did
	}
	if armed {
		return false, nil
	}
	n, err := e.ch.Wait(int64(evSlice), e.attached)
	e.events += uint64(n)
	e.waits++
	return true, err
}

// eventDefaults completes Defaults for this file's options:
// --run_infinitely runs 5 s periods by default (perftest's -D default)
// and counts each whole period (no margins: the traffic never stops).
func (p *Params) eventDefaults() {
	if !p.RunInfinitely {
		return
	}
	if p.Duration == 0 {
		p.Duration = 5 * time.Second
	}
	p.Margin = 0
}

// validateEvents is Validate for this file's options, as perftest's
// force_dependencies refuses them.
func (p *Params) validateEvents() error {
	switch {
	case p.RunInfinitely && p.Test != TestBW:
		return errors.New("--run_infinitely applies to bandwidth tests only (as perftest)")
	case p.RunInfinitely && p.UseEvent:
		return errors.New("--run_infinitely cannot be combined with -e (as perftest)")
	case p.RunInfinitely && p.Bidir && p.recvComp():
		return errors.New("--run_infinitely does not support send or write with immediate with -b (as perftest)")
	case p.RunInfinitely && p.AllSizes:
		return errors.New("--run_infinitely and -a cannot be combined")
	}
	for _, c := range p.ReportCounters {
		if err := checkCounterPath(c); err != nil {
			return err
		}
	}
	return nil
}

// eventsSymmetricText is what this file's options add to the parameter
// record two rdmactl peers compare.
func (p *Params) eventsSymmetricText() string {
	return fmt.Sprintf(" run_infinitely=%t", p.RunInfinitely)
}

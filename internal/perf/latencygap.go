package perf

import (
	"errors"

	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
)

// --latency_gap=USEC (latency tests; perftest's run_iter_lat,
// run_iter_lat_write and run_iter_lat_send in src/perftest_resources.c):
// before each post a side spins for the gap, then reads its clock and
// posts. The gap is therefore in every sample, as in perftest's: a
// sample is the period between two posts' starts, which now holds both
// sides' gaps (write and send) or this side's (read).

// latencyGap spins a.gap (> 0) nanoseconds, yielding about once a
// millisecond when attached; a stop request (Ctrl-C, the peer gone) ends
// it. The loops test a.gap before calling it.
//
//go:nosplit
func latencyGap(a *latArgs) {
	end := rtloop.Now() + a.gap
	for {
		t := rtloop.Now()
		if t >= end || a.stop.Load() {
			return
		}
		a.maybeYield(t)
	}
}

// validateLatencyGap is Validate for --latency_gap.
func (p *Params) validateLatencyGap() error {
	switch {
	case p.LatencyGap < 0:
		return errors.New("--latency_gap must not be negative")
	case p.LatencyGap > 0 && p.Test != TestLat:
		return errors.New("--latency_gap applies to latency tests only (as perftest)")
	}
	return nil
}

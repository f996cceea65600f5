package perf

import (
	"context"
	"time"
)

// --wait_destroy=SECONDS (perftest's destroy_ctx, src/perftest_resources.c):
// once the run is over, print " Waiting N seconds before releasing
// resources..." and keep the QPs, CQs, MRs and PD for that long, so that
// they can be inspected (rdma res show, the device's counters). As
// perftest, the exchange connection is closed first.

// waitDestroy waits p.WaitDestroy (or until ctx ends).
func (s *Session) waitDestroy(ctx context.Context) error {
	d := s.P.WaitDestroy
	if s.conn != nil {
		_ = s.conn.Close() // perftest's ctx_close_connection closes its socket before destroy_ctx
	}
	s.printfAlways(" Waiting %d seconds before releasing resources...\n", int64(d/time.Second)) // with --output too, as perftest
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

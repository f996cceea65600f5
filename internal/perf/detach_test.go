package perf

import (
	"sync/atomic"
	"testing"
	"time"
)

// Stop is noticed within 4096 empty rounds over the run even when every
// wait is shorter than that (fast hardware): the count is run-wide.
func TestCheckDetachedSeesStopAcrossShortWaits(t *testing.T) {
	var stop atomic.Bool
	stop.Store(true)
	a := &latArgs{stop: &stop, stall: int64(time.Hour)}
	for wait := 0; wait < 4096; wait++ {
		var since int64 // a new wait with one empty round
		if end := checkDetached(a, &since); end == endStopped {
			return
		} else if end != endDone {
			t.Fatalf("wait %d ended %v, want endDone or endStopped", wait, end)
		}
	}
	t.Fatal("4096 one-round waits never saw stop")
}

// A single wait that goes on past the stall limit ends the loop.
func TestCheckDetachedStalls(t *testing.T) {
	var stop atomic.Bool
	a := &latArgs{stop: &stop, stall: int64(20 * time.Millisecond)}
	var since int64
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if end := checkDetached(a, &since); end != endDone {
			if end != endStalled {
				t.Fatalf("ended %v, want endStalled", end)
			}
			return
		}
	}
	t.Fatal("a wait of 5 s with a 20 ms stall limit did not stall")
}

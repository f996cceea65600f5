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

// spinDetached keeps the run-wide count of empty rounds in a register and
// checks stop at the same rounds as checkDetached: a wait that starts
// with 4095 rounds already counted sees stop after its first empty round.
func TestSpinDetachedCountsRunWide(t *testing.T) {
	var stop atomic.Bool
	stop.Store(true)
	var w uint32 = 0x0700 // the polled byte is bits 8-15: it reads 7
	a := &latArgs{stop: &stop, stall: int64(time.Hour), pollW: &w, pollSh: 8, spins: 4095}
	if end := spinDetached(a, 8); end != endStopped {
		t.Fatalf("ended %v, want endStopped", end)
	}
	if a.spins != 4096 {
		t.Fatalf("spins = %d after one empty round from 4095, want 4096", a.spins)
	}
	a.spins = 4096
	if end := spinDetached(a, 7); end != endDone {
		t.Fatalf("byte already 7: ended %v, want endDone", end)
	}
	if a.spins != 4096 {
		t.Fatalf("spins = %d after a wait with no empty round, want 4096", a.spins)
	}
}

// A spin whose byte never comes ends at the stall limit.
func TestSpinDetachedStalls(t *testing.T) {
	var stop atomic.Bool
	var w uint32
	a := &latArgs{stop: &stop, stall: int64(20 * time.Millisecond), pollW: &w}
	done := make(chan detachedEnd, 1)
	go func() { done <- spinDetached(a, 1) }()
	select {
	case end := <-done:
		if end != endStalled {
			t.Fatalf("ended %v, want endStalled", end)
		}
	case <-time.After(5 * time.Second):
		stop.Store(true)
		t.Fatal("a spin of 5 s with a 20 ms stall limit did not stall")
	}
}

// waitRing, the send loops' wait for a receive, counts as spinDetached:
// run-wide, stop seen after the 4096th empty round, no round counted when
// the producer index has already moved.
func TestWaitRingCountsRunWide(t *testing.T) {
	var stop atomic.Bool
	stop.Store(true)
	prod, cons := uint32(5), uint32(5)
	a := &latArgs{stop: &stop, stall: int64(time.Hour), spins: 4095}
	if end := a.waitRing(&prod, &cons); end != endStopped {
		t.Fatalf("empty ring: ended %v, want endStopped", end)
	}
	if a.spins != 4096 {
		t.Fatalf("spins = %d after one empty round from 4095, want 4096", a.spins)
	}
	prod = 6
	if end := a.waitRing(&prod, &cons); end != endDone || a.spins != 4096 {
		t.Fatalf("a completion there: ended %v with spins %d, want endDone and 4096", end, a.spins)
	}
}

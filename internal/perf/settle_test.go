package perf

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

var settleSink []byte

// heapFree is the heap memory that is free but not yet returned to the
// OS: what the background scavenger would return during a run.
func heapFree() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// leaveFreeHeap leaves 64 MiB of faulted-in heap free after a GC, as
// setup can.
func leaveFreeHeap() {
	settleSink = make([]byte, 64<<20)
	for i := range settleSink {
		settleSink[i] = 1 // fault the pages in
	}
	settleSink = nil
	runtime.GC()
}

func TestSettleReturnsFreeHeap(t *testing.T) {
	leaveFreeHeap()
	before := heapFree()
	if before < 32<<20 {
		t.Fatalf("setup: %d bytes of free heap after dropping 64 MiB, want at least 32 MiB", before)
	}
	s := &Session{}
	s.settle()
	if after := heapFree(); after > 4<<20 {
		t.Errorf("settle left %d bytes of free heap to the scavenger (before: %d)", after, before)
	}
	if !s.settled {
		t.Error("settle did not record that it ran")
	}
	// Once per run: a second call before the loop does nothing.
	leaveFreeHeap()
	s.settle()
	if heapFree() < 32<<20 {
		t.Error("settle ran again although it had run since the last loop")
	}
}

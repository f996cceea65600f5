//go:build vmtest

package perf

import (
	"bytes"
	"testing"
)

// -e on rxe: every loop with completion events, 0 allocations per run
// (both sides where the test has two loops), the bytes moved are the
// bytes posted, the loops that wait for the peer (a receiver, ping-pong)
// really waited on the channel (events read), and closing the devices
// finds the kernel's count of delivered events (DESTROY_CQ's
// comp_events_reported) equal to the events read. A loop that waits
// only for its own completions (write/read bw, read lat) finds them
// already there on rxe in one VM (the doorbell's system call carries the
// packet to the peer and the ACK back), so it may never need to wait:
// for it the count is logged, not required.
func TestVMEventLoops(t *testing.T) {
	const size = 4096
	fill := func(b []byte, seed byte) {
		for i := range b {
			b[i] = seed + byte(i*7)
		}
	}
	// closeBoth closes both sides (the CQ event counts are checked
	// there) and fails on any error.
	closeBoth := func(t *testing.T, g *vmRig) {
		t.Helper()
		if err := g.me.Close(); err != nil {
			t.Fatalf("closing rxe1: %v", err)
		}
		if err := g.peer.Close(); err != nil {
			t.Fatalf("closing rxe0: %v", err)
		}
	}
	logEvents := func(t *testing.T, who string, r *runner) {
		t.Helper()
		if r.ev == nil {
			t.Fatalf("%s: -e, but the runner has no event state", who)
		}
		t.Logf("%s: %d events in %d waits", who, r.ev.events, r.ev.waits)
	}
	events := func(t *testing.T, who string, r *runner) {
		t.Helper()
		if r.ev == nil || r.ev.events == 0 {
			t.Fatalf("%s: no completion event read (ev %+v): the loop did not wait on the channel", who, r.ev)
		}
		t.Logf("%s: %d events in %d waits", who, r.ev.events, r.ev.waits)
	}
	for _, v := range []Verb{VerbWrite, VerbRead} {
		t.Run(v.String()+"_bw", func(t *testing.T) {
			g := newVMRig(t, Params{Verb: v, Test: TestBW, Iters: 200, Size: size, UseEvent: true})
			blk := blockSize(g.r.p, 4096)
			src, dst := g.mine.Buf[:size], g.their.Buf[blk:blk+size]
			if v == VerbRead {
				src, dst = dst, src // READ brings the peer's bytes here
			}
			seed := byte(1)
			vmNoAllocs(t, "runBW -e", func() {
				fill(src, seed)
				g.r.prepare(size)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW -e"))
				}
				if !bytes.Equal(src, dst) {
					t.Fatalf("after %s -e the target holds other bytes than the source (seed %d)", v, seed)
				}
				seed++
			})
			checkDetachedBW(t, g.r, 200)
			logEvents(t, "sender", g.r)
			closeBoth(t, g)
		})
	}
	t.Run("send_bw", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbSend, Test: TestBW, Iters: 200, Size: size, UseEvent: true})
		blk := blockSize(g.r.p, 4096)
		g.peerLoop(vmRuns, func() {}, g.pr.runBWRecv)
		seed := byte(9)
		vmNoAllocs(t, "runBW(send)+runBWRecv -e", func() {
			fill(g.mine.Buf[:size], seed)
			g.pr.prepare(size)
			if err := g.pr.postRecvs(200); err != nil {
				t.Fatal(err)
			}
			g.start <- struct{}{}
			g.r.prepare(size)
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW -e"))
			}
			<-g.finished
			if !bytes.Equal(g.mine.Buf[:size], g.their.Buf[blk:blk+size]) {
				t.Fatalf("the receiver's buffer holds other bytes than were sent (seed %d)", seed)
			}
			seed++
		})
		g.checkPeer(t, "runBWRecv -e")
		checkDetachedBW(t, g.r, 200)
		if g.pr.nDone != 200 {
			t.Fatalf("receiver: received %d of 200", g.pr.nDone)
		}
		events(t, "receiver", g.pr)
		closeBoth(t, g)
	})
	t.Run("send_lat", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbSend, Test: TestLat, Iters: 100, UseEvent: true})
		g.peerLoop(vmRuns, func() {}, g.pr.runLatSend)
		vmNoAllocs(t, "runLatSend -e both sides", func() {
			g.pr.prepare(2)
			g.r.prepare(2)
			g.postRecvsBoth(t, 100)
			g.runBoth(t, "runLatSend -e", g.r.runLatSend)
		})
		checkDetachedRun(t, "client", g.r, 98)
		checkDetachedRun(t, "server", g.pr, 99)
		events(t, "client", g.r)
		events(t, "server", g.pr)
		closeBoth(t, g)
	})
	t.Run("write_lat", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbWrite, Test: TestLat, Iters: 100, UseEvent: true})
		g.peerLoop(vmRuns, func() {}, g.pr.runLatWrite)
		vmNoAllocs(t, "runLatWrite -e both sides", func() {
			g.pr.prepare(2)
			g.r.prepare(2)
			clear(g.mine.Buf[:8192])
			clear(g.their.Buf[:8192])
			g.runBoth(t, "runLatWrite -e", g.r.runLatWrite)
		})
		checkDetachedRun(t, "client", g.r, 99)
		checkDetachedRun(t, "server", g.pr, 98)
		logEvents(t, "client", g.r)
		closeBoth(t, g)
	})
	t.Run("read_lat", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbRead, Test: TestLat, Iters: 100, UseEvent: true})
		vmNoAllocs(t, "runLatRead -e", func() {
			g.r.prepare(2)
			if err := g.r.runLatRead(); err != nil {
				t.Fatal(g.r.loopErr(err, "runLatRead -e"))
			}
		})
		checkDetachedRun(t, "reader", g.r, 100)
		logEvents(t, "reader", g.r)
		closeBoth(t, g)
	})
}

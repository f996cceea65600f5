//go:build vmtest

package perf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider"
)

// AllocsPerRun = 0 for the measurement loops on the real rxe data path:
// rxe1 runs the loop under test, rxe0 is the peer (a second loop in a
// goroutine where the test needs one; testing.AllocsPerRun counts the
// whole process, so both loops are covered).

type vmRig struct {
	mine, their     *Resources
	me, peer        Device
	r, pr           *runner
	start, finished chan struct{}
	errs            chan error
}

func newVMRig(t *testing.T, p Params) *vmRig {
	t.Helper()
	p.Defaults()
	pp := p
	pp.Server = !p.Server
	g := &vmRig{start: make(chan struct{}), finished: make(chan struct{}), errs: make(chan error, 1)}
	var err error
	if g.me, err = openVMDevice("rxe1"); err != nil {
		t.Fatal(err)
	}
	if g.peer, err = openVMDevice("rxe0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.me.Close(); _ = g.peer.Close() })
	qt := map[Transport]verbs.QPType{RC: verbs.QPTypeRC, UD: verbs.QPTypeUD}[p.Conn]
	cfg := SetupConfig{BufSize: int(bufSize(&p, 4096)), Type: qt, NumQPs: 1, SendWR: p.TxDepth, RecvWR: p.RxDepth, CQE: 1024, OutReads: 16,
		Atomic: p.Verb == VerbAtomic, SRQ: p.UseSRQ, Events: p.UseEvent, MRPerQP: p.MRPerQP,
		MmapFile: p.MmapFile, MmapOffset: p.MmapOffset, HugePages: p.HugePages, OnNUMANode: p.OnNUMANode, NUMANode: p.NUMANode}
	if g.mine, err = g.me.Setup(cfg); err != nil {
		t.Fatal(err)
	}
	if g.their, err = g.peer.Setup(cfg); err != nil {
		t.Fatal(err)
	}
	pa, err := g.me.Port()
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := g.peer.Port()
	gi := BestGID(pa.GIDs, false)
	gidOf := func(pa PortAttr) [16]byte {
		for _, e := range pa.GIDs {
			if e.Index == gi {
				return e.GID
			}
		}
		t.Fatal("no GID")
		return [16]byte{}
	}
	blk := blockSize(&p, 4096)
	mk := func(res *Resources, g [16]byte) Dest {
		return Dest{QPN: res.QPs[0].QPN, PSN: 1, RKey: res.RKey, VAddr: res.Addr + blk, GID: g, OutReads: 16}
	}
	dm, dp := mk(g.mine, gidOf(pa)), mk(g.their, gidOf(pb))
	cm := ConnectConfig{MTU: 1024, GIDIndex: gi, Local: dm, Remote: dp, QKey: udQKey, Timeout: 14}
	cp := ConnectConfig{MTU: 1024, GIDIndex: gi, Local: dp, Remote: dm, QKey: udQKey, Timeout: 14}
	if err := g.me.Connect(0, cm); err != nil {
		t.Fatal(err)
	}
	if err := g.peer.Connect(0, cp); err != nil {
		t.Fatal(err)
	}
	var ahm, ahp []*verbs.AH
	if p.Conn == UD {
		a, err := g.me.CreateAH(&dp, cm)
		if err != nil {
			t.Fatal(err)
		}
		b, err := g.peer.CreateAH(&dm, cp)
		if err != nil {
			t.Fatal(err)
		}
		ahm, ahp = []*verbs.AH{a}, []*verbs.AH{b}
	}
	stop, pstop := new(atomic.Bool), new(atomic.Bool)
	g.r = newRunner(&p, g.mine, []Dest{dp}, ahm, 4096, stop)
	g.pr = newRunner(&pp, g.their, []Dest{dm}, ahp, 4096, pstop)
	return g
}

// checkPeer fails t if the peer's loop returned an error (what names it).
func (g *vmRig) checkPeer(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-g.errs:
		t.Fatal(g.pr.loopErr(err, what))
	default:
	}
}

// postRecvsBoth posts up to n receives on each side, as seqSendBW and
// seqLat do before the start handshake.
func (g *vmRig) postRecvsBoth(t *testing.T, n uint64) {
	t.Helper()
	for _, r := range []*runner{g.pr, g.r} {
		if err := r.postRecvs(n); err != nil {
			t.Fatal(err)
		}
	}
}

// runBoth starts the peer's loop, runs loop on this side and waits for
// the peer's to end (what names loop in a failure).
func (g *vmRig) runBoth(t *testing.T, what string, loop func() error) {
	t.Helper()
	g.start <- struct{}{}
	if err := loop(); err != nil {
		// Stop the peer's loop and wait for it before t.Fatal's
		// cleanup closes the devices under it: a loop reading freed
		// rings is a fault, and would hide this error behind it.
		g.pr.stop.Store(true)
		select {
		case <-g.finished:
		case <-time.After(10 * time.Second):
			panic(fmt.Sprintf("%s failed (%v) and the peer's loop did not stop within 10 s", what, err))
		}
		t.Fatal(g.r.loopErr(err, what))
	}
	<-g.finished
}

// peerLoop runs loop on the peer once per start signal.
func (g *vmRig) peerLoop(n int, before func(), loop func() error) {
	go func() {
		for i := 0; i < n; i++ {
			<-g.start
			before()
			if err := loop(); err != nil {
				g.errs <- err
			}
			g.finished <- struct{}{}
		}
	}()
}

// vmRuns is how many times vmNoAllocs calls f (peer loops must match).
const vmRuns = 5

// vmNoAllocs fails unless f, run after a warm-up, allocates nothing.
// AllocsPerRun counts every allocation of the process, and one that is
// not the loops' comes from the runtime starting a thread: when both
// sides of a pair detach at once (one process holds both here, unlike
// the binary), their Ps are handed off, and without an idle thread the
// runtime makes one (runtime.newm allocates its m and g structs, in
// runtime/proc.go). The warm-up runs left enough threads most of the
// time, but not always: a full CI once saw send_lat at 2 allocations per
// run. So the runtime gets idle threads to spare first (warmThreads),
// and a failure says whether the process's thread count grew.
func vmNoAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	warmThreads(8)
	f()
	before := threads(t)
	if n := testing.AllocsPerRun(3, f); n != 0 { // 1 + 3 runs
		t.Fatalf("%s on rxe: %v allocations per run, want 0 (the process's threads: %d before the runs, %d after)", name, n, before, threads(t))
	}
}

// warmThreads makes the runtime start n threads more than it needs now
// and leaves them idle, for later hand-offs to reuse: n goroutines locked
// to their threads wait together (each holds its thread), then unlock and
// end (the threads stay, idle; runtime.unlockOSThread, goexit0).
func warmThreads(n int) {
	var ready, done sync.WaitGroup
	release := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			ready.Done()
			<-release
			runtime.UnlockOSThread()
		}()
	}
	ready.Wait()
	close(release)
	done.Wait()
}

// threads is the process's thread count (/proc/self/status).
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// checkMode: on rxe every loop of r ran in the process's selected mode
// (rtloop.Selected: RDMACTL_PERF_LOOP, else the probe): detached from the
// scheduler, or the plain loop.
func checkMode(t *testing.T, who string, r *runner) {
	t.Helper()
	want := rtloop.Selected()
	if want == rtloop.Detached && (r.detached == 0 || r.plain != 0) || want != rtloop.Detached && (r.plain == 0 || r.detached != 0) {
		t.Fatalf("%s: mode %v (%s), but on rxe %d loops ran detached and %d plain", who, want, rtloop.Reason(), r.detached, r.plain)
	}
}

// checkDetachedRun: on rxe the latency loops run in the selected mode,
// every run, and their samples are sane.
func checkDetachedRun(t *testing.T, who string, r *runner, samples int) {
	t.Helper()
	checkMode(t, who, r)
	if r.nSamples != samples {
		t.Fatalf("%s: %d samples of 100 iterations, want %d", who, r.nSamples, samples)
	}
	for i, d := range r.posted[:r.nSamples] {
		if d <= 0 || d > int64(time.Second) {
			t.Fatalf("%s: sample %d is %d ns", who, i, d)
		}
	}
}

// checkDetachedBW: on rxe the bandwidth sender runs in the selected mode,
// completes every message and records its completion events in order.
func checkDetachedBW(t *testing.T, r *runner, msgs uint64) {
	t.Helper()
	checkMode(t, "sender", r)
	if r.nDone != msgs || r.nEv == 0 || r.evC[r.nEv-1] != msgs {
		t.Fatalf("%d messages done, %d events (last %v), want %d", r.nDone, r.nEv, r.evC[:r.nEv], msgs)
	}
	prev := r.tStart
	for i, ts := range r.evT[:r.nEv] {
		if ts < prev || ts-r.tStart > int64(time.Minute) {
			t.Fatalf("event %d at %d ns, after %d (start %d)", i, ts, prev, r.tStart)
		}
		prev = ts
	}
}

func TestVMLoopsDoNotAllocate(t *testing.T) {
	before, _ := exec.Command("rdma", "res", "show").Output()
	// Also perftest's options that change the loop's setup or add to
	// it: a region a QP (--mr_per_qp), the software rate limiter's
	// bursts and gaps (--rate_limit_type SW, 1000 messages a second in
	// bursts of 100: a burst every 100 ms, where the 200 messages take
	// ~40 ms unpaced under TCG); write_lat below runs with and without
	// the latency gap (--latency_gap); and the buffers other than
	// anonymous pages: a file's (--mmap; both sides map the one file),
	// huge pages (--use_hugepages; four reserved for the two sides'
	// 2 MiB buffers) and pages bound to NUMA node 0 (the device's node).
	mmapFile := "/dev/shm/rdmactl-alloc-mmap"
	if err := os.WriteFile(mmapFile, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(mmapFile)
	const nrHuge = "/proc/sys/vm/nr_hugepages"
	if orig, err := os.ReadFile(nrHuge); err == nil {
		defer os.WriteFile(nrHuge, orig, 0o644)
	}
	if err := os.WriteFile(nrHuge, []byte("4\n"), 0o644); err != nil {
		t.Fatalf("reserving huge pages: %v", err)
	}
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"write_bw", Params{Verb: VerbWrite}},
		{"read_bw", Params{Verb: VerbRead}},
		{"write_bw_mr_per_qp", Params{Verb: VerbWrite, MRPerQP: true}},
		{"write_bw_mmap", Params{Verb: VerbWrite, MmapFile: mmapFile}},
		{"write_bw_hugepages", Params{Verb: VerbWrite, HugePages: true}},
		{"write_bw_numa_node", Params{Verb: VerbWrite, OnNUMANode: true, NUMANode: 0}},
		{"write_bw_rate_limit", Params{Verb: VerbWrite, RateLimit: RateLimit{Type: RateLimitSW, Rate: 1000, Units: 'p', Burst: 100}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.p.Test, c.p.Iters, c.p.Size = TestBW, 200, 4096
			g := newVMRig(t, c.p)
			vmNoAllocs(t, "runBW", func() {
				g.r.prepare(4096)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW"))
				}
			})
			checkDetachedBW(t, g.r, 200)
			if c.p.RateLimit.Type == RateLimitSW {
				// Two bursts of 100, the second 100 ms after the
				// first began: a lower bound a slow host cannot break,
				// and one an unpaced loop does not reach.
				t0 := time.Now()
				g.r.prepare(4096)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW"))
				}
				if d := time.Since(t0); d < 95*time.Millisecond {
					t.Errorf("200 messages in %v: the limiter did not pace them (two bursts 100 ms apart)", d)
				} else {
					t.Logf("200 messages in %v, paced", d)
				}
			}
		})
	}
	// Receivers of sends (RC, UD) and of writes with immediate data,
	// which complete their receives in the same loop.
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"send_bw_RC", Params{Verb: VerbSend, Conn: RC}},
		{"send_bw_UD", Params{Verb: VerbSend, Conn: UD}},
		{"write_imm_bw", Params{Verb: VerbWrite, WriteImm: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.p.Test, c.p.Iters, c.p.Size = TestBW, 200, 512
			g := newVMRig(t, c.p)
			g.peerLoop(vmRuns, func() {}, g.pr.runBWRecv)
			vmNoAllocs(t, "runBW+runBWRecv", func() {
				g.pr.prepare(512)
				if err := g.pr.postRecvs(200); err != nil {
					t.Fatal(err)
				}
				g.start <- struct{}{}
				g.r.prepare(512)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW"))
				}
				<-g.finished
			})
			g.checkPeer(t, "runBWRecv")
			checkDetachedBW(t, g.r, 200)
			checkMode(t, "receiver", g.pr)
			if g.pr.nDone != 200 {
				t.Fatalf("receiver: received %d of 200", g.pr.nDone)
			}
		})
	}
	t.Run("send_bw_bidir", func(t *testing.T) {
		// -b: each side's sender also receives the other's messages.
		g := newVMRig(t, Params{Verb: VerbSend, Test: TestBW, Bidir: true, Iters: 200, Size: 512})
		g.peerLoop(vmRuns, func() {}, g.pr.runBW)
		vmNoAllocs(t, "runBW -b both sides", func() {
			g.pr.prepare(512)
			g.r.prepare(512)
			g.postRecvsBoth(t, 200)
			g.runBoth(t, "runBW -b", g.r.runBW)
		})
		g.checkPeer(t, "peer runBW -b")
		checkDetachedBW(t, g.r, 200)
		checkDetachedBW(t, g.pr, 200)
		if g.r.rcnt[0] != 200 || g.pr.rcnt[0] != 200 {
			t.Fatalf("received %d and %d of 200", g.r.rcnt[0], g.pr.rcnt[0])
		}
	})
	t.Run("write_bw_duration", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbWrite, Test: TestBW, Size: 4096, Duration: 400 * time.Millisecond, Margin: 100 * time.Millisecond})
		vmNoAllocs(t, "runBW -D", func() {
			g.r.prepare(4096)
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW -D"))
			}
		})
		r := g.r
		// The window is the 200 ms between the margins, give or take one
		// completion event; the run went on past it.
		win := time.Duration(r.tEnd - r.tStart)
		checkMode(t, "sender", r)
		if r.nDone == 0 || win < 150*time.Millisecond || win > 300*time.Millisecond || r.progress.Load() <= r.nDone {
			t.Fatalf("detached %d, %d messages in a %v window, %d in all", r.detached, r.nDone, win, r.progress.Load())
		}
	})
	t.Run("send_bw_duration", func(t *testing.T) {
		p := Params{Verb: VerbSend, Test: TestBW, Size: 512, Duration: 400 * time.Millisecond, Margin: 100 * time.Millisecond}
		g := newVMRig(t, p)
		// The receiver outlasts the sender, so that it never stops
		// with messages still coming (they would wait for receives,
		// RNR, into the next run).
		g.pr.p.Duration *= 2
		posted := false
		g.peerLoop(vmRuns, func() {}, g.pr.runBWRecv)
		vmNoAllocs(t, "runBW+runBWRecv -D", func() {
			g.pr.prepare(512)
			if !posted { // a duration receiver keeps its queue full
				if err := g.pr.postRecvs(1 << 62); err != nil {
					t.Fatal(err)
				}
				posted = true
			}
			g.start <- struct{}{}
			g.r.prepare(512)
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW -D"))
			}
			<-g.finished
		})
		g.checkPeer(t, "runBWRecv -D")
		for _, r := range []*runner{g.r, g.pr} {
			checkMode(t, "side", r)
			if r.nDone == 0 || r.tEnd <= r.tStart {
				t.Fatalf("detached %d, %d messages from %d to %d ns", r.detached, r.nDone, r.tStart, r.tEnd)
			}
		}
	})
	for _, gap := range []time.Duration{0, 20 * time.Microsecond} {
		name := "write_lat"
		if gap != 0 {
			name += "_gap"
		}
		t.Run(name, func(t *testing.T) {
			g := newVMRig(t, Params{Verb: VerbWrite, Test: TestLat, Iters: 100, LatencyGap: gap})
			g.peerLoop(vmRuns, func() {}, g.pr.runLatWrite)
			vmNoAllocs(t, "runLatWrite both sides", func() {
				g.pr.prepare(2)
				g.r.prepare(2)
				clear(g.mine.Buf[:8192])
				clear(g.their.Buf[:8192])
				g.runBoth(t, "runLatWrite", g.r.runLatWrite)
			})
			// The client times the 99 periods between its posts; the
			// server, which posts first, skips its first period (it
			// holds the peer's start), so 98.
			checkDetachedRun(t, "client", g.r, 99)
			checkDetachedRun(t, "server", g.pr, 98)
		})
	}
	t.Run("write_lat_thread", func(t *testing.T) {
		// As the binary runs it (a sole session): in the detached mode
		// on an rtloop.Thread; in the plain mode there is none.
		if rtloop.Selected() != rtloop.Detached {
			t.Logf("mode %v: no loop thread; the plain loop as in write_lat", rtloop.Selected())
		}
		g := newVMRig(t, Params{Verb: VerbWrite, Test: TestLat, Iters: 100})
		if rtloop.Selected() == rtloop.Detached {
			g.r.thr = rtloop.NewThread[latArgs, latResult]()
			defer g.r.thr.Stop()
		}
		g.peerLoop(vmRuns, func() {}, g.pr.runLatWrite)
		vmNoAllocs(t, "runLatWrite on a loop thread", func() {
			g.pr.prepare(2)
			g.r.prepare(2)
			clear(g.mine.Buf[:8192])
			clear(g.their.Buf[:8192])
			g.runBoth(t, "runLatWrite", g.r.runLatWrite)
		})
		if g.r.thr != nil && !g.r.thr.Private() {
			t.Fatal("the loop thread's file table is not private")
		}
		checkDetachedRun(t, "client", g.r, 99)
		checkDetachedRun(t, "server", g.pr, 98)
	})
	t.Run("send_lat", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbSend, Test: TestLat, Iters: 100})
		g.peerLoop(vmRuns, func() {}, g.pr.runLatSend)
		vmNoAllocs(t, "runLatSend both sides", func() {
			g.pr.prepare(2)
			g.r.prepare(2)
			g.postRecvsBoth(t, 100)
			g.runBoth(t, "runLatSend", g.r.runLatSend)
		})
		// The client sends first (see write_lat).
		checkDetachedRun(t, "client", g.r, 98)
		checkDetachedRun(t, "server", g.pr, 99)
	})
	t.Run("read_lat", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbRead, Test: TestLat, Iters: 100})
		vmNoAllocs(t, "runLatRead", func() {
			g.r.prepare(2)
			if err := g.r.runLatRead(); err != nil {
				t.Fatal(g.r.loopErr(err, "runLatRead"))
			}
		})
		checkDetachedRun(t, "reader", g.r, 100)
	})
	// perf atomic (atomic.go): READ's loops with atomic WRs; the peer's
	// word counts every FETCH_AND_ADD of every run.
	t.Run("atomic_bw", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbAtomic, Test: TestBW, Iters: 200})
		vmNoAllocs(t, "runBW atomic", func() {
			g.r.prepare(8)
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW atomic"))
			}
		})
		checkDetachedBW(t, g.r, 200)
		// vmNoAllocs: a warm-up, then AllocsPerRun's warm-up and 3 runs.
		if w := binary.LittleEndian.Uint64(g.their.Buf[g.r.dstOff(0):]); w != 200*vmRuns {
			t.Fatalf("peer's word %d after %d runs of 200 FETCH_AND_ADDs of 1", w, vmRuns)
		}
	})
	t.Run("atomic_lat", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbAtomic, Test: TestLat, Atomic: AtomicCmpSwap, Iters: 100})
		vmNoAllocs(t, "runLatRead atomic", func() {
			g.r.prepare(8)
			if err := g.r.runLatRead(); err != nil {
				t.Fatal(g.r.loopErr(err, "runLatRead atomic"))
			}
		})
		checkDetachedRun(t, "atomic", g.r, 100)
	})
	// --use-srq (srq.go): the receiver's loop through its SRQ.
	t.Run("send_bw_srq", func(t *testing.T) {
		g := newVMRig(t, Params{Verb: VerbSend, Test: TestBW, UseSRQ: true, Iters: 200, Size: 512})
		g.peerLoop(vmRuns, func() {}, g.pr.runBWRecv)
		vmNoAllocs(t, "runBW(send)+runBWRecv --use-srq", func() {
			g.pr.prepare(512)
			if err := g.pr.postRecvs(200); err != nil {
				t.Fatal(err)
			}
			g.start <- struct{}{}
			g.r.prepare(512)
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW"))
			}
			<-g.finished
		})
		g.checkPeer(t, "runBWRecv --use-srq")
		checkDetachedBW(t, g.r, 200)
		checkMode(t, "receiver", g.pr)
		if g.pr.nDone != 200 {
			t.Fatalf("receiver: received %d of 200", g.pr.nDone)
		}
	})
	// Duration mode (-D) runs the same loops, into the histogram. Each
	// side stops on its own clock, so its last wait ends at the deadline.
	dur := Params{Test: TestLat, Duration: 400 * time.Millisecond, Margin: 100 * time.Millisecond}
	endsOK := func(loop func() error) func() error {
		return func() error {
			if err := loop(); err != nil && !errors.Is(err, errDeadline) {
				return err
			}
			return nil
		}
	}
	for _, v := range []Verb{VerbWrite, VerbSend} {
		t.Run(v.String()+"_lat_duration", func(t *testing.T) {
			p := dur
			p.Verb = v
			g := newVMRig(t, p)
			run, prun := g.r.runLatWrite, g.pr.runLatWrite
			if v == VerbSend {
				run, prun = g.r.runLatSend, g.pr.runLatSend
			}
			g.peerLoop(vmRuns, func() {}, endsOK(prun))
			posted := false
			vmNoAllocs(t, v.String()+" lat -D both sides", func() {
				g.pr.prepare(2)
				g.r.prepare(2)
				clear(g.mine.Buf[:8192])
				clear(g.their.Buf[:8192])
				if v == VerbSend && !posted {
					// as seqLat does, once: a duration run re-posts
					// each receive, so a full queue stays posted
					g.postRecvsBoth(t, g.r.p.Iters) // the same Params on both sides
					posted = true
				}
				g.runBoth(t, "lat -D", endsOK(run))
			})
			g.checkPeer(t, "peer lat -D")
			t.Logf("runs that ended with their last send to poll (drained): %d of %d", g.r.latDrained+g.pr.latDrained, 2*(vmRuns-1))
			checkDetachedHist(t, "client", g.r)
			checkDetachedHist(t, "server", g.pr)
		})
	}
	t.Run("read_lat_duration", func(t *testing.T) {
		p := dur
		p.Verb = VerbRead
		g := newVMRig(t, p)
		vmNoAllocs(t, "runLatRead -D", func() {
			g.r.prepare(2)
			if err := endsOK(g.r.runLatRead)(); err != nil {
				t.Fatal(g.r.loopErr(err, "runLatRead -D"))
			}
		})
		checkDetachedHist(t, "reader", g.r)
	})
	after, _ := exec.Command("rdma", "res", "show").Output()
	if string(after) != string(before) {
		t.Fatalf("rdma res show changed:\n%s\n%s", before, after)
	}
}

// checkDetachedHist: a duration-mode latency loop on rxe ran in the
// selected mode and filled the histogram, inside the margins only, with
// sane samples.
func checkDetachedHist(t *testing.T, who string, r *runner) {
	t.Helper()
	checkMode(t, who, r)
	h := r.hist
	if h.n == 0 || h.min <= 0 || h.max > int64(time.Second) {
		t.Fatalf("%s: histogram of %d samples, min %d ns, max %d ns", who, h.n, h.min, h.max)
	}
	// 200 ms of samples: a round trip on rxe under TCG takes 20 us to
	// a few ms, so not more than 10000 of them, and not all of the run.
	if h.n > 10000 || r.progress.Load() <= h.n {
		t.Fatalf("%s: %d samples in the window, %d iterations in all", who, h.n, r.progress.Load())
	}
}

// openVMDevice opens the VM's rxe device name on port 1 (sysfs finds it;
// its rxe name gives the driver id).
func openVMDevice(name string) (Device, error) {
	d, err := provider.All().LookupDevice(name)
	if err != nil {
		return nil, err
	}
	return OpenDevice(d, 1)
}

package perf

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// loopRig is one runner wired to a peer on the fake fabric, without TCP.
type loopRig struct {
	f           *fakeFabric
	me, peer    *fakeDevice
	mine, their *Resources
	r           *runner
	stop        atomic.Bool
}

func newLoopRig(t testing.TB, p Params, peerEcho bool) *loopRig {
	t.Helper()
	p.Defaults()
	g := &loopRig{f: newFakeFabric()}
	g.me = newFakeDevice(g.f, 1)
	g.peer = newFakeDevice(g.f, 2)
	g.peer.echo = peerEcho
	qt := verbs.QPTypeRC
	if p.Conn == UD {
		qt = verbs.QPTypeUD
	}
	cfg := SetupConfig{BufSize: int(bufSize(&p, 4096)), Type: qt, NumQPs: p.QPs, SendWR: p.TxDepth, RecvWR: p.RxDepth, CQE: 4096, Atomic: p.Verb == VerbAtomic, SRQ: p.srqSide()}
	var dv dvLayout
	if p.DataValidation {
		var err error
		if dv, err = newDVLayout(&p); err != nil {
			t.Fatal(err)
		}
		cfg.BufSize, cfg.SendWR, cfg.Atomic = int(dv.total), 3*p.TxDepth, true
	}
	var err error
	if g.mine, err = g.me.Setup(cfg); err != nil {
		t.Fatal(err)
	}
	if g.their, err = g.peer.Setup(cfg); err != nil {
		t.Fatal(err)
	}
	blk := blockSize(&p, 4096)
	dest := func(res *Resources, i int) Dest {
		if p.DataValidation {
			dv.fill(res.Buf)
			return Dest{QPN: res.QPs[i].QPN, RKey: res.RKey, VAddr: res.Addr + dv.targetOff(i), TailMarkers: res.Addr + dv.markers}
		}
		return Dest{QPN: res.QPs[i].QPN, RKey: res.RKey, VAddr: res.Addr + uint64(p.QPs+i)*blk}
	}
	remote := make([]Dest, p.QPs)
	for i := range remote {
		remote[i] = dest(g.their, i)
		_ = g.me.Connect(i, ConnectConfig{Remote: remote[i]})
		_ = g.peer.Connect(i, ConnectConfig{Remote: dest(g.mine, i)})
	}
	ahs := []*verbs.AH{{}}
	g.r = newRunner(&p, g.mine, remote, ahs, 4096, &g.stop)
	if p.DataValidation {
		g.r.dv = newDVLoop(dv, g.mine.Addr, remote)
	}
	return g
}

func requireNoAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(5, f); n != 0 {
		t.Fatalf("%s: %v allocations per run, want 0", name, n)
	}
}

func TestLoopsDoNotAllocate(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbRead, VerbSend} {
		t.Run(v.String()+"_bw", func(t *testing.T) {
			g := newLoopRig(t, Params{Verb: v, Test: TestBW, Iters: 1000, Size: 4096, CQMod: 16}, v == VerbSend)
			if v == VerbSend {
				// The echo peer sends every message back; give them
				// somewhere to land.
				g.r.prepare(4096)
				_ = g.r.postRecvs(1 << 40)
			}
			requireNoAllocs(t, "runBW", func() {
				g.r.prepare(4096)
				if err := g.r.runBW(); err != nil {
					t.Fatal(err)
				}
				if v == VerbSend {
					for i := 0; i < 1000; i++ { // drain the echoes
						n, _ := g.mine.RecvCQ.Poll(g.r.wcs[:1])
						if n == 0 {
							break
						}
						_ = g.mine.QPs[0].PostRecv(g.r.rwrs[0])
					}
				}
			})
			if g.r.nDone != 1000 {
				t.Fatalf("completed %d", g.r.nDone)
			}
		})
	}
	// --data_validation's sender: each post addresses the next slot and
	// chains a fetch-and-add at a chunk's end (validation.go).
	for _, v := range []Verb{VerbWrite, VerbRead} {
		t.Run(v.String()+"_bw_data_validation", func(t *testing.T) {
			g := newLoopRig(t, Params{Verb: v, Test: TestBW, Iters: 1000, Size: 4096, TxDepth: 32, QPs: 2, CQMod: 16, DataValidation: true}, false)
			requireNoAllocs(t, "runBW --data_validation", func() {
				g.r.prepare(4096)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW --data_validation"))
				}
			})
			if g.r.nDone != 2000 {
				t.Fatalf("completed %d", g.r.nDone)
			}
		})
	}
	t.Run("send_bw_bidir", func(t *testing.T) {
		// -b: runBW also receives; the echo peer returns every message.
		g := newLoopRig(t, Params{Verb: VerbSend, Test: TestBW, Bidir: true, Iters: 1000, Size: 4096, CQMod: 16}, true)
		requireNoAllocs(t, "runBW -b", func() {
			g.r.prepare(4096)
			if err := g.r.postRecvs(1000); err != nil {
				t.Fatal(err)
			}
			if err := g.r.runBW(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBW -b"))
			}
		})
		if g.r.nDone != 1000 || g.r.rcnt[0] != 1000 {
			t.Fatalf("sent %d, received %d", g.r.nDone, g.r.rcnt[0])
		}
	})
	// A receiver of sends, and of writes with immediate data (which
	// complete its receives too): the same loop.
	for _, c := range []struct {
		name string
		p    Params
		op   verbs.Opcode
	}{
		{"send_bw_receiver", Params{Verb: VerbSend}, verbs.OpSend},
		{"write_imm_bw_receiver", Params{Verb: VerbWrite, WriteImm: true}, verbs.OpRDMAWriteImm},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.p.Test, c.p.Iters, c.p.Size, c.p.Server = TestBW, 1000, 4096, true
			g := newLoopRig(t, c.p, false)
			wr := []verbs.SendWR{{Opcode: c.op, SGE: verbs.SGE{Addr: g.their.Addr, Length: 4096, LKey: g.their.LKey},
				RemoteAddr: g.mine.Addr, RKey: g.mine.RKey}}
			requireNoAllocs(t, "runBWRecv", func() {
				g.r.prepare(4096)
				if err := g.r.postRecvs(1000); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < 1000; i++ { // the peer's messages
					_ = g.their.QPs[0].PostSend(wr)
				}
				if err := g.r.runBWRecv(); err != nil {
					t.Fatal(err)
				}
			})
			if g.r.nDone != 1000 {
				t.Fatalf("received %d", g.r.nDone)
			}
		})
	}
	t.Run("send_bw_srq_receiver", func(t *testing.T) {
		// --use-srq: two QPs' receives in one shared queue (srq.go).
		g := newLoopRig(t, Params{Verb: VerbSend, Test: TestBW, Iters: 500, Size: 4096, Server: true, UseSRQ: true, QPs: 2}, false)
		wrs := [][]verbs.SendWR{
			{{Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: g.their.Addr, Length: 4096, LKey: g.their.LKey}}},
			{{Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: g.their.Addr, Length: 4096, LKey: g.their.LKey}}},
		}
		requireNoAllocs(t, "runBWRecv --use-srq", func() {
			g.r.prepare(4096)
			if err := g.r.postRecvs(500); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 500; i++ { // the peer's messages, on both QPs
				_ = g.their.QPs[0].PostSend(wrs[0])
				_ = g.their.QPs[1].PostSend(wrs[1])
			}
			if err := g.r.runBWRecv(); err != nil {
				t.Fatal(g.r.loopErr(err, "runBWRecv --use-srq"))
			}
		})
		if g.r.nDone != 1000 {
			t.Fatalf("received %d", g.r.nDone)
		}
	})
	t.Run("send_lat_srq", func(t *testing.T) {
		g := newLoopRig(t, Params{Verb: VerbSend, Test: TestLat, Iters: 500, UseSRQ: true}, true)
		requireNoAllocs(t, "runLatSend --use-srq", func() {
			g.r.prepare(2)
			if err := g.r.postRecvs(500); err != nil {
				t.Fatal(err)
			}
			if err := g.r.runLatSend(); err != nil {
				t.Fatal(err)
			}
		})
		if g.r.nSamples != 498 {
			t.Fatalf("samples %d", g.r.nSamples)
		}
	})
	t.Run("write_lat", func(t *testing.T) {
		g := newLoopRig(t, Params{Verb: VerbWrite, Test: TestLat, Iters: 500, Server: true}, true)
		requireNoAllocs(t, "runLatWrite", func() {
			g.r.prepare(2)
			clear(g.mine.Buf) // the counters restart at 1
			if err := g.r.runLatWrite(); err != nil {
				t.Fatal(err)
			}
		})
		if g.r.nSamples != 498 { // it starts: no first period, last message untimed
			t.Fatalf("samples %d", g.r.nSamples)
		}
	})
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"send_lat", Params{Verb: VerbSend}},
		// The server starts write with immediate data (perftest 6.29).
		{"write_imm_lat", Params{Verb: VerbWrite, WriteImm: true, Server: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.p.Test, c.p.Iters = TestLat, 500
			g := newLoopRig(t, c.p, true)
			requireNoAllocs(t, "runLatSend", func() {
				g.r.prepare(2)
				if err := g.r.postRecvs(500); err != nil {
					t.Fatal(err)
				}
				if err := g.r.runLatSend(); err != nil {
					t.Fatal(err)
				}
			})
			if g.r.nSamples != 498 { // it starts: no first period, last message untimed
				t.Fatalf("samples %d", g.r.nSamples)
			}
		})
	}
	t.Run("read_lat", func(t *testing.T) {
		g := newLoopRig(t, Params{Verb: VerbRead, Test: TestLat, Iters: 500}, false)
		requireNoAllocs(t, "runLatRead", func() {
			g.r.prepare(2)
			if err := g.r.runLatRead(); err != nil {
				t.Fatal(err)
			}
		})
	})
	// perf atomic: READ's loops with atomic WRs (atomic.go).
	for _, op := range []AtomicOp{AtomicFetchAdd, AtomicCmpSwap} {
		t.Run("atomic_bw_"+op.String(), func(t *testing.T) {
			g := newLoopRig(t, Params{Verb: VerbAtomic, Test: TestBW, Atomic: op, Iters: 1000, CQMod: 16}, false)
			requireNoAllocs(t, "runBW atomic", func() {
				g.r.prepare(8)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW atomic"))
				}
			})
			if g.r.nDone != 1000 {
				t.Fatalf("completed %d", g.r.nDone)
			}
		})
		t.Run("atomic_lat_"+op.String(), func(t *testing.T) {
			g := newLoopRig(t, Params{Verb: VerbAtomic, Test: TestLat, Atomic: op, Iters: 500}, false)
			requireNoAllocs(t, "runLatRead atomic", func() {
				g.r.prepare(8)
				if err := g.r.runLatRead(); err != nil {
					t.Fatal(g.r.loopErr(err, "runLatRead atomic"))
				}
			})
			if g.r.nSamples != 500 {
				t.Fatalf("samples %d", g.r.nSamples)
			}
		})
	}
	// Duration mode: the same loops, into the histogram, until the clock
	// says stop.
	dur := 200 * time.Millisecond // the sampling window (dur/2) outlasts a busy host's stalls
	t.Run("write_lat_duration", func(t *testing.T) {
		g := newLoopRig(t, Params{Verb: VerbWrite, Test: TestLat, Duration: dur, Margin: dur / 4, Server: true}, true)
		requireNoAllocs(t, "runLatWrite -D", func() {
			g.r.prepare(2)
			clear(g.mine.Buf)
			if err := g.r.runLatWrite(); err != nil {
				t.Fatal(err)
			}
		})
		checkDurationRun(t, g.r)
	})
	t.Run("read_lat_duration", func(t *testing.T) {
		g := newLoopRig(t, Params{Verb: VerbRead, Test: TestLat, Duration: dur, Margin: dur / 4}, false)
		requireNoAllocs(t, "runLatRead -D", func() {
			g.r.prepare(2)
			if err := g.r.runLatRead(); err != nil {
				t.Fatal(err)
			}
		})
		checkDurationRun(t, g.r)
	})
	t.Run("histogram_add", func(t *testing.T) {
		h := newHistogram()
		requireNoAllocs(t, "histogram.add", func() {
			for i := int64(0); i < 1000; i++ {
				h.add(i * 977)
			}
		})
	})
}

// checkDurationRun: a duration-mode latency loop kept samples only from
// the window between the margins, and ran on past it until the end.
func checkDurationRun(t *testing.T, r *runner) {
	t.Helper()
	h := r.hist
	if h == nil || h.n == 0 || h.n >= r.progress.Load() || r.nSamples != 0 {
		t.Fatalf("histogram %+v after %d iterations, %d iteration-mode samples", h, r.progress.Load(), r.nSamples)
	}
}

// TestLatPeerStartNotTimed: the side that posts first does not take the
// time its peer needed to start as a round trip. (A perftest client
// calibrates its clock for about 220 ms after the last handshake: an
// rdmactl write_lat server reported that as its t_max, half of it, and
// its average with it.)
func TestLatPeerStartNotTimed(t *testing.T) {
	const late = 100 * time.Millisecond
	for _, v := range []Verb{VerbWrite, VerbSend} {
		t.Run(v.String(), func(t *testing.T) {
			// The write server and the send client post first.
			g := newLoopRig(t, Params{Verb: v, Test: TestLat, Iters: 50, Server: v == VerbWrite}, true)
			g.peer.qps[0].lateStart = late
			g.r.prepare(2)
			var err error
			if v == VerbSend {
				if err = g.r.postRecvs(50); err != nil {
					t.Fatal(err)
				}
				err = g.r.runLatSend()
			} else {
				err = g.r.runLatWrite()
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.r.nSamples != 48 {
				t.Fatalf("%d samples of 50 iterations, want 48", g.r.nSamples)
			}
			for i, d := range g.r.posted[:g.r.nSamples] {
				if time.Duration(d) >= late {
					t.Fatalf("sample %d is %v: the peer's late start was timed", i, time.Duration(d))
				}
			}
		})
	}
}

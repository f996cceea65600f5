package perf

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// fakeEvCQ is a fake CQ that can be armed; fakeChannel raises an event
// for an armed CQ that holds completions (the fake fabric delivers at
// once, so "after the arming" cannot be told apart here).
type fakeEvCQ struct {
	*fakeCQ
	armed bool
	arms  int
}

func (c *fakeEvCQ) Arm() (bool, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	if c.armed {
		return false, nil
	}
	c.armed = true
	c.arms++
	return true, nil
}

type fakeChannel struct {
	f     *fakeFabric
	cqs   []*fakeEvCQ
	waits int
}

func (ch *fakeChannel) Wait(timeout int64, attached bool) (int, error) {
	ch.waits++
	for try := 0; try < 500; try++ { // up to about the real slice

		ch.f.mu.Lock()
		n := 0
		for _, c := range ch.cqs {
			if c.armed && c.n > 0 {
				c.armed = false
				n++
			}
		}
		ch.f.mu.Unlock()
		if n > 0 || !attached {
			return n, nil
		}
		time.Sleep(100 * time.Microsecond) // a late peer's goroutine runs
	}
	return 0, nil
}

// newEventRig is newLoopRig with -e: the runner's CQs armable, on a
// fake channel.
func newEventRig(t testing.TB, p Params, peerEcho bool) (*loopRig, *fakeChannel) {
	g := newLoopRig(t, p, peerEcho)
	s := &fakeEvCQ{fakeCQ: g.mine.SendCQ.(*fakeCQ)}
	r := &fakeEvCQ{fakeCQ: g.mine.RecvCQ.(*fakeCQ)}
	ch := &fakeChannel{f: g.f, cqs: []*fakeEvCQ{s, r}}
	g.mine.SendCQ, g.mine.RecvCQ, g.mine.Events = s, r, ch
	pp := *g.r.p
	pp.UseEvent = true
	g.r = newRunner(&pp, g.mine, g.r.remote, g.r.ahs, 4096, &g.stop)
	if g.r.ev == nil {
		t.Fatal("newRunner made no event state")
	}
	return g, ch
}

// TestEventLoopsDoNotAllocate: every loop with -e, 0 allocations, and
// the runs complete.
func TestEventLoopsDoNotAllocate(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbRead, VerbSend} {
		t.Run(v.String()+"_bw", func(t *testing.T) {
			g, _ := newEventRig(t, Params{Verb: v, Test: TestBW, Iters: 1000, Size: 4096, CQMod: 16}, v == VerbSend)
			if v == VerbSend { // the echoes land here
				g.r.prepare(4096)
				_ = g.r.postRecvs(1 << 40)
			}
			requireNoAllocs(t, "runBW -e", func() {
				g.r.prepare(4096)
				if err := g.r.runBW(); err != nil {
					t.Fatal(g.r.loopErr(err, "runBW -e"))
				}
				for i := 0; v == VerbSend && i < 1000; i++ {
					if n, _ := g.mine.RecvCQ.Poll(g.r.wcs[:1]); n == 0 {
						break
					}
					_ = g.mine.QPs[0].PostRecv(g.r.rwrs[0])
				}
			})
			if g.r.nDone != 1000 {
				t.Fatalf("completed %d", g.r.nDone)
			}
		})
	}
	t.Run("send_bw_receiver", func(t *testing.T) {
		g, _ := newEventRig(t, Params{Verb: VerbSend, Test: TestBW, Iters: 1000, Size: 4096, Server: true}, false)
		wr := []verbs.SendWR{{Opcode: verbs.OpSend, SGE: verbs.SGE{Addr: g.their.Addr, Length: 4096, LKey: g.their.LKey}}}
		requireNoAllocs(t, "runBWRecv -e", func() {
			g.r.prepare(4096)
			if err := g.r.postRecvs(1000); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 1000; i++ {
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
	t.Run("send_lat", func(t *testing.T) {
		g, _ := newEventRig(t, Params{Verb: VerbSend, Test: TestLat, Iters: 500}, true)
		requireNoAllocs(t, "runLatSend -e", func() {
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
	t.Run("read_lat", func(t *testing.T) {
		g, _ := newEventRig(t, Params{Verb: VerbRead, Test: TestLat, Iters: 500}, false)
		requireNoAllocs(t, "runLatRead -e", func() {
			g.r.prepare(2)
			if err := g.r.runLatRead(); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// TestEventWaitsForLatePeer: with -e, a loop whose peer answers late
// arms its CQ and waits on the channel (events counted), and still
// takes every sample; without a completion it never reads an event.
func TestEventWaitsForLatePeer(t *testing.T) {
	g, ch := newEventRig(t, Params{Verb: VerbSend, Test: TestLat, Iters: 20}, true)
	g.peer.qps[0].lateStart = 30 * time.Millisecond
	g.r.prepare(2)
	if err := g.r.postRecvs(20); err != nil {
		t.Fatal(err)
	}
	if err := g.r.runLatSend(); err != nil {
		t.Fatal(g.r.loopErr(err, "send_lat -e"))
	}
	if g.r.nSamples != 18 {
		t.Fatalf("%d samples, want 18", g.r.nSamples)
	}
	if ch.waits == 0 || g.r.ev.events == 0 || ch.cqs[1].arms == 0 {
		t.Fatalf("waits %d, events %d, receive CQ armed %d times: the loop did not wait on the channel", ch.waits, g.r.ev.events, ch.cqs[1].arms)
	}
	if g.r.ev.events > uint64(ch.cqs[0].arms+ch.cqs[1].arms) {
		t.Fatalf("%d events from %d armings: one event per arming", g.r.ev.events, ch.cqs[0].arms+ch.cqs[1].arms)
	}
}

// TestEventStopWhileWaiting: Ctrl-C ends a loop that waits for events
// and never gets one.
func TestEventStopWhileWaiting(t *testing.T) {
	g, _ := newEventRig(t, Params{Verb: VerbSend, Test: TestBW, Iters: 1000, Size: 64, Server: true}, false)
	g.r.prepare(64)
	if err := g.r.postRecvs(1000); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(100 * time.Millisecond); g.stop.Store(true) }()
	if err := g.r.runBWRecv(); err != errStopped {
		t.Fatalf("runBWRecv: %v, want errStopped", err)
	}
}

func TestValidateEvents(t *testing.T) {
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Test: TestLat, RunInfinitely: true}, "bandwidth tests only"},
		{Params{RunInfinitely: true, UseEvent: true}, "-e"},
		{Params{Verb: VerbSend, RunInfinitely: true, Bidir: true}, "-b"},
		{Params{ReportCounters: []string{"../../etc/passwd"}}, "-W"},
		{Params{ReportCounters: []string{"/proc/x"}}, "-W"},
	} {
		p := c.p
		p.Host = "h"
		p.Defaults()
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.want)
		}
	}
	p := Params{Verb: VerbWrite, RunInfinitely: true, Host: "h"}
	p.Defaults()
	if err := p.Validate(); err != nil || p.Duration != 5*time.Second || p.Margin != 0 {
		t.Fatalf("--run_infinitely: %v, -D %v, margin %v; want 5 s periods without margins", err, p.Duration, p.Margin)
	}
	if !strings.Contains(p.symmetricText(), "run_infinitely=true") {
		t.Fatalf("parameter record %q lacks run_infinitely", p.symmetricText())
	}
}

// FuzzParseCounterValue: sysfs counter text parses to the number it
// says, or fails, never panics.
func FuzzParseCounterValue(f *testing.F) {
	for _, s := range []string{"0\n", "843407\n", "18446744073709551615\n", "18446744073709551616\n", "-1\n", "", "N/A\n", " 12 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseCounterValue(b)
		if err == nil && string(b) == "843407\n" && v != 843407 {
			t.Fatalf("%q -> %d", b, v)
		}
	})
}

// TestReportCounterFiles: -W reads the files under the port's
// directory and prints perftest's lines, each the change since the last
// print; JSON keeps the change since the start.
func TestReportCounterFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "rxe0", "ports", "1")
	for _, d := range []string{"counters", "hw_counters"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("counters/port_xmit_data", "100")
	write("hw_counters/rcvd_seq_err", "7")
	names, err := ParseCounterList("counters/port_xmit_data,hw_counters/rcvd_seq_err")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openCounterFiles(root, "rxe0", 1, []string{"hw_counters/nope"}); err == nil || !strings.Contains(err.Error(), "no such counter") {
		t.Fatalf("missing file: %v", err)
	}
	c, err := openCounterFiles(root, "rxe0", 1, names)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	write("counters/port_xmit_data", "150")
	write("hw_counters/rcvd_seq_err", "9")
	got, err := c.report()
	if err != nil || got != "\tcounters/port_xmit_data=50\n\thw_counters/rcvd_seq_err=2\n\n" {
		t.Fatalf("report %q, %v", got, err)
	}
	write("counters/port_xmit_data", "160")
	if got, _ = c.report(); got != "\tcounters/port_xmit_data=10\n\thw_counters/rcvd_seq_err=0\n\n" {
		t.Fatalf("second report %q", got)
	}
	if tot := c.total(); tot[0].Delta != 60 || tot[1].Delta != 2 {
		t.Fatalf("totals %+v", tot)
	}
}

// failArmCQ is an armable fake CQ whose arming fails, as REQ_NOTIFY_CQ
// on a CQ the kernel destroyed (EINVAL).
type failArmCQ struct{ *fakeCQ }

var errFakeArm = errors.New("fake: REQ_NOTIFY_CQ: invalid argument")

func (failArmCQ) Arm() (bool, error) { return false, errFakeArm }

// TestEventArmFails: a failed arming ends the loop with the provider's
// error, named, not a panic or a hang.
func TestEventArmFails(t *testing.T) {
	g, ch := newEventRig(t, Params{Verb: VerbSend, Test: TestBW, Iters: 100, Size: 64, Server: true}, false)
	g.r.ev.cqs[1] = failArmCQ{ch.cqs[1].fakeCQ}
	g.r.prepare(64)
	if err := g.r.postRecvs(100); err != nil {
		t.Fatal(err)
	}
	err := g.r.runBWRecv()
	if !errors.Is(err, errFakeArm) {
		t.Fatalf("runBWRecv: %v, want the arming's error", err)
	}
	if msg := g.r.loopErr(err, "send_bw").Error(); !strings.Contains(msg, "REQ_NOTIFY_CQ") {
		t.Fatalf("message %q does not name the arming", msg)
	}
}

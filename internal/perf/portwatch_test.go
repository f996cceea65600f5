package perf

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// fakePortEvents is a PortEvents fed by the test: next for Next, queued
// for Pending.
type fakePortEvents struct {
	next   chan PortEvent
	mu     sync.Mutex
	queued []PortEvent
	state  vocab.PortState // 0: ACTIVE
	once   sync.Once
	closed chan struct{}
}

func newFakePortEvents() *fakePortEvents {
	return &fakePortEvents{next: make(chan PortEvent, 4), closed: make(chan struct{})}
}

func (e *fakePortEvents) Next() (PortEvent, error) {
	select {
	case ev := <-e.next:
		return ev, nil
	case <-e.closed:
		return PortEvent{}, os.ErrClosed
	}
}

func (e *fakePortEvents) Pending() ([]PortEvent, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.queued
	e.queued = nil
	return out, nil
}

func (e *fakePortEvents) State() (vocab.PortState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state == 0 {
		return vocab.PortActive, nil
	}
	return e.state, nil
}

func (e *fakePortEvents) Close() error {
	e.once.Do(func() { close(e.closed) })
	return nil
}

// watchedDevice is a fake device whose port events the test sends.
type watchedDevice struct {
	*fakeDevice
	ev *fakePortEvents
}

func (d *watchedDevice) WatchPort() (PortEvents, error) { return d.ev, nil }

// runWatched runs a duration pair whose client's port events come from
// ev; during, if not nil, runs once the loop has posted (in a goroutine).
func runWatched(t *testing.T, p Params, ev *fakePortEvents, during func(f *fakeFabric)) (s, c *sideOut, f *fakeFabric) {
	t.Helper()
	cli := p
	cli.Device, cli.IBPort = "rxe1", 1
	var fab *fakeFabric
	var wg sync.WaitGroup
	s, c, f = runPairWith(t, p, cli, 0, func(srv, cs *Session) {
		fd := cs.Dev.(*fakeDevice)
		fab = fd.f
		cs.Dev = &watchedDevice{fakeDevice: fd, ev: ev}
		if during != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				during(fab)
			}()
		}
	})
	wg.Wait()
	return s, c, f
}

// waitPosts waits until the fabric has seen n posts (the loop runs).
func waitPosts(f *fakeFabric, n int) {
	for deadline := time.Now().Add(20 * time.Second); f.postCount() < n && time.Now().Before(deadline); {
		time.Sleep(2 * time.Millisecond)
	}
}

func wantPortDown(t *testing.T, err error) {
	t.Helper()
	var pd *PortDownError
	var pe *PeerError
	if !errors.As(err, &pd) || !errors.As(err, &pe) {
		t.Fatalf("client: %v, want a peer error saying the port went down", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "port rxe1/1 went down during the run (PORT_ERR)") {
		t.Fatalf("client: %q does not name the port and the event", msg)
	}
}

// A port that goes down during a duration run fails the run at once,
// whatever the loop saw: here the fake fabric goes on delivering, as the
// silence of a lost link on rxe before the deadline did.
func TestPortDownDuringRun(t *testing.T) {
	for _, p := range []Params{
		{Verb: VerbWrite, Test: TestBW, Duration: 20 * time.Second, Margin: 10 * time.Millisecond},
		{Verb: VerbRead, Test: TestBW, Duration: 20 * time.Second, Margin: 10 * time.Millisecond, QPs: 2},
		{Verb: VerbWrite, Test: TestLat, Duration: 20 * time.Second, Margin: 10 * time.Millisecond},
	} {
		t.Run(p.Verb.String()+"_"+p.Test.String(), func(t *testing.T) {
			ev := newFakePortEvents()
			start := time.Now()
			s, c, f := runWatched(t, p, ev, func(f *fakeFabric) {
				waitPosts(f, 100)
				ev.next <- PortEvent{Down: true, Name: "PORT_ERR"}
			})
			wantPortDown(t, c.err)
			if s.err == nil {
				t.Fatal("server: nil error after the client's port went down")
			}
			// Not a timing assertion: a run that ignored the event would
			// have run its 20 s.
			if d := time.Since(start); d > 15*time.Second {
				t.Fatalf("the pair ran %v after the port went down", d)
			}
			if f.live != 0 {
				t.Fatalf("%d fake objects leaked", f.live)
			}
		})
	}
}

// An event the watcher has not read yet when the loop ends (the port went
// down in the run's last moment) still fails the run: the session reads
// what is queued before it reports.
func TestPortDownQueuedAtEnd(t *testing.T) {
	ev := newFakePortEvents()
	ev.queued = []PortEvent{{Down: true, Name: "PORT_ERR"}}
	p := Params{Verb: VerbWrite, Test: TestBW, Duration: 300 * time.Millisecond, Margin: 50 * time.Millisecond}
	_, c, f := runWatched(t, p, ev, nil)
	wantPortDown(t, c.err)
	if f.live != 0 {
		t.Fatalf("%d fake objects leaked", f.live)
	}
}

// Port events that do not take the port down (PORT_ACTIVE, GID_CHANGE)
// leave the run alone.
func TestPortEventsNotDown(t *testing.T) {
	ev := newFakePortEvents()
	ev.queued = []PortEvent{{Name: "GID_CHANGE"}}
	p := Params{Verb: VerbWrite, Test: TestBW, Duration: 300 * time.Millisecond, Margin: 50 * time.Millisecond}
	s, c, _ := runWatched(t, p, ev, func(f *fakeFabric) {
		waitPosts(f, 10)
		ev.next <- PortEvent{Name: "PORT_ACTIVE"}
	})
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v\nclient: %v", s.err, c.err)
	}
}

// Without any event (a kernel that did not queue one), a port found DOWN
// when the loop ends fails the run too: it was ACTIVE at the start.
func TestPortFoundDownAtEnd(t *testing.T) {
	ev := newFakePortEvents()
	p := Params{Verb: VerbWrite, Test: TestBW, Duration: 300 * time.Millisecond, Margin: 50 * time.Millisecond}
	_, c, _ := runWatched(t, p, ev, func(f *fakeFabric) {
		waitPosts(f, 10)
		ev.mu.Lock()
		ev.state = vocab.PortDown
		ev.mu.Unlock()
	})
	var pd *PortDownError
	if !errors.As(c.err, &pd) || !strings.Contains(c.err.Error(), "port rxe1/1 went down during the run (state DOWN)") {
		t.Fatalf("client: %v, want the port found DOWN", c.err)
	}
}

// The fault the watcher is for: the link is lost late in a -D run, the
// sender gets no completion at all, and the deadline comes before the
// stall limit (3 s here). Without a port event the loop cannot tell that
// from a peer that is merely slow and reports the traffic before the
// loss (as perftest would); with the kernel's PORT_ERR the run fails.
func TestLinkLostBeforeDeadline(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Duration: 1500 * time.Millisecond, Margin: 100 * time.Millisecond}
	lose := func(ev *fakePortEvents) func(f *fakeFabric) {
		return func(f *fakeFabric) {
			waitPosts(f, 100)
			f.mu.Lock()
			f.lost = true
			f.mu.Unlock()
			if ev != nil {
				ev.next <- PortEvent{Down: true, Name: "PORT_ERR"}
			}
		}
	}
	silent := newFakePortEvents()
	_, c, _ := runWatched(t, p, silent, lose(nil))
	if c.err != nil {
		t.Fatalf("without a port event: %v (the loss was shorter than the stall limit)", c.err)
	}
	ev := newFakePortEvents()
	_, c, f := runWatched(t, p, ev, lose(ev))
	wantPortDown(t, c.err)
	if f.live != 0 {
		t.Fatalf("%d fake objects leaked", f.live)
	}
}

// The client's port goes down in the last half second of a write_lat -D
// run: the client fails, and so must the server, whose own clock ends
// within the second it gives a peer that hung up (peerLeft): an rdmactl
// peer says "done" when its clock ends, and this one did not.
func TestPortDownLastMomentServerFails(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestLat, Duration: 1500 * time.Millisecond, Margin: 100 * time.Millisecond}
	ev := newFakePortEvents()
	s, c, f := runWatched(t, p, ev, func(f *fakeFabric) {
		waitPosts(f, 10)
		time.Sleep(1100 * time.Millisecond)
		ev.next <- PortEvent{Down: true, Name: "PORT_ERR"}
	})
	wantPortDown(t, c.err)
	var pe *PeerError
	if !errors.As(s.err, &pe) {
		t.Fatalf("server: %v, want a peer error: its peer failed before the end", s.err)
	}
	if f.live != 0 {
		t.Fatalf("%d fake objects leaked", f.live)
	}
}

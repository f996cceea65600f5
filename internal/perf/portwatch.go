package perf

import (
	"fmt"
	"sync"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// A run whose port goes down must fail, and say so. The data path alone
// does not always tell: once rxe's netdev is down, a QP may get neither an
// error completion nor any other (seen on 6.1 and 6.12: write_bw waits
// out its whole stall limit; other loops get "local QP operation error"
// when rxe finds no route, drivers/infiniband/sw/rxe/rxe_net.c), and a
// duration run whose deadline came before the stall limit then ended as
// if it had finished, reporting the traffic before the loss. So the
// session watches the device's async events from before it checks that
// the port is ACTIVE until it reports: the kernel queues PORT_ERR on
// every async event file of the device when the port leaves ACTIVE
// (ib_dispatch_event; rxe_port_down in rxe_net.c, mlx5_ib_handle_event on
// ConnectX). The watcher stops the loop at once, and the run fails with
// the port named.

// PortWatcher is a Device that can report its port's events (the verbs
// device: its context's async event file).
type PortWatcher interface {
	WatchPort() (PortEvents, error)
}

// PortEvents delivers the run's port events. Next blocks until the next
// event or Close; Pending returns those queued, without waiting; State
// asks the port's state now (QUERY_PORT).
type PortEvents interface {
	Next() (PortEvent, error)
	Pending() ([]PortEvent, error)
	State() (vocab.PortState, error)
	Close() error
}

// PortEvent is an async event concerning the run's port or its device.
type PortEvent struct {
	Down bool   // the port left ACTIVE, or the device failed
	Name string // the kernel's event name (PORT_ERR, DEVICE_FATAL)
}

var _ PortWatcher = (*verbsDevice)(nil)

// WatchPort opens the context's async events and keeps those of d's port
// and the device-wide DEVICE_FATAL.
func (d *verbsDevice) WatchPort() (PortEvents, error) {
	ev, err := d.ctx.AsyncEvents()
	if err != nil {
		return nil, err
	}
	return &verbsPortEvents{ev: ev, ctx: d.ctx, port: d.port}, nil
}

type verbsPortEvents struct {
	ev   *verbs.AsyncEvents
	ctx  *verbs.Context
	port uint8
}

func (w *verbsPortEvents) State() (vocab.PortState, error) {
	pa, err := w.ctx.QueryPort(w.port)
	if err != nil {
		return 0, err
	}
	return pa.State, nil
}

func (w *verbsPortEvents) Next() (PortEvent, error) {
	for {
		e, err := w.ev.Read()
		if err != nil {
			return PortEvent{}, err
		}
		if pe, ok := w.keep(e); ok {
			return pe, nil
		}
	}
}

func (w *verbsPortEvents) Pending() ([]PortEvent, error) {
	evs, err := w.ev.Pending()
	var out []PortEvent
	for _, e := range evs {
		if pe, ok := w.keep(e); ok {
			out = append(out, pe)
		}
	}
	return out, err
}

func (w *verbsPortEvents) keep(e verbs.AsyncEvent) (PortEvent, bool) {
	switch {
	case e.Type == verbs.EventDeviceFatal:
		return PortEvent{Down: true, Name: e.Type.String()}, true
	case e.Type.IsPortEvent() && e.Element == uint64(w.port):
		return PortEvent{Down: e.Type == verbs.EventPortErr, Name: e.Type.String()}, true
	}
	return PortEvent{}, false
}

func (w *verbsPortEvents) Close() error { return w.ev.Close() }

// portSettle is how long a failed run waits for its port's event before
// it reports the failure it saw.
const portSettle = 500 * time.Millisecond

// portWatch is a session's watcher: started before the port check, stopped
// at teardown.
type portWatch struct {
	ev   PortEvents
	wg   sync.WaitGroup
	mu   sync.Mutex
	down string // the first event that took the port down; "": none
}

// watchPort starts watching the session's port. A device that cannot
// (no PortWatcher, or a kernel without async event files) runs without:
// the stall limit is then what notices a dead link.
func (s *Session) watchPort() {
	pw, ok := s.Dev.(PortWatcher)
	if !ok {
		return
	}
	ev, err := pw.WatchPort()
	if err != nil {
		return
	}
	w := &portWatch{ev: ev}
	s.portWatch = w
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			e, err := ev.Next()
			if err != nil {
				return // closed at teardown
			}
			s.portEvent(e)
		}
	}()
}

// portEvent records a port-down event and stops the loop.
func (s *Session) portEvent(e PortEvent) {
	w := s.portWatch
	if !e.Down {
		return
	}
	w.mu.Lock()
	if w.down == "" {
		w.down = e.Name
	}
	w.mu.Unlock()
	s.stop.Store(true)
}

// portDownErr is the run's error when its port went down since the watch
// began, else nil. It reads the events still queued and asks the port's
// state; with settle, it keeps asking that long before it answers nil.
// A failed run settles: the kernel queues PORT_ERR from a work item
// (ib_dispatch_event, drivers/infiniband/core/device.c), after the
// netdev's routes are gone, so a completion error caused by the loss can
// reach the loop before the event reaches the file.
func (s *Session) portDownErr(settle time.Duration) error {
	w := s.portWatch
	if w == nil {
		return nil
	}
	end := time.Now().Add(settle)
	for {
		if why := w.check(s); why != "" {
			return &PeerError{Err: &PortDownError{Device: s.P.Device, Port: s.P.IBPort, Why: why}}
		}
		if !time.Now().Before(end) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// check reads the queued events and the port's state, and returns what
// says the port went down ("" while it did not).
func (w *portWatch) check(s *Session) string {
	evs, _ := w.ev.Pending()
	for _, e := range evs {
		s.portEvent(e)
	}
	w.mu.Lock()
	why := w.down
	w.mu.Unlock()
	if why != "" {
		return why
	}
	// Active at the start (Device.Port refused anything else), so any
	// other state now is a change during the run. A device that is gone
	// answers an error, which other checks report.
	if st, err := w.ev.State(); err == nil && st != vocab.PortActive {
		return "state " + st.String()
	}
	return ""
}

// PortDownError says that the run's port went down under it.
type PortDownError struct {
	Device string
	Port   int
	Why    string // the kernel's event (PORT_ERR, DEVICE_FATAL) or "state DOWN"
}

func (e *PortDownError) Error() string {
	what := fmt.Sprintf("port %s/%d went down", e.Device, e.Port)
	if e.Why == "DEVICE_FATAL" {
		what = "device " + e.Device + " failed"
	}
	return fmt.Sprintf("%s during the run (%s): the link was lost; check 'rdmactl link show %s/%d'", what, e.Why, e.Device, e.Port)
}

// stopPortWatch ends the watcher (teardown).
func (s *Session) stopPortWatch() {
	w := s.portWatch
	if w == nil {
		return
	}
	_ = w.ev.Close()
	w.wg.Wait()
}

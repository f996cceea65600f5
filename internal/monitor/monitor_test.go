package monitor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

func u32(v uint32) *uint32 { return &v }

// world is the fake system the snapshots read: devices by index.
type world struct {
	mu   sync.Mutex
	devs []inventory.SnapDevice
	errs []error // the next snapshots fail with these
}

func (w *world) snapshot() (*inventory.Snapshot, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) > 0 {
		err := w.errs[0]
		w.errs = w.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	s := &inventory.Snapshot{Live: true}
	for _, d := range w.devs {
		d.Ports = append([]inventory.SnapPort(nil), d.Ports...)
		s.Devices = append(s.Devices, d)
	}
	return s, nil
}

func (w *world) set(f func(devs []inventory.SnapDevice) []inventory.SnapDevice) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.devs = f(w.devs)
}

func roce(idx uint32, name, nd string, ndIdx uint32) inventory.SnapDevice {
	return inventory.SnapDevice{Index: u32(idx), Name: name, Ports: []inventory.SnapPort{{Port: 1, State: "ACTIVE", PhysState: "LINK_UP", Netdev: nd, NetdevIndex: u32(ndIdx)}}}
}

// The scripted sequence of the VM test, as each kernel reports it.
var (
	register   = nldev.Notification{Type: nldev.NotifyRegister, DevIndex: 2, DevName: "mon0"}
	attach     = nldev.Notification{Type: nldev.NotifyNetdevAttach, DevIndex: 2, DevName: "mon0", Port: u32(1), NetdevIndex: u32(8), NetdevName: "mva"}
	unregister = nldev.Notification{Type: nldev.NotifyUnregister, DevIndex: 2, DevName: "mon1"}
)

// steps changes the world as the script does and says what the kernel
// (6.12) sends for each step.
func steps(w *world) []struct {
	name   string
	change func()
	kernel []nldev.Notification
} {
	port := func(state, phys string) func() {
		return func() {
			w.set(func(d []inventory.SnapDevice) []inventory.SnapDevice {
				d[1].Ports[0].State, d[1].Ports[0].PhysState = state, phys
				return d
			})
		}
	}
	return []struct {
		name   string
		change func()
		kernel []nldev.Notification
	}{
		{"add", func() {
			w.set(func(d []inventory.SnapDevice) []inventory.SnapDevice { return append(d, roce(2, "mon0", "mva", 8)) })
		}, []nldev.Notification{register, attach}},
		{"rename", func() {
			w.set(func(d []inventory.SnapDevice) []inventory.SnapDevice { d[1].Name = "mon1"; return d })
		}, nil},
		{"down", port("DOWN", "DISABLED"), nil},
		{"up", port("ACTIVE", "LINK_UP"), nil},
		{"delete", func() {
			w.set(func(d []inventory.SnapDevice) []inventory.SnapDevice { return d[:1] })
		}, []nldev.Notification{unregister}},
	}
}

func newWorld() *world {
	return &world{devs: []inventory.SnapDevice{roce(0, "rxe0", "eth0", 4)}}
}

// collect is a merger whose events land in a slice.
func collect(t *testing.T, w *world) (*merger, *[]Event) {
	var got []Event
	first, err := w.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	m := &merger{cfg: Config{Snapshot: w.snapshot, Emit: func(e Event) error { got = append(got, e); return nil }}, state: first}
	return m, &got
}

func lines(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func want(src func(i int) string) []Event {
	evs := []inventory.Event{
		{Type: inventory.DeviceAdded, Ifindex: u32(2), Ifname: "mon0"},
		{Type: inventory.NetdevAttached, Ifindex: u32(2), Ifname: "mon0", Port: 1, New: "mva", NetdevIndex: u32(8)},
		{Type: inventory.DeviceRenamed, Ifindex: u32(2), Ifname: "mon1", Old: "mon0", New: "mon1"},
		{Type: inventory.PortStateChanged, Ifindex: u32(2), Ifname: "mon1", Port: 1, Old: "ACTIVE", New: "DOWN"},
		{Type: inventory.PhysStateChanged, Ifindex: u32(2), Ifname: "mon1", Port: 1, Old: "LINK_UP", New: "DISABLED"},
		{Type: inventory.PortStateChanged, Ifindex: u32(2), Ifname: "mon1", Port: 1, Old: "DOWN", New: "ACTIVE"},
		{Type: inventory.PhysStateChanged, Ifindex: u32(2), Ifname: "mon1", Port: 1, Old: "DISABLED", New: "LINK_UP"},
		{Type: inventory.DeviceRemoved, Ifindex: u32(2), Ifname: "mon1"},
	}
	out := make([]Event, len(evs))
	for i, e := range evs {
		out[i] = Event{Event: e, Source: src(i)}
	}
	return out
}

// TestSequence: the script on 6.12 (kernel events, then a poll after each
// step) and on 6.1 (polls only) gives the same events, each once, from
// the source that saw it first.
func TestSequence(t *testing.T) {
	for _, kernel := range []bool{true, false} {
		w := newWorld()
		m, got := collect(t, w)
		for _, s := range steps(w) {
			s.change()
			if kernel {
				if err := m.kernel(s.kernel); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.poll(); err != nil {
				t.Fatal(err)
			}
		}
		src := func(int) string { return FromPoll }
		if kernel {
			src = func(i int) string {
				if i <= 1 || i == 7 {
					return FromKernel
				}
				return FromPoll
			}
		}
		if w := want(src); !reflect.DeepEqual(*got, w) {
			t.Errorf("kernel events %v:\n%s\nwant\n%s", kernel, lines(*got), lines(w))
		}
	}
}

// TestPollFirst: a poll that runs before the kernel's events are read
// reports the change; the late events then change nothing.
func TestPollFirst(t *testing.T) {
	w := newWorld()
	m, got := collect(t, w)
	s := steps(w)
	s[0].change()
	if err := m.poll(); err != nil {
		t.Fatal(err)
	}
	if err := m.kernel(s[0].kernel); err != nil {
		t.Fatal(err)
	}
	s[4].change()
	if err := m.poll(); err != nil {
		t.Fatal(err)
	}
	if err := m.kernel(s[4].kernel); err != nil {
		t.Fatal(err)
	}
	all := want(func(int) string { return FromPoll })
	gone := Event{Event: inventory.Event{Type: inventory.DeviceRemoved, Ifindex: u32(2), Ifname: "mon0"}, Source: FromPoll}
	if w := append(all[:2:2], gone); !reflect.DeepEqual(*got, w) {
		t.Errorf("got\n%s\nwant\n%s", lines(*got), lines(w))
	}
}

// TestRegisterThenPoll: a poll between REGISTER and NETDEV_ATTACH says
// the attachment (the state had no port); the ATTACH is then old news.
// A port added by ATTACH has no state until the next poll, which fills
// it without an event.
func TestRegisterThenPoll(t *testing.T) {
	w := newWorld()
	m, got := collect(t, w)
	steps(w)[0].change()
	m.kernel([]nldev.Notification{register})
	m.poll()
	m.kernel([]nldev.Notification{attach})
	all := want(func(i int) string {
		if i == 0 {
			return FromKernel
		}
		return FromPoll
	})
	if w := all[:2]; !reflect.DeepEqual(*got, w) {
		t.Errorf("got\n%s\nwant\n%s", lines(*got), lines(w))
	}

	w2 := newWorld()
	m2, got2 := collect(t, w2)
	steps(w2)[0].change()
	m2.kernel([]nldev.Notification{register, attach})
	if p := m2.state.Devices[1].Ports[0]; p.State != "" || p.Netdev != "mva" {
		t.Fatalf("port after ATTACH: %+v", p)
	}
	m2.poll()
	if len(*got2) != 2 {
		t.Errorf("the poll after the kernel's events reported more:\n%s", lines(*got2))
	}
	if p := m2.state.Devices[1].Ports[0]; p.State != "ACTIVE" {
		t.Errorf("port after the poll: %+v", p)
	}

	// When polling, the port's state is read with the kernel's events:
	// the link going down before the next poll is a change.
	w3 := newWorld()
	m3, got3 := collect(t, w3)
	m3.cfg.Poll = time.Hour
	s := steps(w3)
	s[0].change()
	m3.kernel(s[0].kernel)
	s[2].change()
	m3.poll()
	if len(*got3) != 4 || (*got3)[2].Type != inventory.PortStateChanged || (*got3)[2].New != "DOWN" {
		t.Errorf("down right after the add:\n%s", lines(*got3))
	}
}

// TestKernelDetails: what only the state knows fills the kernel's events
// (the detached netdev, an unannounced rename), and 6.13's renames.
func TestKernelDetails(t *testing.T) {
	w := newWorld()
	m, got := collect(t, w)
	m.kernel([]nldev.Notification{
		{Type: nldev.NotifyNetdevDetach, DevIndex: 0, DevName: "rxe0", Port: u32(1)},
		{Type: nldev.NotifyNetdevDetach, DevIndex: 0, DevName: "rxe0", Port: u32(1)}, // again: nothing
		{Type: nldev.NotifyNetdevAttach, DevIndex: 0, DevName: "fast0", Port: u32(1), NetdevIndex: u32(9), NetdevName: "eth9"},
		{Type: nldev.NotifyNetdevAttach, DevIndex: 0, DevName: "fast0", Port: u32(1), NetdevIndex: u32(10), NetdevName: "eth10"},
		{Type: nldev.NotifyNetdevRename, DevIndex: 0, DevName: "fast0", Port: u32(1), NetdevIndex: u32(10), NetdevName: "lan0"},
		{Type: nldev.NotifyRename, DevIndex: 0, DevName: "rxe0"},
		{Type: nldev.NotifyRename, DevIndex: 0, DevName: "rxe0"},
		{Type: 77, DevIndex: 0, DevName: "rxe0"},
		{Type: nldev.NotifyUnregister, DevIndex: 5, DevName: "gone"}, // never known
	})
	ev := func(t inventory.EventType, name, old, new string, nd *uint32, port uint32) Event {
		return Event{Event: inventory.Event{Type: t, Ifindex: u32(0), Ifname: name, Port: port, Old: old, New: new, NetdevIndex: nd}, Source: FromKernel}
	}
	w2 := []Event{
		ev(inventory.NetdevDetached, "rxe0", "eth0", "", u32(4), 1),
		ev(inventory.DeviceRenamed, "fast0", "rxe0", "fast0", nil, 0),
		ev(inventory.NetdevAttached, "fast0", "", "eth9", u32(9), 1),
		ev(inventory.NetdevDetached, "fast0", "eth9", "", u32(9), 1),
		ev(inventory.NetdevAttached, "fast0", "", "eth10", u32(10), 1),
		ev(NetdevRenamed, "fast0", "eth10", "lan0", u32(10), 1),
		ev(inventory.DeviceRenamed, "rxe0", "fast0", "rxe0", nil, 0),
	}
	if !reflect.DeepEqual(*got, w2) {
		t.Errorf("got\n%s\nwant\n%s", lines(*got), lines(w2))
	}
}

// TestCompareOffline: captured trees are keyed by name; a device that
// appears is added, then attached.
func TestCompareOffline(t *testing.T) {
	old := &inventory.Snapshot{Devices: []inventory.SnapDevice{{Name: "rxe0", Ports: []inventory.SnapPort{{Port: 1, State: "ACTIVE", Netdev: "eth0"}}}}}
	new := &inventory.Snapshot{Devices: []inventory.SnapDevice{old.Devices[0], {Name: "rxe1", Ports: []inventory.SnapPort{{Port: 1, State: "DOWN", Netdev: "eth1"}}}}}
	got := Compare(old, new)
	w := []inventory.Event{{Type: inventory.DeviceAdded, Ifname: "rxe1"}, {Type: inventory.NetdevAttached, Ifname: "rxe1", Port: 1, New: "eth1"}}
	if !reflect.DeepEqual(got, w) {
		t.Errorf("got %+v", got)
	}
}

// fakeKernel is a notification stream the test feeds.
type fakeKernel struct {
	ch     chan batch
	once   sync.Once
	closed chan struct{}
}

func newKernel() *fakeKernel {
	return &fakeKernel{ch: make(chan batch, 8), closed: make(chan struct{})}
}

func (k *fakeKernel) Receive() ([]nldev.Notification, error) {
	select {
	case b := <-k.ch:
		return b.ns, b.err
	case <-k.closed:
		return nil, errors.New("closed")
	}
}

func (k *fakeKernel) Close() error { k.once.Do(func() { close(k.closed) }); return nil }

// TestRun: kernel events and polls in one stream until the context ends:
// then Run returns nil and has closed the kernel stream. Lost events are
// said and repaired by a snapshot.
func TestRun(t *testing.T) {
	w := newWorld()
	k := newKernel()
	out := make(chan Event, 32)
	var warned []error
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The first snapshot must be taken before the world changes, or the
	// add is already in it (a sleep was not enough under qemu-user).
	taken := make(chan struct{})
	var once sync.Once
	snapshot := func() (*inventory.Snapshot, error) {
		defer once.Do(func() { close(taken) })
		return w.snapshot()
	}
	go func() {
		done <- Run(ctx, Config{Snapshot: snapshot, Kernel: k, Poll: 5 * time.Millisecond,
			Emit: func(e Event) error { out <- e; return nil }, Warn: func(err error) { warned = append(warned, err) }})
	}()
	next := func() Event {
		select {
		case e := <-out:
			return e
		case <-time.After(5 * time.Second):
			t.Fatalf("no event within 5 s (warned %v)", warned)
		}
		return Event{}
	}
	<-taken
	s := steps(w)
	s[0].change()
	k.ch <- batch{ns: s[0].kernel}
	// Whichever source reports it, the add comes once, attached after.
	if e1, e2 := next(), next(); e1.Type != inventory.DeviceAdded || e2.Type != inventory.NetdevAttached {
		t.Fatalf("add: %+v %+v", e1, e2)
	}
	s[2].change()
	if e1, e2 := next(), next(); e1.Type != inventory.PortStateChanged || e1.Source != FromPoll || e2.Type != inventory.PhysStateChanged {
		t.Fatalf("down: %+v %+v", e1, e2)
	}
	// Lost events: said, and the snapshot right away reports the change.
	w.set(func(d []inventory.SnapDevice) []inventory.SnapDevice { return d[:1] })
	k.ch <- batch{err: nldev.ErrEventsLost}
	if e := next(); e.Type != inventory.DeviceRemoved || e.Source != FromPoll {
		t.Fatalf("after lost events: %+v", e)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	select {
	case <-k.closed:
	default:
		t.Error("Run left the kernel stream open")
	}
	if len(warned) != 1 || !errors.Is(warned[0], nldev.ErrEventsLost) {
		t.Errorf("warnings %v", warned)
	}
	select {
	case e := <-out:
		t.Errorf("extra event %+v", e)
	default:
	}
}

// TestRunErrors: the first snapshot's error, a kernel stream that breaks,
// a failing Emit and a poll that fails twice end Run with that error; a
// poll that fails once is tried again.
func TestRunErrors(t *testing.T) {
	boom := errors.New("boom")
	w := &world{errs: []error{boom}}
	if err := Run(context.Background(), Config{Snapshot: w.snapshot, Emit: func(Event) error { return nil }}); err != boom {
		t.Errorf("first snapshot: %v", err)
	}
	k := newKernel()
	k.ch <- batch{err: boom}
	if err := Run(context.Background(), Config{Snapshot: newWorld().snapshot, Kernel: k, Emit: func(Event) error { return nil }}); err != boom {
		t.Errorf("kernel stream: %v", err)
	}
	k = newKernel()
	k.ch <- batch{ns: []nldev.Notification{{Type: nldev.NotifyUnregister, DevIndex: 0}}}
	if err := Run(context.Background(), Config{Snapshot: newWorld().snapshot, Kernel: k, Emit: func(Event) error { return boom }}); err != boom {
		t.Errorf("emit: %v", err)
	}
	// Initial snapshot, a failing one, then the device is gone.
	w = newWorld()
	w.errs = []error{nil, boom}
	calls := 0
	var got []Event
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Run(ctx, Config{Snapshot: func() (*inventory.Snapshot, error) {
		if calls++; calls == 3 {
			w.set(func([]inventory.SnapDevice) []inventory.SnapDevice { return nil })
		}
		return w.snapshot()
	}, Poll: time.Millisecond, Emit: func(e Event) error { got = append(got, e); cancel(); return nil }})
	// Snapshots: initial, failed, retried (a change), the confirmation.
	if err != nil || len(got) != 1 || got[0].Type != inventory.DeviceRemoved || calls != 4 {
		t.Errorf("a poll failing once: %v %+v after %d snapshots", err, got, calls)
	}
	w = newWorld()
	w.errs = []error{nil, boom, boom}
	if err := Run(context.Background(), Config{Snapshot: w.snapshot, Poll: time.Millisecond, Emit: func(Event) error { return nil }}); err != boom {
		t.Errorf("a poll failing twice: %v", err)
	}
}

// TestTornSnapshot: a snapshot taken while a device went away (its port
// files gone, its directory not yet) is taken again: only the removal is
// said.
func TestTornSnapshot(t *testing.T) {
	w := newWorld()
	w.devs = append(w.devs, roce(1, "rxe1", "eth1", 6))
	m, got := collect(t, w)
	calls := 0
	m.cfg.Snapshot = func() (*inventory.Snapshot, error) {
		calls++
		s, err := w.snapshot()
		if calls == 1 {
			s.Devices[1].Ports[0] = inventory.SnapPort{Port: 1}
		} else {
			s.Devices = s.Devices[:1]
		}
		return s, err
	}
	if err := m.poll(); err != nil {
		t.Fatal(err)
	}
	w2 := []Event{{Event: inventory.Event{Type: inventory.DeviceRemoved, Ifindex: u32(1), Ifname: "rxe1"}, Source: FromPoll}}
	if !reflect.DeepEqual(*got, w2) || calls != 3 {
		t.Errorf("after %d snapshots:\n%s", calls, lines(*got))
	}
}

// TestPollAwaitsKernel: the kernel announces a registration after the
// device is in the dump (and an unregistration after it left), so a poll
// can see the change first. It waits for the kernel's events, which keep
// the credit; without them it says the change itself after the grace.
// What the kernel's events went past while it waited (a device added and
// removed again) is compared anew: nothing from the poll. Lost events end
// the wait.
func TestPollAwaitsKernel(t *testing.T) {
	run := func(t *testing.T, kernel func(w *world, ch chan<- batch)) []Event {
		w := newWorld()
		m, got := collect(t, w)
		ch := make(chan batch, 8)
		m.events, m.grace = ch, 200*time.Millisecond
		steps(w)[0].change()
		go kernel(w, ch)
		start := time.Now()
		if err := m.poll(); err != nil {
			t.Fatal(err)
		}
		t.Logf("poll took %v", time.Since(start))
		return *got
	}
	late := func(ns ...nldev.Notification) func(*world, chan<- batch) {
		return func(_ *world, ch chan<- batch) {
			time.Sleep(20 * time.Millisecond)
			ch <- batch{ns: ns}
		}
	}
	add := want(func(int) string { return FromKernel })[:2]

	t.Run("register then attach", func(t *testing.T) {
		got := run(t, func(w *world, ch chan<- batch) {
			late(register)(w, ch)
			late(attach)(w, ch)
		})
		if !reflect.DeepEqual(got, add) {
			t.Errorf("got\n%s\nwant\n%s", lines(got), lines(add))
		}
	})
	t.Run("no kernel event", func(t *testing.T) {
		got := run(t, func(*world, chan<- batch) {})
		if w := want(func(int) string { return FromPoll })[:2]; !reflect.DeepEqual(got, w) {
			t.Errorf("got\n%s\nwant\n%s", lines(got), lines(w))
		}
	})
	t.Run("added and removed", func(t *testing.T) {
		got := run(t, func(w *world, ch chan<- batch) {
			time.Sleep(20 * time.Millisecond)
			w.set(func(d []inventory.SnapDevice) []inventory.SnapDevice { return d[:1] })
			ch <- batch{ns: []nldev.Notification{register, attach, {Type: nldev.NotifyUnregister, DevIndex: 2, DevName: "mon0"}}}
		})
		w := append(add, Event{Event: inventory.Event{Type: inventory.DeviceRemoved, Ifindex: u32(2), Ifname: "mon0"}, Source: FromKernel})
		if !reflect.DeepEqual(got, w) {
			t.Errorf("got\n%s\nwant\n%s", lines(got), lines(w))
		}
	})
	t.Run("lost events", func(t *testing.T) {
		got := run(t, func(_ *world, ch chan<- batch) { ch <- batch{err: nldev.ErrEventsLost} })
		if w := want(func(int) string { return FromPoll })[:2]; !reflect.DeepEqual(got, w) {
			t.Errorf("got\n%s\nwant\n%s", lines(got), lines(w))
		}
	})
}

// TestUnregisterNamesTheDeviceNow: a device renamed without an event (6.12
// sends none) and then deleted is named as the kernel's UNREGISTER names
// it, its rename said first; a known name is removed as it is.
func TestUnregisterNamesTheDeviceNow(t *testing.T) {
	w := newWorld()
	m, got := collect(t, w)
	m.kernel([]nldev.Notification{
		{Type: nldev.NotifyUnregister, DevIndex: 0, DevName: "rxemr2"}, // was rxe0
	})
	ev := func(t inventory.EventType, name, old, new string) Event {
		return Event{Event: inventory.Event{Type: t, Ifindex: u32(0), Ifname: name, Old: old, New: new}, Source: FromKernel}
	}
	want := []Event{
		ev(inventory.DeviceRenamed, "rxemr2", "rxe0", "rxemr2"),
		ev(inventory.DeviceRemoved, "rxemr2", "", ""),
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("got\n%s\nwant\n%s", lines(*got), lines(want))
	}
}

// Package monitor merges the two sources of RDMA device events into one
// stream: the kernel's NLDEV notifications (nldev.Listener, Linux 6.12+:
// registration, removal, netdev attach and detach; renames from 6.13) and
// the difference between successive inventory snapshots (polling: what the
// kernel does not send, such as port state, and everything on kernels
// without notifications). Every event has the same shape whatever its
// source, and a change both sources see is said once.
//
// How a change is said once: the merger keeps the state it has reported.
// A kernel event is applied to that state and printed only if it changes
// it; a poll prints the difference between that state and the new
// snapshot, then takes the snapshot as the state. So a device the kernel
// announced is already in the state when the next poll sees it, and a
// kernel event that arrives after a poll already reported its change
// changes nothing. Kernel events queued before a poll are applied before
// the poll's snapshot is compared, so that the kernel keeps the credit.
// The kernel announces a registration only after the device is in the
// dump (and an unregistration after it left): a poll that sees such a
// change first waits a moment for the kernel's event (kernelGrace).
package monitor

import (
	"cmp"
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// Where an event came from: the JSON "source".
const (
	FromKernel = "kernel" // an NLDEV notification
	FromPoll   = "poll"   // the difference between two inventory snapshots
)

// NetdevRenamed: a port's netdev has a new name (kernel events of 6.13+;
// the inventory difference keys netdevs by ifindex and does not see it).
const NetdevRenamed inventory.EventType = "netdev_renamed"

// Event is an inventory event with its source.
type Event struct {
	inventory.Event
	Source string `json:"source"`
}

// Kernel is where notifications come from: an *nldev.Listener.
type Kernel interface {
	// Receive blocks until notifications arrive; nldev.ErrEventsLost
	// when the kernel dropped some, any other error ends the stream.
	Receive() ([]nldev.Notification, error)
	// Close makes a blocked Receive return.
	Close() error
}

// Config says what to merge.
type Config struct {
	// Snapshot takes the inventory now: the initial state, each poll, and
	// the resynchronisation after lost kernel events. Required.
	Snapshot func() (*inventory.Snapshot, error)
	// Kernel: nil without kernel events. Run closes it.
	Kernel Kernel
	// Poll: the interval between snapshots; 0 polls never.
	Poll time.Duration
	// Emit prints one event; an error ends Run with it.
	Emit func(Event) error
	// Warn says something that does not end the stream (lost events).
	Warn func(error)
	// Ready, if set, is called once the first snapshot is taken: from
	// then on every change is reported.
	Ready func()
}

type batch struct {
	ns  []nldev.Notification
	err error
}

// Run takes the initial snapshot, then emits events until ctx is done
// (then it emits what the kernel has already delivered and returns nil)
// or a snapshot, the kernel stream or Emit fails.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Kernel != nil {
		defer cfg.Kernel.Close()
	}
	first, err := cfg.Snapshot()
	if err != nil {
		return err
	}
	m := &merger{cfg: cfg, state: first, grace: kernelGrace, stop: ctx.Done()}
	if cfg.Ready != nil {
		cfg.Ready()
	}
	var kernel chan batch
	if cfg.Kernel != nil {
		kernel = make(chan batch, 64)
		done := make(chan struct{})
		defer close(done)
		go receive(cfg.Kernel, kernel, done)
		m.events = kernel
	}
	var tick <-chan time.Time
	if cfg.Poll > 0 {
		t := time.NewTicker(cfg.Poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			for {
				select {
				case b := <-kernel:
					if b.err == nil {
						if err := m.kernel(b.ns); err != nil {
							return err
						}
					}
				default:
					return nil
				}
			}
		case b := <-kernel:
			if err := m.handle(b); err != nil {
				return err
			}
		case <-tick:
			if ctx.Err() != nil {
				continue // stopping: no more polls
			}
			if err := m.pending(kernel); err != nil {
				return err
			}
			if err := m.poll(); err != nil {
				return err
			}
		}
	}
}

// receive passes the kernel's batches on until an error other than lost
// events, or until Run is done.
func receive(k Kernel, out chan<- batch, done <-chan struct{}) {
	for {
		ns, err := k.Receive()
		select {
		case out <- batch{ns, err}:
		case <-done:
			return
		}
		if err != nil && !errors.Is(err, nldev.ErrEventsLost) {
			return
		}
	}
}

// kernelGrace is how long a poll that sees a change the kernel announces
// waits for the kernel's event. The kernel sends REGISTER after the
// device is in the dump and its clients (CM, MAD, uverbs...) are added,
// UNREGISTER after they are removed (drivers/infiniband/core/device.c):
// milliseconds on hardware, more on a loaded or emulated CPU.
const kernelGrace = time.Second

type merger struct {
	cfg    Config
	state  *inventory.Snapshot // what has been reported
	events <-chan batch        // the kernel's batches; nil without them
	grace  time.Duration       // see kernelGrace
	stop   <-chan struct{}     // Run's context is done: wait no more
}

// handle applies one batch from the kernel. Lost events are said, and a
// snapshot repairs the state (its differences come as polled: the lost
// events are not coming).
func (m *merger) handle(b batch) error {
	if errors.Is(b.err, nldev.ErrEventsLost) {
		if m.cfg.Warn != nil {
			m.cfg.Warn(b.err)
		}
		n, err := m.stable()
		if err != nil {
			return err
		}
		return m.adopt(n)
	}
	if b.err != nil {
		return b.err
	}
	return m.kernel(b.ns)
}

// pending applies the batches already queued, without waiting.
func (m *merger) pending(kernel <-chan batch) error {
	for {
		select {
		case b := <-kernel:
			if err := m.handle(b); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

func (m *merger) emit(src string, evs []inventory.Event) error {
	for _, e := range evs {
		if err := m.cfg.Emit(Event{Event: e, Source: src}); err != nil {
			return err
		}
	}
	return nil
}

// kernel applies notifications. When polling, a port they added (its
// state unknown) gets its state from a snapshot taken now, before the
// events are emitted, so that a change right after is the next poll's.
func (m *merger) kernel(ns []nldev.Notification) error {
	evs := m.applyAll(ns)
	if m.cfg.Poll > 0 && unknownState(m.state) {
		if n, err := m.cfg.Snapshot(); err == nil {
			fillUnknown(m.state, n)
		}
	}
	return m.emit(FromKernel, evs)
}

// applyAll applies notifications and returns their events, in order.
func (m *merger) applyAll(ns []nldev.Notification) []inventory.Event {
	var evs []inventory.Event
	for _, n := range ns {
		evs = append(evs, m.apply(n)...)
	}
	return evs
}

func unknownState(s *inventory.Snapshot) bool {
	for _, d := range s.Devices {
		for _, p := range d.Ports {
			if p.State == "" && p.PhysState == "" {
				return true
			}
		}
	}
	return false
}

// fillUnknown gives the ports of old whose state is unknown their state in
// new.
func fillUnknown(old, new *inventory.Snapshot) {
	live := old.Live && new.Live
	newAt := map[string]int{}
	for i, d := range new.Devices {
		newAt[key(live, d.Index, d.Name)] = i
	}
	for i := range old.Devices {
		o := &old.Devices[i]
		j, ok := newAt[key(live, o.Index, o.Name)]
		if !ok {
			continue
		}
		for pi := range o.Ports {
			q := &o.Ports[pi]
			if q.State != "" || q.PhysState != "" {
				continue
			}
			for _, np := range new.Devices[j].Ports {
				if np.Port == q.Port {
					q.State, q.PhysState = np.State, np.PhysState
				}
			}
		}
	}
}

// poll compares a new snapshot with the state and makes it the state. A
// snapshot that fails is tried once more (a device may vanish between
// the device dump and its port dump). A snapshot that differs from the
// state is taken again until two agree (at most 3 more): one taken while
// a device was going away can have half of it (sysfs files gone, the
// directory not yet), which would be events that never happened.
//
// A difference the kernel announces (see announced) is left to the
// kernel's event for up to the grace: the kernel keeps the credit for
// what it sends, whichever source sees it first.
func (m *merger) poll() error {
	n, err := m.stable()
	if err != nil {
		return err
	}
	applied, err := m.awaitKernel(n)
	if err != nil {
		return err
	}
	if applied {
		// The kernel's events may have gone past n (a device added and
		// removed again): compare what is there now.
		if n, err = m.stable(); err != nil {
			return err
		}
	}
	return m.adopt(n)
}

// stable takes snapshots until two agree (poll).
func (m *merger) stable() (*inventory.Snapshot, error) {
	n, err := m.snapshot()
	if err != nil {
		return nil, err
	}
	if len(Compare(clone(m.state), n)) > 0 {
		for range 3 {
			again, err := m.snapshot()
			if err != nil {
				return nil, err
			}
			if reflect.DeepEqual(again, n) {
				break
			}
			n = again
		}
	}
	return n, nil
}

// adopt says what n differs by from the state, as polled, and makes n the
// state.
func (m *merger) adopt(n *inventory.Snapshot) error {
	evs := Compare(m.state, n)
	m.state = n
	return m.emit(FromPoll, evs)
}

// awaitKernel applies the kernel's batches as they come, for up to the
// grace, while n differs from the state by something the kernel
// announces; applied says whether it applied any. Lost events end the
// wait (the poll then repairs the state). Ports the batches add get their
// state from the poll's snapshot after the wait, not one each (kernel).
func (m *merger) awaitKernel(n *inventory.Snapshot) (applied bool, err error) {
	if m.events == nil || !announced(Compare(clone(m.state), n)) {
		return false, nil
	}
	t := time.NewTimer(m.grace)
	defer t.Stop()
	for {
		select {
		case b := <-m.events:
			if errors.Is(b.err, nldev.ErrEventsLost) {
				if m.cfg.Warn != nil {
					m.cfg.Warn(b.err)
				}
				return applied, nil
			}
			if b.err != nil {
				return applied, b.err
			}
			applied = true
			if err := m.emit(FromKernel, m.applyAll(b.ns)); err != nil {
				return true, err
			}
			if !announced(Compare(clone(m.state), n)) {
				return true, nil
			}
		case <-t.C:
			return applied, nil
		case <-m.stop:
			return applied, nil
		}
	}
}

// announced: evs has a change every kernel with the notify group sends
// (6.12: REGISTER, UNREGISTER, NETDEV_ATTACH, NETDEV_DETACH). Renames
// are left out: 6.12 does not send them, and a poll that waited for
// them would say every rename a grace late there.
func announced(evs []inventory.Event) bool {
	for _, e := range evs {
		switch e.Type {
		case inventory.DeviceAdded, inventory.DeviceRemoved, inventory.NetdevAttached, inventory.NetdevDetached:
			return true
		}
	}
	return false
}

func (m *merger) snapshot() (*inventory.Snapshot, error) {
	n, err := m.cfg.Snapshot()
	if err != nil {
		time.Sleep(100 * time.Millisecond)
		n, err = m.cfg.Snapshot()
	}
	return n, err
}

func clone(s *inventory.Snapshot) *inventory.Snapshot {
	c := *s
	c.Devices = slices.Clone(s.Devices)
	for i := range c.Devices {
		c.Devices[i].Ports = slices.Clone(c.Devices[i].Ports)
	}
	return &c
}

func (m *merger) find(idx uint32) int {
	return slices.IndexFunc(m.state.Devices, func(d inventory.SnapDevice) bool { return d.Index != nil && *d.Index == idx })
}

// apply changes the state as notification n says and returns the events
// of what changed: none when the state already had it (a poll saw it).
func (m *merger) apply(n nldev.Notification) []inventory.Event {
	idx := n.DevIndex
	i := m.find(idx)
	switch n.Type {
	case nldev.NotifyRegister:
		if i >= 0 || n.DevName == "" {
			return nil
		}
		m.state.Devices = append(m.state.Devices, inventory.SnapDevice{Index: &idx, Name: n.DevName})
		return []inventory.Event{{Type: inventory.DeviceAdded, Ifindex: &idx, Ifname: n.DevName}}
	case nldev.NotifyUnregister:
		if i < 0 {
			return nil
		}
		d := m.state.Devices[i]
		m.state.Devices = slices.Delete(m.state.Devices, i, i+1)
		// UNREGISTER carries the device's name at its removal: one
		// renamed without an event (6.12 sends none) is named so, and
		// its rename said first, as for every other event below.
		var out []inventory.Event
		if n.DevName != "" && n.DevName != d.Name {
			out = append(out, inventory.Event{Type: inventory.DeviceRenamed, Ifindex: &idx, Ifname: n.DevName, Old: d.Name, New: n.DevName})
			d.Name = n.DevName
		}
		return append(out, inventory.Event{Type: inventory.DeviceRemoved, Ifindex: &idx, Ifname: d.Name})
	}
	if i < 0 {
		return nil // a device the state does not have: the next poll tells
	}
	d := &m.state.Devices[i]
	var out []inventory.Event
	// Every event names the device as it is now: a rename the kernel did
	// not announce (6.12 sends none) shows here first.
	if n.DevName != "" && n.DevName != d.Name {
		out = append(out, inventory.Event{Type: inventory.DeviceRenamed, Ifindex: &idx, Ifname: n.DevName, Old: d.Name, New: n.DevName})
		d.Name = n.DevName
	}
	if n.Type == nldev.NotifyRename || n.Port == nil {
		return out
	}
	port := *n.Port
	p := slices.IndexFunc(d.Ports, func(q inventory.SnapPort) bool { return q.Port == port })
	ev := func(t inventory.EventType, old, new string, nd *uint32) inventory.Event {
		return inventory.Event{Type: t, Ifindex: &idx, Ifname: d.Name, Port: port, Old: old, New: new, NetdevIndex: nd}
	}
	switch n.Type {
	case nldev.NotifyNetdevAttach:
		if p < 0 {
			// A port the state does not know yet (its device came from
			// a kernel event): state unknown until the next poll.
			d.Ports = append(d.Ports, inventory.SnapPort{Port: port})
			p = len(d.Ports) - 1
		}
		q := &d.Ports[p]
		if hasNetdev(*q) && sameNetdev(*q, n.NetdevIndex, n.NetdevName) {
			return out
		}
		if hasNetdev(*q) {
			out = append(out, ev(inventory.NetdevDetached, q.Netdev, "", q.NetdevIndex))
		}
		q.Netdev, q.NetdevIndex = n.NetdevName, n.NetdevIndex
		out = append(out, ev(inventory.NetdevAttached, "", n.NetdevName, n.NetdevIndex))
	case nldev.NotifyNetdevDetach:
		if p < 0 || !hasNetdev(d.Ports[p]) {
			return out
		}
		q := &d.Ports[p]
		out = append(out, ev(inventory.NetdevDetached, q.Netdev, "", q.NetdevIndex))
		q.Netdev, q.NetdevIndex = "", nil
	case nldev.NotifyNetdevRename:
		if p < 0 || n.NetdevName == "" || d.Ports[p].Netdev == n.NetdevName {
			return out
		}
		q := &d.Ports[p]
		out = append(out, ev(NetdevRenamed, q.Netdev, n.NetdevName, n.NetdevIndex))
		q.Netdev = n.NetdevName
		if n.NetdevIndex != nil {
			q.NetdevIndex = n.NetdevIndex
		}
	}
	return out
}

func hasNetdev(p inventory.SnapPort) bool { return p.Netdev != "" || p.NetdevIndex != nil }

func sameNetdev(p inventory.SnapPort, idx *uint32, name string) bool {
	if p.NetdevIndex != nil && idx != nil {
		return *p.NetdevIndex == *idx
	}
	return p.Netdev == name
}

// Compare is inventory.Diff as monitor says it:
//   - a port whose state the kernel's events left unknown (a port added
//     by NETDEV_ATTACH) takes the new snapshot's state without an event;
//   - a port that appears with a netdev bound (a new device's, or one the
//     state had no entry for) is netdev_attached, right after its device's
//     device_added: what the kernel sends on registration, so that a
//     device added looks the same whichever source saw it.
//
// It fills the unknown states of old in place.
func Compare(old, new *inventory.Snapshot) []inventory.Event {
	live := old.Live && new.Live
	fillUnknown(old, new)
	oldAt := map[string]int{}
	for i, d := range old.Devices {
		oldAt[key(live, d.Index, d.Name)] = i
	}
	attached := map[string][]inventory.Event{}
	var order []string
	for _, d := range new.Devices {
		k := key(live, d.Index, d.Name)
		var had []inventory.SnapPort
		if i, ok := oldAt[k]; ok {
			had = old.Devices[i].Ports
		}
		ports := slices.Clone(d.Ports)
		slices.SortFunc(ports, func(a, b inventory.SnapPort) int { return cmp.Compare(a.Port, b.Port) })
		for _, p := range ports {
			if !hasNetdev(p) || slices.ContainsFunc(had, func(q inventory.SnapPort) bool { return q.Port == p.Port }) {
				continue
			}
			var ix *uint32
			if live {
				ix = d.Index
			}
			if attached[k] == nil {
				order = append(order, k)
			}
			attached[k] = append(attached[k], inventory.Event{Type: inventory.NetdevAttached, Ifindex: ix, Ifname: d.Name, Port: p.Port, New: p.Netdev, NetdevIndex: p.NetdevIndex})
		}
	}
	var out []inventory.Event
	for _, e := range inventory.Diff(old, new) {
		out = append(out, e)
		if e.Type == inventory.DeviceAdded {
			k := key(live, e.Ifindex, e.Ifname)
			out = append(out, attached[k]...)
			delete(attached, k)
		}
	}
	for _, k := range order {
		out = append(out, attached[k]...)
	}
	return out
}

// key is how Diff keys a device: its NLDEV index when both snapshots are
// live, else its name.
func key(live bool, idx *uint32, name string) string {
	if live && idx != nil {
		return "#" + strconv.FormatUint(uint64(*idx), 10)
	}
	return name
}

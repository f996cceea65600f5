package inventory

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// The difference between two inventories, as events: what monitor --poll
// prints, one JSON object per event. Live snapshots key devices by NLDEV
// device index, so a rename is one event and a device re-created under
// the same name is removed + added (it has a new index). Captured trees
// have no index: they are keyed by name, and a rename is removed + added.

// Snapshot is the devices and ports of an inventory at one time.
type Snapshot struct {
	Live    bool // keyed by NLDEV index; else by name
	Devices []SnapDevice
}

// SnapDevice is one device of a Snapshot.
type SnapDevice struct {
	Index *uint32 // NLDEV device index (live only)
	Name  string
	Ports []SnapPort
}

// SnapPort is what a Snapshot keeps of a port.
type SnapPort struct {
	Port        uint32
	State       string // ACTIVE, DOWN...
	PhysState   string // LINK_UP, DISABLED...
	Netdev      string
	NetdevIndex *uint32
}

// Snapshot takes the devices and ports of the source: live, one device
// dump and one port dump per device and nothing else (no sysfs: a poll
// loop pays only for what it compares); offline, the tree's files.
func (s *Source) Snapshot() (*Snapshot, error) {
	devs, err := s.Devices("", DeviceOptions{})
	if err != nil {
		return nil, err
	}
	ports, err := s.b.snapshotPorts()
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{Live: !s.Offline()}
	at := map[string]int{}
	for _, d := range devs {
		at[d.Name] = len(snap.Devices)
		snap.Devices = append(snap.Devices, SnapDevice{Index: d.Index, Name: d.Name})
	}
	for _, p := range ports {
		i, ok := at[p.Dev]
		if !ok {
			continue
		}
		snap.Devices[i].Ports = append(snap.Devices[i].Ports, SnapPort{Port: p.Port, State: p.State, PhysState: p.PhysState,
			Netdev: p.Netdev, NetdevIndex: p.NetdevIndex})
	}
	return snap, nil
}

// snapshotPorts is every port as the port dumps alone give it.
func (l *live) snapshotPorts() ([]Port, error) {
	refs, err := l.targets("", 0)
	if err != nil {
		return nil, err
	}
	var out []Port
	for _, r := range refs {
		ps, err := l.nlPorts(*r.Index)
		if err != nil {
			return nil, err
		}
		for _, p := range ps {
			if p.Port != r.Port {
				continue
			}
			q := Port{Dev: r.Dev, Port: p.Port, Netdev: p.NetdevName, NetdevIndex: p.NetdevIndex}
			if p.State != nil {
				q.State = vocab.PortState(*p.State).String()
			}
			if p.PhysState != nil {
				q.PhysState = vocab.PhysState(*p.PhysState).String()
			}
			out = append(out, q)
		}
	}
	return out, nil
}

// EventType says what changed.
type EventType string

// Event types, the "type" of an event's JSON.
const (
	DeviceAdded      EventType = "device_added"
	DeviceRemoved    EventType = "device_removed"
	DeviceRenamed    EventType = "device_renamed"     // Old: the previous name
	NetdevAttached   EventType = "netdev_attached"    // New: the netdev
	NetdevDetached   EventType = "netdev_detached"    // Old: the netdev
	PortStateChanged EventType = "port_state_changed" // Old, New: ACTIVE, DOWN...
	PhysStateChanged EventType = "phys_state_changed" // Old, New: LINK_UP, DISABLED...
)

// Event is one change between two snapshots. Keys are those of the other
// commands' JSON: ifindex and ifname are the RDMA device's index and name.
type Event struct {
	Type    EventType `json:"type"`
	Ifindex *uint32   `json:"ifindex,omitempty"` // live only
	Ifname  string    `json:"ifname"`            // the current name (the last one, for a removed device)
	Port    uint32    `json:"port,omitempty"`    // port events only
	Old     string    `json:"old,omitempty"`
	New     string    `json:"new,omitempty"`
	// NetdevIndex is the ifindex of the netdev attached or detached.
	NetdevIndex *uint32 `json:"netdev_index,omitempty"`
}

func devKey(live bool, d SnapDevice) string {
	if live && d.Index != nil {
		return "#" + strconv.FormatUint(uint64(*d.Index), 10)
	}
	return d.Name
}

// Diff lists what changed from old to new: removed devices first, then,
// in new's order, added and renamed devices and their ports' changes
// (netdev detached before attached, then state, then physical state).
// Keys are NLDEV indexes when both snapshots are live, else names.
func Diff(old, new *Snapshot) []Event {
	live := old.Live && new.Live
	was := map[string]SnapDevice{}
	for _, d := range old.Devices {
		was[devKey(live, d)] = d
	}
	is := map[string]bool{}
	for _, d := range new.Devices {
		is[devKey(live, d)] = true
	}
	var out []Event
	for _, d := range old.Devices {
		if !is[devKey(live, d)] {
			out = append(out, Event{Type: DeviceRemoved, Ifindex: index(live, d), Ifname: d.Name})
		}
	}
	for _, d := range new.Devices {
		o, ok := was[devKey(live, d)]
		if !ok {
			out = append(out, Event{Type: DeviceAdded, Ifindex: index(live, d), Ifname: d.Name})
			continue
		}
		if o.Name != d.Name {
			out = append(out, Event{Type: DeviceRenamed, Ifindex: index(live, d), Ifname: d.Name, Old: o.Name, New: d.Name})
		}
		out = append(out, portEvents(live, o, d)...)
	}
	return out
}

func index(live bool, d SnapDevice) *uint32 {
	if !live {
		return nil
	}
	return d.Index
}

// portEvents compares the ports two snapshots have of one device. A port
// in only one of them (a device whose port count changed) has no state to
// compare and gives no event.
func portEvents(live bool, o, d SnapDevice) []Event {
	var out []Event
	ev := func(t EventType, port uint32, old, new string) Event {
		return Event{Type: t, Ifindex: index(live, d), Ifname: d.Name, Port: port, Old: old, New: new}
	}
	ports := slices.Clone(d.Ports)
	slices.SortFunc(ports, func(a, b SnapPort) int { return cmp.Compare(a.Port, b.Port) })
	for _, p := range ports {
		i := slices.IndexFunc(o.Ports, func(q SnapPort) bool { return q.Port == p.Port })
		if i < 0 {
			continue
		}
		q := o.Ports[i]
		if !sameNetdev(q, p) {
			if q.Netdev != "" || q.NetdevIndex != nil {
				e := ev(NetdevDetached, p.Port, q.Netdev, "")
				e.NetdevIndex = q.NetdevIndex
				out = append(out, e)
			}
			if p.Netdev != "" || p.NetdevIndex != nil {
				e := ev(NetdevAttached, p.Port, "", p.Netdev)
				e.NetdevIndex = p.NetdevIndex
				out = append(out, e)
			}
		}
		if q.State != p.State {
			out = append(out, ev(PortStateChanged, p.Port, q.State, p.State))
		}
		if q.PhysState != p.PhysState {
			out = append(out, ev(PhysStateChanged, p.Port, q.PhysState, p.PhysState))
		}
	}
	return out
}

// sameNetdev: the same netdev is bound, by ifindex when both know it (a
// renamed netdev stays bound), else by name.
func sameNetdev(a, b SnapPort) bool {
	if a.NetdevIndex != nil && b.NetdevIndex != nil {
		return *a.NetdevIndex == *b.NetdevIndex
	}
	return a.Netdev == b.Netdev && (a.NetdevIndex == nil) == (b.NetdevIndex == nil)
}

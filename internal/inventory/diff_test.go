package inventory

import (
	"encoding/json"
	"reflect"
	"testing"
)

func u32(v uint32) *uint32 { return &v }

func roce(idx uint32, name, netdev string, ndIdx uint32, state, phys string) SnapDevice {
	return SnapDevice{Index: u32(idx), Name: name, Ports: []SnapPort{{Port: 1, State: state, PhysState: phys, Netdev: netdev, NetdevIndex: u32(ndIdx)}}}
}

func TestDiffLive(t *testing.T) {
	old := &Snapshot{Live: true, Devices: []SnapDevice{
		roce(0, "rxe0", "eth0", 4, "ACTIVE", "LINK_UP"),
		roce(1, "rxe1", "eth1", 6, "ACTIVE", "LINK_UP"),
		roce(2, "rxe2", "eth2", 8, "ACTIVE", "LINK_UP"),
		roce(3, "rxe3", "eth3", 9, "ACTIVE", "LINK_UP"),
	}}
	new := &Snapshot{Live: true, Devices: []SnapDevice{
		roce(0, "fast0", "eth0", 4, "ACTIVE", "LINK_UP"),  // renamed
		roce(1, "rxe1", "eth1", 6, "DOWN", "DISABLED"),    // link down
		roce(3, "rxe3", "veth9", 12, "ACTIVE", "LINK_UP"), // another netdev
		roce(5, "rxe2", "eth2", 8, "ACTIVE", "LINK_UP"),   // re-created: new index
	}}
	got := Diff(old, new)
	want := []Event{
		{Type: DeviceRemoved, Ifindex: u32(2), Ifname: "rxe2"},
		{Type: DeviceRenamed, Ifindex: u32(0), Ifname: "fast0", Old: "rxe0", New: "fast0"},
		{Type: PortStateChanged, Ifindex: u32(1), Ifname: "rxe1", Port: 1, Old: "ACTIVE", New: "DOWN"},
		{Type: PhysStateChanged, Ifindex: u32(1), Ifname: "rxe1", Port: 1, Old: "LINK_UP", New: "DISABLED"},
		{Type: NetdevDetached, Ifindex: u32(3), Ifname: "rxe3", Port: 1, Old: "eth3", NetdevIndex: u32(9)},
		{Type: NetdevAttached, Ifindex: u32(3), Ifname: "rxe3", Port: 1, New: "veth9", NetdevIndex: u32(12)},
		{Type: DeviceAdded, Ifindex: u32(5), Ifname: "rxe2"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n%s\nwant\n%s", js(got), js(want))
	}
	if len(Diff(new, new)) != 0 {
		t.Error("no change, events")
	}
}

func TestDiffNetdev(t *testing.T) {
	bound := &Snapshot{Live: true, Devices: []SnapDevice{roce(0, "rxe0", "eth0", 4, "ACTIVE", "LINK_UP")}}
	unbound := &Snapshot{Live: true, Devices: []SnapDevice{{Index: u32(0), Name: "rxe0", Ports: []SnapPort{{Port: 1, State: "DOWN", PhysState: "DISABLED"}}}}}
	renamed := &Snapshot{Live: true, Devices: []SnapDevice{roce(0, "rxe0", "lan0", 4, "ACTIVE", "LINK_UP")}}
	if ev := Diff(bound, unbound); len(ev) != 3 || ev[0].Type != NetdevDetached || ev[0].Old != "eth0" || *ev[0].NetdevIndex != 4 {
		t.Errorf("detach: %s", js(ev))
	}
	if ev := Diff(unbound, bound); len(ev) != 3 || ev[0].Type != NetdevAttached || ev[0].New != "eth0" {
		t.Errorf("attach: %s", js(ev))
	}
	// The same ifindex under a new name is the same netdev, still bound.
	if ev := Diff(bound, renamed); len(ev) != 0 {
		t.Errorf("netdev renamed: %s", js(ev))
	}
}

// Captured trees have no index: by name, a rename is removed + added.
func TestDiffOffline(t *testing.T) {
	old := &Snapshot{Devices: []SnapDevice{{Name: "rxe0", Ports: []SnapPort{{Port: 1, State: "ACTIVE"}}}}}
	new := &Snapshot{Devices: []SnapDevice{{Name: "fast0", Ports: []SnapPort{{Port: 1, State: "ACTIVE"}}}}}
	got := Diff(old, new)
	want := []Event{{Type: DeviceRemoved, Ifname: "rxe0"}, {Type: DeviceAdded, Ifname: "fast0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events %s", js(got))
	}
	// A live snapshot against an offline one: by name, no index shown.
	live := &Snapshot{Live: true, Devices: []SnapDevice{roce(7, "rxe0", "eth0", 4, "DOWN", "")}}
	got = Diff(old, live)
	if len(got) != 2 || got[0].Type != NetdevAttached || got[1].Type != PortStateChanged || got[1].Ifindex != nil {
		t.Errorf("mixed: %s", js(got))
	}
}

func TestEventJSON(t *testing.T) {
	b, err := json.Marshal(Event{Type: PortStateChanged, Ifindex: u32(0), Ifname: "rxe0", Port: 1, Old: "ACTIVE", New: "DOWN"})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"type":"port_state_changed","ifindex":0,"ifname":"rxe0","port":1,"old":"ACTIVE","new":"DOWN"}` {
		t.Errorf("%s", b)
	}
	b, _ = json.Marshal(Event{Type: NetdevAttached, Ifname: "rxe0", Port: 1, New: "eth0", NetdevIndex: u32(4)})
	if string(b) != `{"type":"netdev_attached","ifname":"rxe0","port":1,"new":"eth0","netdev_index":4}` {
		t.Errorf("%s", b)
	}
}

// TestSnapshotSources: the live snapshot is keyed by index from one device
// dump and one port request per port; the captured one by name.
func TestSnapshotSources(t *testing.T) {
	k := twoRoCE(t)
	s, err := liveSource(t, k).Snapshot()
	if err != nil || !s.Live || len(s.Devices) != 2 || *s.Devices[1].Index != 1 || s.Devices[1].Ports[0].Netdev != "eth1" || s.Devices[0].Ports[0].State != "ACTIVE" {
		t.Fatalf("live %+v %v", s, err)
	}
	if k.reqs[cmdGet] != 1 || k.reqs[cmdPortGet] != 2 {
		t.Errorf("requests %v", k.reqs)
	}
	off, err := Captured(rxeTree).Snapshot()
	if err != nil || off.Live || len(off.Devices) != 2 || off.Devices[0].Index != nil || off.Devices[0].Ports[0].Netdev != "vrxe0" {
		t.Fatalf("offline %+v %v", off, err)
	}
	if ev := Diff(off, off); len(ev) != 0 {
		t.Errorf("same tree: %s", js(ev))
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

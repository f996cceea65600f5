package monitor

import (
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/monitor"
)

func TestEventLine(t *testing.T) {
	at := time.Date(2026, 1, 2, 8, 10, 18, 562e6, time.UTC)
	idx, nd := uint32(2), uint32(8)
	for _, c := range []struct {
		e    inventory.Event
		src  string
		want string
	}{
		{inventory.Event{Type: inventory.DeviceAdded, Ifindex: &idx, Ifname: "mon0"}, monitor.FromKernel,
			"08:10:18.562  kernel  device_added        mon0 (index 2)"},
		{inventory.Event{Type: inventory.NetdevAttached, Ifindex: &idx, Ifname: "mon0", Port: 1, New: "mva", NetdevIndex: &nd}, monitor.FromKernel,
			"08:10:18.562  kernel  netdev_attached     mon0/1  mva (ifindex 8)"},
		{inventory.Event{Type: inventory.NetdevDetached, Ifindex: &idx, Ifname: "mon0", Port: 1}, monitor.FromKernel,
			"08:10:18.562  kernel  netdev_detached     mon0/1  -"},
		{inventory.Event{Type: inventory.DeviceRenamed, Ifindex: &idx, Ifname: "mon1", Old: "mon0", New: "mon1"}, monitor.FromPoll,
			"08:10:18.562  poll    device_renamed      mon1  mon0 -> mon1"},
		{inventory.Event{Type: inventory.PortStateChanged, Ifname: "mon1", Port: 1, Old: "ACTIVE", New: "DOWN"}, monitor.FromPoll,
			"08:10:18.562  poll    port_state_changed  mon1/1  ACTIVE -> DOWN"},
		{inventory.Event{Type: monitor.NetdevRenamed, Ifname: "mon1", Port: 1, Old: "mva", New: "lan0", NetdevIndex: &nd}, monitor.FromKernel,
			"08:10:18.562  kernel  netdev_renamed      mon1/1  mva -> lan0"},
	} {
		if got := eventLine(at, monitor.Event{Event: c.e, Source: c.src}); got != c.want+"\n" {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

package monitor

import (
	"fmt"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// ErrNoEvents: the kernel sends no NLDEV events (before 6.12, or
// nldev_notify forced absent) and no poll was asked for: nothing to watch.
var ErrNoEvents = nldev.ErrNoNotify

// Open makes the sources of a monitor: the captured tree under root,
// polled every poll; or, for root "", the live system over RDMA netlink:
// the kernel's events where it sends them (joined before the first
// snapshot, so that a change in between is in the snapshot, an event, or
// both, said once) and a poll every poll (0: never). Without events and
// without polls it returns ErrNoEvents. how says what is watched; close
// releases the request socket (Run closes the event socket).
func Open(root string, poll time.Duration) (cfg Config, how string, close func(), err error) {
	cfg.Poll = poll
	every := fmt.Sprintf("a poll every %v", poll)
	if root != "" {
		cfg.Snapshot = func() (*inventory.Snapshot, error) { return inventory.Captured(root).Snapshot() }
		return cfg, fmt.Sprintf("%s compared every %v", root, poll), func() {}, nil
	}
	c, err := nldev.Dial()
	if err != nil {
		return cfg, "", nil, err
	}
	cfg.Snapshot = func() (*inventory.Snapshot, error) { return inventory.Live(c).Snapshot() }
	switch {
	case !c.Notifies() && poll == 0:
		c.Close()
		return cfg, "", nil, ErrNoEvents
	case !c.Notifies():
		how = every
	default:
		l, err := nldev.Listen()
		if err != nil {
			c.Close()
			return cfg, "", nil, err
		}
		cfg.Kernel = l
		how = "kernel events (port state needs --poll INTERVAL)"
		if poll > 0 {
			how = "kernel events and " + every
		}
	}
	return cfg, how, func() { c.Close() }, nil
}

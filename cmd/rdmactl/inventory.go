package main

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// openInventory is the source of the inspection commands: the captured
// tree of --sysfs-root, else the live system over one RDMA netlink socket.
// sysfsOK: a command that can answer from sysfs alone (gids, counters)
// gets the live /sys without netlink when the socket cannot be opened.
// close releases the socket.
func (a *app) openInventory(sysfsOK bool) (src *inventory.Source, close func(), err error) {
	if a.opts.sysfsRoot != "" {
		return inventory.Captured(a.opts.sysfsRoot), func() {}, nil
	}
	c, err := nldev.Dial()
	if err != nil {
		if sysfsOK {
			return inventory.Captured(""), func() {}, nil
		}
		return nil, nil, nlError(err)
	}
	return inventory.Live(c), func() { c.Close() }, nil
}

// invError gives an inventory error its exit code, from either source.
func invError(src *inventory.Source, err error) error {
	if src != nil && src.Offline() {
		return sfError(err)
	}
	return nlError(err)
}

// verbsDevices is every device with a uverbs node, with the driver id that
// netlink GET_CHARDEV reports (sysfs alone only guesses it): one device
// dump and one GET_CHARDEV per device over one socket.
func verbsDevices() ([]verbs.Device, error) {
	c, err := nldev.Dial()
	if err != nil {
		return verbs.Devices()
	}
	defer c.Close()
	return inventory.Live(c).VerbsDevices()
}

// verbsDevice is the uverbs device of name, as verbsDevices finds it.
func verbsDevice(name string) (verbs.Device, error) {
	c, err := nldev.Dial()
	if err != nil {
		return verbs.LookupDevice(name)
	}
	defer c.Close()
	return inventory.Live(c).VerbsDevice(name)
}

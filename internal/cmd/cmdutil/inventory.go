package cmdutil

import (
	"fmt"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// OpenInventory is the source of the inspection commands (inventory.Open
// with --sysfs-root). sysfsOK: answer from the live /sys alone when RDMA
// netlink cannot be opened (gids, counters). close releases the socket.
func (a *App) OpenInventory(sysfsOK bool) (src *inventory.Source, close func(), err error) {
	src, err = inventory.Open(a.Opts.SysfsRoot, sysfsOK)
	if err != nil {
		return nil, nil, err
	}
	if src.Offline() {
		src.SetWarn(func(s string) { fmt.Fprintf(a.Stderr, "rdmactl: warning: %s\n", s) })
	}
	return src, func() { src.Close() }, nil
}

// Inventory opens the inventory as OpenInventory does, reads what get
// reads from it and closes it: the whole life of a read-only command's
// source.
func Inventory[T any](a *App, sysfsOK bool, get func(*inventory.Source) (T, error)) (T, error) {
	src, closeSrc, err := a.OpenInventory(sysfsOK)
	if err != nil {
		var zero T
		return zero, err
	}
	defer closeSrc()
	return get(src)
}

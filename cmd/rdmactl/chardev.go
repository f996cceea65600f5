package main

import (
	"errors"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// The uverbs layer finds a device's char device and driver id the way
// rdma-core does, through NLDEV GET_CHARDEV first; verbs takes that as a
// hook so that it does not depend on the netlink client. Without netlink
// (old kernel, no permission) verbs falls back to sysfs and guesses the
// driver id from the driver's name.
func init() { verbs.ChardevLookup = nldevChardev }

func nldevChardev(ibdev string) (uverbs string, abi uint64, major, minor, driverID uint32, err error) {
	c, err := nldev.Dial()
	if err != nil {
		return "", 0, 0, 0, 0, err
	}
	defer c.Close()
	d, err := c.Device(ibdev)
	if err != nil {
		return "", 0, 0, 0, 0, err
	}
	ch, err := c.Chardev(d.Index, "uverbs")
	if err != nil {
		return "", 0, 0, 0, 0, err
	}
	if ch.ABI == nil || ch.Major == nil || ch.Minor == nil || ch.DriverID == nil {
		return "", 0, 0, 0, 0, errors.New("GET_CHARDEV answer without ABI, dev or driver id")
	}
	return ch.Name, *ch.ABI, *ch.Major, *ch.Minor, *ch.DriverID, nil
}

package inventory

import (
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// DeviceNames lists the devices' names and nothing else: what shell
// completion offers, which must be quick (a directory listing offline,
// the device dump live).
func (s *Source) DeviceNames() ([]string, error) {
	return s.b.deviceNames()
}

// GID is one slot of a GID table, as GIDs returns them.
type GID = sysfs.GID

// BestGID is the GID perftest picks without -x among gids (sysfs.BestGID).
func BestGID(gids []GID, preferIPv6 bool) (GID, bool) { return sysfs.BestGID(gids, preferIPv6) }

// DeviceCapNames names Device.Caps' bits as rdma dev show -d does.
func DeviceCapNames(caps uint64) []string { return nldev.DeviceCapNames(caps) }

// PortCapNames names Port.Caps' bits as rdma link show -d does.
func PortCapNames(caps uint64) []string { return nldev.PortCapNames(caps) }

// LiveDeviceExists reports whether this host has an RDMA device called
// name (its /sys/class/infiniband entry): how rdma's grammar tells "res
// show c", device c's counts, from "res show cm_id" (rdmagrammar).
func LiveDeviceExists(name string) bool { return sysfs.New("/sys").HasDevice(name) }

package perf

import "github.com/rdmactl/rdmactl/internal/sysfs"

// BestGID picks the GID index perftest's get_best_gid_index picks (the rules
// are sysfs.BestGID's, read from perftest's source as of commit 57927ab:
// IPv4-mapped preferred unless ipv6, then global over link-local, then
// RoCE v2 over v1), so that rdmactl and perftest choose the same GID
// without -x. It returns -1 if there is no usable GID.
func BestGID(gids []GIDEntry, ipv6 bool) int {
	cand := make([]sysfs.GID, 0, len(gids))
	for _, e := range gids {
		cand = append(cand, sysfs.GID{Index: uint32(e.Index), Raw: e.GID, RawOK: true, Kind: e.Type})
	}
	best, ok := sysfs.BestGID(cand, ipv6)
	if !ok {
		return -1
	}
	return int(best.Index)
}

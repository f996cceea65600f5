package perf

// BestGID picks the GID index as perftest's get_best_gid_index scores it
// (tools-reference §3.6): +100 if the address family is the preferred one
// (IPv4-mapped unless ipv6), +10 if not link-local (fe80::/10 or
// 169.254/16), + the RoCE version (v2 = 2, v1 = 1); the highest score
// wins, the lowest index on ties. Zero GIDs are skipped. It returns -1 if
// there is no usable GID.
func BestGID(gids []GIDEntry, ipv6 bool) int {
	best, bestScore := -1, -1
	for _, e := range gids {
		if e.GID == ([16]byte{}) {
			continue
		}
		s := 0
		v4 := isIPv4Mapped(e.GID)
		if v4 != ipv6 {
			s += 100
		}
		linkLocal := (e.GID[0] == 0xfe && e.GID[1]&0xc0 == 0x80) || (v4 && e.GID[12] == 169 && e.GID[13] == 254)
		if !linkLocal {
			s += 10
		}
		s += e.RoCEVersion
		if s > bestScore || (s == bestScore && e.Index < best) {
			best, bestScore = e.Index, s
		}
	}
	return best
}

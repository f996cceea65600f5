package inventory

import (
	"strconv"

	"github.com/rdmactl/rdmactl/internal/kfeat"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// GIDs is the GID table of each of refs (from Targets), in order, as
// sysfs.GID slots sorted by index. Live and without all, a device's
// populated slots come from one uverbs QUERY_GID_TABLE (5.10+, what
// ibv_query_gid_table uses) instead of three sysfs reads per slot (rxe has
// 1024 slots per port). Everywhere else, and with all (which shows the
// empty slots too), the table is read from sysfs.
func (s *Source) GIDs(refs []PortRef, all bool) ([][]sysfs.GID, error) {
	out := make([][]sysfs.GID, len(refs))
	tables := map[string]map[uint32][]sysfs.GID{} // dev -> port -> GIDs, from the ioctl
	for i, r := range refs {
		if !all {
			t, ok := tables[r.Dev]
			if !ok {
				t = s.b.gidTable(r.Dev, refs)
				tables[r.Dev] = t
			}
			if t != nil {
				out[i] = t[r.Port]
				continue
			}
		}
		g, err := s.fs.GIDs(r.Dev, r.Port)
		if err != nil {
			return nil, err
		}
		out[i] = g
	}
	return out, nil
}

// maxGIDEntries is what one QUERY_GID_TABLE answer can hold (its length
// attribute is 16 bits, 32 bytes an entry).
const maxGIDEntries = 0xffff / 32

// gidTable asks the device for its populated GIDs, or returns nil
// when it cannot (no uverbs node, no permission, no ioctl method, a table
// that may not have fit): the caller reads sysfs then.
func (l *live) gidTable(dev string, refs []PortRef) map[uint32][]sysfs.GID {
	if !kfeat.Worth(kfeat.QueryGIDTable) {
		return nil
	}
	d, ok := l.verbsDevice(dev)
	if !ok {
		return nil
	}
	ctx, err := verbs.OpenDevice(d, verbs.Options{})
	if err != nil {
		return nil
	}
	defer ctx.Close()
	ents, err := ctx.QueryGIDTable(maxGIDEntries)
	// QueryGIDTable falls back to sysfs itself without the method; that
	// fallback has no netdev names and reads like ours, so use ours.
	if err != nil || !kfeat.Worth(kfeat.QueryGIDTable) || len(ents) >= maxGIDEntries {
		return nil
	}
	ll := map[uint32]string{}
	nd := map[uint32]string{} // port -> (netdev index, name) from netlink
	ndIdx := map[uint32]uint32{}
	for _, r := range refs {
		if r.Dev != dev || r.Index == nil {
			continue
		}
		ps, _ := l.nlPorts(*r.Index)
		devs, _ := l.nlDevices()
		for _, dd := range devs {
			if dd.Index == *r.Index {
				for _, p := range ps {
					ll[p.Port] = l.linkLayer(dd, p.Port)
					if p.NetdevIndex != nil {
						nd[p.Port], ndIdx[p.Port] = p.NetdevName, *p.NetdevIndex
					}
				}
			}
		}
		break
	}
	t := map[uint32][]sysfs.GID{}
	for _, e := range ents {
		if e.GID == [16]byte{} {
			continue
		}
		// Type as sysfs would write it, so that both paths give the same.
		g := sysfs.GID{Index: e.Index, Raw: e.GID, RawOK: true, Type: e.Type.Sysfs()}
		if e.NetdevIfindex != 0 {
			if ndIdx[e.Port] == e.NetdevIfindex {
				g.Netdev = nd[e.Port]
			} else {
				// An upper device's GID (a VLAN, a bond): the kernel names
				// it in sysfs, in the netdev's own namespace, where an
				// index lookup here would search ours.
				g.Netdev = l.portAttr(dev, e.Port, "gid_attrs/ndevs/"+strconv.FormatUint(uint64(e.Index), 10))
			}
		}
		lay, ok := ll[e.Port]
		if !ok {
			lay = l.portAttr(dev, e.Port, "link_layer")
			ll[e.Port] = lay
		}
		g.Kind = sysfs.GIDKind(g.Type, lay, false)
		t[e.Port] = append(t[e.Port], g)
	}
	return t
}

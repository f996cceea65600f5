package sysfs

import (
	"path/filepath"
	"strings"
)

// Netdev is what /sys/class/net/<name> says about a network interface that
// a RoCE/iWARP GID or an rxe/siw device is bound to.
type Netdev struct {
	Name      string  `json:"name"`
	Ifindex   *uint32 `json:"ifindex,omitempty"`
	MTU       *uint32 `json:"mtu,omitempty"`
	Address   string  `json:"address,omitempty"` // MAC, "06:79:3c:e4:2f:19"
	OperState string  `json:"operstate,omitempty"`
}

// Netdev reads class/net/<name>. A missing netdev gives a Netdev with only
// Name set (it may live in another network namespace), not an error.
func (f *FS) Netdev(name string) *Netdev {
	n := &Netdev{Name: name}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return n
	}
	dir := filepath.Join(f.root, "class", "net", name)
	n.Ifindex, _ = parseU32(readOpt(filepath.Join(dir, "ifindex")))
	n.MTU, _ = parseU32(readOpt(filepath.Join(dir, "mtu")))
	n.Address = readOpt(filepath.Join(dir, "address"))
	n.OperState = readOpt(filepath.Join(dir, "operstate"))
	return n
}

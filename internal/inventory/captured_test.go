package inventory

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCapturedNetdev: offline, a port's netdev is the device's parent
// (rxe) or, where there is none (mlx5), the netdev of GID slot 0 on
// Ethernet; an InfiniBand port has none.
func TestCapturedNetdev(t *testing.T) {
	for _, tc := range []struct {
		root, dev, netdev string
		ifindex           uint32
	}{
		{rxeTree, "rxe1", "vrxe1", 6},
		{mlx5Tree, "mlx5_0", "ens1f0", 2},
		{mlx5Tree, "mlx5_1", "", 0},
	} {
		ps, err := Captured(tc.root).Ports(tc.dev, 1, PortOptions{})
		if err != nil || len(ps) != 1 {
			t.Fatalf("%s/1: %+v, %v", tc.dev, ps, err)
		}
		if ps[0].Netdev != tc.netdev {
			t.Errorf("%s/1: netdev %q, want %q", tc.dev, ps[0].Netdev, tc.netdev)
		}
		if tc.ifindex != 0 && (ps[0].NetdevIndex == nil || *ps[0].NetdevIndex != tc.ifindex) {
			t.Errorf("%s/1: netdev index %v, want %d", tc.dev, ps[0].NetdevIndex, tc.ifindex)
		}
	}
	// An InfiniBand port's subnet prefix is the upper half of GID 0.
	for dev, want := range map[string]string{"mlx5_0": "", "mlx5_1": "fe80:0000:0000:0000"} {
		ps, err := Captured(mlx5Tree).Ports(dev, 1, PortOptions{})
		if err != nil || len(ps) != 1 || ps[0].SubnetPrefix != want {
			t.Errorf("%s/1: %+v, %v; want subnet prefix %q", dev, ps, err, want)
		}
	}
	ib := t.TempDir()
	ibPort := filepath.Join(ib, "class", "infiniband", "ib0", "ports", "1")
	os.MkdirAll(filepath.Join(ibPort, "gids"), 0o755)
	os.WriteFile(filepath.Join(ibPort, "link_layer"), []byte("InfiniBand\n"), 0o644)
	for g, want := range map[string]string{
		"fe80:0000:0000:0000:9803:9b03:0067:a3b1\n": "fe80:0000:0000:0000",
		"0000:0000:0000:0000:0000:0000:0000:0000\n": "0000:0000:0000:0000", // netlink sends the zero prefix too
		"::ffff:10.0.0.1\n":                         "0000:0000:0000:0000",
		"garbage":                                   "",
	} {
		os.WriteFile(filepath.Join(ibPort, "gids", "0"), []byte(g), 0o644)
		if ps, err := Captured(ib).Ports("ib0", 1, PortOptions{}); err != nil || len(ps) != 1 || ps[0].SubnetPrefix != want {
			t.Errorf("gids/0 %q: %+v, %v; want subnet prefix %q", g, ps, err, want)
		}
	}
	// The parent wins over slot 0.
	root := t.TempDir()
	port := filepath.Join(root, "class", "infiniband", "siw0", "ports", "1")
	os.MkdirAll(filepath.Join(port, "gid_attrs", "ndevs"), 0o755)
	os.WriteFile(filepath.Join(root, "class", "infiniband", "siw0", "parent"), []byte("eth1\n"), 0o644)
	os.WriteFile(filepath.Join(port, "link_layer"), []byte("Ethernet\n"), 0o644)
	os.WriteFile(filepath.Join(port, "gid_attrs", "ndevs", "0"), []byte("eth0\n"), 0o644)
	if ps, err := Captured(root).Ports("siw0", 1, PortOptions{}); err != nil || len(ps) != 1 || ps[0].Netdev != "eth1" {
		t.Errorf("siw0/1: %+v, %v; want netdev eth1, the parent", ps, err)
	}
}

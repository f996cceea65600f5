package inventory

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// NLDEV numbers (rdma_netlink.h), as the fake kernel below speaks them.
const (
	cmdGet        = 1
	cmdPortGet    = 5
	cmdSysGet     = 6
	cmdGetChardev = 15
	cmdStatGet    = 17

	aDevIndex   = 1
	aDevName    = 2
	aPortIndex  = 3
	aFW         = 5
	aNodeGUID   = 6
	aPortState  = 12
	aPhysState  = 13
	aNodeType   = 14
	aNdevIndex  = 50
	aNdevName   = 51
	aNetnsMode  = 66
	aProtocol   = 67
	aChardevNm  = 70
	aChardevABI = 71
	aChardev    = 72
	aDriverID   = 73
)

func encode(t *testing.T, fn func(e *netlink.AttributeEncoder)) []byte {
	e := netlink.NewAttributeEncoder()
	fn(e)
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func devIndexOf(t *testing.T, b []byte) (uint32, bool) { return u32Of(t, b, aDevIndex) }

// u32Of is the u32 attribute typ of a request, if it has one.
func u32Of(t *testing.T, b []byte, typ uint16) (uint32, bool) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		t.Fatal(err)
	}
	for ad.Next() {
		if ad.Type() == typ {
			return ad.Uint32(), true
		}
	}
	return 0, false
}

func itoa(i int) string { return strconv.Itoa(i) }

// rxeKernel is the fake kernel of live_test.go with n RoCE devices
// rxe0..rxe{n-1} of one port each, in shared netns mode.
func rxeKernel(t *testing.T, n int) *kernel {
	k := &kernel{t: t, sys: func(e *netlink.AttributeEncoder) { e.Uint8(aNetnsMode, 1) }}
	for i := 0; i < n; i++ {
		k.devs = append(k.devs, kdev{idx: uint32(i), name: "rxe" + itoa(i), ports: 1})
	}
	return k
}

const rxeTree = "../sysfs/testdata/rxe"
const mlx5Tree = "../sysfs/testdata/mlx5"

// TestLiveOneDumpPerKind: devices, ports and chardevs of 64 devices cost
// one device dump, one port dump and one GET_CHARDEV per device, however
// many of the Source's methods ask.
func TestLiveOneDumpPerKind(t *testing.T) {
	k := rxeKernel(t, 64)
	src := LiveWith(k.client(), rxeTree)
	devs, err := src.Devices("", DeviceOptions{Chardev: true})
	if err != nil || len(devs) != 64 {
		t.Fatalf("%d devices, %v", len(devs), err)
	}
	d := devs[5]
	if d.Name != "rxe5" || *d.Index != 5 || d.NodeType != "ca" || d.Protocol != "roce" ||
		d.Uverbs != "uverbs5" || *d.UverbsMajor != 231 || *d.UverbsMinor != 197 || *d.DriverID != 1 || *d.UverbsABI != 1 {
		t.Errorf("device %+v", d)
	}
	if src.NetnsMode() != "shared" {
		t.Errorf("netns %q", src.NetnsMode())
	}
	ports, err := src.Ports("", 0, PortOptions{})
	if err != nil || len(ports) != 64 {
		t.Fatalf("%d ports, %v", len(ports), err)
	}
	if _, err := src.Targets("", 0); err != nil {
		t.Fatal(err)
	}
	p := ports[1]
	if p.Dev != "rxe1" || p.Port != 1 || p.State != "ACTIVE" || p.PhysState != "LINK_UP" || p.LinkLayer != "Ethernet" ||
		p.Netdev != "eth1" || *p.NetdevIndex != 101 {
		t.Errorf("port %+v", p)
	}
	// rxe1's rate comes from the tree (its ports/1/rate).
	if p.RateGbps == nil || p.Width == "" {
		t.Errorf("rate from sysfs: %+v", p)
	}
	if k.reqs[cmdGet] != 1 || k.reqs[cmdPortGet] != 64 || k.reqs[cmdGetChardev] != 64 {
		t.Errorf("requests %v: want 1 GET, 64 PORT_GET, 64 GET_CHARDEV", k.reqs)
	}
}

func TestLiveNotFound(t *testing.T) {
	src := LiveWith(rxeKernel(t, 2).client(), rxeTree)
	_, err := src.Ports("rxe9", 0, PortOptions{})
	var nf *nldev.NotFoundError
	if !errors.As(err, &nf) || nf.Kind != "device" || len(nf.Exists) != 2 {
		t.Errorf("unknown device: %v", err)
	}
	_, err = src.Targets("rxe1", 2)
	if !errors.As(err, &nf) || nf.Kind != "port" || nf.Exists[0] != "rxe1/1" {
		t.Errorf("unknown port: %v", err)
	}
	if !IsNotFound(err) {
		t.Error("IsNotFound")
	}
}

func TestCapturedTrees(t *testing.T) {
	for _, tc := range []struct {
		root  string
		devs  int
		ll    string
		first string
	}{{rxeTree, 2, "Ethernet", "rxe0"}, {mlx5Tree, 2, "", "mlx5_0"}} {
		src := Captured(tc.root)
		if !src.Offline() || src.NetnsMode() != "" {
			t.Fatal("captured source is offline")
		}
		devs, err := src.Devices("", DeviceOptions{Details: true})
		if err != nil || len(devs) != tc.devs || devs[0].Name != tc.first || devs[0].Index != nil {
			t.Fatalf("%s: %+v %v", tc.root, devs, err)
		}
		ports, err := src.Ports("", 0, PortOptions{})
		if err != nil || len(ports) == 0 || ports[0].DevIndex != nil {
			t.Fatalf("%s: ports %+v %v", tc.root, ports, err)
		}
		if tc.ll != "" && ports[0].LinkLayer != tc.ll {
			t.Errorf("%s: link layer %q", tc.root, ports[0].LinkLayer)
		}
		refs, err := src.Targets(tc.first, 1)
		if err != nil || len(refs) != 1 {
			t.Fatalf("targets %v %v", refs, err)
		}
		tables, err := src.GIDs(refs, false)
		if err != nil || len(tables) != 1 || len(tables[0]) == 0 {
			t.Fatalf("%s: GIDs %v %v", tc.root, tables, err)
		}
		sets, err := src.Counters(refs, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sets {
			if s.Source == SrcNetlink {
				t.Errorf("netlink counters from a captured tree")
			}
		}
		if _, err := src.Targets("nope", 0); !IsNotFound(err) {
			t.Errorf("unknown device: %v", err)
		}
	}
}

// TestBoundedRead: a huge file in a broken capture is not read whole.
func TestBoundedRead(t *testing.T) {
	dir := t.TempDir()
	port := filepath.Join(dir, "class", "infiniband", "rxe0", "ports", "1")
	if err := os.MkdirAll(port, 0o755); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("9", 4<<20)
	if err := os.WriteFile(filepath.Join(port, "rate"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	src := Captured(dir)
	if s := src.portAttr("rxe0", 1, "rate"); len(s) != sysfs.MaxRead {
		t.Errorf("read %d bytes, want the bound %d", len(s), sysfs.MaxRead)
	}
	if _, err := src.Ports("", 0, PortOptions{}); err != nil {
		t.Fatal(err)
	}
}

package sysfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

const (
	rxeRoot  = "testdata/rxe"  // captured in the rdmavm guest by capture.sh
	mlx5Root = "testdata/mlx5" // hand-made by mkmlx5.sh
)

func u32(p *uint32) any {
	if p == nil {
		return nil
	}
	return *p
}

func check(t *testing.T, what string, got, want any) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v (%T), want %v (%T)", what, got, got, want, want)
	}
}

func TestDevices(t *testing.T) {
	for root, want := range map[string][]string{rxeRoot: {"rxe0", "rxe1"}, mlx5Root: {"mlx5_0", "mlx5_1"}} {
		got, err := New(root).Devices()
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: Devices() = %v, %v; want %v", root, got, err, want)
		}
	}
}

func TestNoRDMA(t *testing.T) {
	f := New(t.TempDir())
	if _, err := f.Devices(); !errors.Is(err, ErrNoRDMA) {
		t.Fatalf("Devices on empty root: %v, want ErrNoRDMA", err)
	}
	if _, err := f.Device("rxe0"); !errors.Is(err, ErrNoRDMA) {
		t.Fatalf("Device on empty root: %v, want ErrNoRDMA", err)
	}
	if New("").Root() != "/sys" {
		t.Fatal(`New("") must read /sys`)
	}
}

func TestNotFound(t *testing.T) {
	f := New(rxeRoot)
	_, err := f.Device("mlx5_9")
	var nf *NotFoundError
	if !errors.As(err, &nf) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Device(mlx5_9): %v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, `"mlx5_9"`) || !strings.Contains(msg, "rxe0, rxe1") {
		t.Errorf("message %q must name the device and list rxe0, rxe1", msg)
	}
	for _, p := range []uint32{0, 2} {
		_, err = f.Port("rxe0", p)
		if !errors.As(err, &nf) || !strings.Contains(err.Error(), "rxe0/1") {
			t.Errorf("Port(rxe0, %d): %v", p, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "../rxe0", "rxe0/ports"} {
		if _, err := f.Device(bad); !errors.As(err, &nf) {
			t.Errorf("Device(%q): %v, want NotFoundError", bad, err)
		}
	}
	if _, err := f.GIDs("nope", 1); !errors.As(err, &nf) {
		t.Errorf("GIDs(nope): %v", err)
	}
	if _, err := f.HWCounters("nope", 0); !errors.As(err, &nf) {
		t.Errorf("HWCounters(nope, 0): %v", err)
	}
}

func TestDeviceRXE(t *testing.T) {
	d, err := New(rxeRoot).Device("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "NodeType", d.NodeType, "CA")
	check(t, "NodeTypeNum", u32(d.NodeTypeNum), uint32(1))
	check(t, "NodeGUID", d.NodeGUID, "0479:3cff:fee4:2f19")
	check(t, "SysImageGUID", d.SysImageGUID, "0479:3cff:fee4:2f19")
	check(t, "FWVer", d.FWVer, "") // rxe's fw_ver is an empty line
	check(t, "HCAType", d.HCAType, "")
	check(t, "HWRev", d.HWRev, "")
	check(t, "BoardID", d.BoardID, "")
	check(t, "NodeDesc", d.NodeDesc, "rxe")
	check(t, "PCIAddr", d.PCIAddr, "")
	check(t, "NUMANode", d.NUMANode == nil, true)
	check(t, "Driver", d.Driver, "rdma_rxe")
	check(t, "Parent", d.Parent, "vrxe0")
	check(t, "Ports", slices.Equal(d.Ports, []uint32{1}), true)
	check(t, "Uverbs", d.Uverbs, "uverbs0")
	check(t, "UverbsPath", d.UverbsPath(), "/dev/infiniband/uverbs0")
	check(t, "UverbsMajor", u32(d.UverbsMajor), uint32(231))
	check(t, "UverbsMinor", u32(d.UverbsMinor), uint32(192))
	check(t, "UverbsABI", u32(d.UverbsABI), uint32(2))
	d1, _ := New(rxeRoot).Device("rxe1")
	check(t, "rxe1 Uverbs", d1.Uverbs, "uverbs1")
	check(t, "rxe1 minor", u32(d1.UverbsMinor), uint32(193))
	check(t, "global ABI", u32(New(rxeRoot).UverbsABIVersion()), uint32(6))
}

func TestDeviceMLX5(t *testing.T) {
	d, err := New(mlx5Root).Device("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "NodeType", d.NodeType, "CA")
	check(t, "NodeGUID", d.NodeGUID, "9803:9b03:0067:a3b0")
	check(t, "FWVer", d.FWVer, "16.35.2000")
	check(t, "HCAType", d.HCAType, "MT4119")
	check(t, "HWRev", d.HWRev, "0x0")
	check(t, "BoardID", d.BoardID, "MT_0000000010")
	check(t, "NodeDesc", d.NodeDesc, "host1 mlx5_0")
	check(t, "PCIAddr", d.PCIAddr, "0000:03:00.0")
	if d.NUMANode == nil || *d.NUMANode != 0 {
		t.Errorf("NUMANode = %v, want 0", d.NUMANode)
	}
	check(t, "Driver", d.Driver, "mlx5_core")
	check(t, "Parent", d.Parent, "")
	check(t, "Uverbs", d.Uverbs, "uverbs0")
	check(t, "UverbsABI", u32(d.UverbsABI), uint32(1))
	d1, _ := New(mlx5Root).Device("mlx5_1")
	check(t, "mlx5_1 PCIAddr", d1.PCIAddr, "0000:03:00.1")
	check(t, "mlx5_1 Uverbs", d1.Uverbs, "uverbs1")
}

func TestPort(t *testing.T) {
	type want struct {
		state, phys, rate, width, speed, ll string
		gbps                                float64
		lid, smlid, lmc, smsl, capmask      uint32
		tbl                                 int
	}
	cases := map[string]struct {
		root, dev string
		w         want
	}{
		"rxe0":   {rxeRoot, "rxe0", want{"ACTIVE", "LinkUp", "10 Gb/sec (1X FDR10)", "1X", "FDR10", "Ethernet", 10, 0, 0, 0, 0, 0x10000, 16}},
		"mlx5_0": {mlx5Root, "mlx5_0", want{"ACTIVE", "LinkUp", "100 Gb/sec (4X EDR)", "4X", "EDR", "Ethernet", 100, 0, 0, 0, 0, 0x10000, 16}},
		"mlx5_1": {mlx5Root, "mlx5_1", want{"ACTIVE", "LinkUp", "100 Gb/sec (4X EDR)", "4X", "EDR", "InfiniBand", 100, 0xd, 1, 0, 0, 0x2659e848, 16}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := New(c.root).Port(c.dev, 1)
			if err != nil {
				t.Fatal(err)
			}
			w := c.w
			check(t, "State", p.State, w.state)
			check(t, "StateNum", u32(p.StateNum), uint32(4))
			check(t, "PhysState", p.PhysState, w.phys)
			check(t, "PhysStateNum", u32(p.PhysStateNum), uint32(5))
			check(t, "Rate", p.Rate, w.rate)
			if p.RateGbps == nil || *p.RateGbps != w.gbps {
				t.Errorf("RateGbps = %v, want %v", p.RateGbps, w.gbps)
			}
			check(t, "Width", p.Width, w.width)
			check(t, "Speed", p.Speed, w.speed)
			check(t, "LinkLayer", p.LinkLayer, w.ll)
			check(t, "LID", u32(p.LID), w.lid)
			check(t, "SMLID", u32(p.SMLID), w.smlid)
			check(t, "LMC", u32(p.LMC), w.lmc)
			check(t, "SMSL", u32(p.SMSL), w.smsl)
			check(t, "CapMask", u32(p.CapMask), w.capmask)
			check(t, "GIDTableLen", p.GIDTableLen, w.tbl)
			check(t, "PKeys", slices.Equal(p.PKeys, []uint32{0xffff}), true)
		})
	}
}

func TestGIDsRXE(t *testing.T) {
	gids, err := New(rxeRoot).GIDs("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(gids) != 16 {
		t.Fatalf("%d slots, want 16 (capture keeps 0..15)", len(gids))
	}
	g0, g1 := gids[0], gids[1]
	check(t, "gid0", g0.String(), "fe80:0000:0000:0000:0479:3cff:fee4:2f19")
	check(t, "gid0 type", g0.Type, vocab.SysfsGIDTypeRoCEv2)
	check(t, "gid0 kind", g0.Kind, vocab.GIDTypeRoCEv2)
	check(t, "gid0 netdev", g0.Netdev, "vrxe0")
	check(t, "gid0 ipv6", g0.IPv6().String(), "fe80::479:3cff:fee4:2f19")
	check(t, "gid0 ipv4", g0.IPv4().IsValid(), false)
	check(t, "gid0 linklocal", g0.LinkLocal(), true)
	check(t, "gid1", g1.String(), "0000:0000:0000:0000:0000:ffff:0a4d:0001")
	check(t, "gid1 kind", g1.Kind, vocab.GIDTypeRoCEv2)
	check(t, "gid1 ipv4", g1.IPv4().String(), "10.77.0.1")
	check(t, "gid1 ipv6", g1.IPv6().IsValid(), false)
	check(t, "gid1 raw[15]", g1.Raw[15], byte(1))
	for _, g := range gids[2:] {
		if !g.Empty() || g.Type != "" || g.Kind != vocab.GIDTypeUnknown || g.Netdev != "" || g.Addr().IsValid() {
			t.Errorf("slot %d should be empty: %+v", g.Index, g)
		}
	}
	best, ok := BestGID(gids, false)
	check(t, "best v4", ok && best.Index == 1, true)
	best, ok = BestGID(gids, true)
	check(t, "best v6", ok && best.Index == 0, true) // only IPv6 GID is fe80
}

// TestGID: one slot read alone is the slot GIDs reads.
func TestGID(t *testing.T) {
	f := New(rxeRoot)
	g, err := f.GID("rxe0", 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "gid0", g.String(), "fe80:0000:0000:0000:0479:3cff:fee4:2f19")
	if g, err := f.GID("rxe0", 1, 999); err != nil || g.RawOK {
		t.Errorf("slot 999 (not captured): %+v, %v", g, err)
	}
	if _, err := f.GID("rxe0", 2, 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("port 2: %v", err)
	}
}

func TestGIDsMLX5(t *testing.T) {
	gids, err := New(mlx5Root).GIDs("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind   vocab.GIDType
		v4, v6 string
	}{
		{vocab.GIDTypeRoCEv1, "", "fe80::9a03:9bff:fe67:a3b0"},
		{vocab.GIDTypeRoCEv2, "", "fe80::9a03:9bff:fe67:a3b0"},
		{vocab.GIDTypeRoCEv1, "192.168.1.10", ""},
		{vocab.GIDTypeRoCEv2, "192.168.1.10", ""},
		{vocab.GIDTypeRoCEv1, "", "2001:db8::10"},
		{vocab.GIDTypeRoCEv2, "", "2001:db8::10"},
	}
	s := func(a interface {
		IsValid() bool
		String() string
	}) string {
		if !a.IsValid() {
			return ""
		}
		return a.String()
	}
	for i, w := range want {
		g := gids[i]
		if g.Kind != w.kind || s(g.IPv4()) != w.v4 || s(g.IPv6()) != w.v6 || g.Netdev != "ens1f0" {
			t.Errorf("gid %d = %+v (%s %s), want %+v", i, g, s(g.IPv4()), s(g.IPv6()), w)
		}
	}
	check(t, "gid 0 sysfs type", gids[0].Type, vocab.SysfsGIDTypeIBRoCEv1)
	best, _ := BestGID(gids, false)
	check(t, "best v4", best.Index, uint32(3))
	best, _ = BestGID(gids, true)
	// Global over link-local (perftest 57927ab): 2001:db8::10 v2 (5)
	// beats fe80:: v2 (1), which perftest 6.06 would take.
	check(t, "best v6", best.Index, uint32(5))

	ib, err := New(mlx5Root).GIDs("mlx5_1", 1)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "ib gid", ib[0].String(), "fe80:0000:0000:0000:9803:9b03:0067:a3b1")
	check(t, "ib kind", ib[0].Kind, vocab.GIDTypeIB) // "IB/RoCE v1" on an IB port
	check(t, "ib netdev", ib[0].Netdev, "")
	best, ok := BestGID(ib, false)
	check(t, "ib best", ok && best.Index == 0, true)
}

// TestBestGIDScore pins perftest's scoring (57927ab): family 100,
// not link-local 10, RoCE v2 2 / v1 or IB 1; ties keep the lower index.
func TestBestGIDScore(t *testing.T) {
	mk := func(idx uint32, addr string, kind vocab.GIDType) GID {
		raw, ok := parseGID(addr)
		if !ok {
			t.Fatalf("bad test GID %s", addr)
		}
		return GID{Index: idx, Raw: raw, RawOK: true, Kind: kind}
	}
	const (
		ll   = "fe80:0000:0000:0000:0000:0000:0000:0001"
		v4   = "0000:0000:0000:0000:0000:ffff:0a00:0001"
		v4ll = "0000:0000:0000:0000:0000:ffff:a9fe:0001" // 169.254.0.1
		v6   = "2001:0db8:0000:0000:0000:0000:0000:0001"
		mc4  = "ff0e:0000:0000:0000:0000:ffff:e000:0001"
	)
	for _, c := range []struct {
		name string
		gids []GID
		ipv6 bool
		want uint32
	}{
		{"v4 wins over earlier ll", []GID{mk(0, ll, vocab.GIDTypeRoCEv2), mk(1, v4, vocab.GIDTypeRoCEv1)}, false, 1},
		{"v2 beats v1 in family", []GID{mk(0, v4, vocab.GIDTypeRoCEv1), mk(1, v4, vocab.GIDTypeRoCEv2)}, false, 1},
		{"equal score keeps earlier", []GID{mk(0, v4, vocab.GIDTypeRoCEv2), mk(1, v4, vocab.GIDTypeRoCEv2)}, false, 0},
		// The family decides before the type (6.06 let a v2 IPv6 entry
		// replace a v1 IPv4 one).
		{"v4 v1 beats v6 v2", []GID{mk(0, v4, vocab.GIDTypeRoCEv1), mk(1, v6, vocab.GIDTypeRoCEv2)}, false, 0},
		{"ipv6 pref takes v6", []GID{mk(0, v4, vocab.GIDTypeRoCEv2), mk(1, v6, vocab.GIDTypeRoCEv1)}, true, 1},
		{"ipv6 pref: ll v1 over v4 v2", []GID{mk(0, ll, vocab.GIDTypeRoCEv1), mk(1, v4, vocab.GIDTypeRoCEv2)}, true, 0},
		// The link-local rule (57927ab): global over fe80:: and 169.254.
		{"ipv6 pref: global over earlier ll", []GID{mk(0, ll, vocab.GIDTypeRoCEv2), mk(1, v6, vocab.GIDTypeRoCEv2)}, true, 1},
		{"ipv6 only, v4 pref: global over ll", []GID{mk(0, ll, vocab.GIDTypeRoCEv2), mk(1, v6, vocab.GIDTypeRoCEv2)}, false, 1},
		{"scope over type", []GID{mk(0, ll, vocab.GIDTypeRoCEv2), mk(1, v6, vocab.GIDTypeRoCEv1)}, true, 1},
		{"v4 over 169.254", []GID{mk(0, v4ll, vocab.GIDTypeRoCEv2), mk(1, v4, vocab.GIDTypeRoCEv2)}, false, 1},
		{"unknown type scores 0", []GID{mk(0, v4, vocab.GIDTypeUnknown), mk(1, v4, vocab.GIDTypeRoCEv1)}, false, 1},
		{"multicast-encoded v4 counts as v4", []GID{mk(0, ll, vocab.GIDTypeRoCEv2), mk(1, mc4, vocab.GIDTypeRoCEv1)}, false, 1},
		{"empty slots skipped", []GID{{Index: 0, RawOK: true}, mk(1, ll, vocab.GIDTypeIB)}, false, 1},
	} {
		got, ok := BestGID(c.gids, c.ipv6)
		if !ok || got.Index != c.want {
			t.Errorf("%s: got %d (ok %v), want %d", c.name, got.Index, ok, c.want)
		}
	}
}

func TestBestGIDNone(t *testing.T) {
	if _, ok := BestGID([]GID{{Index: 0, RawOK: true}, {Index: 1}}, false); ok {
		t.Fatal("BestGID of empty slots must report !ok")
	}
}

func TestCounters(t *testing.T) {
	f := New(mlx5Root)
	cs, err := f.Counters("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for i, c := range cs {
		if i > 0 && cs[i-1].Name >= c.Name {
			t.Errorf("not sorted: %s before %s", cs[i-1].Name, c.Name)
		}
		m[c.Name] = c.Value
	}
	check(t, "n", len(cs), 21)
	check(t, "port_xmit_data", m["port_xmit_data"], uint64(5000000000))
	check(t, "port_rcv_data", m["port_rcv_data"], uint64(2500000000))
	check(t, "link_downed", m["link_downed"], uint64(1))

	hw, err := f.HWCounters("mlx5_0", 1)
	if err != nil {
		t.Fatal(err)
	}
	m = map[string]uint64{}
	for _, c := range hw {
		m[c.Name] = c.Value
	}
	check(t, "hw n", len(hw), 29)
	check(t, "out_of_buffer", m["out_of_buffer"], uint64(17))
	check(t, "np_cnp_sent", m["np_cnp_sent"], uint64(9))
	check(t, "rp_cnp_handled", m["rp_cnp_handled"], uint64(11))
	_, hasLifespan := m["lifespan"]
	check(t, "lifespan excluded", hasLifespan, false)
	check(t, "lifespan", u32(f.HWCountersLifespan("mlx5_0", 1)), uint32(10))
	dl, err := f.HWCounters("mlx5_0", 0) // no device-level hw_counters here
	check(t, "device-level", len(dl) == 0 && err == nil, true)

	r := New(rxeRoot)
	pma, err := r.Counters("rxe0", 1)
	check(t, "rxe has no PMA counters", len(pma) == 0 && err == nil, true)
	hw, err = r.HWCounters("rxe0", 1)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range hw {
		names = append(names, c.Name)
	}
	// The 15 rxe counters (sw/rxe/rxe_hw_counters.c), sorted.
	wantNames := []string{"ack_deferred", "completer_retry_err", "duplicate_request", "link_downed",
		"out_of_seq_request", "rcvd_pkts", "rcvd_rnr_err", "rcvd_seq_err", "rdma_recvs", "rdma_sends",
		"retry_exceeded_err", "retry_rnr_exceeded_err", "send_err", "send_rnr_err", "sent_pkts"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("rxe hw_counters %v, want %v", names, wantNames)
	}
	check(t, "rxe lifespan", u32(r.HWCountersLifespan("rxe0", 1)), uint32(12))
	// Completion's list: the same names, lifespan left out.
	if got := r.HWCounterNames("rxe0", 1); !slices.Equal(got, wantNames) {
		t.Errorf("HWCounterNames(rxe0, 1) = %v, want %v", got, wantNames)
	}
	if got := r.HWCounterNames("rxe0", 9); got != nil {
		t.Errorf("HWCounterNames of a missing port: %v", got)
	}
}

func TestNetdev(t *testing.T) {
	n := New(rxeRoot).Netdev("vrxe0")
	check(t, "mtu", u32(n.MTU), uint32(1500))
	check(t, "ifindex", u32(n.Ifindex), uint32(4))
	check(t, "address", n.Address, "06:79:3c:e4:2f:19")
	check(t, "operstate", n.OperState, "up")
	m := New(mlx5Root).Netdev("ens1f0")
	check(t, "mlx5 mtu", u32(m.MTU), uint32(9000))
	gone := New(rxeRoot).Netdev("../../etc")
	check(t, "bad name", gone.MTU == nil && gone.Name == "../../etc", true)
}

// writeTree writes files (path -> content) under a temp root.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestMalformed: garbage in every file leaves fields missing, never fails
// the call or panics.
func TestMalformed(t *testing.T) {
	d := "class/infiniband/bad0/"
	p := d + "ports/1/"
	root := writeTree(t, map[string]string{
		d + "node_type":                        "CA\n",
		d + "node_guid":                        "zzzz:01ff:fecc:54ed\n",
		d + "sys_image_guid":                   "a86c:01ff\n",
		p + "state":                            "4:\n",
		p + "phys_state":                       "x: LinkUp\n",
		p + "rate":                             "fast\n",
		p + "lid":                              "0x\n",
		p + "sm_lid":                           "-1\n",
		p + "lid_mask_count":                   "99999999999\n",
		p + "cap_mask":                         "0xZZ\n",
		p + "gids/0":                           "fe80:0000:0000\n", // truncated
		p + "gids/1":                           "0000:0000:0000:0000:0000:ffff:0a4d:0001\n",
		p + "gid_attrs/types/1":                "RoCE v3\n",
		p + "gids/x":                           "ignored",
		p + "counters/ok":                      "7\n",
		p + "counters/neg":                     "-7\n",
		p + "counters/trunc":                   "",
		p + "hw_counters/big":                  "18446744073709551616\n",
		p + "hw_counters/space":                " 5 \n",
		"class/infiniband_verbs/uverbs0/ibdev": "bad0\n",
		"class/infiniband_verbs/uverbs0/dev":   "231\n",
	})
	f := New(root)
	dev, err := f.Device("bad0")
	if err != nil {
		t.Fatal(err)
	}
	if dev.NodeType != "" || dev.NodeTypeNum != nil || dev.NodeGUID != "" || dev.SysImageGUID != "" ||
		dev.Uverbs != "uverbs0" || dev.UverbsMajor != nil || len(dev.Ports) != 1 {
		t.Errorf("device: %+v", dev)
	}
	port, err := f.Port("bad0", 1)
	if err != nil {
		t.Fatal(err)
	}
	if port.State != "" || port.PhysState != "" || port.Rate != "fast" || port.RateGbps != nil ||
		port.LID != nil || port.SMLID != nil || port.LMC != nil || port.CapMask != nil || port.LinkLayer != "" ||
		port.GIDTableLen != 2 {
		t.Errorf("port: %+v", port)
	}
	gids, err := f.GIDs("bad0", 1)
	if err != nil || len(gids) != 2 {
		t.Fatalf("gids: %v %v", gids, err)
	}
	if gids[0].RawOK || !gids[0].Empty() || gids[0].String() != "" {
		t.Errorf("truncated gid: %+v", gids[0])
	}
	if gids[1].Type != "" || gids[1].Kind != vocab.GIDTypeUnknown || gids[1].IPv4().String() != "10.77.0.1" {
		t.Errorf("unknown type: %+v", gids[1])
	}
	cs, _ := f.Counters("bad0", 1)
	if len(cs) != 1 || cs[0] != (Counter{"ok", 7}) {
		t.Errorf("counters: %v", cs)
	}
	hw, _ := f.HWCounters("bad0", 1)
	if len(hw) != 1 || hw[0] != (Counter{"space", 5}) {
		t.Errorf("hw_counters: %v", hw)
	}
}

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	for _, want := range []string{"", "4: ACTIVE\n", strings.Repeat("x", 4097)} {
		p := filepath.Join(dir, "attr")
		if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadBounded(p)
		if err != nil || string(got) != want {
			t.Errorf("ReadBounded(%d bytes) = %d bytes, %v", len(want), len(got), err)
		}
	}
	// An endless file stops at the bound.
	if got, err := ReadBounded("/dev/zero"); err != nil || len(got) != MaxRead {
		t.Errorf("ReadBounded(/dev/zero) = %d bytes, %v; want %d", len(got), err, MaxRead)
	}
	// Under /sys one short read is the whole attribute: same bytes as a
	// read to EOF.
	for _, p := range []string{"/sys/class/net/lo/mtu", "/sys/class/net/lo/address", "/sys/kernel/mm/transparent_hugepage/enabled"} {
		want, err := os.ReadFile(p)
		if err != nil {
			continue // not on this machine
		}
		if got, err := ReadBounded(p); err != nil || string(got) != string(want) {
			t.Errorf("ReadBounded(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	// A missing file is fs.ErrNotExist, naming the path.
	_, err := ReadBounded(filepath.Join(dir, "missing"))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
}

func TestKnownPortCountersMatchChecked(t *testing.T) {
	f := New(mlx5Root)
	for _, c := range []struct {
		port uint32
		hw   bool
	}{{1, false}, {1, true}, {0, true}, {0, false}} {
		got, absent := f.KnownPortCounters("mlx5_0", c.port, c.hw)
		var want []Counter
		var err error
		switch {
		case c.hw:
			want, err = f.HWCounters("mlx5_0", c.port)
		case c.port != 0:
			want, err = f.Counters("mlx5_0", c.port)
		}
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("port %d hw %v: %v, checked %v", c.port, c.hw, got, want)
		}
		// The fixture's mlx5_0 has port 1's directories, not the device's.
		if wantAbsent := c.port == 0 && c.hw; absent != wantAbsent {
			t.Errorf("port %d hw %v: absent %v, want %v", c.port, c.hw, absent, wantAbsent)
		}
	}
	if cs, absent := f.KnownPortCounters("gone0", 1, true); len(cs) != 0 || !absent {
		t.Errorf("a device gone since netlink listed it: %v, absent %v; want none, absent", cs, absent)
	}
}

package vocab

import (
	"testing"
)

// The strings below are what rdmactl printed before this package existed
// (nldev.PortStateName, PhysStateName, verbs.GIDTypeName, devquery's
// ibv_devinfo tables, link show's rate column): they must not change.

func TestPortState(t *testing.T) {
	for s, want := range map[PortState][2]string{
		0: {"NOP", "invalid state"}, PortDown: {"DOWN", "PORT_DOWN"}, PortInit: {"INIT", "PORT_INIT"},
		PortArmed: {"ARMED", "PORT_ARMED"}, PortActive: {"ACTIVE", "PORT_ACTIVE"},
		PortActiveDefer: {"ACTIVE_DEFER", "invalid state"}, 6: {"UNKNOWN", "invalid state"}, 255: {"UNKNOWN", "invalid state"},
	} {
		if s.String() != want[0] || s.Devinfo() != want[1] {
			t.Errorf("PortState(%d) = %q/%q, want %q", s, s.String(), s.Devinfo(), want)
		}
	}
}

func TestPhysState(t *testing.T) {
	for s, want := range map[PhysState][2]string{
		0: {"NOP", "invalid physical state"}, PhysSleep: {"SLEEP", "SLEEP"}, PhysPolling: {"POLLING", "POLLING"},
		PhysDisabled: {"DISABLED", "DISABLED"}, PhysConfigTraining: {"ARMED", "PORT_CONFIGURATION TRAINNING"},
		PhysLinkUp: {"LINK_UP", "LINK_UP"}, PhysLinkErrorRecovery: {"LINK_ERROR_RECOVER", "LINK_ERROR_RECOVERY"},
		PhysPhyTest: {"PHY_TEST", "PHY TEST"}, 8: {"UNKNOWN", "invalid physical state"},
		9: {"OPA_OFFLINE", "invalid physical state"}, 11: {"OPA_TEST", "invalid physical state"}, 12: {"UNKNOWN", "invalid physical state"},
	} {
		if s.String() != want[0] || s.Devinfo() != want[1] {
			t.Errorf("PhysState(%d) = %q/%q, want %q", s, s.String(), s.Devinfo(), want)
		}
	}
}

func TestLinkLayer(t *testing.T) {
	for l, want := range map[LinkLayer]string{0: "Unspecified", 1: "InfiniBand", 2: "Ethernet", 3: "Unknown"} {
		if l.String() != want {
			t.Errorf("LinkLayer(%d) = %q, want %q", l, l.String(), want)
		}
	}
	for s, want := range map[string]LinkLayer{"InfiniBand": LinkLayerInfiniBand, "Ethernet": LinkLayerEthernet} {
		if l, ok := ParseLinkLayer(s); !ok || l != want || l.String() != s {
			t.Errorf("ParseLinkLayer(%q) = %v %v", s, l, ok)
		}
	}
	for _, s := range []string{"Unknown", "", "ethernet", "Ethernet\n"} {
		if _, ok := ParseLinkLayer(s); ok {
			t.Errorf("ParseLinkLayer(%q) ok", s)
		}
	}
}

func TestGIDType(t *testing.T) {
	for g, want := range map[GIDType][2]string{
		GIDTypeIB: {"IB", "IB/RoCE v1"}, GIDTypeRoCEv1: {"RoCE v1", "IB/RoCE v1"}, GIDTypeRoCEv2: {"RoCE v2", "RoCE v2"},
		GIDTypeUnknown: {"", ""}, 7: {"type 7", ""},
	} {
		if g.String() != want[0] || g.Sysfs() != want[1] || g.Known() != (g <= 2) {
			t.Errorf("GIDType(%d) = %q/%q, want %q", g, g.String(), g.Sysfs(), want)
		}
	}
	// sysfs writes one string for IB and RoCE v1: the link layer decides.
	for _, c := range []struct {
		s    string
		ll   LinkLayer
		want GIDType
		ok   bool
	}{
		{"IB/RoCE v1", LinkLayerInfiniBand, GIDTypeIB, true},
		{"IB/RoCE v1", LinkLayerEthernet, GIDTypeRoCEv1, true},
		{"RoCE v2", LinkLayerEthernet, GIDTypeRoCEv2, true},
		{"RoCE v2", LinkLayerInfiniBand, GIDTypeRoCEv2, true},
		{"", LinkLayerInfiniBand, GIDTypeUnknown, false},
		{"roce v2", LinkLayerEthernet, GIDTypeUnknown, false},
	} {
		if got, ok := ParseSysfsGIDType(c.s, c.ll); got != c.want || ok != c.ok {
			t.Errorf("ParseSysfsGIDType(%q, %v) = %v %v", c.s, c.ll, got, ok)
		}
	}
	// QUERY_GID_TABLE's RoCE v1 on an IB port is shown as IB (dev query);
	// its IB on an Ethernet port (iWARP) stays IB.
	if GIDTypeRoCEv1.OnLink(LinkLayerInfiniBand) != GIDTypeIB || GIDTypeIB.OnLink(LinkLayerEthernet) != GIDTypeIB ||
		GIDTypeRoCEv2.OnLink(LinkLayerInfiniBand) != GIDTypeRoCEv2 {
		t.Error("OnLink")
	}
	for s, want := range map[string]GIDType{"v1": GIDTypeRoCEv1, "RoCE V2": GIDTypeRoCEv2, "roce-v2": GIDTypeRoCEv2, "IB": GIDTypeIB} {
		if got, ok := ParseGIDTypeFlag(s); !ok || got != want {
			t.Errorf("ParseGIDTypeFlag(%q) = %v %v", s, got, ok)
		}
	}
	if _, ok := ParseGIDTypeFlag("v3"); ok {
		t.Error("v3 accepted")
	}
}

func TestMTU(t *testing.T) {
	for m, want := range map[MTU]uint32{0: 0, MTU256: 256, MTU512: 512, MTU1024: 1024, MTU2048: 2048, MTU4096: 4096, 6: 0} {
		if m.Bytes() != want {
			t.Errorf("MTU(%d).Bytes() = %d, want %d", m, m.Bytes(), want)
		}
		name := "invalid MTU"
		if want != 0 {
			name = itoa(want)
			if got, ok := MTUFromBytes(int(want)); !ok || got != m {
				t.Errorf("MTUFromBytes(%d) = %v %v", want, got, ok)
			}
		}
		if m.String() != name {
			t.Errorf("MTU(%d) = %q, want %q", m, m.String(), name)
		}
	}
	for _, b := range []int{0, 1500, 4095, 8192, -256} {
		if _, ok := MTUFromBytes(b); ok {
			t.Errorf("MTUFromBytes(%d) ok", b)
		}
	}
}

func itoa(v uint32) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

func TestRateOf(t *testing.T) {
	for _, c := range []struct {
		speed uint32
		width uint8
		sysfs string // what rate_show prints for them (6.x)
	}{
		{8, 1, "10 Gb/sec (1X FDR10)"}, // rxe on a 10G netdev
		{1, 1, "2.5 Gb/sec (1X SDR)"},
		{0, 2, "10 Gb/sec (4X SDR)"},  // unknown speed: SDR
		{3, 1, "2.5 Gb/sec (1X SDR)"}, // not a single bit: SDR too
		{2, 16, "10 Gb/sec (2X DDR)"},
		{4, 2, "40 Gb/sec (4X QDR)"},
		{16, 1, "14 Gb/sec (1X FDR)"},
		{16, 8, "168 Gb/sec (12X FDR)"},
		{32, 2, "100 Gb/sec (4X EDR)"},
		{64, 4, "400 Gb/sec (8X HDR)"},
		{128, 2, "400 Gb/sec (4X NDR)"},
		{256, 2, "800 Gb/sec (4X XDR)"},
		{1, 8, "30 Gb/sec (12X SDR)"},
	} {
		want, ok := ParseRate(c.sysfs)
		if !ok {
			t.Fatalf("ParseRate(%q) failed", c.sysfs)
		}
		if got, ok := RateOf(c.speed, c.width); !ok || got != want {
			t.Errorf("RateOf(%d, %d) = %+v %v, want %+v (%q)", c.speed, c.width, got, ok, want, c.sysfs)
		}
	}
	for _, w := range []uint8{0, 3, 32, 255} {
		if r, ok := RateOf(32, w); ok {
			t.Errorf("RateOf(EDR, width %d) = %+v, want no rate (rate_show: EINVAL)", w, r)
		}
	}
}

func TestRate(t *testing.T) {
	for _, c := range []struct {
		in, show string
		want     Rate
	}{
		{"100 Gb/sec (4X EDR)", "100 Gb/s 4X EDR", Rate{100, "4X", "EDR"}},
		{"10 Gb/sec (1X FDR10)", "10 Gb/s 1X FDR10", Rate{10, "1X", "FDR10"}}, // rxe
		{"2.5 Gb/sec (1X SDR)", "2.5 Gb/s 1X SDR", Rate{2.5, "1X", "SDR"}},
		{"40 Gb/sec (4X)", "40 Gb/s 4X", Rate{40, "4X", ""}},
		{"25 Gb/sec", "25 Gb/s ", Rate{25, "", ""}},
	} {
		got, ok := ParseRate(c.in)
		if !ok || got != c.want || got.String() != c.show {
			t.Errorf("ParseRate(%q) = %+v %v (%q), want %+v (%q)", c.in, got, ok, got.String(), c.want, c.show)
		}
	}
	for _, s := range []string{"", "fast", "NaN Gb/sec (4X EDR)", "-1 Gb/sec (1X SDR)", "1e10 Gb/sec (4X)",
		"1 Gb/sec (", "1 Gb/sec (4X EDR extra)", "1 Gb/sec 4X EDR"} {
		if r, ok := ParseRate(s); ok {
			t.Errorf("ParseRate(%q) = %+v, want rejected", s, r)
		}
	}
}

func TestGUID(t *testing.T) {
	g, ok := ParseGUID("A86C:01ff:fecc:54ed")
	if !ok || g != 0xa86c01fffecc54ed || g.String() != "a86c:01ff:fecc:54ed" {
		t.Errorf("ParseGUID = %#x %v %q", uint64(g), ok, g.String())
	}
	if GUIDFromBytes([8]byte{0x44, 0x1c, 0xde, 0xff, 0xfe, 0x1f, 0x1a, 0xdc}).String() != "441c:deff:fe1f:1adc" {
		t.Error("GUIDFromBytes")
	}
	if GUID(0).String() != "0000:0000:0000:0000" || GUID(0xfe80000000000000).String() != "fe80:0000:0000:0000" {
		t.Error("GUID zero padding")
	}
	for _, s := range []string{"", "a86c:01ff:fecc", "a86c:01ff:fecc:54e", "a86c:01ff:fecc:54edd", "+86c:01ff:fecc:54ed",
		"a86c:01ff:fecc:54ed:0000", "g86c:01ff:fecc:54ed"} {
		if _, ok := ParseGUID(s); ok {
			t.Errorf("ParseGUID(%q) ok", s)
		}
	}
}

func TestDevNum(t *testing.T) {
	if ma, mi, ok := ParseDevNum("231:192\n"); !ok || ma != 231 || mi != 192 {
		t.Errorf("ParseDevNum = %d %d %v", ma, mi, ok)
	}
	for _, s := range []string{"", "231", ":", "a:b", "-1:2", "99999999999:1", "1:2:3"} {
		if _, _, ok := ParseDevNum(s); ok {
			t.Errorf("ParseDevNum(%q) ok", s)
		}
	}
}

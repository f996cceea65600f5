package dropin

import (
	"bufio"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// rxeQuery is what QUERY_DEVICE, QUERY_PORT and QUERY_GID_TABLE answered
// for an rxe device on the VM (6.1, the values ibv_devinfo -v printed in
// testdata/ibv_devinfo-v-rxe.txt, a copy of the shared fixture). The
// device answers cannot be captured offline, so they are typed in here;
// what this checks is the layout, the decoding and the order.
func rxeQuery(name string, guid [8]byte, ip string) inventory.DeviceQuery {
	a := &verbs.DeviceAttr{DeviceCaps: verbs.DeviceCaps{
		NodeGUID: guid, SysImageGUID: guid, MaxMRSize: 0xffffffffffffffff, PageSizeCap: 0xfffff000,
		VendorID: 0xffffff, MaxQP: 1048560, MaxQPWR: 1048576, DeviceCapFlags: 0x01223c76,
		MaxSGE: 32, MaxSGERd: 32, MaxCQ: 1048576, MaxCQE: 32767, MaxMR: 524287, MaxPD: 1048576,
		MaxQPRdAtom: 128, MaxResRdAtom: 258048, MaxQPInitRdAtom: 128, AtomicCap: 1, MaxMW: 524287,
		MaxMcastGrp: 8192, MaxMcastQPAttach: 56, MaxTotalMcastQPAttach: 458752, MaxAH: 32767,
		MaxSRQ: 917503, MaxSRQWR: 1048576, MaxSRQSGE: 27, MaxPkeys: 64, LocalCAAckDelay: 15, PhysPortCnt: 1},
		Extended: true, DeviceCapFlagsEx: 0x1223c76,
	}
	p := &verbs.PortAttr{Port: 1, PortCaps: verbs.PortCaps{
		State: vocab.PortActive, MaxMTU: 5, ActiveMTU: 3, GIDTblLen: 1024, PortCapFlags: 0x00010000,
		MaxMsgSz: 0x800000, PkeyTblLen: 1, MaxVLNum: 1, ActiveWidth: 1, ActiveSpeed: 8, PhysState: 5,
		LinkLayer: vocab.LinkLayerEthernet,
	}}
	gid := func(i uint32, s string) verbs.GIDEntry {
		return verbs.GIDEntry{Port: 1, Index: i, GID: netip.MustParseAddr(s).As16(), Type: vocab.GIDTypeRoCEv2}
	}
	// rxe derives its node GUID from the MAC, and so the link-local GID.
	ll := netip.AddrFrom16([16]byte{0xfe, 0x80, 8: guid[0], guid[1], guid[2], guid[3], guid[4], guid[5], guid[6], guid[7]})
	return inventory.DeviceQuery{
		Device: verbs.Device{Name: name}, NodeType: 1, Attr: a, NumCompVectors: 2,
		Ports: []inventory.PortQuery{{Attr: p, GIDs: []verbs.GIDEntry{gid(0, ll.String()), gid(1, ip)}}},
	}
}

func rxeDevs() []render.DevInfo {
	return render.DevInfos([]inventory.DeviceQuery{
		rxeQuery("rxe0", [8]byte{0xa8, 0x6c, 0x01, 0xff, 0xfe, 0xcc, 0x54, 0xed}, "::ffff:10.77.0.1"),
		rxeQuery("rxe1", [8]byte{0xa0, 0x7a, 0xa8, 0xff, 0xfe, 0x8d, 0xd3, 0x5c}, "::ffff:10.77.0.2"),
	})
}

func printVerbose(devs []render.DevInfo, port uint8) string {
	var b strings.Builder
	w := bufio.NewWriter(&b)
	env := Env{Stdout: w, Stderr: w}
	for i := range devs {
		printHCACap(w, env, &devs[i], port, true)
	}
	w.Flush()
	return b.String()
}

// TestIbvDevinfoVerboseRXE: -v for both rxe devices, and -v -i 1 for one,
// byte for byte as rdma-core 44's ibv_devinfo printed them on the VM.
func TestIbvDevinfoVerboseRXE(t *testing.T) {
	want, err := os.ReadFile("testdata/ibv_devinfo-v-rxe.txt")
	if err != nil {
		t.Fatal(err)
	}
	devs := rxeDevs()
	if got := printVerbose(devs, 0); got != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	rxe1 := string(want[strings.Index(string(want), "hca_id:\trxe1"):])
	if got := printVerbose(devs[1:], 1); got != rxe1 {
		t.Errorf("-d rxe1 -i 1: got:\n%s\nwant:\n%s", got, rxe1)
	}
}

// TestIbvDevinfoVerboseDecoding: the lines rxe does not print, from
// devinfo.c: bits rdma-core 44 does not name, optional blocks, GID forms.
func TestIbvDevinfoVerboseDecoding(t *testing.T) {
	q := rxeQuery("rxe0", [8]byte{1, 2, 3, 4, 5, 6, 7, 8}, "::ffff:10.0.0.1")
	a := q.Attr
	a.ODPGeneralCaps, a.ODPRCCaps = 0x5, 0xc1      // ODP_SUPPORT + bit 2; SEND, bits 6 and 7 (FLUSH, ATOMIC_WRITE later)
	a.DeviceCapFlagsEx = 1<<34 | 1<<41 | 0x1223c76 // RAW_SCATTER_FCS; CC_DMA_BOUNCE came after 44
	a.TimestampMask, a.HCACoreClock = 0xffffffffffff, 156250
	a.RawPacketCaps = 0x11 // C-VLAN stripping, bit 4 unnamed and not printed
	a.PacketPacingRateMax, a.PacketPacingSupportedQPTs = 100, 1<<8|1<<2
	a.MaxCQModerationCount, a.MaxCQModerationPeriod = 65535, 4095
	a.MaxDMSize = 131072
	a.MaxFMR, a.MaxMapPerFMR = 3, 7
	q.Ports[0].Attr.ActiveWidth, q.Ports[0].Attr.ActiveSpeedEx = 3, 256
	q.Ports[0].GIDs = []verbs.GIDEntry{
		{Index: 0, GID: netip.MustParseAddr("fe80::102:304:506:708").As16(), Type: vocab.GIDTypeRoCEv1},
		{Index: 2, GID: netip.MustParseAddr("::10.1.2.3").As16(), Type: vocab.GIDTypeRoCEv2},
		{Index: 3, GID: netip.MustParseAddr("fe80::").As16(), Type: vocab.GIDTypeRoCEv2},
		{Index: 4, GID: netip.MustParseAddr("fe80::1").As16(), Type: vocab.GIDTypeUnknown},
	}
	got := printVerbose(render.DevInfos([]inventory.DeviceQuery{q}), 0)
	for _, line := range []string{
		"\tgeneral_odp_caps:\n\t\t\t\t\tODP_SUPPORT\n\t\t\t\t\tUnknown flags: 0x4\n\trc_odp_caps:\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tUnknown flags: 0xC0\n\tuc_odp_caps:\n\t\t\t\t\tNO SUPPORT\n",
		"\tcompletion timestamp_mask:\t\t\t0x0000ffffffffffff\n\thca_core_clock:\t\t\t156250kHZ\n\traw packet caps:\n\t\t\t\t\tC-VLAN stripping offload\n\tdevice_cap_flags_ex:\t\t0x20401223C76\n\t\t\t\t\tRAW_SCATTER_FCS\n\t\t\t\t\tUnknown flags: 0x20000000000\n",
		"\t\tqp_rate_limit_max:\t100kbps\n\t\tsupported_qp:\n\t\t\t\t\tSUPPORT_RAW_PACKET\n\t\t\t\t\tUnknown flags: 0x4\n\ttag matching not supported\n\n\tcq moderation caps:\n\t\tmax_cq_count:\t65535\n\t\tmax_cq_period:\t4095 us\n\n\tmaximum available device memory:\t131072Bytes\n\n\tnum_comp_vectors:\t\t2\n",
		"\tmax_fmr:\t\t\t3\n\tmax_map_per_fmr:\t\t7\n",
		"\t\t\tactive_width:\t\tinvalid widthX (3)\n\t\t\tactive_speed:\t\tinvalid speed (0)\n",
		"\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:0102:0304:0506:0708, RoCE v1\n\t\t\tGID[  2]:\t\t::10.1.2.3, RoCE v2\n\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("no %q in:\n%s", line, got)
		}
	}
}

package render

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

func TestFlagNames(t *testing.T) {
	// rxe's device_cap_flags as ibv_devinfo -v lists them (6.1).
	got := flagNames(0x01223c76, deviceCapNames)
	want := []string{"BAD_PKEY_CNTR", "BAD_QKEY_CNTR", "AUTO_PATH_MIG", "CHANGE_PHY_PORT", "UD_AV_PORT_ENFORCE",
		"PORT_ACTIVE_EVENT", "SYS_IMAGE_GUID", "RC_RNR_NAK_GEN", "SRQ_RESIZE", "MEM_WINDOW", "MEM_MGT_EXTENSIONS",
		"MEM_WINDOW_TYPE_2B"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if got := flagNames(1<<15|1<<40, deviceCapNames); !reflect.DeepEqual(got, []string{"0x10000008000"}) {
		t.Errorf("unknown bits: %v", got)
	}
	if got := flagNames(0, portCapNames); got == nil || len(got) != 0 {
		t.Errorf("zero flags: %#v (want empty, non-nil)", got)
	}
}

// TestDevQueryRender renders a device shaped like rxe0 as ibv_devinfo -v
// printed it on Debian's 6.1 kernel, in both forms.
func TestDevQueryRender(t *testing.T) {
	d := verbs.Device{Name: "rxe0", Uverbs: "uverbs0", DriverID: verbs.DriverRXE, Driver: "rxe", ABI: 2}
	a := &verbs.DeviceAttr{DeviceCaps: verbs.DeviceCaps{NodeGUID: [8]byte{0xa8, 0x6c, 0x01, 0xff, 0xfe, 0xcc, 0x54, 0xed}, VendorID: 0xffffff,
		PhysPortCnt: 1, MaxMRSize: ^uint64(0), PageSizeCap: 0xfffff000, DeviceCapFlags: 0x01223c76,
		AtomicCap: 1}, DeviceCapFlagsEx: 0x1223c76, Extended: true, ResponseLength: 304}
	j := deviceJSON(d, 1, "", a)
	p := portJSON(&verbs.PortAttr{Port: 1, PortCaps: verbs.PortCaps{State: 4, MaxMTU: 5, ActiveMTU: 3, GIDTblLen: 1024, PortCapFlags: 0x10000,
		MaxMsgSz: 0x800000, PkeyTblLen: 1, MaxVLNum: 1, ActiveWidth: 1, ActiveSpeed: 8, PhysState: 5, LinkLayer: 2, Flags: 1}})
	p.GIDs = []DevInfoGID{{Index: 1, GID: "::ffff:10.77.0.1", Type: "RoCE v2", NetdevIfindex: 4}}
	j.Ports = []DevInfoPort{p}
	var b bytes.Buffer
	writeDevInfo(&b, j)
	for _, s := range []string{"node_guid:                   a86c:01ff:fecc:54ed", "vendor_id:                   0xffffff",
		"state:                     PORT_ACTIVE (4)", "active_speed:              10.0 Gbps (8)", "GID[  1]:                  ::ffff:10.77.0.1, RoCE v2",
		"atomic_cap:                  ATOMIC_HCA (1)", "MEM_WINDOW_TYPE_2B", "device_cap_flags_ex:         0x1223C76"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m["ifname"] != "rxe0" || m["max_mr_size"] == nil || m["board_id"] != nil {
		t.Errorf("json %s", raw)
	}
	port := m["ports"].([]any)[0].(map[string]any)
	if port["active_mtu"].(float64) != 3 || port["active_mtu_name"] != "1024" || port["link_layer_name"] != "Ethernet" {
		t.Errorf("port json %v", port)
	}
}

// TestDevQueryUnknownAndProviderCaps: bits ibv_devinfo has no name for
// come out as its "Unknown flags: 0x..." lines (rxe on 6.12 sets
// device_cap_flags_ex bits 38-40), and the mlx5 provider caps (TSO, RSS
// hashing, packet pacing) as its tso_caps, rss_caps and
// packet_pacing_caps blocks.
func TestDevQueryUnknownAndProviderCaps(t *testing.T) {
	d := verbs.Device{Name: "mlx5_0", Uverbs: "uverbs0", DriverID: verbs.DriverMLX5, Driver: "mlx5", ABI: 1}
	a := &verbs.DeviceAttr{DeviceCaps: verbs.DeviceCaps{PhysPortCnt: 1, DeviceCapFlags: 0x01223c76 | 1<<31}, DeviceCapFlagsEx: 0x1C081223C76 | 1<<34,
		ODPRCCaps: 1 | 1<<9, Extended: true, ResponseLength: 304, DriverResponseLength: 104,
		TSOMaxTSO: 262144, TSOSupportedQPTs: 1<<8 | 1<<1, RSSSupportedQPTs: 1 << 8, RSSRxHashFunction: 1,
		RSSRxHashFieldsMask: 0x800000FF, PacketPacingRateMin: 1, PacketPacingRateMax: 100000000, PacketPacingSupportedQPTs: 1<<8 | 1<<2}
	j := deviceJSON(d, 1, "", a)
	var b bytes.Buffer
	writeDevInfo(&b, j)
	out := b.String()
	ind := strings.Repeat(" ", 33)
	for _, s := range []string{
		"device_cap_flags:            0x81223c76\n",
		ind + "MEM_WINDOW_TYPE_2B\n" + ind + "Unknown flags: 0x80000000\n",
		"device_cap_flags_ex:         0x1C481223C76\n" + ind + "RAW_SCATTER_FCS\n" + ind + "Unknown flags: 0x1C000000000\n" +
			"  tso_caps:\n    max_tso:                   262144\n    supported_qp:\n" + ind + "SUPPORT_RAW_PACKET\n" + ind + "Unknown flags: 0x2\n",
		"rc_odp_caps:                 0x201\n" + ind + "SUPPORT_SEND\n" + ind + "Unknown flags: 0x200\n",
		"    rx_hash_function:          0x1\n    rx_hash_fields_mask:       0x800000FF\n    supported_qp:\n" + ind + "SUPPORT_RAW_PACKET\n",
		"  packet_pacing_caps:\n    qp_rate_limit_min:         1 kbps\n    qp_rate_limit_max:         100000000 kbps\n    supported_qp:\n" +
			ind + "SUPPORT_RAW_PACKET\n" + ind + "SUPPORT_RC\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	raw, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		DeviceCapFlagsNames   []string `json:"device_cap_flags_names"`
		DeviceCapFlagsExNames []string `json:"device_cap_flags_ex_names"`
		DriverResponseLength  uint32   `json:"driver_response_length"`
		TSOCaps               struct {
			MaxTSO uint32   `json:"max_tso"`
			Names  []string `json:"supported_qpts_names"`
		} `json:"tso_caps"`
		RSSCaps struct {
			RxHashFunction   uint8    `json:"rx_hash_function"`
			RxHashFieldsMask uint64   `json:"rx_hash_fields_mask"`
			Names            []string `json:"supported_qpts_names"`
		} `json:"rss_caps"`
		Pacing struct {
			Min   uint32   `json:"qp_rate_limit_min"`
			Max   uint32   `json:"qp_rate_limit_max"`
			Names []string `json:"supported_qpts_names"`
		} `json:"packet_pacing_caps"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if n := m.DeviceCapFlagsNames; n[len(n)-1] != "0x80000000" {
		t.Errorf("device_cap_flags_names %v", n)
	}
	if n := m.DeviceCapFlagsExNames; n[len(n)-2] != "RAW_SCATTER_FCS" || n[len(n)-1] != "0x1C080000000" {
		t.Errorf("device_cap_flags_ex_names %v", n)
	}
	if m.DriverResponseLength != 104 || m.TSOCaps.MaxTSO != 262144 || !reflect.DeepEqual(m.TSOCaps.Names, []string{"SUPPORT_RAW_PACKET", "0x2"}) ||
		m.RSSCaps.RxHashFunction != 1 || m.RSSCaps.RxHashFieldsMask != 0x800000FF || !reflect.DeepEqual(m.RSSCaps.Names, []string{"SUPPORT_RAW_PACKET"}) ||
		m.Pacing.Min != 1 || m.Pacing.Max != 100000000 || !reflect.DeepEqual(m.Pacing.Names, []string{"SUPPORT_RAW_PACKET", "SUPPORT_RC"}) {
		t.Errorf("json %s", raw)
	}
}

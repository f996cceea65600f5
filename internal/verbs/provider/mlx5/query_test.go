package mlx5

import (
	"testing"
	"unsafe"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestFillMLX5Attr: the mlx5 fields of QUERY_DEVICE's answer are taken
// only where the kernel's response_length covers them.
func TestFillMLX5Attr(t *testing.T) {
	var a verbs.DeviceAttr
	m := mlx5QueryDeviceResp{
		TSOCaps:          mlx5TSOCaps{MaxTSO: 262144, SupportedQPTs: 1 << 8},
		RSSCaps:          mlx5RSSCaps{RxHashFieldsMask: 0x800000FF, RxHashFunction: 1},
		PacketPacingCaps: mlx5PacketPacingCaps{QPRateLimitMin: 1, QPRateLimitMax: 100000000, SupportedQPTs: 1 << 8},
	}
	m.ResponseLength = uint32(unsafe.Sizeof(m))
	fillMLX5Attr(&a, &m)
	if a.DriverResponseLength != 104 || a.TSOMaxTSO != 262144 || a.TSOSupportedQPTs != 256 || a.RSSRxHashFieldsMask != 0x800000FF ||
		a.RSSRxHashFunction != 1 || a.PacketPacingRateMin != 1 || a.PacketPacingRateMax != 100000000 || a.PacketPacingSupportedQPTs != 256 {
		t.Errorf("full mlx5 response: %+v", a)
	}
	// An mlx5 kernel that knew tso_caps and rss_caps only.
	m.ResponseLength = uint32(unsafe.Offsetof(m.CQECompCaps))
	a = verbs.DeviceAttr{}
	fillMLX5Attr(&a, &m)
	if a.TSOMaxTSO != 262144 || a.RSSRxHashFunction != 1 || a.PacketPacingRateMax != 0 || a.PacketPacingSupportedQPTs != 0 {
		t.Errorf("mlx5 response of %d bytes: %+v", m.ResponseLength, a)
	}
	// Only comp_mask and response_length: nothing.
	m.ResponseLength = 8
	a = verbs.DeviceAttr{}
	fillMLX5Attr(&a, &m)
	if a.TSOMaxTSO != 0 || a.RSSRxHashFieldsMask != 0 || a.DriverResponseLength != 8 {
		t.Errorf("mlx5 response of 8 bytes: %+v", a)
	}
}

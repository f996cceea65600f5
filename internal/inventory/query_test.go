package inventory

import (
	"strings"
	"testing"
)

// TestDeviceAt: an RDMA CM route's device by index where the kernel gives
// one (even when another device has the GUID), else by node GUID.
func TestDeviceAt(t *testing.T) {
	idx := func(i uint32) *uint32 { return &i }
	devs := []Device{
		{Index: idx(1), Name: "rxe0", NodeGUID: "0002:c9ff:fe00:0001"},
		{Index: idx(2), Name: "rxe1", NodeGUID: "0002:c9ff:fe00:0002"},
		{Index: idx(3), Name: "rxe2", NodeGUID: "0002:c9ff:fe00:0002"},
	}
	for _, tc := range []struct {
		index *uint32
		guid  uint64
		want  string
	}{
		{idx(3), 0x0002c9fffe000002, "rxe2"},
		{idx(1), 0x0002c9fffe000002, "rxe0"},
		{nil, 0x0002c9fffe000002, "rxe1"},
		{nil, 0x0002c9fffe000001, "rxe0"},
	} {
		if got, err := deviceAt(devs, tc.index, tc.guid); got != tc.want || err != nil {
			t.Errorf("deviceAt(%v, %#x) = %q, %v; want %q", tc.index, tc.guid, got, err, tc.want)
		}
	}
	if _, err := deviceAt(devs, idx(9), 0x0002c9fffe000002); err == nil || !strings.Contains(err.Error(), "index 9") {
		t.Errorf("unknown index: %v", err)
	}
	if _, err := deviceAt(devs, nil, 0x1234); err == nil || !strings.Contains(err.Error(), "0000:0000:0000:1234") {
		t.Errorf("unknown GUID: %v", err)
	}
}

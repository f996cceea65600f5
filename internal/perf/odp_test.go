package perf

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestODPCapable: --odp needs IB_ODP_SUPPORT and RC send and receive in
// odp_caps (perftest's check_odp_support); anything less is exit 5 in
// one line naming --odp and the device.
func TestODPCapable(t *testing.T) {
	for _, tc := range []struct {
		general uint64
		rc      uint32
		ok      bool
		why     string
	}{
		{0, 0, false, "has no On-Demand Paging"},
		{1, 0, false, "no RC sends"},
		{1, 1, false, "no RC receives"},
		{1, 3, true, ""},
		{1, 0x3f, true, ""},
		{0, 3, false, "has no On-Demand Paging"},
	} {
		err := odpCapable("rxe0", tc.general, tc.rc)
		if (err == nil) != tc.ok {
			t.Errorf("general %#x rc %#x: %v", tc.general, tc.rc, err)
			continue
		}
		if err != nil && (!errors.Is(err, verbs.ErrUnsupported) || !strings.HasPrefix(err.Error(), "--odp: rxe0") || !strings.Contains(err.Error(), tc.why)) {
			t.Errorf("general %#x rc %#x: %v", tc.general, tc.rc, err)
		}
	}
}

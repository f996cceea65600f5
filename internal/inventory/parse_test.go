package inventory

import "testing"

func TestRoCEMTU(t *testing.T) {
	for in, want := range map[uint32]uint32{1500: 1024, 9000: 4096, 4200: 4096, 4000: 2048, 1100: 512, 300: 0, 50: 0} {
		if got := RoCEMTU(in); got != want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", in, got, want)
		}
	}
}

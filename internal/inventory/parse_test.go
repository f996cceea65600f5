package inventory

import "testing"

func TestRoCEMTUAndRate(t *testing.T) {
	for in, want := range map[uint32]uint32{1500: 1024, 9000: 4096, 4200: 4096, 4000: 2048, 1100: 512, 300: 0, 50: 0} {
		if got := RoCEMTU(in); got != want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", in, got, want)
		}
	}
	if g, w, s, ok := ParseRate("100 Gb/sec (4X EDR)"); !ok || g != 100 || w != "4X" || s != "EDR" {
		t.Errorf("rate %v %q %q %v", g, w, s, ok)
	}
	if _, _, _, ok := ParseRate("garbage"); ok {
		t.Error("garbage rate parsed")
	}
	for e, want := range map[uint8]uint32{0: 0, 1: 256, 3: 1024, 5: 4096, 6: 0} {
		if got := MTUBytes(e); got != want {
			t.Errorf("MTUBytes(%d) = %d, want %d", e, got, want)
		}
	}
}

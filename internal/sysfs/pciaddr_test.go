package sysfs

import "testing"

func TestIsPCIAddr(t *testing.T) {
	for s, want := range map[string]bool{
		"0000:3b:00.0": true, "10000:00:1f.7": true, "0000:AF:1e.3": true,
		"0000:3b:00.8": false, "000:3b:00.0": false, "0000:3b:00": false, "0000:3g:00.0": false,
		"0000-3b:00.0": false, "": false, "rxe0": false, "0000:3b:00.0x": false, "0000:3b.00.0": false,
	} {
		if got := isPCIAddr(s); got != want {
			t.Errorf("isPCIAddr(%q) = %v, want %v", s, got, want)
		}
	}
}

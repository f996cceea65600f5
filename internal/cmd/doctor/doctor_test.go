package doctor

import (
	"testing"
)

func TestPerfWritePins(t *testing.T) {
	run, all := perfWritePins()
	// perf write's defaults: one QP, 65536-byte messages: two areas of
	// 64 KiB + the UD GRH room, in whole pages.
	if run < 2*65536 || run > 2*65536+2*65536 {
		t.Errorf("perf write pins %d bytes", run)
	}
	if all < 2<<23 {
		t.Errorf("perf write -a pins %d bytes, want at least 2 x 8 MiB", all)
	}
}

//go:build vmtest

package main

import "testing"

// TestVMPerfOpsLinkDownMidRun is TestVMPerfLinkDownMidRun for the loops
// of perf atomic and --use-srq (the SRQ included in what must not stay
// behind); "send --use-srq -q 2" also at setup and in its last seconds,
// the case whose lost link once ended as a good run (linkDownMidRun).
func TestVMPerfOpsLinkDownMidRun(t *testing.T) {
	linkDownMidRun(t, 19800, [][]string{
		{"atomic"},
		{"atomic", "--lat", "-A", "CMP_AND_SWAP"},
		{"send", "--use-srq", "-q", "2"},
		{"send", "--lat", "--use-srq"},
	}, 2)
}

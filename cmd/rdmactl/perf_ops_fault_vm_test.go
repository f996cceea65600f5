//go:build vmtest

package main

import "testing"

// TestVMPerfOpsLinkDownMidRun is TestVMPerfLinkDownMidRun for the loops
// of perf atomic and --use-srq: the client's netdev goes down mid-run;
// both processes end on their own with one line on stderr, never a
// signal, and rdma res show is as before once the link is back (the SRQ
// included).
func TestVMPerfOpsLinkDownMidRun(t *testing.T) {
	linkDownMidRun(t, 19700, [][]string{
		{"atomic", "-D", "30"},
		{"atomic", "--lat", "-A", "CMP_AND_SWAP", "-D", "30"},
		{"send", "--use-srq", "-q", "2", "-D", "30"},
		{"send", "--lat", "--use-srq", "-D", "30"},
	})
}

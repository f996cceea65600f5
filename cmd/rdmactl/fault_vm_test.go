//go:build vmtest

package main

import "testing"

// TestVMPerfLinkDownMidRun takes the client's netdev down in the middle
// of a perf run, for each loop kind, and for write also at setup and in
// the run's last seconds: the fabric goes away under the data path. The
// client must fail at once naming its port, the server end on its own
// with one line, neither by a signal, and no RDMA resources stay behind
// once the link is back (linkDownMidRun).
func TestVMPerfLinkDownMidRun(t *testing.T) {
	linkDownMidRun(t, 18800, [][]string{
		{"write"},
		{"write", "--lat"},
		{"send", "--lat"},
		{"read"},
	}, 0, 1)
}

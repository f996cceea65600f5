//go:build vmtest

package main

import "testing"

// TestVMPerfLinkDownMidRun takes the client's netdev down in the middle
// of a perf run, for each loop kind: the fabric goes away under the data
// path. Both processes must end on their own within seconds, with a
// non-zero exit and one line on stderr, never a signal, and leave no RDMA
// resources behind once the link is back.
func TestVMPerfLinkDownMidRun(t *testing.T) {
	linkDownMidRun(t, 18800, [][]string{
		{"write", "-D", "30"},
		{"write", "--lat", "-D", "30"},
		{"send", "--lat", "-D", "30"},
		{"read", "-D", "30"},
	})
}

//go:build vmtest

package main

import (
	"testing"
	"time"
)

// TestVMPerfWriteLatDuration: ib_write_lat -D has no closing handshake
// and each side stops on its own clock; rdmactl waits for its peer's end
// (a perftest peer's exit, an rdmactl peer's "done") before it releases
// its QP and memory. Against both peers the run must end cleanly, with
// samples, and without waiting out that wait's bound (a run and a step,
// 4+10 s): the peer's end, not the bound, must end it.
func TestVMPerfWriteLatDuration(t *testing.T) {
	before := resShow(t)
	pairs := []struct{ name, server, client string }{{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"}}
	for i, pr := range pairs {
		t.Run(pr.name, func(t *testing.T) {
			var sout, cout string
			var serr, cerr error
			var took time.Duration
			for attempt := 0; attempt < 3; attempt++ {
				start := time.Now()
				sout, serr, cout, cerr = runPerfPair("write", "lat", "RC", []string{"-D", "4"}, pr.server, pr.client, 18980+10*i+attempt)
				took = time.Since(start)
				if !perftestClockFailed(sout + cout) {
					break
				}
				t.Logf("attempt %d: stock perftest could not calibrate its clock under TCG; trying again", attempt+1)
			}
			if serr != nil || cerr != nil {
				t.Fatalf("server: %v\nclient: %v\n--- server output\n%s\n--- client output\n%s", serr, cerr, sout, cout)
			}
			for i, out := range []string{sout, cout} {
				who := []string{"server", "client"}[i]
				rows := parsePerfRows(t, who, out)
				if []string{pr.server, pr.client}[i] == "r" && (len(rows) != 1 || rows[0].iters == 0) {
					t.Fatalf("%s rows %+v\n%s", who, rows, out)
				}
			}
			// runPerfPair starts the client once the server listens; a
			// side that waited out its bound would make it 4+14 s at least.
			if took > 17*time.Second {
				t.Fatalf("the pair took %v for a 4 s run: a side waited out its bound", took)
			}
			t.Logf("pair took %v", took.Round(time.Millisecond))
		})
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/rdmactl/rdmactl/internal/perf"
)

// TestVMPerfRDMACMQoS: with -R, -T is the TOS byte of every RoCE v2
// packet of the data QPs in both directions (the CM puts the active
// side's TOS in the path it sends in the REQ, which the passive side's
// QP takes), and --retry_count and -u reach rdmactl's QPs as QUERY_QP
// reports them; against rdmactl and perftest 6.06's -R -T in both roles.
func TestVMPerfRDMACMQoS(t *testing.T) {
	before := resShow(t)
	const (
		cli, srv = "10.77.0.2", perfServerIP
		tos      = 106 // DSCP 26 + ECT(0)
		tmo, r   = 18, 5
	)
	for i, c := range []struct{ server, client string }{{"r", "r"}, {"p", "r"}, {"r", "p"}} {
		t.Run(fmt.Sprintf("server_%s_client_%s", c.server, c.client), func(t *testing.T) {
			qos := func(who string) []string {
				a := []string{"-R", "-T", strconv.Itoa(tos), "--retry_count", strconv.Itoa(r)}
				if who == "r" {
					a = append(a, "-u", strconv.Itoa(tmo)) // perftest takes no -u with -R
				}
				return a
			}
			var sout, cout string
			var serr, cerr error
			var seen map[string]map[byte]int
			for attempt := 0; attempt < 3; attempt++ {
				port := 19500 + 10*i + attempt
				capt := captureRoCE(t, "vrxe0")
				sout, serr, cout, cerr = runQoSPair(c.server, c.client,
					qosArgs(c.server, "write", "RC", "rxe0", port, qos(c.server), false),
					qosArgs(c.client, "write", "RC", "rxe1", port, qos(c.client), true))
				seen = capt.snapshot()
				if !perftestClockFailed(sout+cout) && serr == nil && cerr == nil {
					break
				}
				t.Logf("attempt %d failed (server: %v; client: %v); trying again", attempt+1, serr, cerr)
			}
			if serr != nil || cerr != nil {
				t.Fatalf("server: %v\nclient: %v\n--- server\n%s\n--- client\n%s", serr, cerr, sout, cout)
			}
			t.Logf("RoCE v2 packets by direction and TOS: %v", seen)
			for _, dir := range []string{cli + ">" + srv, srv + ">" + cli} {
				got := seen[dir]
				if got[tos] == 0 {
					t.Errorf("%s: no RoCE v2 packet with TOS %#x (%v)", dir, tos, got)
				}
				// At TOS 0 go the CM's MADs (QP1) and the exchange's
				// messages, whose comm QP -T does not cover (as in
				// perftest); 200 64 KiB writes are thousands of packets.
				if n := got[0]; n*10 > got[tos] {
					t.Errorf("%s: %d packets at TOS 0 against %d at %#x: the data QP's are not all at -T", dir, n, got[tos], tos)
				}
				for b, n := range got {
					if b != tos && b != 0 {
						t.Errorf("%s: %d packets with TOS %#x, want %#x", dir, n, b, tos)
					}
				}
			}
			for _, side := range []struct{ who, out string }{{c.server, sout}, {c.client, cout}} {
				if side.who != "r" {
					continue
				}
				var res perf.Result
				if err := json.Unmarshal([]byte(side.out), &res); err != nil || res.QoS == nil || len(res.QoS.QPs) != 1 {
					t.Fatalf("rdmactl JSON: %v\n%s", err, side.out)
				}
				a := res.QoS.QPs[0]
				if a.State != "RTS" || a.TrafficClass != tos || a.Timeout != tmo || a.RetryCnt != r || a.RNRRetry != r {
					t.Errorf("QUERY_QP %+v: want RTS, tclass %d, timeout %d, retry_cnt %d, rnr_retry %d", a, tos, tmo, r, r)
				}
			}
		})
	}
	if after := resShow(t); after != before {
		t.Errorf("resources leaked:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

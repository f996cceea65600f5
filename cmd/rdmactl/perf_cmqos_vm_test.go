//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/rdmactl/rdmactl/internal/perf"
)

// TestVMPerfRDMACMQoS: with -R, the client's -T becomes the traffic class
// of both sides' data QPs (the CM puts the active side's TOS in the path
// it sends in the REQ, which the passive side's QP takes: a server
// without -T gets it too, and so does a server whose -T differs: the
// passive side's QP is the REQ's path, whatever TOS its listening id
// has; perftest 6.06 sets its -T only on the active side's ids, in
// rdma_cm_address_handler, so its server's -T changes nothing at all),
// and --retry_count and -u reach rdmactl's QPs,
// as QUERY_QP reports them; against rdmactl and perftest 6.06's -R -T in
// both roles.
//
// The wire: in this VM the CM resolves 10.77.0.1 to rxe0 on both sides
// (vm/README.md, Limits), and rxe loops a QP's packets to a QP of its own
// device back in the kernel, so no RoCE v2 packet of such a run crosses
// the veth; QUERY_QP is the evidence there. An rdmactl client given
// --bind 10.77.0.2 resolves from rxe1: its packets cross the bridge, and
// every RoCE v2 data packet in both directions must carry -T's byte.
func TestVMPerfRDMACMQoS(t *testing.T) {
	resUnchanged(t, false)
	const (
		cli, srv = "10.77.0.2", perfServerIP
		tos      = 106 // DSCP 26 + ECT(0)
		other    = 184 // DSCP 46 (EF): a server's -T other than the client's
		tmo, r   = 18, 5
	)
	for i, c := range []struct {
		server, client string
		serverT        int // the server's -T: tos, other, or none (0)
		bind           bool
	}{{"r", "r", tos, false}, {"p", "r", tos, false}, {"r", "p", tos, false}, {"r", "r", 0, false}, {"r", "p", 0, false},
		{"r", "r", tos, true}, {"p", "r", tos, true}, {"r", "r", 0, true},
		{"r", "r", other, false}, {"p", "r", other, false}, {"r", "p", other, false}, {"r", "r", other, true}, {"p", "r", other, true}} {
		name := fmt.Sprintf("server_%s_client_%s", c.server, c.client)
		switch c.serverT {
		case 0:
			name += "/server_without_T"
		case other:
			name += "/server_T_differs"
		}
		if c.bind {
			name += "/client_bound_to_rxe1"
		}
		t.Run(name, func(t *testing.T) {
			qos := func(who string, t int) []string {
				a := []string{"-R", "--retry_count", strconv.Itoa(r)}
				if t != 0 {
					a = append(a, "-T", strconv.Itoa(t))
				}
				if who == "r" {
					a = append(a, "-u", strconv.Itoa(tmo)) // perftest takes no -u with -R
				}
				return a
			}
			seen, res := capturedPair(t, 19500+10*i, func(port int) ([]string, []string) {
				return qosArgs(c.server, "write", "RC", "rxe0", port, qos(c.server, c.serverT), false),
					qosArgs(c.client, "write", "RC", "rxe1", port, append(qos(c.client, tos), bindArg(c.bind, cli)...), true)
			})
			res.mustPass(t)
			sout, cout := res.sout, res.cout
			t.Logf("RoCE v2 packets by direction and TOS: %v", seen)
			if c.bind && len(seen) == 0 {
				t.Fatal("client bound to 10.77.0.2: no RoCE v2 packet crossed vrxe0")
			}
			if len(seen) == 0 {
				t.Log("no RoCE v2 packet crossed vrxe0: the CM ran the pair rxe0 to rxe0, looped back in the kernel; QUERY_QP below is the evidence")
			}
			for _, dir := range []string{cli + ">" + srv, srv + ">" + cli} {
				got := seen[dir]
				if len(seen) != 0 && got[tos] == 0 {
					t.Errorf("%s: no RoCE v2 packet with TOS %#x (%v)", dir, tos, got)
				}
				// At TOS 0 go the CM's MADs (QP1) and the exchange's
				// messages and their ACKs, whose comm QP -T does not
				// cover (as in perftest): 34-38 packets a direction in
				// the VM. A data QP at TOS 0 would add 200 and more (the
				// writes one way, their ACKs the other).
				if n := got[0]; len(seen) != 0 && n > 64 {
					t.Errorf("%s: %d packets at TOS 0 (%d at %#x): more than the exchange and the CM's MADs make", dir, n, got[tos], tos)
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
				t.Logf("rdmactl's QP: -T %d asked, QUERY_QP traffic class %d", res.QoS.TrafficClass, a.TrafficClass)
			}
		})
	}
}

// bindArg is the client's --bind when asked for.
func bindArg(bind bool, addr string) []string {
	if bind {
		return []string{"--bind", addr}
	}
	return nil
}

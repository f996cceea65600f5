//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/rdmactl/rdmactl/internal/perf"
)

// TestVMPerfSRQ: send tests with --use-srq, rdmactl against itself and
// against the VM's ib_send_bw / ib_send_lat --use-srq in both roles, two
// QPs sharing the receiver's SRQ for bandwidth. Every rdmactl receiver
// reports all messages received through its SRQ; between two rdmactl
// sides it also checks that the received payload is the sent pattern
// (perftest sends random bytes). rdma res show is unchanged afterwards
// (the SRQ is destroyed with the rest).
func TestVMPerfSRQ(t *testing.T) {
	resUnchanged(t, false)
	const iters = 200
	port := 19500
	for _, tc := range []struct {
		kind  string
		extra []string
	}{
		{"bw", []string{"-q", "2", "-s", "1024"}},
		{"bw", []string{"-b", "-s", "512"}},
		{"lat", []string{"-s", "64"}},
	} {
		for _, pr := range []struct{ name, server, client string }{
			{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"},
		} {
			port++
			p := port
			t.Run(fmt.Sprintf("%s%v/%s", tc.kind, tc.extra, pr.name), func(t *testing.T) {
				r := retryPair(t, p, 1000, func(port int) ([]string, []string) {
					return srqArgs(tc.kind, tc.extra, pr.server, port, iters, false), srqArgs(tc.kind, tc.extra, pr.client, port, iters, true)
				}, pairOpts{}, perftestClock)
				r.mustPass(t)
				sout, cout := r.sout, r.cout
				bidir := len(tc.extra) > 0 && tc.extra[0] == "-b"
				qps := uint64(1)
				if tc.extra[0] == "-q" {
					qps = 2
				}
				for i, who := range []string{pr.server, pr.client} {
					out := []string{sout, cout}[i]
					if who == "p" {
						if headerField(out, "Connection type") == "" {
							t.Fatalf("perftest printed no header:\n%s", out)
						}
						continue
					}
					var res perf.Result
					if err := json.Unmarshal([]byte(out), &res); err != nil {
						t.Fatalf("rdmactl JSON: %v\n%s", err, out)
					}
					receives := i == 0 || bidir || tc.kind == "lat"
					c := res.SRQ
					if !receives {
						if c != nil {
							t.Fatalf("a sender without receives reports an SRQ: %v", c)
						}
						continue
					}
					var n uint64
					if c != nil {
						for _, x := range c.Received {
							n += x
						}
					}
					want := iters * qps
					if tc.kind == "lat" {
						want = iters
					}
					if c == nil || n != want || c.PayloadChecked != (pr.server == pr.client) || !c.PayloadOK {
						t.Fatalf("rdmactl %s: SRQ check %v, want %d messages (payload checked: %t)\n%s", []string{"server", "client"}[i], c, want, pr.server == pr.client, out)
					}
					t.Logf("%s: %v", []string{"server", "client"}[i], c)
				}
			})
		}
	}
}

// srqArgs is one side of a send test with --use-srq, server on rxe0 or
// client on rxe1: "r" (rdmactl, JSON) or "p" (ib_send_<kind>).
func srqArgs(kind string, extra []string, who string, port, iters int, client bool) []string {
	a := []string{"-d", "rxe0", "--use-srq", "-n", strconv.Itoa(iters), "-p", strconv.Itoa(port)}
	a = append(a, extra...)
	if client {
		a[1] = "rxe1"
		a = append(a, perfServerIP)
	}
	return perfCmd(who, "send", kind, []string{"-j"}, a...)
}

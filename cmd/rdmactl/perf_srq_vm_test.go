//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

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
	before := resShow(t)
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
				var sout, cout string
				var serr, cerr error
				for attempt := 0; attempt < 3; attempt++ {
					sout, serr, cout, cerr = runSRQPair(tc.kind, tc.extra, pr.server, pr.client, p+1000*attempt, iters)
					if !perftestClockFailed(sout + cout) {
						break
					}
					t.Logf("attempt %d: stock perftest could not calibrate its clock under TCG; trying again", attempt+1)
				}
				if serr != nil || cerr != nil {
					t.Fatalf("server: %v\nclient: %v\n--- server output\n%s\n--- client output\n%s", serr, cerr, sout, cout)
				}
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
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// runSRQPair runs a send test with --use-srq on both sides: server on
// rxe0, client on rxe1, each "r" (rdmactl in-process, JSON) or "p"
// (ib_send_<kind>).
func runSRQPair(kind string, extra []string, server, client string, port, iters int) (sout string, serr error, cout string, cerr error) {
	argv := func(who, dev string, isClient bool) []string {
		var a []string
		if who == "r" {
			a = []string{"perf", "send", "-j"}
			if kind == "lat" {
				a = append(a, "--lat")
			}
		} else {
			a = []string{"ib_send_" + kind}
		}
		a = append(a, "-d", dev, "--use-srq", "-n", strconv.Itoa(iters), "-p", strconv.Itoa(port))
		a = append(a, extra...)
		if isClient {
			a = append(a, perfServerIP)
		}
		return a
	}
	if server != client {
		soleSession = true
		defer func() { soleSession = false }()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sout, serr = runSide(ctx, argv(server, "rxe0", false))
	}()
	time.Sleep(1500 * time.Millisecond) // perftest clients do not retry
	cout, cerr = runSide(ctx, argv(client, "rxe1", true))
	wg.Wait()
	return sout, serr, cout, cerr
}

//go:build vmtest

package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// -R (RDMA CM) against the VM's perftest 6.06 in both roles and against
// rdmactl. The CM resolves 10.77.0.1 to rxe0 on both sides (one kernel),
// so these runs are rxe0 to rxe0 whatever -d says, as perftest's are
// (vm/README.md, Limits).

func resShowCM(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("rdma", "res", "show", "cm_id").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma res show cm_id: %v: %s", err, out)
	}
	return string(out)
}

// runCMPair runs a -R server and client of one test: "r" rdmactl
// in-process, "p" perftest.
func runCMPair(verb, kind string, extra []string, server, client string, port int) (sout string, serr error, cout string, cerr error) {
	argv := func(who string, isClient bool) []string {
		var a []string
		if who == "r" {
			a = []string{"perf", verb, "-R"}
			if kind == "lat" {
				a = append(a, "--lat")
			}
		} else {
			a = []string{"ib_" + verb + "_" + kind, "-R"}
		}
		a = append(a, "-n", "100", "-p", strconv.Itoa(port))
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
		sout, serr = runSide(ctx, argv(server, false))
	}()
	time.Sleep(1500 * time.Millisecond) // perftest's comm connect does not retry
	cout, cerr = runSide(ctx, argv(client, true))
	wg.Wait()
	return
}

func TestVMPerfRDMACM(t *testing.T) {
	before, beforeCM := resShow(t), resShowCM(t)
	pairs := []struct{ name, server, client string }{
		{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"}}
	tests := []struct {
		verb, kind string
		extra      []string
	}{{"write", "bw", nil}, {"send", "bw", nil}, {"read", "bw", nil}, {"write", "lat", nil}, {"send", "lat", nil}, {"read", "lat", nil}, {"write", "bw", []string{"-q", "2"}}}
	port := 19100
	for _, tc := range tests {
		for _, pr := range pairs {
			port++
			p := port
			name := fmt.Sprintf("%s_%s%s/%s", tc.verb, tc.kind, strings.Join(tc.extra, ""), pr.name)
			t.Run(name, func(t *testing.T) {
				var sout, cout string
				var serr, cerr error
				for attempt := 0; attempt < 3; attempt++ {
					sout, serr, cout, cerr = runCMPair(tc.verb, tc.kind, tc.extra, pr.server, pr.client, p+1000*attempt)
					if !perftestClockFailed(sout + cout) {
						break
					}
					t.Logf("attempt %d: stock perftest could not calibrate its clock under TCG; trying again", attempt+1)
				}
				if serr != nil || cerr != nil {
					t.Fatalf("server: %v\nclient: %v\n--- server output\n%s\n--- client output\n%s", serr, cerr, sout, cout)
				}
				for who, out := range map[string]string{"server": sout, "client": cout} {
					if headerField(out, "rdma_cm QPs") != "ON" || headerField(out, "Data ex. method") != "rdma_cm" {
						t.Fatalf("%s's header does not say rdma_cm:\n%s", who, out)
					}
				}
				if tc.verb == "read" && tc.kind == "lat" {
					rows := parsePerfRows(t, "client", cout)
					if rows[0].iters != 100 || (pr.client == "r" && rows[0].vals[0] <= 0) {
						t.Fatalf("client row %+v", rows[0])
					}
					return
				}
				srows, crows := parsePerfRows(t, "server", sout), parsePerfRows(t, "client", cout)
				s, c := srows[0], crows[0]
				if s.bytes != c.bytes || s.iters != c.iters {
					t.Fatalf("rows disagree: server %+v client %+v", s, c)
				}
				if tc.kind == "bw" && tc.verb != "send" && fmt.Sprint(s.vals) != fmt.Sprint(c.vals) {
					// The server prints the client's report, which
					// crossed the CM exchange as five 8-byte SENDs.
					t.Fatalf("server printed %v, client measured %v", s.vals, c.vals)
				}
				for i, r := range []perfRow{s, c} {
					if []string{pr.server, pr.client}[i] == "r" && (!finite(r.vals) || r.vals[len(r.vals)-1] <= 0 && tc.kind == "bw") {
						t.Fatalf("rdmactl's row is not sane: %+v", r)
					}
				}
				t.Logf("server %+v client %+v", s, c)
			})
		}
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := resShowCM(t); after != beforeCM {
		t.Fatalf("rdma res show cm_id changed:\nbefore:\n%s\nafter:\n%s", beforeCM, after)
	}
}

// TestVMPerfRDMACMFailures: a client with nothing listening on the port
// (refused) and one whose server address has no RDMA route fail with
// exitPeer and one line, and leave no CM id, QP or context behind.
func TestVMPerfRDMACMFailures(t *testing.T) {
	before, beforeCM := resShow(t), resShowCM(t)
	for _, c := range []struct{ name, addr, want string }{
		{"refused", perfServerIP, "refused"},
		{"unreachable", "192.0.2.1", "no RDMA route"},
		{"no such host", "10.77.0.99", "no RDMA route"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, stderr, code := runCmd(t, "perf", "write", "-R", "-p", "19090", c.addr)
			if code != exitPeer || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) || time.Since(start) > 20*time.Second {
				t.Fatalf("code %d (want %d) after %v, stderr %q (want one line with %q)", code, exitPeer, time.Since(start), stderr, c.want)
			}
			t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))
		})
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if after := resShowCM(t); after != beforeCM {
		t.Fatalf("rdma res show cm_id changed:\nbefore:\n%s\nafter:\n%s", beforeCM, after)
	}
}

//go:build vmtest

package main

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// -R (RDMA CM) against the VM's perftest 6.06 in both roles and against
// rdmactl. The CM resolves 10.77.0.1 to rxe0 on both sides (one kernel),
// so these runs are rxe0 to rxe0 whatever -d says, as perftest's are
// (vm/README.md, Limits).

// cmArgs is one side of a -R test: "r" rdmactl in-process, "p" perftest.
func cmArgs(verb, kind string, extra []string, who string, port int, client bool) []string {
	a := append([]string{"-R", "-n", "100", "-p", strconv.Itoa(port)}, extra...)
	if client {
		a = append(a, perfServerIP)
	}
	return perfCmd(who, verb, kind, nil, a...)
}

// cmPairs are the pairings of the RDMA CM tests: rdmactl on both sides,
// and against perftest in either role.
var cmPairs = []cmPair{
	{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"}}

// cmPair names who serves and who connects: "r" rdmactl, "p" perftest.
type cmPair struct{ name, server, client string }

// cmTest is one test of the RDMA CM tests: verb, bw or lat, more options.
type cmTest struct {
	verb, kind string
	extra      []string
}

// eachCMPair runs body for each test against each pair, as the subtest
// VERB_KIND[EXTRA]/PAIR, on its own port counted up from base.
func eachCMPair(t *testing.T, tests []cmTest, base int, body func(t *testing.T, tc cmTest, pr cmPair, port int)) {
	port := base
	for _, tc := range tests {
		for _, pr := range cmPairs {
			port++
			p := port
			t.Run(fmt.Sprintf("%s_%s%s/%s", tc.verb, tc.kind, strings.Join(tc.extra, ""), pr.name), func(t *testing.T) { body(t, tc, pr, p) })
		}
	}
}

func TestVMPerfRDMACM(t *testing.T) {
	resUnchanged(t, true)
	tests := []cmTest{{"write", "bw", nil}, {"send", "bw", nil}, {"read", "bw", nil}, {"write", "lat", nil}, {"send", "lat", nil}, {"read", "lat", nil}, {"write", "bw", []string{"-q", "2"}}}
	eachCMPair(t, tests, 19100, func(t *testing.T, tc cmTest, pr cmPair, p int) {
		// perftest's comm connect does not retry: runPair starts the
		// client once the server's CM id listens.
		r := retryPair(t, p, 1000, func(port int) ([]string, []string) {
			return cmArgs(tc.verb, tc.kind, tc.extra, pr.server, port, false), cmArgs(tc.verb, tc.kind, tc.extra, pr.client, port, true)
		}, pairOpts{}, perftestClock)
		r.mustPass(t)
		sout, cout := r.sout, r.cout
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
		s, c := agreeingRows(t, sout, cout)
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

// TestVMPerfCommCM: -z, perftest's --comm_rdma_cm: the exchange over an
// RDMA CM connection (perftest's side has no TCP listener or connection to
// fall back on), the QPs -d's own, connected from the exchanged keys (the
// header says rdma_cm QPs OFF, Data ex. method rdma_cm), against perftest
// 6.06 in both roles and between two rdmactl sides.
func TestVMPerfCommCM(t *testing.T) {
	resUnchanged(t, true)
	tests := []cmTest{{"write", "bw", nil}, {"read", "bw", nil}, {"send", "lat", nil}, {"send", "bw", []string{"-c", "UD"}}}
	eachCMPair(t, tests, 19300, func(t *testing.T, tc cmTest, pr cmPair, p int) {
		args := func(who, dev string, port int, client bool) []string {
			a := append([]string{"-z", "-d", dev, "-n", "100", "-p", strconv.Itoa(port)}, tc.extra...)
			if client {
				a = append(a, perfServerIP)
			}
			return perfCmd(who, tc.verb, tc.kind, nil, a...)
		}
		r := retryPair(t, p, 1000, func(port int) ([]string, []string) {
			return args(pr.server, "rxe0", port, false), args(pr.client, "rxe1", port, true)
		}, pairOpts{}, perftestClock)
		r.mustPass(t)
		for who, out := range map[string]string{"server": r.sout, "client": r.cout} {
			if headerField(out, "rdma_cm QPs") != "OFF" || headerField(out, "Data ex. method") != "rdma_cm" {
				t.Fatalf("%s's header does not say rdma_cm QPs OFF, exchange rdma_cm:\n%s", who, out)
			}
		}
		if len(tc.extra) > 0 { // UD: a receiver may count fewer than were sent
			t.Logf("client %+v", parsePerfRows(t, "client", r.cout)[0])
			return
		}
		s, c := agreeingRows(t, r.sout, r.cout)
		t.Logf("server %+v client %+v", s, c)
	})
}

// TestVMPerfRDMACMFailures: a client with nothing listening on the port
// (refused) and one whose server address has no RDMA route fail with
// exitPeer and one line, and leave no CM id, QP or context behind.
func TestVMPerfRDMACMFailures(t *testing.T) {
	resUnchanged(t, true)
	for _, c := range []struct{ name, addr, want string }{
		{"refused", perfServerIP, "refused"},
		{"unreachable", "192.0.2.1", "no RDMA route"},
		{"no such host", "10.77.0.99", "no RDMA route"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, stderr, code := runCmd(t, "perf", "write", "-R", "-p", "19090", c.addr)
			if code != cmdutil.ExitPeer || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) || time.Since(start) > 20*time.Second {
				t.Fatalf("code %d (want %d) after %v, stderr %q (want one line with %q)", code, cmdutil.ExitPeer, time.Since(start), stderr, c.want)
			}
			t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr))
		})
	}
}

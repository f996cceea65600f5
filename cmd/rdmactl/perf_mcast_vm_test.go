//go:build vmtest

package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestVMPerfMcast: -g runs send bw and lat through a multicast group
// against perftest in both roles, and rdmactl against itself: both sides
// report a row of the same size and count, and rdmactl's side prints
// perftest's multicast title and labels the group's record MGID. The
// group is ff02::1 on the link-local GID (-x 0): rxe delivers a RoCE
// multicast packet only to a group the netdev has joined, and every
// IPv6 interface has joined the all-nodes group (perftest against itself
// with its default ff01:0:0:2:c985:: or a global ff0e::1 on 6.12, and
// with the IPv4-mapped 239.1.1.1 on -x 1 on 6.1 and 6.12, sends without
// the server receiving). QPs leave the group when destroyed: rdma res is
// as it was. --connectionless is the last subtest.
func TestVMPerfMcast(t *testing.T) {
	resUnchanged(t, false)
	mc := []string{"-g", "-x", "0", "-M", "255:2:0:0:0:0:0:0:0:0:0:0:0:0:0:1"}
	port := 23900
	for _, kind := range []string{"bw", "lat"} {
		for _, pair := range [][2]string{{"r", "p"}, {"p", "r"}, {"r", "r"}} {
			t.Run(kind+"_"+pair[0]+pair[1], func(t *testing.T) {
				port += 10
				r := retryPerfPair(t, "send", kind, "RC", mc, pair[0], pair[1], port, perftestClock)
				r.mustPass(t)
				agreeingRows(t, r.sout, r.cout)
				title := map[string]string{"bw": "Send BW Multicast Test\n", "lat": "Send Latency Multicast Test\n"}[kind]
				for i, out := range []string{r.sout, r.cout} {
					if pair[i] != "r" {
						continue
					}
					// The server's own record names the group; so does
					// the client's record of the server.
					side := map[int]string{0: " local address: ", 1: " remote address: "}[i]
					rec := out[strings.Index(out, side):]
					if !strings.Contains(out, title+" MultiCast runs on UD!\n") || !strings.Contains(rec, "QPN 0xffffff") ||
						!strings.Contains(rec, "\n MGID: 255:02:00:00:00:00:00:00:00:00:00:00:00:00:00:01\n") {
						t.Errorf("rdmactl %s:\n%s", map[int]string{0: "server", 1: "client"}[i], out)
					}
				}
			})
		}
	}
	// --connectionless: an rdmactl listener on rxe0, beside perftest's
	// pair (server on rxe0, client on rxe1), receives the client's sends
	// to the group with no exchange of its own, reports each -D period,
	// and ends on Ctrl-C.
	t.Run("connectionless", func(t *testing.T) {
		// Its header comes once its QP has joined the group. The pair
		// runs on its clock (-D): UD has no flow control, and with two
		// receivers on rxe0 perftest's server can miss messages, which
		// in iteration mode it waits for until killed.
		out := &lineSignal{want: "#bytes", seen: make(chan struct{})}
		l := startSideTo(t, rdmactlBin(t), "rdmactl listener",
			append([]string{"perf", "send", "-d", "rxe0", "--connectionless", "--run_infinitely", "-D", "2"}, mc...), out)
		select {
		case <-out.seen:
		case <-time.After(20 * time.Second):
			t.Fatalf("the listener did not start: %s %s", out.String(), l.stderr.String())
		}
		retryPerfPair(t, "send", "bw", "RC", append(mc, "-D", "2"), "p", "p", port+100, perftestClock).mustPass(t)
		time.Sleep(3 * time.Second) // the period the traffic began in ends
		_ = l.cmd.Process.Signal(os.Interrupt)
		err := l.cmd.Wait()
		got := out.String()
		if code := exitCode(err); code != 130 || !strings.Contains(got, " User stopped traffic") {
			t.Fatalf("listener after Ctrl-C: exit %d, want 130 and perftest's line:\n%s\n%s", code, got, l.stderr.String())
		}
		if !strings.Contains(got, "Send BW Multicast Test\n MultiCast runs on UD!\n") || !strings.Contains(got, "QPN 0xffffff") ||
			!strings.Contains(got, "\n MGID: 255:02:") || strings.Contains(got, "remote address") || strings.Contains(got, "Waiting for client") {
			t.Errorf("listener's header:\n%s", got)
		}
		received := false
		for _, m := range regexp.MustCompile(`(?m)^ *(\d+)[ \t]+(\d+)[ \t]+[\d.]+[ \t]+([\d.]+)[ \t]+[\d.]+`).FindAllStringSubmatch(got, -1) {
			if n, _ := strconv.Atoi(m[2]); n > 0 && m[3] != "0.00" {
				received = true
			}
		}
		if !received {
			t.Errorf("no period with messages received:\n%s", got)
		}
	})
}

//go:build vmtest

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// waitSent waits until dev has sent n packets more than from (rxe's
// sent_pkts): the run's traffic flows. It fails the test, with sd's
// output, when sd ends first or 60 s pass.
func waitSent(t *testing.T, sd *side, dev string, from, n uint64) {
	t.Helper()
	if !vmcheck.Until(60*time.Second, sd.ended, func() bool { return vmcheck.PortCounter(t, dev, "sent_pkts") >= from+n }) {
		t.Fatalf("%s: %d packets sent on %s since it started, want %d; %s", sd.name, vmcheck.PortCounter(t, dev, "sent_pkts")-from, dev, n, sd.how())
	}
}

// waitTraffic waits until dev has sent and received n packets more than
// sent and rcvd (its counters when sd started), the two together: a
// pair's traffic shows whichever way its data goes. An RDMA read's
// requester sends one packet a message and receives the data; counting
// only its sent packets, a read run whose responses stalled (rxe
// retransmits a lost response after the QP timeout, seconds with the
// fault tests' -u) once ended its 30 s with 781 packets sent, before the
// link could be taken down "mid-run".
func waitTraffic(t *testing.T, sd *side, dev string, sent, rcvd, n uint64) {
	t.Helper()
	moved := func() uint64 {
		return vmcheck.PortCounter(t, dev, "sent_pkts") - sent + vmcheck.PortCounter(t, dev, "rcvd_pkts") - rcvd
	}
	if !vmcheck.Until(60*time.Second, sd.ended, func() bool { return moved() >= n }) {
		t.Fatalf("%s: %d packets sent and received on %s since it started, want %d; %s", sd.name, moved(), dev, n, sd.how())
	}
}

// waitQPs waits until sd's process has a QP in the kernel: it is past its
// port check and setting its run up.
func waitQPs(t *testing.T, sd *side) {
	t.Helper()
	if !vmcheck.Until(60*time.Second, sd.ended, func() bool { return vmcheck.QPsOf(t, sd.cmd.Process.Pid) > 0 }) {
		t.Fatalf("%s made no QP within 60 s; %s", sd.name, sd.how())
	}
}

// waitPeerTraffic waits until the devices have sent n packets more than
// from (a perf pair's traffic flows), failing the test when done closes
// first (who ended) or 60 s pass.
func waitPeerTraffic(t *testing.T, from, n uint64, done <-chan struct{}, who string) {
	t.Helper()
	if !vmcheck.Until(60*time.Second, vmcheck.Closed(done), func() bool { return vmcheck.Sent(t) >= from+n }) {
		t.Fatalf("%d packets sent since the pair started, want %d (%s ended: %v)", vmcheck.Sent(t)-from, n, who, vmcheck.Closed(done)())
	}
}

// serverListens waits until srv, started, listens on TCP port: neither
// perf's client nor perftest's retries its connect, and a server's start
// can take any time under TCG. When srv ends first or 30 s pass, it
// kills srv and fails the test with what srv printed (out, read once srv
// has ended). Wait for srv with the returned func (Wait's error), not
// with srv.Wait.
func serverListens(t *testing.T, srv *exec.Cmd, port int, out func() string) (wait func() error) {
	t.Helper()
	done := make(chan struct{})
	var err error
	go func() { err = srv.Wait(); close(done) }()
	if !vmcheck.Until(30*time.Second, vmcheck.Closed(done), func() bool { return vmcheck.TCPListening(port) }) {
		what := "ended before it listened on port " + fmt.Sprint(port)
		if !vmcheck.Closed(done)() {
			what = "not listening on port " + fmt.Sprint(port) + " within 30 s"
		}
		_ = srv.Process.Kill()
		<-done
		t.Fatalf("%s: %s (%v):\n%s", strings.Join(srv.Args, " "), what, err, out())
	}
	return func() error { <-done; return err }
}

// how says whether sd still runs, or how it ended and what it printed.
func (sd *side) how() string {
	if !sd.ended() {
		return "it still runs"
	}
	return fmt.Sprintf("it ended (%s):\nstdout:\n%s\nstderr:\n%s", sd.status(), &sd.stdout, &sd.stderr)
}

// ended says whether sd's process has ended, without waiting.
func (sd *side) ended() bool {
	sd.wait(time.Nanosecond) // starts the waiter
	select {
	case <-sd.done:
		return true
	default:
		return false
	}
}

// linkEvidence is what the port and its netdev say now, for the log of a
// link-down test: the port's state, rxe's counters, the netdev's packets.
func linkEvidence(t *testing.T, dev, netdev string) string {
	t.Helper()
	st, _ := os.ReadFile("/sys/class/infiniband/" + dev + "/ports/1/state")
	var b strings.Builder
	fmt.Fprintf(&b, "%s/1 %s", dev, strings.TrimSpace(string(st)))
	for _, c := range []string{"sent_pkts", "rcvd_pkts", "link_downed", "retry_exceeded_err", "send_err", "completer_retry_err"} {
		fmt.Fprintf(&b, " %s=%d", c, vmcheck.PortCounter(t, dev, c))
	}
	for _, c := range []string{"tx_packets", "tx_dropped", "rx_packets"} {
		v, _ := os.ReadFile("/sys/class/net/" + netdev + "/statistics/" + c)
		fmt.Fprintf(&b, " %s:%s=%s", netdev, c, strings.TrimSpace(string(v)))
	}
	return b.String()
}

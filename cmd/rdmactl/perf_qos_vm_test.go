//go:build vmtest

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// VM tests of perf's QoS options and thresholds: the traffic class read
// off the wire (RoCE v2 packets captured on the server's veth), the
// timers and SL as the kernel reports them (QUERY_QP, in JSON's qos),
// against rdmactl and against the VM's perftest 6.06 in both roles; and
// the exit code 7 of a missed threshold.

// roceCapture counts the RoCE v2 packets (UDP port 4791 over IPv4) seen
// on one interface, by direction and IP TOS byte (DSCP<<2|ECN).
type roceCapture struct {
	fd   int
	mu   sync.Mutex
	seen map[string]map[byte]int // "10.77.0.2>10.77.0.1" -> tos -> packets
	// want, if set, is looked for in each RoCE v2 frame: matched counts
	// the frames that hold it.
	want    []byte
	matched int
	done    chan struct{}
	wg      sync.WaitGroup
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// captureRoCE starts an AF_PACKET reader on ifname (every packet, both
// directions), like 'tcpdump -i ifname udp port 4791'.
func captureRoCE(t *testing.T, ifname string) *roceCapture {
	t.Helper()
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		t.Fatalf("AF_PACKET socket: %v", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		t.Fatalf("bind %s: %v", ifname, err)
	}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	// Room for a whole run: a write pair sends 12,800 1 KiB packets in
	// a burst, which the default ~200 KiB queue drops when the reader
	// falls behind; a 6.12 CI run once kept 187 requests and none of the
	// server's ACKs. (As root: beyond net.core.rmem_max.)
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 64<<20); err != nil {
		unix.Close(fd)
		t.Fatalf("SO_RCVBUFFORCE: %v", err)
	}
	c := &roceCapture{fd: fd, seen: map[string]map[byte]int{}, done: make(chan struct{})}
	c.wg.Add(1)
	go c.read()
	t.Cleanup(c.stop)
	return c
}

func (c *roceCapture) read() {
	defer c.wg.Done()
	b := make([]byte, 65536)
	for {
		select {
		case <-c.done:
			// What the queue still holds is part of the run.
			for {
				n, _, err := unix.Recvfrom(c.fd, b, unix.MSG_DONTWAIT)
				if err != nil {
					return
				}
				c.add(b[:n])
			}
		default:
		}
		n, _, err := unix.Recvfrom(c.fd, b, 0)
		if err != nil {
			continue // the receive timeout: look at done again
		}
		c.add(b[:n])
	}
}

// add records one Ethernet frame if it is RoCE v2 over IPv4.
func (c *roceCapture) add(f []byte) {
	if len(f) < 14+20+8 || binary.BigEndian.Uint16(f[12:]) != 0x0800 {
		return
	}
	ip := f[14:]
	ihl := int(ip[0]&0xf) * 4
	if ip[0]>>4 != 4 || ip[9] != unix.IPPROTO_UDP || len(ip) < ihl+8 || binary.BigEndian.Uint16(ip[ihl+2:]) != 4791 {
		return
	}
	dir := net.IP(ip[12:16]).String() + ">" + net.IP(ip[16:20]).String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[dir] == nil {
		c.seen[dir] = map[byte]int{}
	}
	c.seen[dir][ip[1]]++
	if c.want != nil && bytes.Contains(f, c.want) {
		c.matched++
	}
}

func (c *roceCapture) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	close(c.done)
	c.wg.Wait()
	unix.Close(c.fd)
}

// snapshot stops the capture and returns what it saw.
func (c *roceCapture) snapshot() map[string]map[byte]int {
	c.stop()
	return c.seen
}

// runQoSPairRetry runs two rdmactl sides whose arguments hold "PORT",
// tried again (on another port) when a run fails, at most twice: rxe
// under a loaded TCG host fails a run now and then.
func runQoSPairRetry(t *testing.T, port int, sargs, cargs []string) (sout, cout string) {
	t.Helper()
	sub := func(a []string, p int) []string {
		out := slices.Clone(a)
		for i, v := range out {
			if v == "PORT" {
				out[i] = strconv.Itoa(p)
			}
		}
		return out
	}
	r := retryPair(t, port, 100, func(p int) ([]string, []string) { return sub(sargs, p), sub(cargs, p) }, pairOpts{}, orFailed(noReason))
	r.mustPass(t)
	return r.sout, r.cout
}

// qosArgs is one side's command line: rdmactl with -j (its JSON has the
// kernel's QUERY_QP answer) or perftest, with the QoS options given.
func qosArgs(who, verb, conn, dev string, port int, qos []string, client bool) []string {
	var a []string
	if who == "r" {
		a = []string{"perf", verb, "-j"}
	} else {
		a = []string{"ib_" + verb + "_bw"}
	}
	a = append(a, "-d", dev, "-n", "200", "-p", strconv.Itoa(port))
	if conn == "UD" {
		a = append(a, "-c", "UD", "-s", "512")
	}
	a = append(a, qos...)
	if client {
		a = append(a, perfServerIP)
	}
	return a
}

// capturedPair runs the pair mk builds, tried again as retryPair does
// on perftest's clock or a failed run, with the RoCE v2 packets on
// vrxe0 counted for the last attempt.
func capturedPair(t *testing.T, port int, mk func(port int) ([]string, []string)) (map[string]map[byte]int, pairOut) {
	t.Helper()
	seen, _, r := capturedPairMatching(t, port, nil, mk)
	return seen, r
}

// capturedPairMatching is capturedPair that also counts the frames
// holding want.
func capturedPairMatching(t *testing.T, port int, want []byte, mk func(port int) ([]string, []string)) (map[string]map[byte]int, int, pairOut) {
	t.Helper()
	var capt *roceCapture
	r := retryPair(t, port, 1, func(p int) ([]string, []string) {
		if capt != nil {
			capt.stop()
		}
		capt = captureRoCE(t, "vrxe0")
		capt.mu.Lock()
		capt.want = want
		capt.mu.Unlock()
		return mk(p)
	}, pairOpts{}, orFailed(perftestClock))
	seen := capt.snapshot()
	return seen, capt.matched, r
}

// TestVMPerfQoSOnWire: each side's --tclass is the TOS byte of every
// RoCE v2 packet it sends (requests from the client, ACKs from the
// server), whoever the peer is; -S, -u and --retry_count are what the
// kernel reports for rdmactl's QPs (QUERY_QP), except the SL, which rxe
// does not keep (verbs' TestVMQueryQP).
func TestVMPerfQoSOnWire(t *testing.T) {
	resUnchanged(t, false)
	const (
		cli, srv   = "10.77.0.2", perfServerIP
		ctc, stc   = 106, 184 // DSCP 26 + ECT(0); DSCP 46 (EF)
		sl, tmo, r = 3, 18, 5
	)
	type tc struct{ verb, conn, server, client string }
	cases := []tc{
		{"write", "RC", "r", "r"}, {"write", "RC", "p", "r"}, {"write", "RC", "r", "p"},
		{"send", "UD", "r", "r"}, {"send", "UD", "p", "r"}, {"send", "UD", "r", "p"},
	}
	for i, c := range cases {
		name := fmt.Sprintf("%s_%s/server_%s_client_%s", c.verb, c.conn, c.server, c.client)
		t.Run(name, func(t *testing.T) {
			qos := func(tcl int) []string {
				return []string{"--tclass", strconv.Itoa(tcl), "-S", strconv.Itoa(sl), "-u", strconv.Itoa(tmo), "--retry_count", strconv.Itoa(r)}
			}
			// perftest's clock under TCG, or a run that failed on a
			// loaded host (on main too): the capture starts again too.
			seen, res := capturedPair(t, 19100+10*i, func(port int) ([]string, []string) {
				return qosArgs(c.server, c.verb, c.conn, "rxe0", port, qos(stc), false), qosArgs(c.client, c.verb, c.conn, "rxe1", port, qos(ctc), true)
			})
			res.mustPass(t)
			sout, cout := res.sout, res.cout
			t.Logf("RoCE v2 packets by direction and TOS: %v", seen)
			check := func(dir string, want byte) {
				got := seen[dir]
				if len(got) == 0 {
					t.Errorf("%s: no RoCE v2 packet captured", dir)
				}
				for tos, n := range got {
					if tos != want {
						t.Errorf("%s: %d packets with TOS %#x, want %#x (--tclass %d)", dir, n, tos, want, want)
					}
				}
			}
			check(cli+">"+srv, ctc)
			if c.conn == "RC" {
				check(srv+">"+cli, stc) // the server's ACKs
			} else if n := len(seen[srv+">"+cli]); n != 0 {
				t.Errorf("UD send: the server sent packets (%v)", seen[srv+">"+cli])
			}
			for _, side := range []struct {
				who, out string
				tclass   uint8
			}{{c.server, sout, stc}, {c.client, cout, ctc}} {
				if side.who != "r" {
					continue
				}
				var res perf.Result
				if err := json.Unmarshal([]byte(side.out), &res); err != nil || res.QoS == nil {
					t.Fatalf("rdmactl JSON: %v\n%s", err, side.out)
				}
				q := res.QoS
				if q.TrafficClass != side.tclass || q.SL != sl || q.Timeout != tmo || q.RetryCount != r || len(q.QPs) != 1 {
					t.Errorf("qos asked %+v", q)
				}
				a := q.QPs[0]
				if a.State != "RTS" || a.SL != 0 {
					t.Errorf("QUERY_QP %+v: want RTS, SL 0 (rxe keeps none)", a)
				}
				if c.conn == "RC" && (a.TrafficClass != side.tclass || a.Timeout != tmo || a.RetryCnt != r || a.RNRRetry != 7) {
					t.Errorf("QUERY_QP %+v: want tclass %d, timeout %d, retry_cnt %d, rnr_retry 7", a, side.tclass, tmo, r)
				}
			}
		})
	}
}

// TestVMPerfFlowLabel: rdmactl's per-QP flow labels (perftest 6.06 has
// no --flow_label) reach the QPs, in turn, as QUERY_QP reports them.
func TestVMPerfFlowLabel(t *testing.T) {
	sargs := []string{"perf", "write", "-j", "-d", "rxe0", "-n", "100", "-q", "3", "-p", "PORT"}
	cargs := []string{"perf", "write", "-j", "-d", "rxe1", "-n", "100", "-q", "3", "-p", "PORT", "--flow_label", "0x12345,77", perfServerIP}
	_, cout := runQoSPairRetry(t, 19300, sargs, cargs)
	var res perf.Result
	if err := json.Unmarshal([]byte(cout), &res); err != nil || res.QoS == nil || len(res.QoS.QPs) != 3 {
		t.Fatalf("client JSON: %v\n%s", err, cout)
	}
	for i, want := range []uint32{0x12345, 77, 0x12345} {
		if got := res.QoS.QPs[i].FlowLabel; got != want {
			t.Errorf("QP %d: QUERY_QP flow label %#x, want %#x", i, got, want)
		}
	}
}

// runLimited runs an rdmactl pair in-process and returns the client's
// exit code, stdout and stderr. A run that failed for another reason
// (rxe under a loaded TCG host now and then fails a run with a
// completion error, on main too) is tried again, at most twice.
func runLimited(t *testing.T, port int, common, climits []string) (int, string, string) {
	t.Helper()
	mk := func(p int) ([]string, []string) {
		ps := strconv.Itoa(p)
		sargs := append(append([]string{"perf"}, common...), "-d", "rxe0", "-p", ps)
		cargs := append(append([]string{"perf"}, common...), "-d", "rxe1", "-p", ps)
		return sargs, append(append(cargs, climits...), perfServerIP)
	}
	again := func(r pairOut) string {
		if r.serr == nil && (r.ccode == 0 || r.ccode == cmdutil.ExitPerfThreshold) {
			return ""
		}
		return fmt.Sprintf("the run itself failed (server: %v; client: exit %d: %s)", r.serr, r.ccode, strings.TrimSpace(r.cstderr))
	}
	r := retryPair(t, port, 100, mk, pairOpts{}, again)
	if why := again(r); why != "" {
		t.Fatalf("%v: %s\n%s", climits, why, r.sout)
	}
	return r.ccode, r.cstdout, r.cstderr
}

// TestVMPerfLimits: a run passes a limit below its figure and exits 7
// with one above, saying by how much in one line, with its report
// printed either way; in the same run one limit passes and another
// fails. The limits are far from anything rxe under TCG can do (the
// figures swing tenfold between runs on a loaded host), and each
// verdict's value must be the row's figure.
func TestVMPerfLimits(t *testing.T) {
	resUnchanged(t, false)
	port := 19400
	type verdict struct {
		name   string
		passed bool
	}
	cases := []struct {
		name   string
		common []string
		limits []string
		code   int
		msg    string
		want   []verdict
	}{
		{"bw_pass", []string{"write", "-j", "-n", "300"}, []string{"-w", "0.001"}, 0, "", []verdict{{"bw_avg", true}}},
		{"bw_fail", []string{"write", "-j", "-n", "300"}, []string{"-w", "1000000"}, cmdutil.ExitPerfThreshold,
			"is below -w/--limit_bw 1000000 by", []verdict{{"bw_avg", false}}},
		{"bw_pass_msgrate_fail", []string{"write", "-j", "-n", "300"}, []string{"-w", "0.001", "-y", "1000"}, cmdutil.ExitPerfThreshold,
			"is below -y/--limit_msgrate 1000 by", []verdict{{"bw_avg", true}, {"msg_rate", false}}},
		{"lat_pass", []string{"send", "--lat", "-j", "-n", "300"}, []string{"--limit_lat", "10000000"}, 0, "", []verdict{{"lat_p50", true}}},
		{"lat_fail", []string{"send", "--lat", "-j", "-n", "300"}, []string{"--limit_lat", "1"}, cmdutil.ExitPerfThreshold,
			"is above --limit_lat 1 by", []verdict{{"lat_p50", false}}},
		{"lat_p99_fail", []string{"send", "--lat", "-j", "-n", "300"}, []string{"--limit_lat", "1", "--limit_lat_pct", "99"}, cmdutil.ExitPerfThreshold,
			"is above --limit_lat 1 by", []verdict{{"lat_p99", false}}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runLimited(t, port+i, c.common, c.limits)
			var r perf.Result
			if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.BW)+len(r.Lat) != 1 {
				t.Fatalf("exit %d, JSON %v:\n%s", code, err, out)
			}
			if code != c.code || (c.msg != "" && (!strings.Contains(errOut, c.msg) || strings.Count(errOut, "\n") != 1)) || (c.msg == "" && errOut != "") {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut, c.code, c.msg)
			}
			if len(r.Limits) != len(c.want) {
				t.Fatalf("limits %+v, want %+v", r.Limits, c.want)
			}
			for j, w := range c.want {
				l := r.Limits[j]
				var fig float64
				switch l.Name {
				case "bw_avg":
					fig = r.BW[0].BWAvg
				case "msg_rate":
					fig = r.BW[0].MsgRate
				case "lat_p50":
					fig = r.Lat[0].P50
				case "lat_p99":
					fig = r.Lat[0].P99
				}
				if l.Name != w.name || l.Passed != w.passed || l.Value != fig {
					t.Errorf("verdict %+v; want %s passed=%v on the row's figure %v", l, w.name, w.passed, fig)
				}
			}
			t.Logf("%v: exit %d %s %+v", c.limits, code, strings.TrimSpace(errOut), r.Limits)
		})
	}
}

// TestVMPerfPKeyIndex: --pkey_index reaches the QP (QUERY_QP) when the
// port's P_Key table has the entry, and an index beyond the table (its
// length from sysfs, as ibv_devinfo -v's pkey_tbl_len) is refused in one
// line before any connection.
func TestVMPerfPKeyIndex(t *testing.T) {
	ents, err := os.ReadDir("/sys/class/infiniband/rxe1/ports/1/pkeys")
	if err != nil || len(ents) == 0 {
		t.Fatalf("rxe1's P_Key table in sysfs: %v (%d entries)", err, len(ents))
	}
	n := len(ents)
	var o, e bytes.Buffer
	code := run(context.Background(), []string{"perf", "write", "-d", "rxe1", "-p", "19500", "--pkey_index", strconv.Itoa(n), perfServerIP}, &o, &e)
	ent := "entries"
	if n == 1 {
		ent = "entry"
	}
	want := fmt.Sprintf("rdmactl: --pkey_index %d: the P_Key table of rxe1 port 1 has %d %s (0..%d)\n", n, n, ent, n-1)
	if code != cmdutil.ExitFailure || e.String() != want {
		t.Errorf("--pkey_index %d: exit %d, stderr %q; want exit 1, %q", n, code, e.String(), want)
	}
	last := strconv.Itoa(n - 1)
	sargs := []string{"perf", "write", "-j", "-d", "rxe0", "-n", "100", "-p", "PORT"}
	cargs := []string{"perf", "write", "-j", "-d", "rxe1", "-n", "100", "-p", "PORT", "--pkey_index", last, perfServerIP}
	_, cout := runQoSPairRetry(t, 19501, sargs, cargs)
	var res perf.Result
	if err := json.Unmarshal([]byte(cout), &res); err != nil || res.QoS == nil || len(res.QoS.QPs) != 1 {
		t.Fatalf("client JSON: %v\n%s", err, cout)
	}
	if got := res.QoS.QPs[0].PKeyIndex; strconv.Itoa(int(got)) != last {
		t.Errorf("QUERY_QP pkey_index %d, want %s", got, last)
	}
	t.Logf("rxe1's P_Key table: %d %s; --pkey_index %s reached the QP", n, ent, last)
}

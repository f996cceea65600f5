//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// -R with perf atomic, --use-srq and -e through the command line
// (internal/perf's TestVMPerfRDMACMOps checks memory, CQ event counts and
// perftest interop in both roles; here the flags, the JSON and the
// fault path of the binary's code).

// TestVMPerfRDMACMOpsCLI: the three options with -R, rdmactl against
// rdmactl in-process, JSON: connected by the CM, and each side's own
// check passed (the target word, the SRQ's messages and payload, the
// receiver's completion events); the text header says SRQ and events.
func TestVMPerfRDMACMOpsCLI(t *testing.T) {
	resUnchanged(t, true)
	for i, tc := range []struct {
		name  string
		args  []string
		check func(t *testing.T, who string, r *perf.Result)
	}{
		{"atomic", []string{"atomic", "-A", "FETCH_AND_ADD"}, func(t *testing.T, who string, r *perf.Result) {
			a := r.Atomic
			if a == nil || !a.OK {
				t.Fatalf("%s: atomic check %+v", who, a)
			}
			if who == "server" && (len(a.Target) != 1 || a.Target[0] != 100) {
				t.Fatalf("server: target words %v, want [100]", a.Target)
			}
			if who == "client" && (len(a.After) != 1 || a.After[0] != 100 || a.Fetched[0] != 99) {
				t.Fatalf("client: peer's word after %v, last returned %v; want 100, 99", a.After, a.Fetched)
			}
		}},
		{"srq", []string{"send", "--use-srq", "-q", "2", "-s", "1024"}, func(t *testing.T, who string, r *perf.Result) {
			if who == "client" {
				return // a bw sender has no SRQ
			}
			if c := r.SRQ; c == nil || len(c.Received) != 2 || c.Received[0]+c.Received[1] != 200 || !c.PayloadChecked || !c.PayloadOK {
				t.Fatalf("server: SRQ check %v, want 200 messages, payload checked and ok", c)
			}
		}},
		// 2000 messages, not 100: a receiver that starts polling after a
		// short run's sender finished never needs to wait (seen in CI).
		{"events", []string{"send", "-e", "-s", "4096", "-n", "2000"}, func(t *testing.T, who string, r *perf.Result) {
			if who == "server" && r.CompEvents == 0 {
				t.Fatal("server: -e, but comp_events 0: the receiver never waited on its channel")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port := strconv.Itoa(19700 + i)
			args := func(client bool) []string {
				a := append([]string{"perf"}, tc.args[0], "-R", "-j", "-n", "100", "-p", port)
				a = append(a, tc.args[1:]...)
				if client {
					a = append(a, perfServerIP)
				}
				return a
			}
			r := runPair(args(false), args(true), pairOpts{})
			r.mustPass(t)
			sout, cout := r.sout, r.cout
			for who, out := range map[string]string{"server": sout, "client": cout} {
				var r perf.Result
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatalf("%s: %v\n%s", who, err, out)
				}
				if !r.Info.RDMACM {
					t.Fatalf("%s: JSON does not say rdma_cm\n%s", who, out)
				}
				tc.check(t, who, &r)
			}
		})
	}
	// The header, as perftest's: SRQ on, events on.
	t.Run("header", func(t *testing.T) {
		a := []string{"perf", "send", "-R", "--use-srq", "-e", "-n", "100", "-p", "19710"}
		r := runPair(a, append(a, perfServerIP), pairOpts{})
		r.mustPass(t)
		sout := r.sout
		if headerField(sout, "Data ex. method") != "rdma_cm" || !strings.Contains(sout, "Using SRQ      : ON") {
			t.Fatalf("server header:\n%s", sout)
		}
	})
}

// TestVMPerfRDMACMOpsPeerKilled: with -R and each of the three options, a
// perftest peer (or an rdmactl process, as client) killed mid-run
// (SIGKILL: its CM ids and QPs die with it)
// makes rdmactl, in either role, end within seconds with exit 6 and one
// line on stderr; afterwards 'rdma res show' and 'rdma res show cm_id'
// are as before.
func TestVMPerfRDMACMOpsPeerKilled(t *testing.T) {
	before, beforeCM := resShow(t), resShowCM(t)
	port := 19720
	// perftest refuses -D with -e ("Duration mode doesn't work with
	// events"): that run is iterations that outlast the test.
	long := []string{"-D", "60"}
	for _, tc := range []struct {
		name     string
		rdmactl  []string
		perftest []string
		length   []string
	}{
		{"atomic", []string{"atomic"}, []string{"ib_atomic_bw"}, long},
		{"srq", []string{"send", "--use-srq"}, []string{"ib_send_bw", "--use-srq"}, long},
		{"events", []string{"send", "-e"}, []string{"ib_send_bw", "-e"}, []string{"-n", "1000000"}},
	} {
		for _, mode := range []struct {
			rdmactlServer bool
			peer          string
		}{{true, "perftest"}, {false, "perftest"}, {true, "rdmactl"}} {
			rdmactlServer := mode.rdmactlServer
			port++
			name := tc.name + "/rdmactl-client-" + mode.peer + "-server-killed"
			if rdmactlServer {
				name = tc.name + "/rdmactl-server-" + mode.peer + "-client-killed"
			}
			p := strconv.Itoa(port)
			t.Run(name, func(t *testing.T) {
				ra := append([]string{"perf"}, tc.rdmactl...)
				ra = append(append(ra, "-R", "-p", p), tc.length...)
				pcmd := tc.perftest[0]
				pa := append(append(append([]string(nil), tc.perftest[1:]...), "-R", "-p", p), tc.length...)
				if mode.peer == "rdmactl" {
					// The binary, so that the kill is a process's death.
					if pcmd = os.Getenv("RDMACTL_BIN"); pcmd == "" {
						t.Fatal("RDMACTL_BIN is not set (vm/suite.sh sets it)")
					}
					pa = append([]string(nil), ra...)
				}
				if rdmactlServer {
					pa = append(pa, perfServerIP)
				} else {
					ra = append(ra, perfServerIP)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
				defer cancel()
				var code int
				var stdout, stderr string
				done := make(chan struct{})
				peer := exec.CommandContext(ctx, pcmd, pa...)
				startPeer := func() {
					if err := peer.Start(); err != nil {
						t.Fatalf("%s: %v", pcmd, err)
					}
				}
				// The client only once the server's CM id listens
				// (perftest's comm connect does not retry); the kill
				// only once the run's traffic flows.
				port, _ := strconv.Atoi(p)
				listens := func() bool { return vmcheck.CMListening(t, port) }
				sent := vmcheck.Sent(t)
				if !rdmactlServer {
					startPeer()
					if !vmcheck.Until(30*time.Second, nil, listens) {
						t.Fatalf("the %s server did not listen within 30 s", mode.peer)
					}
				}
				go func() {
					defer close(done)
					stdout, stderr, code = runSoleCmd(t, ra...)
				}()
				if rdmactlServer {
					if !vmcheck.Until(30*time.Second, vmcheck.Closed(done), listens) {
						t.Fatalf("the rdmactl server did not listen within 30 s")
					}
					startPeer()
				}
				waitPeerTraffic(t, sent, 1000, done, "rdmactl")
				select {
				case <-done:
					_ = peer.Process.Kill()
					_ = peer.Wait()
					t.Fatalf("rdmactl ended before the peer was killed: exit %d, %q\n%s", code, stderr, stdout)
				default:
				}
				took := killPeer(t, peer, done, "rdmactl")
				if code != cmdutil.ExitPeer || strings.Count(stderr, "\n") != 1 || took > 5*time.Second {
					t.Fatalf("exit %d after %v, stderr %q; want %d, one line, within 5 s\n%s", code, took, stderr, cmdutil.ExitPeer, stdout)
				}
				if !strings.Contains(stdout, "rdma_cm") {
					t.Fatalf("the run did not get to its header before the kill:\n%s", stdout)
				}
				t.Logf("exit %d %v after the kill: %s", code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
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

//go:build vmtest

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// VM tests of perf's -e, --run_infinitely and --counters (issue 25, the
// events and counters part), against stock perftest 6.06 where it has the
// option, and against rdmactl.

// TestVMPerfEvents: -e in both roles against perftest -e (send and read:
// perftest refuses it for write) and against rdmactl -e; rdmactl's JSON
// says its loops waited for completion events.
func TestVMPerfEvents(t *testing.T) {
	before := resShow(t)
	pairs := []struct{ name, server, client string }{{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"}}
	tests := []struct{ verb, kind string }{{"write", "bw"}, {"send", "bw"}, {"read", "bw"}, {"send", "lat"}, {"write", "lat"}, {"read", "lat"}}
	port := 19100
	for _, tc := range tests {
		for _, pr := range pairs {
			port++
			p := port
			if tc.verb == "write" && pr.name != "rdmactl-rdmactl" {
				// perftest refuses -e with WRITE ("Events feature not
				// available on WRITE verb"); rdmactl has it for its
				// send CQ, against itself only.
				continue
			}
			if tc.verb == "send" && tc.kind == "lat" && pr.name != "rdmactl-rdmactl" {
				// perftest 6.06's send_lat -e hangs on its own: both
				// CQs on one channel, it takes the send CQ's event while
				// waiting for a receive (or the reverse) and waits for
				// ever (upstream fix 2209cf8, "Use separate completion
				// channels for send and receive", 23.07). In the VM it
				// hung in 2 and 3 of 3 attempts on 6.12, either role;
				// rdmactl's side then reports the stall. Not run.
				continue
			}
			t.Run(fmt.Sprintf("%s_%s/%s", tc.verb, tc.kind, pr.name), func(t *testing.T) {
				var sout, cout string
				var serr, cerr error
				for attempt := 0; attempt < 3; attempt++ {
					sout, serr, cout, cerr = runPerfPair(tc.verb, tc.kind, "RC", []string{"-e"}, pr.server, pr.client, p+1000*attempt)
					if perftestClockFailed(sout + cout) {
						t.Logf("attempt %d: stock perftest could not calibrate its clock under TCG; trying again", attempt+1)
						continue
					}
					// perftest 6.06 puts both CQs on one channel and can
					// take the send CQ's event while it waits for a
					// receive (or the reverse), then waits for ever
					// (fixed upstream by 2209cf8, "Use separate
					// completion channels for send and receive", in
					// 23.07): our side then reports the stall. Only a
					// perftest peer may hang so; try again.
					if tc.kind == "lat" && (pr.server == "p" || pr.client == "p") && strings.Contains(sout+cout, "no completion for") {
						t.Logf("attempt %d: perftest -e hung on its single completion channel (perftest 2209cf8); trying again", attempt+1)
						continue
					}
					break
				}
				if serr != nil || cerr != nil {
					t.Fatalf("server: %v\nclient: %v\n--- server output\n%s\n--- client output\n%s", serr, cerr, sout, cout)
				}
				crows := parsePerfRows(t, "client", cout)
				if crows[0].iters != 100 || len(crows[0].vals) == 0 {
					t.Fatalf("client row %+v", crows[0])
				}
				if pr.client == "r" && tc.kind == "bw" && !(crows[0].vals[1] > 0) {
					t.Fatalf("rdmactl client row %+v: no bandwidth", crows[0])
				}
				if pr.client == "r" && tc.kind == "lat" && !(crows[0].vals[0] > 0) {
					t.Fatalf("rdmactl client row %+v: no latency", crows[0])
				}
			})
		}
	}
	// JSON: the loops' completion events, the send bw receiver and both
	// sides of send lat (write and read servers run no loop).
	for i, kind := range []string{"bw", "lat"} {
		t.Run("json_send_"+kind, func(t *testing.T) {
			// With -W: perftest's counter files, here rxe's sent_pkts.
			sout, serr, cout, cerr := runPerfPair("send", kind, "RC", []string{"-e", "-j", "-W", "hw_counters/sent_pkts"}, "r", "r", 19300+i)
			if serr != nil || cerr != nil {
				t.Fatalf("server: %v\nclient: %v\n%s\n%s", serr, cerr, sout, cout)
			}
			for who, out := range map[string]string{"server": sout, "client": cout} {
				var res struct {
					Events   uint64 `json:"comp_events"`
					Counters []struct {
						Name  string `json:"name"`
						Delta uint64 `json:"delta"`
					} `json:"report_counters"`
				}
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatalf("%s: %v\n%s", who, err, out)
				}
				// A bw sender on rxe often finds its completions there
				// already (the doorbell's system call carries the packets
				// and brings the ACKs): it need not wait. The receiver and
				// both ping-pong sides wait for the peer.
				if res.Events == 0 && !(kind == "bw" && who == "client") {
					t.Fatalf("%s: comp_events 0 with -e: the loop never waited on the channel\n%s", who, out)
				}
				// Each side sends (the lat ping-pong, the bw client; the bw
				// server only acknowledges, which rxe also counts).
				if len(res.Counters) != 1 || res.Counters[0].Name != "hw_counters/sent_pkts" || res.Counters[0].Delta == 0 {
					t.Fatalf("%s: report_counters %+v, want hw_counters/sent_pkts moved", who, res.Counters)
				}
				t.Logf("%s: %d completion events, -W %+v", who, res.Events, res.Counters)
			}
		})
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestVMPerfRunInfinitely: the binary with --run_infinitely prints a row
// per -D period until SIGINT, then " User stopped traffic", one line on
// stderr and exit 130; its peer ends by itself (exit 0), and the kernel
// holds no resource of either afterwards.
func TestVMPerfRunInfinitely(t *testing.T) {
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (vm/suite.sh sets it)")
	}
	before := resShow(t)
	for i, verb := range []string{"write", "send"} {
		t.Run(verb, func(t *testing.T) {
			port := strconv.Itoa(19400 + i)
			args := func(dev string, peer ...string) []string {
				return append([]string{"perf", verb, "-d", dev, "-p", port, "-s", "4096", "--run_infinitely", "-D", "2"}, peer...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			srv := exec.CommandContext(ctx, bin, args("rxe0")...)
			var sout, serrb bytes.Buffer
			srv.Stdout, srv.Stderr = &sout, &serrb
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond)
			cli := exec.CommandContext(ctx, bin, args("rxe1", perfServerIP)...)
			var cout, cerrb bytes.Buffer
			cli.Stdout, cli.Stderr = &cout, &cerrb
			if err := cli.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(9 * time.Second) // four periods of 2 s, and the setup
			if err := cli.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			cerr := cli.Wait()
			serr := srv.Wait()
			code := cli.ProcessState.ExitCode()
			crows := parsePerfRows(t, "client", cout.String())
			if code != exitInterrupted || strings.Count(cerrb.String(), "\n") != 1 || !strings.Contains(cerrb.String(), "interrupted") {
				t.Fatalf("client: exit %d (%v), stderr %q, want %d and one line", code, cerr, cerrb.String(), exitInterrupted)
			}
			if len(crows) < 3 || !strings.Contains(cout.String(), "User stopped traffic") {
				t.Fatalf("client printed %d rows (want a row per 2 s period, at least 3):\n%s", len(crows), cout.String())
			}
			// Each row is one period. Under a loaded host rxe can stall
			// for a whole 2 s period (seen on 6.12: a row of zeros
			// between rows of 1.2-2.5 MB/s), so at least two periods must
			// have moved data, not every one.
			moving := 0
			for _, r := range crows {
				if r.bytes != 4096 {
					t.Fatalf("client row %+v\n%s", r, cout.String())
				}
				if r.iters > 0 && r.vals[1] > 0 {
					moving++
				}
			}
			if moving < 2 {
				t.Fatalf("only %d of %d periods moved data:\n%s", moving, len(crows), cout.String())
			}
			if serr != nil || serrb.Len() != 0 {
				t.Fatalf("server: %v, stderr %q\n%s", serr, serrb.String(), sout.String())
			}
			if verb == "send" {
				if srows := parsePerfRows(t, "server", sout.String()); len(srows) < 2 {
					t.Fatalf("send server printed %d rows, want one per period:\n%s", len(srows), sout.String())
				}
			}
			if !strings.Contains(sout.String(), "closed") {
				t.Fatalf("server did not say that the client ended the run:\n%s", sout.String())
			}
			t.Logf("client: %d rows, exit %d: %s", len(crows), code, strings.TrimSpace(cerrb.String()))
		})
	}
	if after := resShow(t); after != before {
		t.Fatalf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// statLink is 'rdma -j statistic show link DEV/1' as name -> value.
func statLink(t *testing.T, link string) map[string]uint64 {
	t.Helper()
	out, err := exec.Command("rdma", "-j", "statistic", "show", "link", link).Output()
	if err != nil {
		t.Fatalf("rdma statistic show link %s: %v", link, err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("rdma -j statistic: %v\n%s", err, out)
	}
	m := map[string]uint64{}
	for k, v := range rows[0] {
		if f, ok := v.(float64); ok {
			m[k] = uint64(f)
		}
	}
	return m
}

// TestVMPerfCounterDeltas: with netem dropping 2% of the client's
// packets on its veth, a write_bw run's --counters report retransmissions
// or out-of-sequence packets on one side, and every delta reported lies
// within what 'rdma statistic show' saw change over the same run. rxe
// sometimes ends such a run with a completion error (seen on 6.1 at 5%
// loss: "remote invalid request"); the deltas are printed all the same
// (they are what explains a bad run), so the test then checks them too
// and logs the error.
func TestVMPerfCounterDeltas(t *testing.T) {
	if out, err := exec.Command("tc", "qdisc", "add", "dev", "vrxe1", "root", "netem", "loss", "2%").CombinedOutput(); err != nil {
		t.Fatalf("tc netem on vrxe1: %v\n%s (the VM needs tc and sch_netem)", err, out)
	}
	defer func() {
		if out, err := exec.Command("tc", "qdisc", "del", "dev", "vrxe1", "root").CombinedOutput(); err != nil {
			t.Errorf("tc qdisc del: %v\n%s", err, out)
		}
	}()
	ref0 := map[string]map[string]uint64{"rxe0": statLink(t, "rxe0/1"), "rxe1": statLink(t, "rxe1/1")}
	sout, serr, cout, cerr := runPerfPair("write", "bw", "RC", []string{"--counters", "-j", "-s", "4096", "-n", "2000"}, "r", "r", 19450)
	ref1 := map[string]map[string]uint64{"rxe0": statLink(t, "rxe0/1"), "rxe1": statLink(t, "rxe1/1")}
	if serr != nil || cerr != nil {
		t.Logf("the run failed under loss (its deltas are checked all the same):\nserver: %v\nclient: %v", serr, cerr)
	}
	moved := map[string]uint64{}
	for who, out := range map[string]string{"server": sout, "client": cout} {
		var res struct {
			Deltas []struct {
				Dev      string `json:"ifname"`
				Port     uint32 `json:"port"`
				Source   string `json:"source"`
				Counter  string `json:"counter"`
				Category string `json:"category"`
				Delta    uint64 `json:"delta"`
			} `json:"counter_deltas"`
		}
		// The JSON result comes first; a failed run's error line follows.
		if err := json.NewDecoder(strings.NewReader(out)).Decode(&res); err != nil {
			t.Fatalf("%s: %v\n%s", who, err, out)
		}
		if len(res.Deltas) == 0 {
			t.Fatalf("%s: no counter_deltas with --counters\n%s", who, out)
		}
		for _, d := range res.Deltas {
			ref := ref1[d.Dev][d.Counter] - ref0[d.Dev][d.Counter]
			if _, ok := ref1[d.Dev][d.Counter]; ok && d.Delta > ref {
				t.Errorf("%s: %s %s moved %d in the run, but rdma statistic saw only %d around it", who, d.Dev, d.Counter, d.Delta, ref)
			}
			if d.Delta > 0 {
				moved[d.Category] += d.Delta
				t.Logf("%s: %s/%d %s %s (%s) +%d; rdma statistic around the run: +%d", who, d.Dev, d.Port, d.Category, d.Counter, d.Source, d.Delta, ref)
			}
		}
	}
	if moved["retransmissions"] == 0 && moved["out_of_sequence"] == 0 {
		t.Fatalf("2%% loss on vrxe1, but no retransmission or out_of_sequence counter moved: %v\n--- server\n%s\n--- client\n%s", moved, sout, cout)
	}
}

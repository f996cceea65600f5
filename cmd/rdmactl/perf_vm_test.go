//go:build vmtest

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf/rtloop"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// VM integration tests of 'rdmactl perf' against itself and against the
// VM's stock perftest (exchange version 6.06), on rxe0 (server,
// 10.77.0.1) and rxe1 (client). Iteration counts are small: the guest CPU
// is emulated.

const perfServerIP = "10.77.0.1"

// slowQPTimeout is the -u that the perf tests give (to rdmactl and to
// perftest alike) when retransmission is not what they test: 4.096 us *
// 2^20, about 4.3 s. At the default 14 (67 ms) the emulated guest, whose
// vCPUs stall for longer under host load, retransmits in most bandwidth
// runs (rxe's completer_retry_err: about 7 a bidirectional run), and
// 6.1's rxe then sometimes fails the QP (remote invalid request, local QP
// operation error, flushes on the other side) with stock perftest on both
// sides as with rdmactl: the kernel's retransmission path, not a figure
// or an exchange under test. At 20 those runs retransmit about never.
// A run whose link goes down still fails at once: perf stops on the
// port's PORT_ERR event, not on a retransmission limit.
const slowQPTimeout = "20"

// perfRow is one result row of perftest's table (ours has the same layout).
type perfRow struct {
	bytes, iters uint64
	vals         []float64
}

// finite: no NaN or infinity (perftest's clock failed under TCG).
func finite(vs []float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// agreeingRows is the first row of each side, which must agree on the
// message size and the iterations.
func agreeingRows(t *testing.T, sout, cout string) (s, c perfRow) {
	t.Helper()
	s, c = parsePerfRows(t, "server", sout)[0], parsePerfRows(t, "client", cout)[0]
	if s.bytes != c.bytes || s.iters != c.iters {
		t.Fatalf("rows disagree: server %+v client %+v", s, c)
	}
	return s, c
}

// parsePerfRows finds the rows under the "#bytes" header, as a script
// parsing perftest output would.
func parsePerfRows(t *testing.T, who, out string) []perfRow {
	t.Helper()
	var rows []perfRow
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, " #bytes") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(l, "---") {
			in = in && !strings.HasPrefix(l, "---")
			continue
		}
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		b, err1 := strconv.ParseUint(f[0], 10, 64)
		n, err2 := strconv.ParseUint(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		r := perfRow{bytes: b, iters: n}
		for _, s := range f[2:] {
			// perftest prints "inf" and "-nan" when its cycle-counter
			// calibration fails (seen under TCG); keep them as such so
			// the caller can tell perftest's figures from ours.
			v, err := strconv.ParseFloat(s, 64)
			if s == "-nan" {
				v, err = math.NaN(), nil
			}
			if err != nil {
				t.Fatalf("%s: unparsable value %q in row %q", who, s, l)
			}
			r.vals = append(r.vals, v)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		t.Fatalf("%s printed no result row:\n%s", who, out)
	}
	return rows
}

// unsortedSamples are the samples a latency test printed with -U, under
// "#, usec" one "N, VALUE" line each (perftest's print_report_lat).
func unsortedSamples(t *testing.T, out string) []float64 {
	t.Helper()
	var v []float64
	in := false
	for _, l := range strings.Split(out, "\n") {
		if l == "#, usec" {
			in = true
			continue
		}
		n, val, ok := strings.Cut(l, ", ")
		if _, err := strconv.Atoi(n); !in || !ok || err != nil {
			in = false
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("unparsable sample line %q", l)
		}
		v = append(v, f)
	}
	if len(v) == 0 {
		t.Fatalf("no -U samples in:\n%s", out)
	}
	return v
}

// headerField is the value after "NAME : " in a perftest header ("" if
// the header has no such line).
func headerField(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == name {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestVMPerfInterop(t *testing.T) {
	resUnchanged(t, false)
	type pair struct{ name, server, client string } // "r" rdmactl, "p" perftest
	pairs := []pair{{"rdmactl-rdmactl", "r", "r"}, {"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"}}
	type test struct {
		verb, kind, conn string
		extra            []string
	}
	var tests []test
	for _, v := range []string{"write", "read", "send"} {
		for _, k := range []string{"bw", "lat"} {
			tests = append(tests, test{v, k, "RC", nil})
		}
	}
	tests = append(tests, test{"send", "bw", "UD", []string{"-s", "512"}}, test{"send", "lat", "UD", nil},
		test{"write", "bw", "RC", []string{"-b"}}, test{"send", "bw", "RC", []string{"-b"}}, test{"send", "bw", "UD", []string{"-b", "-s", "512"}})
	port := 18600
	for _, tc := range tests {
		for _, pr := range pairs {
			port++
			bidir := slices.Contains(tc.extra, "-b")
			suffix := ""
			if bidir {
				suffix = "_bidir"
			}
			name := fmt.Sprintf("%s_%s_%s%s/%s", tc.verb, tc.kind, tc.conn, suffix, pr.name)
			p := port
			t.Run(name, func(t *testing.T) {
				// Stock perftest sometimes gives up before the run (its
				// clock under TCG) and exits 1, so our side sees the peer
				// vanish: try the pair again, at most twice.
				extra := append(slices.Clip(tc.extra), "-u", slowQPTimeout)
				if tc.kind == "lat" {
					// Every sample, for the t_max check below.
					extra = append(slices.Clip(extra), "-U")
				}
				r := retryPerfPair(t, tc.verb, tc.kind, tc.conn, extra, pr.server, pr.client, p, perftestClock)
				r.mustPass(t)
				sout, cout := r.sout, r.cout
				// Both sides chose the same inline size (perftest's
				// per-device default; 0 on rxe, which it does not know).
				if si, ci := headerField(sout, "Max inline data"), headerField(cout, "Max inline data"); si != ci || (si == "" && tc.verb != "read") {
					t.Fatalf("Max inline data: server %q, client %q", si, ci)
				}
				if tc.verb == "read" && tc.kind == "lat" {
					// Only the reader (client) measures; perftest's server prints no row.
					rows := parsePerfRows(t, "client", cout)
					if rows[0].iters != 100 || rows[0].vals[0] <= 0 {
						t.Fatalf("client row %+v", rows[0])
					}
					return
				}
				s, c := agreeingRows(t, sout, cout)
				switch {
				case tc.kind == "bw" && (tc.verb != "send" || bidir):
					// The server prints the client's report, or (-b) each
					// side the sum of both reports: identical.
					if fmt.Sprint(s.vals) != fmt.Sprint(c.vals) {
						t.Fatalf("server printed %v, client measured %v", s.vals, c.vals)
					}
				case tc.kind == "bw" && ((pr.server == "p" && !finite(s.vals)) || (pr.client == "p" && !finite(c.vals))):
					// perftest's cycle-counter calibration failed under TCG:
					// its figures say nothing; ours must still be sane.
					t.Logf("perftest printed non-finite figures: server %+v client %+v", s, c)
					for i, r := range []perfRow{s, c} {
						if []string{pr.server, pr.client}[i] == "r" && (!finite(r.vals) || r.vals[1] <= 0) {
							t.Fatalf("rdmactl's row is not sane: %+v", r)
						}
					}
				case tc.kind == "bw":
					// Send BW: each side measures the same transfer on its
					// own clock. The sender's runs from its first post to
					// its last completion, the receiver's (as perftest's
					// run_iter_bw_server) from its first receive
					// completion to its last. The receiver's interval is
					// the shorter one unless it falls behind: it cannot
					// report much less than the sender. It can report
					// much more: when its thread is scheduled late
					// (both sides in this one test process on two
					// emulated CPUs), much of the 100-message burst has
					// already arrived at its first completion (seen:
					// 8785 MB/s against 8.52). A stock perftest side
					// converts TCG cycle counts with a CPU frequency it
					// measures badly there (see perftestClockFailed), so
					// it gets 2x.
					lim := 1.5
					if pr.server == "p" || pr.client == "p" {
						lim = 2
					}
					if tc.conn == "UD" {
						// A datagram that finds no receive posted is
						// dropped (UD is unreliable; rxe drops it), so a
						// UD receiver may rightly count less than was
						// sent: seen on 6.12 in CI, rdmactl pair, 3.17
						// MB/s received against 4.82 sent.
						lim = math.Inf(1)
					}
					if c.vals[1] <= 0 || s.vals[1] <= 0 || c.vals[1]/s.vals[1] > lim {
						t.Fatalf("average BW server %v client %v: the receiver measured less than 1/%v of the sender's", s.vals[1], c.vals[1], lim)
					}
					if s.vals[1]/c.vals[1] > lim {
						t.Logf("receiver's average BW %v above the sender's %v: its first completion came late", s.vals[1], c.vals[1])
					}
				default:
					for i, r := range []perfRow{s, c} {
						who := []string{pr.server, pr.client}[i]
						if !finite(r.vals) {
							if who == "p" {
								// perftest's own clock failed (cycles
								// over a CPU MHz it could not measure
								// under emulation): nothing to check
								// in its figures; bytes and iterations
								// agreed above.
								t.Logf("perftest printed non-finite latencies (its cycle-counter calibration under TCG): %+v", r)
								continue
							}
							t.Fatalf("rdmactl printed non-finite latencies: %+v", r)
						}
						if r.vals[0] <= 0 || r.vals[0] > r.vals[2] || r.vals[2] > r.vals[1] {
							t.Fatalf("latency row not min <= typical <= max: %+v", r)
						}
						// A perftest peer calibrates its clock for about
						// 220 ms after the last handshake, while the side
						// that posts first (the write server, the send
						// client) waits for its first answer: not a round
						// trip, and not ours to time (it showed as a t_max
						// of 110-124 ms, half the wait). A fixed bound
						// (90 ms) also caught the guest's own stalls on a
						// loaded host; but a stall lengthens the periods of
						// both sides that span it (each waits for the
						// other), while the peer's start is in no period
						// of perftest's: so rdmactl's t_max may exceed
						// perftest's only by what their clocks differ
						// (perftest's, calibrated under TCG, within 2x:
						// see t_min below) and a little, never by the
						// start's 100 ms and more. perftest's printed
						// t_max is its third largest sample (its
						// print_report_lat drops LAT_MEASURE_TAIL, the
						// two largest; ours keeps all), so a stall
						// both sides saw once is in our t_max and not
						// in its: compare with the largest of the
						// samples it printed (-U).
						if who == "r" {
							if own := slices.Max(unsortedSamples(t, []string{sout, cout}[i])); math.Abs(own-r.vals[1]) > 0.01+1e-5*own {
								t.Fatalf("rdmactl's t_max %v us, the largest of its -U samples %v us", r.vals[1], own)
							}
						}
						if peer := []perfRow{s, c}[1-i]; who == "r" && pr.server != pr.client && finite(peer.vals) {
							peerOut := []string{sout, cout}[1-i]
							peerMax := slices.Max(append(unsortedSamples(t, peerOut), peer.vals[1]))
							if r.vals[1] > 2.5*peerMax+20000 {
								t.Fatalf("rdmactl's t_max %v us against perftest's largest sample %v us (its t_max %v) in the same run: it holds the perftest peer's start: %+v\nrdmactl's samples (us): %v\nperftest's samples (us): %v",
									r.vals[1], peerMax, peer.vals[1], r, unsortedSamples(t, []string{sout, cout}[i]), unsortedSamples(t, peerOut))
							}
						}
					}
					// Both sides time the same ping-pong, post start to
					// post start, so their figures are alike: t_min
					// within 0.5x-2x and t_typical within 0.7x-1.4x of
					// perftest's from the same run. A t_min far below
					// perftest's is not a round trip (timing from the
					// end of a post gave rdmactl 4.67 us against 46.18
					// on 6.12, and timing the peer's last message after
					// the last post 1.45 against 22.30).
					if pr.server != pr.client && finite(s.vals) && finite(c.vals) {
						mine, theirs := s, c
						mineOut, theirsOut := sout, cout
						if pr.server == "p" {
							mine, theirs = c, s
							mineOut, theirsOut = cout, sout
						}
						// On a failure, both sides' samples in the order
						// taken: the evidence of what differed.
						samples := func() string {
							return fmt.Sprintf("rdmactl's samples (us): %v\nperftest's samples (us): %v",
								unsortedSamples(t, mineOut), unsortedSamples(t, theirsOut))
						}
						if r := mine.vals[0] / theirs.vals[0]; r < 0.5 || r > 2 {
							t.Fatalf("rdmactl's t_min %v us, perftest's %v us (ratio %.2f, want 0.5-2): not the same round trips\n%s", mine.vals[0], theirs.vals[0], r, samples())
						}
						if r := mine.vals[2] / theirs.vals[2]; r < 0.7 || r > 1.4 {
							t.Fatalf("rdmactl's t_typical %v us, perftest's %v us (ratio %.2f, want 0.7-1.4)\n%s", mine.vals[2], theirs.vals[2], r, samples())
						}
						t.Logf("t_min %v/%v us, t_typical %v/%v us (rdmactl/perftest)", mine.vals[0], theirs.vals[0], mine.vals[2], theirs.vals[2])
					}
				}
			})
		}
	}
}

// TestVMPerfPeerErrors: a client without a server, and a server whose
// client disagrees on the size, fail with exitPeer and one line, quickly.
func TestVMPerfPeerErrors(t *testing.T) {
	resUnchanged(t, false)
	start := time.Now()
	_, stderr, code := runCmd(t, "perf", "write", "-d", "rxe1", "-p", "18700", perfServerIP)
	if code != cmdutil.ExitPeer || strings.Count(stderr, "\n") != 1 || time.Since(start) > 20*time.Second {
		t.Fatalf("no server: code %d after %v, stderr %q", code, time.Since(start), stderr)
	}
	var wg sync.WaitGroup
	var scode int
	var sstderr string
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, sstderr, scode = runCmd(t, "perf", "write", "-d", "rxe0", "-p", "18701", "-s", "4096", "-n", "50")
	}()
	waitListening(t, 18701, 30*time.Second)
	_, cstderr, ccode := runCmd(t, "perf", "write", "-d", "rxe1", "-p", "18701", "-s", "8192", "-n", "50", perfServerIP)
	wg.Wait()
	if scode != cmdutil.ExitPeer || ccode != cmdutil.ExitPeer || !strings.Contains(sstderr, "-s") || !strings.Contains(cstderr, "-s") {
		t.Fatalf("size mismatch: server %d %q, client %d %q", scode, sstderr, ccode, cstderr)
	}
	// A perftest client with another size: our server notices at the report.
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, sstderr, scode = runCmd(t, "perf", "write", "-d", "rxe0", "-p", "18702", "-s", "8192", "-n", "50")
	}()
	waitListening(t, 18702, 30*time.Second)
	_ = exec.Command("ib_write_bw", "-d", "rxe1", "-p", "18702", "-s", "4096", "-n", "50", perfServerIP).Run()
	wg.Wait()
	if scode != cmdutil.ExitPeer || !strings.Contains(sstderr, "4096") {
		t.Fatalf("perftest size mismatch: server %d %q", scode, sstderr)
	}
}

// A perftest client killed mid-run: our server, alone in its process as
// in the binary, names the peer within seconds and leaves no resources.
func TestVMPerfPeerKilled(t *testing.T) {
	resUnchanged(t, false)
	for i, kind := range []string{"bw", "lat"} {
		port := strconv.Itoa(18710 + i)
		args := []string{"perf", "write", "-d", "rxe0", "-p", port, "-D", "60"}
		if kind == "lat" {
			args = append(args, "--lat")
		}
		var code int
		var stderr string
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, stderr, code = runSoleCmd(t, args...)
		}()
		waitListening(t, 18710+i, 30*time.Second)
		sent := vmcheck.Sent(t)
		peer := exec.Command("ib_write_"+kind, "-d", "rxe1", "-p", port, "-D", "60", perfServerIP)
		if err := peer.Start(); err != nil {
			t.Fatalf("ib_write_%s: %v", kind, err)
		}
		// Killed once the run's traffic flows, not at a fixed time.
		waitPeerTraffic(t, sent, 1000, done, "the rdmactl server")
		took := killPeer(t, peer, done, kind+": server")
		if code != cmdutil.ExitPeer || strings.Count(stderr, "\n") != 1 || took > 5*time.Second {
			t.Fatalf("%s: server exit %d after %v, stderr %q", kind, code, took, stderr)
		}
		t.Logf("%s: exit %d %v after the kill: %s", kind, code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
	}
}

// TestVMPerfBidirDuration: with -b and -D, ib_send_bw exchanges no
// reports; each side counts what it sent and received in its own window
// (run_iter_bi), so both print about the same figure, the sum of both
// directions. rdmactl must print that too, not its sending half.
func TestVMPerfBidirDuration(t *testing.T) {
	resUnchanged(t, false)
	pairs := []struct{ name, server, client string }{{"rdmactl-client-perftest-server", "p", "r"}, {"perftest-client-rdmactl-server", "r", "p"}}
	for i, pr := range pairs {
		t.Run(pr.name, func(t *testing.T) {
			var sout, cout string
			var serr, cerr error
			var s, c perfRow
			for attempt := 0; ; attempt++ {
				sout, serr, cout, cerr = runPerfPair("send", "bw", "RC", []string{"-b", "-D", "4"}, pr.server, pr.client, 18950+10*i+attempt)
				if serr != nil || cerr != nil {
					if perftestClockFailed(sout+cout) && attempt < 2 {
						continue // perftest's clock under TCG, see TestVMPerfInterop
					}
					t.Fatalf("server: %v\nclient: %v\n--- server output\n%s\n--- client output\n%s", serr, cerr, sout, cout)
				}
				s, c = parsePerfRows(t, "server", sout)[0], parsePerfRows(t, "client", cout)[0]
				if !(finite(s.vals) && finite(c.vals)) && attempt < 2 {
					t.Logf("attempt %d: stock perftest printed non-finite figures (its clock under TCG); trying again", attempt+1)
					continue
				}
				// Each side counts in its own 2 s window, and under TCG the
				// rate can halve for a second on one vCPU: windows that
				// catch different spells differ (seen once: 0.59). Counting
				// one direction only would be about 0.5 or 2 every time.
				if r := c.vals[1] / s.vals[1]; !(r > 0.6 && r < 1.6) && attempt < 2 {
					t.Logf("attempt %d: average BW: server %v, client %v; trying again", attempt+1, s.vals[1], c.vals[1])
					continue
				}
				break
			}
			t.Logf("average BW: server %v, client %v", s.vals[1], c.vals[1])
			if r := c.vals[1] / s.vals[1]; !(r > 0.6 && r < 1.6) {
				t.Fatalf("average BW: server %v, client %v; both count both directions, so they should be close\n--- server output\n%s\n--- client output\n%s", s.vals[1], c.vals[1], sout, cout)
			}
		})
	}
}

// runPerfPair runs one server (on rxe0) and one client (on rxe1) of a
// test, each "r" (rdmactl, in-process) or "p" (stock perftest), on TCP
// port p, with -n 100 unless extra has -D.
func runPerfPair(verb, kind, conn string, extra []string, server, client string, p int) (sout string, serr error, cout string, cerr error) {
	r := runPair(perfPairArgs(verb, kind, conn, extra, server, client, p))
	return r.sout, r.serr, r.cout, r.cerr
}

// retryPerfPair is runPerfPair through retryPair, on ports p, p+1000
// and p+2000.
func retryPerfPair(t *testing.T, verb, kind, conn string, extra []string, server, client string, p int, again func(pairOut) string) pairOut {
	t.Helper()
	return retryPair(t, p, 1000, func(port int) ([]string, []string) {
		s, c, _ := perfPairArgs(verb, kind, conn, extra, server, client, port)
		return s, c
	}, pairOpts{}, again)
}

// perfPairArgs are runPerfPair's two command lines.
func perfPairArgs(verb, kind, conn string, extra []string, server, client string, p int) (sargs, cargs []string, o pairOpts) {
	common := []string{"-n", "100", "-p", strconv.Itoa(p)}
	if slices.Contains(extra, "-D") {
		common = common[2:]
	}
	if conn != "RC" {
		common = append(common, "-c", conn)
	}
	common = append(common, extra...)
	sargs = perfCmd(server, verb, kind, nil, append([]string{"-d", "rxe0"}, common...)...)
	cargs = perfCmd(client, verb, kind, nil, append(append([]string{"-d", "rxe1"}, common...), perfServerIP)...)
	return sargs, cargs, pairOpts{}
}

// TestVMPerfLoopMode: the binary's JSON says which loop ran, and both
// RDMACTL_PERF_LOOP (passed in from the caller's environment) and --loop
// select it: without either, rxe runs the detached loop.
func TestVMPerfLoopMode(t *testing.T) {
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (vm/suite.sh sets it)")
	}
	envMode := os.Getenv(rtloop.EnvVar)
	want := "detached"
	if envMode == "plain" {
		want = "plain"
	}
	for i, c := range []struct {
		flag []string
		want string
	}{{nil, want}, {[]string{"--loop", "plain"}, "plain"}, {[]string{"--loop", "detached"}, "detached"}} {
		t.Run(strings.Join(append([]string{"flag"}, c.flag...), "_"), func(t *testing.T) {
			port := strconv.Itoa(18900 + i)
			args := func(dev string, peer ...string) []string {
				a := append([]string{"-j", "perf", "write", "--lat", "-d", dev, "-n", "200", "-p", port}, c.flag...)
				return append(a, peer...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			srv := exec.CommandContext(ctx, bin, args("rxe0")...)
			var sout bytes.Buffer
			srv.Stdout, srv.Stderr = &sout, &sout
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			srvWait := serverListens(t, srv, 18900+i, sout.String)
			cout, cerr := exec.CommandContext(ctx, bin, args("rxe1", perfServerIP)...).CombinedOutput()
			serr := srvWait()
			if cerr != nil || serr != nil {
				t.Fatalf("client: %v\n%s\nserver: %v\n%s", cerr, cout, serr, sout.String())
			}
			for who, out := range map[string][]byte{"client": cout, "server": sout.Bytes()} {
				var res struct {
					Loop string `json:"loop"`
				}
				if err := json.Unmarshal(out, &res); err != nil {
					t.Fatalf("%s: %v\n%s", who, err, out)
				}
				if res.Loop != c.want {
					t.Errorf("%s (%s=%q, %v): loop %q, want %q", who, rtloop.EnvVar, envMode, c.flag, res.Loop, c.want)
				}
			}
		})
	}
}

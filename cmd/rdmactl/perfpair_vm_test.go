//go:build vmtest

package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// The perf VM tests' one way of running a server and a client: server on
// rxe0 (10.77.0.1), client on rxe1, each either rdmactl in this process
// (an argv starting with "perf") or an executable (stock perftest), and
// the checks every such test makes around it (rdma res show unchanged,
// perftest's clock trouble under TCG tried again). A test builds the two
// command lines; runPair runs them.

// perfCmd is one side's command line: rdmactl ("r": perf VERB, --lat for
// kind "lat", then rOnly, the options perftest lacks such as -j) or
// stock perftest ("p": ib_VERB_KIND), then args.
func perfCmd(who, verb, kind string, rOnly []string, args ...string) []string {
	if who == "p" {
		return append([]string{"ib_" + verb + "_" + kind}, args...)
	}
	a := []string{"perf", verb}
	if kind == "lat" {
		a = append(a, "--lat")
	}
	a = append(a, rOnly...)
	return append(a, args...)
}

// pairOut is what a pair printed and how each side ended: out is
// stdout, for a failed rdmactl stdout then stderr, for perftest both.
type pairOut struct {
	sout, cout string
	serr, cerr error
	// An rdmactl client's exit code, stdout and stderr apart; an rdmactl
	// server's stderr.
	ccode            int
	cstdout, cstderr string
	sstderr          string
}

// pairOpts tunes runPair; the zero value is what most tests want.
type pairOpts struct {
	// timeout for the whole pair (120 s if zero).
	timeout time.Duration
}

// runPair runs sargs as the server, then, once it listens (serverUp),
// cargs as the client, and waits for both. An rdmactl side's error is
// its exit code and stderr ("rdmactl exit N: ..."), its output stdout
// then stderr.
func runPair(sargs, cargs []string, o pairOpts) pairOut {
	if o.timeout == 0 {
		o.timeout = 120 * time.Second
	}
	// One rdmactl in the process, as in the binary (main sets it).
	sole := (sargs[0] == "perf") != (cargs[0] == "perf")
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var r pairOut
	var wg sync.WaitGroup
	wg.Add(1)
	srvDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(srvDone)
		s := runSide(ctx, sargs, sole)
		r.sout, r.serr, r.sstderr = s.out, s.err, s.stderr
	}()
	serverUp(sargs, srvDone)
	c := runSide(ctx, cargs, sole)
	r.cout, r.cerr, r.ccode, r.cstdout, r.cstderr = c.out, c.err, c.code, c.stdout, c.stderr
	wg.Wait()
	return r
}

// serverUp returns once the server of sargs listens on its port (-p,
// --port; 18515 if not given), has ended, or 20 s have passed: a TCP
// port, or for a server that uses the RDMA CM (-R, --rdma_cm) an RDMA CM
// id in state LISTEN ('rdma res show cm_id'). perftest's clients do not
// retry their connect, and a server's start takes from a few hundred
// milliseconds to seconds in a loaded TCG guest.
func serverUp(sargs []string, done <-chan struct{}) {
	port, cm := 18515, false
	for i, a := range sargs {
		switch {
		case a == "-R" || a == "--rdma_cm" || a == "-z" || a == "--comm_rdma_cm":
			cm = true
		case (a == "-p" || a == "--port") && i+1 < len(sargs):
			fmt.Sscan(sargs[i+1], &port)
		case strings.HasPrefix(a, "--port="):
			fmt.Sscan(strings.TrimPrefix(a, "--port="), &port)
		}
	}
	if !cm {
		awaitListen(port, 20*time.Second, done)
		return
	}
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); {
		if ok, err := vmcheck.CMListens(port); ok || err != nil {
			return // an rdma that cannot answer: the client finds out
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-done:
			return
		}
	}
}

// sideOut is how one side ended: out is its stdout, for a failed
// rdmactl stdout then stderr, for perftest both; err says how it failed
// ("rdmactl exit N: ..."). For rdmactl, also its exit code, stdout and
// stderr apart.
type sideOut struct {
	out            string
	err            error
	code           int
	stdout, stderr string
}

// runSide runs rdmactl in-process (args start with "perf") or an
// executable.
func runSide(ctx context.Context, args []string, sole bool) sideOut {
	if args[0] == "perf" {
		var o, e bytes.Buffer
		code := runApp(&cmdutil.App{Stdout: &o, Stderr: &e, Ctx: ctx, SoleSession: sole}, args)
		r := sideOut{out: o.String(), code: code, stdout: o.String(), stderr: e.String()}
		if code != 0 {
			r.out += e.String()
			r.err = fmt.Errorf("rdmactl exit %d: %s", code, strings.TrimSpace(e.String()))
		}
		return r
	}
	b, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	return sideOut{out: string(b), err: err}
}

// runSoleCmd is runCmd for the only benchmark in the process, as in the
// binary (app.soleSession).
func runSoleCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = runApp(&cmdutil.App{Stdout: &o, Stderr: &e, Ctx: context.Background(), SoleSession: true}, args)
	return o.String(), e.String(), code
}

// retryPair runs the pair mk builds for a port up to three times, on
// port, port+step and port+2*step, while again names a reason to try
// once more (a fresh port: the last run's may still be in TIME_WAIT).
// Its usual reason is perftestClock.
func retryPair(t *testing.T, port, step int, mk func(port int) (sargs, cargs []string), o pairOpts, again func(pairOut) string) pairOut {
	t.Helper()
	var r pairOut
	for attempt := 0; attempt < 3; attempt++ {
		s, c := mk(port + step*attempt)
		r = runPair(s, c, o)
		why := again(r)
		if why == "" {
			break
		}
		t.Logf("attempt %d: %s; trying again", attempt+1, why)
	}
	return r
}

// perftestClock is retryPair's usual reason: stock perftest sometimes
// gives up before the run, its CPU-frequency regression (get_clock.c)
// failing under TCG ("Correlation coefficient r^2 ... < 0.9 / Can't
// produce a report"); that is perftest's clock, not what is tested.
func perftestClock(r pairOut) string {
	if perftestClockFailed(r.sout + r.cout) {
		return "stock perftest could not calibrate its clock under TCG"
	}
	return ""
}

// noReason never tries again (for orFailed).
func noReason(pairOut) string { return "" }

// orFailed is again plus any failed run: rxe under a loaded TCG host
// fails a run now and then (on main too).
func orFailed(again func(pairOut) string) func(pairOut) string {
	return func(r pairOut) string {
		if why := again(r); why != "" {
			return why
		}
		if r.serr != nil || r.cerr != nil {
			return fmt.Sprintf("the run failed (server: %v; client: %v)", r.serr, r.cerr)
		}
		return ""
	}
}

// mustPass fails the test if either side failed, with both outputs.
func (r pairOut) mustPass(t *testing.T) {
	t.Helper()
	if r.serr != nil || r.cerr != nil {
		t.Fatalf("server: %v\nclient: %v\n--- server output\n%s\n--- client output\n%s", r.serr, r.cerr, r.sout, r.cout)
	}
}

// perftestClockFailed reports whether stock perftest gave up on its
// cycle-counter calibration (src/get_clock.c) instead of running.
func perftestClockFailed(out string) bool {
	return strings.Contains(out, "Can't produce a report") || strings.Contains(out, "Correlation coefficient")
}

func resShow(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("rdma", "res", "show").Output()
	if err != nil {
		t.Fatalf("rdma res show: %v (the VM must provide it)", err)
	}
	return string(out)
}

func resShowCM(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("rdma", "res", "show", "cm_id").CombinedOutput()
	if err != nil {
		t.Fatalf("rdma res show cm_id: %v: %s", err, out)
	}
	return string(out)
}

// resUnchanged takes 'rdma res show' (and with cm, 'rdma res show
// cm_id') now and fails the test if it differs once the test and its
// subtests are over: nothing of a run may stay in the kernel.
func resUnchanged(t *testing.T, cm bool) {
	t.Helper()
	before := resShow(t)
	var beforeCM string
	if cm {
		beforeCM = resShowCM(t)
	}
	t.Cleanup(func() {
		if after := resShow(t); after != before {
			t.Errorf("rdma res show changed:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		if !cm {
			return
		}
		if after := resShowCM(t); after != beforeCM {
			t.Errorf("rdma res show cm_id changed:\nbefore:\n%s\nafter:\n%s", beforeCM, after)
		}
	})
}

// rdmactlBin is the binary under test, for tests that signal a process.
func rdmactlBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (vm/suite.sh sets it)")
	}
	return bin
}

// side is one process of a perf pair (rdmactl's binary or perftest).
type side struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	once           sync.Once
	done           chan struct{} // closed when Wait returned, once wait was called
	err            error         // Wait's, once done is closed
}

// startSide starts bin with args; a test that ends before the process
// does kills it, so that no process outlives its test. Wait for it with
// its wait method or, only, with cmd.Wait.
func startSide(t *testing.T, bin, name string, args []string) *side {
	t.Helper()
	return startSideTo(t, bin, name, args, nil)
}

// startSideTo is startSide with stdout going to out instead (if not nil).
func startSideTo(t *testing.T, bin, name string, args []string, out io.Writer) *side {
	t.Helper()
	sd := &side{name: name, cmd: exec.Command(bin, args...)}
	sd.cmd.Stdout, sd.cmd.Stderr = &sd.stdout, &sd.stderr
	if out != nil {
		sd.cmd.Stdout = out
	}
	if err := sd.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		if sd.done != nil {
			select {
			case <-sd.done:
			default:
				_ = sd.cmd.Process.Kill()
				<-sd.done
			}
			return
		}
		if sd.cmd.ProcessState == nil {
			_ = sd.cmd.Process.Kill()
			_ = sd.cmd.Wait()
		}
	})
	return sd
}

// wait waits at most d for the process to end; false if it still runs.
func (sd *side) wait(d time.Duration) bool {
	sd.once.Do(func() {
		sd.done = make(chan struct{})
		go func() {
			sd.err = sd.cmd.Wait()
			close(sd.done)
		}()
	})
	select {
	case <-sd.done:
		return true
	case <-time.After(d):
		return false
	}
}

// status says how an ended process ended: "exit N" or "signal NAME".
func (sd *side) status() string {
	ws := sd.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return "signal " + unixSignalName(ws.Signal())
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}

func unixSignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	}
	return s.String()
}

// mustEndWithOneLine waits up to limit for sd to end on its own and
// fails unless it exited (no signal) non-zero with one "rdmactl: " line
// on stderr; since is when its trouble began, for the log. It returns
// the exit code and the line.
func (sd *side) mustEndWithOneLine(t *testing.T, limit time.Duration, since time.Time) (int, string) {
	t.Helper()
	if !sd.wait(limit) {
		_ = sd.cmd.Process.Signal(syscall.SIGQUIT)
		sd.wait(time.Minute)
		t.Fatalf("%s still running %v after the link went down:\n%s", sd.name, limit, &sd.stderr)
	}
	var ee *exec.ExitError
	if !errors.As(sd.err, &ee) {
		t.Fatalf("%s: exit %v after the link went down, want an error exit\nstdout:\n%s\nstderr:\n%s", sd.name, sd.err, &sd.stdout, &sd.stderr)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	msg := strings.TrimSpace(sd.stderr.String())
	if ws.Signaled() || strings.Contains(msg, "panic") || strings.Contains(msg, "SIGSEGV") || strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "rdmactl: ") {
		t.Fatalf("%s: %v after %v, want an exit with one line on stderr; stderr:\n%s", sd.name, sd.err, time.Since(since).Round(time.Millisecond), msg)
	}
	t.Logf("%s: exit %d after %v: %s", sd.name, ws.ExitStatus(), time.Since(since).Round(time.Millisecond), msg)
	return ws.ExitStatus(), msg
}

// mustEndOnItsOwn waits up to limit for sd to end, not by a signal:
// with exit 0 and its result row, or as mustEndWithOneLine.
func (sd *side) mustEndOnItsOwn(t *testing.T, limit time.Duration, since time.Time) {
	t.Helper()
	if !sd.wait(limit) {
		_ = sd.cmd.Process.Signal(syscall.SIGQUIT)
		sd.wait(time.Minute)
		t.Fatalf("%s still running %v after the link went down:\n%s", sd.name, limit, &sd.stderr)
	}
	if sd.err != nil {
		sd.mustEndWithOneLine(t, time.Minute, since)
		return
	}
	if !hasResultRow(sd.stdout.String()) {
		t.Fatalf("%s: exit 0 without a result row:\n%s", sd.name, &sd.stdout)
	}
	t.Logf("%s: exit 0 after %v with its row (the loss came after its run)", sd.name, time.Since(since).Round(time.Millisecond))
}

// hasResultRow says whether perf's output holds a result row under the
// "#bytes" header.
func hasResultRow(out string) bool {
	in := false
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#bytes") {
			in = true
			continue
		}
		if f := strings.Fields(l); in && len(f) >= 4 {
			if _, err := strconv.ParseUint(f[0], 10, 64); err == nil {
				return true
			}
		}
	}
	return false
}

// When a link-down case takes the client's netdev down.
type downAt int

const (
	// Once the client has a QP: past its port check, before or at the
	// start of its traffic.
	downAtSetup downAt = iota
	// Once its traffic flows (1,000 packets sent on rxe1).
	downMidRun
	// In the run's last seconds (lastSeconds).
	downLastSeconds
)

func (d downAt) String() string {
	return [...]string{"at_setup", "mid_run", "last_seconds"}[d]
}

// lastSeconds is when a -D 8 client is in the last 1.5 s of its loop,
// counted from its first packet. A bandwidth client is the sender (write,
// read, atomic and send alike): its loop ends when its sample window
// closes, 8 s less the 2 s margin (bwDetached); what follows, the drain
// of its last sends and the end-of-run handshake, may be over well before
// 8 s, and a link lost after the run's last check does not fail it (the
// figures were taken before the loss). A latency client runs the whole
// duration.
func lastSeconds(args []string) time.Duration {
	if !slices.Contains(args, "--lat") {
		return 4500 * time.Millisecond
	}
	return 6500 * time.Millisecond
}

// linkDownMidRun runs each args (perf's arguments) as a binary pair on
// ports from port and takes the client's netdev down mid-run; the cases
// in edges also at setup and in their last seconds. The client must exit
// with exitPeer and one line naming its port; the server must end on its
// own with one line; neither by a signal. The link comes back before the
// next case.
//
// Why the client's port is watched, and the run does not just wait for
// its completions: on rxe a QP may get no completion at all once its
// netdev is down (write_bw here waited out its 10 s stall limit), and a
// -D run whose stall limit was longer than the rest of its duration
// ended at its deadline as if it had finished: exit 0, reporting the
// traffic before the loss. That is how "send --use-srq -q 2 -D 30" once
// passed with its link down (its report: the traffic stopped about 9 s
// before the deadline, and its stall limit was 10.13 s). perf now reads
// the device's async events (PORT_ERR) and fails at once.
func linkDownMidRun(t *testing.T, port int, cases [][]string, edges ...int) {
	bin := rdmactlBin(t)
	resUnchanged(t, false)
	for i, args := range cases {
		linkDownCase(t, bin, port+3*i, args, downMidRun)
	}
	for _, i := range edges {
		linkDownCase(t, bin, port+3*i+1, cases[i], downAtSetup)
		linkDownCase(t, bin, port+3*i+2, cases[i], downLastSeconds)
	}
}

func linkDownCase(t *testing.T, bin string, port int, args []string, at downAt) {
	name := strings.Join(args, "_") + "/" + at.String()
	t.Run(name, func(t *testing.T) {
		d := "30"
		if at == downLastSeconds {
			d = "8"
		}
		// The port's event stops the client, whatever the QP timeout;
		// slowQPTimeout keeps rxe's retransmission path out of the runs.
		run := append(append([]string{"perf"}, args...), "-D", d, "-p", fmt.Sprint(port), "-u", slowQPTimeout)
		srv := startSide(t, bin, "server", append(run, "-d", "rxe0"))
		if !vmcheck.Until(30*time.Second, srv.ended, func() bool { return listening(port) }) {
			t.Fatalf("server not listening on %d; %s", port, srv.how())
		}
		sent, rcvd := vmcheck.PortCounter(t, "rxe1", "sent_pkts"), vmcheck.PortCounter(t, "rxe1", "rcvd_pkts")
		cli := startSide(t, bin, "client", append(run, "-d", "rxe1", perfServerIP))
		switch at {
		case downAtSetup:
			waitQPs(t, cli)
		case downMidRun:
			waitTraffic(t, cli, "rxe1", sent, rcvd, 1000)
		case downLastSeconds:
			waitSent(t, cli, "rxe1", sent, 1)
			d := lastSeconds(args)
			time.Sleep(d)
			if cli.ended() {
				t.Fatalf("the client ended within %v of its first packet in an 8 s run; %s", d, cli.how())
			}
		}
		t.Logf("before: %s", linkEvidence(t, "rxe1", "vrxe1"))
		vmcheck.LinkDown(t, "vrxe1")
		down := time.Now()
		defer restoreLink(t, "vrxe1", "rxe1")
		t.Logf("down: %s", linkEvidence(t, "rxe1", "vrxe1"))
		code, msg := cli.mustEndWithOneLine(t, 20*time.Second, down)
		if want := "port rxe1/1 went down during the run"; code != cmdutil.ExitPeer || !strings.Contains(msg, want) {
			t.Fatalf("client: exit %d %q, want exit %d saying %q", code, msg, cmdutil.ExitPeer, want)
		}
		if at == downLastSeconds && hasResultRow(cli.stdout.String()) {
			// The loss came after the client's loop had ended (its row
			// is printed; it failed because its port went down before it
			// reported): the server's run may have ended as it should,
			// the client's "done" received. It must end on its own, with
			// its row if it exits 0.
			srv.mustEndOnItsOwn(t, 30*time.Second, down)
		} else {
			srv.mustEndWithOneLine(t, 30*time.Second, down)
		}
		t.Logf("after: %s", linkEvidence(t, "rxe1", "vrxe1"))
	})
}

// restoreLink brings netdev back up and waits until the RDMA device's
// port is ACTIVE again, so that later tests find the VM as it was.
func restoreLink(t *testing.T, netdev, ibdev string) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", netdev, "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s up: %v %s", netdev, err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, _ := exec.Command("rdma", "link", "show", ibdev+"/1").Output()
		if strings.Contains(string(out), "state ACTIVE") {
			return
		}
	}
	t.Fatalf("%s/1 not ACTIVE 30 s after %s came back up", ibdev, netdev)
}

// killPeer kills peer and waits for the rdmactl run under test to end
// (done closed), failing the test if it still runs 30 s later (who names
// it); it returns how long rdmactl took after the kill.
func killPeer(t *testing.T, peer *exec.Cmd, done <-chan struct{}, who string) time.Duration {
	t.Helper()
	_ = peer.Process.Kill()
	_ = peer.Wait()
	killed := time.Now()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running 30 s after its peer was killed", who)
	}
	return time.Since(killed)
}

// waitListening waits until a TCP socket of this network namespace
// listens on port (/proc/net/tcp and tcp6, state 0A), at most d.
func waitListening(t *testing.T, port int, d time.Duration) {
	t.Helper()
	if !awaitListen(port, d, nil) {
		t.Fatalf("nothing listens on port %d %v after the server's start", port, d)
	}
}

// awaitListen reports whether something listens on port within d; it
// gives up early (false) when done is closed.
func awaitListen(port int, d time.Duration, done <-chan struct{}) bool {
	for end := time.Now().Add(d); !listening(port); {
		if time.Now().After(end) {
			return false
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-done:
			return false
		}
	}
	return true
}

// listening: a TCP socket of this network namespace listens on port.
func listening(port int) bool { return vmcheck.TCPListening(port) }

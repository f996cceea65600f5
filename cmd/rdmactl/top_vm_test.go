//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// VM tests of rdmactl top while 'rdmactl perf write -D 10' runs from rxe1
// (client) to rxe0 (server): the screen in tmux (the host's, visible in the
// guest), and the JSON snapshot against rdma statistic show.

// perfPair starts a perf write server on rxe0 and client on rxe1 for secs
// seconds and returns once the traffic flows (1,000 packets sent on rxe1
// since the client started: top then has rates to show), with a wait
// that checks both ended well.
func perfPair(t *testing.T, bin string, port, secs int) (server, client *side, wait func()) {
	t.Helper()
	p := []string{"-p", strconv.Itoa(port), "-D", strconv.Itoa(secs)}
	server = startSide(t, bin, "server", append([]string{"perf", "write", "-d", "rxe0"}, p...))
	waitListening(t, port, 30*time.Second)
	sent := vmcheck.PortCounter(t, "rxe1", "sent_pkts")
	client = startSide(t, bin, "client", append(append([]string{"perf", "write", "-d", "rxe1"}, p...), perfServerIP))
	waitSent(t, client, "rxe1", sent, 1000)
	return server, client, func() {
		for _, sd := range []*side{client, server} {
			if d := time.Duration(secs)*time.Second + time.Minute; !sd.wait(d) {
				t.Errorf("perf %s (a %d s run) still running %v later", sd.name, secs, d)
				continue
			}
			if sd.err != nil {
				t.Errorf("perf %s: %v\n%s", sd.name, sd.err, &sd.stderr)
			}
		}
	}
}

type tmux struct {
	t    *testing.T
	sock string
}

func (x tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", x.sock}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v %s", args, err, out)
	}
	return string(out)
}

func (x tmux) screen() string { return x.run("capture-pane", "-p", "-t", "top") }

// waitScreen polls the pane until ok says yes, or fails after d.
func (x tmux) waitScreen(d time.Duration, what string, ok func(string) bool) string {
	x.t.Helper()
	var s string
	var seen []string
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		if s = x.screen(); ok(s) {
			return s
		}
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
	}
	x.t.Fatalf("%s: not on the screen after %v; the screens seen:\n%s", what, d, strings.Join(seen, "\n-----\n"))
	return ""
}

// portRow is the fields of the line of dev/port in a frame.
func portRow(screen, key string) []string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[0] == key {
			return f
		}
	}
	return nil
}

// busy: the TX (3) or RX (4) cell of key shows traffic ("12kp/s", not "0p/s").
func busy(screen, key string, col int) bool {
	f := portRow(screen, key)
	return f != nil && strings.HasSuffix(f[col], "p/s") && f[col] != "0p/s"
}

func TestVMTopTmux(t *testing.T) {
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux: %v (vm/run installs it on the host; the guest sees the host's /usr)", err)
	}
	x := tmux{t, filepath.Join(t.TempDir(), "sock")}
	x.run("new-session", "-d", "-x", "80", "-y", "24", "-s", "top", "sh")
	defer exec.Command("tmux", "-S", x.sock, "kill-server").Run()
	x.run("send-keys", "-t", "top", "PS1='$ '; echo ready", "Enter")
	x.waitScreen(5*time.Second, "shell", func(s string) bool { return strings.Count(s, "ready") == 2 })

	server, client, wait := perfPair(t, bin, 18930, 10)
	x.run("send-keys", "-t", "top", "NO_COLOR=1 "+bin+" top -i 1s; echo TOP-EXIT=$?", "Enter")
	// The kernel names a resource's owner by the task that created it: a
	// thread of perf (Go runs verbs calls on several), as rdma res shows.
	// The rows of a perf process are those whose task is in its group.
	tgids := map[string]int{}
	tgid := func(pid string) int {
		if g, ok := tgids[pid]; ok {
			return g
		}
		b, _ := os.ReadFile("/proc/" + pid + "/status")
		g := -1
		if m := regexp.MustCompile(`(?m)^Tgid:\s+(\d+)`).FindSubmatch(b); m != nil {
			g, _ = strconv.Atoi(string(m[1]))
		}
		tgids[pid] = g
		return g
	}
	procRow := regexp.MustCompile(`(?m)^\s+(\d+) (\S+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$`)
	holds := func(s string, pid int, dev string) bool {
		qps := 0
		for _, m := range procRow.FindAllStringSubmatch(s, -1) {
			if m[2] == "rdmactl" && m[3] == dev && tgid(m[1]) == pid {
				n, _ := strconv.Atoi(m[4])
				qps += n
			}
		}
		return qps > 0
	}
	s := x.waitScreen(8*time.Second, "TX on rxe1, RX on rxe0, both perf processes with QPs in the process pane", func(s string) bool {
		return busy(s, "rxe1/1", 3) && busy(s, "rxe0/1", 4) &&
			holds(s, client.cmd.Process.Pid, "rxe1") && holds(s, server.cmd.Process.Pid, "rxe0")
	})
	t.Logf("screen during perf write rxe1 -> rxe0 (client pid %d, server pid %d):\n%s", client.cmd.Process.Pid, server.cmd.Process.Pid, s)
	if strings.Contains(s, "\x1b") {
		t.Errorf("NO_COLOR: escapes on the screen")
	}
	// Default order is by name: rxe0 above rxe1. 't' sorts by TX, the
	// busiest first: rxe1 sends the data, rxe0 only acknowledges it.
	above := func(s, a, b string) bool {
		i, j := strings.Index(s, "\n"+a+" "), strings.Index(s, "\n"+b+" ")
		return i >= 0 && j >= 0 && i < j
	}
	if !above(s, "rxe0/1", "rxe1/1") {
		t.Errorf("sorted by name, rxe0/1 is not above rxe1/1")
	}
	x.run("send-keys", "-t", "top", "t")
	s = x.waitScreen(5*time.Second, "sort by TX", func(s string) bool {
		return strings.Contains(s, "sort tx") && above(s, "rxe1/1", "rxe0/1")
	})
	t.Logf("sorted by TX:\n%s", s)
	x.run("send-keys", "-t", "top", "q")
	s = x.waitScreen(5*time.Second, "top exits on q", func(s string) bool { return strings.Contains(s, "TOP-EXIT=0") })
	if strings.Contains(s, "DEV/PORT") {
		t.Errorf("after q the frame is still on the screen (alternate screen not left):\n%s", s)
	}
	// The terminal is back in cooked mode with echo.
	x.run("send-keys", "-t", "top", "clear; stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo|isig)' | tr '\\n' ' '; echo END-$((1+1))", "Enter")
	s = x.waitScreen(5*time.Second, "stty", func(s string) bool { return strings.Contains(s, "END-2") })
	for _, m := range []string{"icanon", "echo", "isig"} {
		if !regexp.MustCompile(`(^|\s)` + m + `\s`).MatchString(s) {
			t.Errorf("after q the terminal lacks %s: %q", m, s)
		}
	}
	// Ctrl-C (a key in raw mode) quits as q does.
	x.run("send-keys", "-t", "top", "clear; "+bin+" top -i 1s; echo CTRL-C-EXIT=$?", "Enter")
	x.waitScreen(10*time.Second, "top again", func(s string) bool { return strings.Contains(s, "DEV/PORT") })
	x.run("send-keys", "-t", "top", "C-c")
	s = x.waitScreen(5*time.Second, "top exits on Ctrl-C", func(s string) bool { return strings.Contains(s, "CTRL-C-EXIT=0") })
	if strings.Contains(s, "DEV/PORT") {
		t.Errorf("after Ctrl-C the frame is still on the screen:\n%s", s)
	}
	wait()
}

// TestVMTopJSONMatchesRdmaStatistic: the packet rates of rdmactl -j top
// over one interval against the rates computed from rdma statistic show
// read at the start and end of the same interval.
func TestVMTopJSONMatchesRdmaStatistic(t *testing.T) {
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	// rxe is software: the packet rate depends on what else the VM's CPUs
	// run (top starting up, rdma), so the rates must be of the same
	// interval. The test reads rdma statistic show over and over while
	// top runs, and takes the reads nearest to the start and end of top's
	// interval (its JSON time and interval_s; one clock in the VM).
	_, _, wait := perfPair(t, bin, 18931, 15)
	type read struct {
		at time.Time // when rdma had read the counters
		m  map[string]map[string]uint64
	}
	var reads []read
	var mu sync.Mutex // reads, appended by the reader below
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(reads) }
	// awaitReads waits until the reader has made n reads.
	awaitReads := func(n int, what string) {
		t.Helper()
		if !waitFor(30*time.Second, func() bool { return count() >= n }) {
			t.Fatalf("no rdma statistic read %s in 30 s (%d reads)", what, count())
		}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	stopReads := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(func() { stopReads(); <-done }) // also after a Fatal
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// rdma prints once it has read every counter: the first
			// byte of its output is when the read was (its start-up
			// under TCG takes most of a second).
			cmd := exec.Command("rdma", "-j", "statistic", "show")
			pipe, err := cmd.StdoutPipe()
			if err != nil || cmd.Start() != nil {
				continue
			}
			first := make([]byte, 1)
			if _, err := io.ReadFull(pipe, first); err != nil {
				_ = cmd.Wait()
				continue
			}
			readAt := time.Now()
			rest, _ := io.ReadAll(pipe)
			if cmd.Wait() != nil {
				continue
			}
			out := append(first, rest...)
			var objs []map[string]any
			if json.Unmarshal(out, &objs) != nil {
				continue
			}
			m := map[string]map[string]uint64{}
			for _, o := range objs {
				key := fmt.Sprintf("%v/%v", o["ifname"], o["port"])
				m[key] = map[string]uint64{}
				for k, v := range o {
					if f, ok := v.(float64); ok {
						m[key][k] = uint64(f)
					}
				}
			}
			mu.Lock()
			reads = append(reads, read{readAt, m})
			mu.Unlock()
		}
	}()
	// One read before top starts and one started after it ends, whatever
	// rdma's start-up takes (a fixed half second before and after was not
	// always enough under TCG).
	awaitReads(1, "before top")
	out, err := exec.Command(bin, "-j", "top", "-i", "4s").Output()
	awaitReads(count()+2, "after top")
	stopReads()
	<-done
	if err != nil {
		t.Fatalf("rdmactl -j top: %v", err)
	}
	wait()
	var snap topJSON
	if err := json.Unmarshal(out, &snap); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	end := snap.Time
	start := end.Add(-time.Duration(snap.IntervalS * float64(time.Second)))
	if len(reads) < 4 || reads[0].at.After(start) || reads[len(reads)-1].at.Before(end) {
		t.Fatalf("%d rdma statistic reads, not around top's interval", len(reads))
	}
	// at is a counter's value at a time, interpolated between the two
	// reads around it (rdma itself takes most of a second under TCG).
	at := func(when time.Time, key, name string) float64 {
		for i := 1; i < len(reads); i++ {
			a, b := reads[i-1], reads[i]
			if !b.at.Before(when) {
				va, vb := float64(a.m[key][name]), float64(b.m[key][name])
				return va + (vb-va)*when.Sub(a.at).Seconds()/b.at.Sub(a.at).Seconds()
			}
		}
		return 0
	}
	t.Logf("%d rdma reads over %.3f s", len(reads), reads[len(reads)-1].at.Sub(reads[0].at).Seconds())
	// 4 s asked; more when the VM's CPUs are busy with perf (TCG).
	if snap.IntervalS < 3.9 || snap.IntervalS > 8 {
		t.Fatalf("interval_s %v: want 4 s", snap.IntervalS)
	}
	secs := snap.IntervalS
	checked := 0
	for _, c := range []struct {
		key, counter string
		tx           bool
	}{{"rxe1/1", "sent_pkts", true}, {"rxe0/1", "rcvd_pkts", false}, {"rxe1/1", "rcvd_pkts", false}, {"rxe0/1", "sent_pkts", true}} {
		delta := at(end, c.key, c.counter) - at(start, c.key, c.counter)
		want := delta / secs
		var got *float64
		for _, p := range snap.Ports {
			if fmt.Sprintf("%s/%d", p.Dev, p.Port) == c.key {
				got = p.RxPkts
				if c.tx {
					got = p.TxPkts
				}
			}
		}
		if got == nil {
			t.Errorf("%s %s: no rate in %s", c.key, c.counter, out)
			continue
		}
		t.Logf("%s %s: top %.1f/s, rdma statistic %.1f/s (%.0f over %.3f s)", c.key, c.counter, *got, want, delta, secs)
		if c.counter == "sent_pkts" && c.key == "rxe1/1" || c.counter == "rcvd_pkts" && c.key == "rxe0/1" {
			if want < 100 {
				t.Errorf("%s %s: %.1f/s, not the data direction of a perf run", c.key, c.counter, want)
			}
			if math.Abs(*got-want) > 0.1*want {
				t.Errorf("%s %s: top %.1f/s vs rdma statistic %.1f/s: more than 10%% apart", c.key, c.counter, *got, want)
			}
			checked++
		}
	}
	if checked != 2 {
		t.Errorf("checked %d data rates, want 2", checked)
	}
}

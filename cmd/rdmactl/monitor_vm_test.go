//go:build vmtest

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"golang.org/x/sys/unix"
)

// kernelNotifies is the ground truth the nldev_notify probe must find:
// the notify group came with Linux 6.12 (a test may read the version;
// rdmactl does not).
func kernelNotifies(t *testing.T) (bool, string) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var major, minor int
	if _, err := fmt.Sscanf(rel, "%d.%d", &major, &minor); err != nil {
		t.Fatalf("uname -r %q: %v", rel, err)
	}
	return major > 6 || major == 6 && minor >= 12, rel
}

// monProc is the rdmactl binary running monitor, its stdout read line by
// line as it comes.
type monProc struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stderr bytes.Buffer
	eof    chan struct{}
}

func startMonProc(t *testing.T, env []string, args ...string) *monProc {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	p := &monProc{cmd: exec.Command(bin, args...), eof: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		io.Copy(io.Discard, out)
		close(p.eof)
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *monProc) snapshot() (lines []string, stderr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...), p.stderr.String()
}

// waitStderr waits for s on stderr (the line saying monitor watches).
func (p *monProc) waitStderr(t *testing.T, s string) {
	t.Helper()
	if !waitFor(60*time.Second, func() bool { _, e := p.snapshot(); return strings.Contains(e, s) }) {
		_, e := p.snapshot()
		t.Fatalf("no %q on stderr within 60 s: %q", s, e)
	}
}

// interrupt is Ctrl-C: monitor must exit 0 within 10 s, its output read.
func (p *monProc) interrupt(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { <-p.eof; done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		_, e := p.snapshot()
		if err != nil {
			t.Errorf("monitor after SIGINT: %v, want exit 0; stderr %q", err, e)
		}
	case <-time.After(10 * time.Second):
		p.cmd.Process.Signal(syscall.SIGQUIT)
		t.Fatalf("monitor still running 10 s after SIGINT")
	}
}

// monEvent is one JSON line of monitor.
type monEvent struct {
	Type        string  `json:"type"`
	Ifindex     *uint32 `json:"ifindex"`
	Ifname      string  `json:"ifname"`
	Port        uint32  `json:"port"`
	Old         string  `json:"old"`
	New         string  `json:"new"`
	NetdevIndex *uint32 `json:"netdev_index"`
	Source      string  `json:"source"`
}

func (e monEvent) String() string {
	s := fmt.Sprintf("%s %s %s", e.Source, e.Type, e.Ifname)
	if e.Port != 0 {
		s += fmt.Sprintf("/%d", e.Port)
	}
	if e.Old != "" || e.New != "" {
		s += fmt.Sprintf(" %q->%q", e.Old, e.New)
	}
	return s
}

func (p *monProc) events(t *testing.T) []monEvent {
	t.Helper()
	lines, _ := p.snapshot()
	var out []monEvent
	for _, l := range lines {
		var e monEvent
		d := json.NewDecoder(strings.NewReader(l))
		d.DisallowUnknownFields()
		if err := d.Decode(&e); err != nil || d.More() {
			t.Fatalf("not one JSON event per line: %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

// want is one event the script must cause.
type want struct {
	typ, ifname string
	port        uint32
	old, new    string
	netdevIndex uint32 // 0: not checked
	kernel      bool   // the notify group sends it (6.12)
	anySource   bool   // the kernel or the poll, whichever saw it first
}

// TestVMMonitor runs one script under two monitors (JSON and text, --poll
// 300ms): rdma link add on a fresh veth, rdma dev set ... name, ip link
// set down and up, rdma link delete. Each step's events
// must come in order, once, from the kernel where the notify group sends
// them (6.12: add and delete) and from the poll otherwise; SIGINT ends
// both with status 0. Without the group and without --poll, monitor
// exits 5 with one line.
func TestVMMonitor(t *testing.T) {
	notifies, rel := kernelNotifies(t)
	v := binJSON(t, nil, "-j", "version", "-d").(map[string]any)
	var probe string
	for _, f := range v["kernel"].(map[string]any)["features"].([]any) {
		if f := f.(map[string]any); f["name"] == "nldev_notify" {
			probe = fmt.Sprint(f["state"], " (", f["detail"], ")")
		}
	}
	if wantProbe := map[bool]string{true: "present", false: "absent"}[notifies]; !strings.HasPrefix(probe, wantProbe+" ") {
		t.Fatalf("kernel %s: nldev_notify %s, want %s", rel, probe, wantProbe)
	}
	t.Logf("kernel %s: nldev_notify %s", rel, probe)

	// No events to wait for: one line, exit 5. On 6.12, forcing the
	// probe absent stands for a kernel without the group.
	var env []string
	if notifies {
		env = []string{"RDMACTL_KERNEL_ABSENT=nldev_notify"}
	}
	cmd := exec.Command(os.Getenv("RDMACTL_BIN"), "monitor")
	cmd.Env = append(os.Environ(), env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cmdutil.ExitUnsupported || so.Len() != 0 ||
		strings.Count(se.String(), "\n") != 1 || !strings.Contains(se.String(), "--poll INTERVAL") {
		t.Errorf("%v monitor without --poll: %v, stdout %q, stderr %q; want exit 5 and one line", env, err, so.String(), se.String())
	}

	vmRun(t, "ip", "link", "add", "mnva", "type", "veth", "peer", "name", "mnvb")
	defer exec.Command("ip", "link", "del", "mnva").Run()
	vmRun(t, "ip", "link", "set", "mnva", "up")
	vmRun(t, "ip", "link", "set", "mnvb", "up")
	ifindex, err := os.ReadFile("/sys/class/net/mnva/ifindex")
	if err != nil {
		t.Fatal(err)
	}
	ndIdx, _ := strconv.Atoi(strings.TrimSpace(string(ifindex)))
	defer func() {
		for _, n := range []string{"mon0", "mon1", "mon2"} {
			exec.Command("rdma", "link", "delete", n).Run()
		}
	}()

	const poll = 300 * time.Millisecond
	js := startMonProc(t, nil, "-j", "monitor", "--poll", poll.String())
	txt := startMonProc(t, nil, "monitor", "--poll", poll.String())
	how := "a poll every " + poll.String()
	if notifies {
		how = "kernel events and a poll every " + poll.String()
	}
	js.waitStderr(t, "rdmactl: monitoring RDMA devices: "+how+"; Ctrl-C to stop\n")
	txt.waitStderr(t, "rdmactl: monitoring RDMA devices: "+how+"; Ctrl-C to stop\n")

	var devIndex uint32
	steps := []struct {
		name string
		run  func()
		want []want
	}{
		{"add", func() {
			vmRun(t, "rdma", "link", "add", "mon0", "type", "rxe", "netdev", "mnva")
			d := rdmaList(t, "dev", "show", "mon0")
			if len(d) != 1 {
				t.Fatalf("rdma dev show mon0: %v", d)
			}
			devIndex = uint32(d[0]["ifindex"].(float64))
		}, []want{
			{typ: "device_added", ifname: "mon0", kernel: true},
			{typ: "netdev_attached", ifname: "mon0", port: 1, new: "mnva", netdevIndex: uint32(ndIdx), kernel: true},
		}},
		{"rename", func() { vmRun(t, "rdma", "dev", "set", "mon0", "name", "mon1") }, []want{
			{typ: "device_renamed", ifname: "mon1", old: "mon0", new: "mon1"},
		}},
		{"down", func() { vmRun(t, "ip", "link", "set", "mnva", "down") }, []want{
			{typ: "port_state_changed", ifname: "mon1", port: 1, old: "ACTIVE", new: "DOWN"},
			{typ: "phys_state_changed", ifname: "mon1", port: 1, old: "LINK_UP", new: "DISABLED"},
		}},
		{"up", func() { vmRun(t, "ip", "link", "set", "mnva", "up") }, []want{
			{typ: "port_state_changed", ifname: "mon1", port: 1, new: "ACTIVE"},
			{typ: "phys_state_changed", ifname: "mon1", port: 1, new: "LINK_UP"},
		}},
		{"delete", func() { vmRun(t, "rdma", "link", "delete", "mon1") }, []want{
			{typ: "device_removed", ifname: "mon1", kernel: true},
		}},
	}
	if notifies {
		// Renamed and at once deleted: 6.12 sends no rename event, and
		// UNREGISTER names the device as it is then (mon2): the rename
		// is said first, the removal names mon2. (A poll alone cannot
		// know a name it never saw: it names the device as last seen.)
		steps[len(steps)-1] = struct {
			name string
			run  func()
			want []want
		}{"rename and delete", func() {
			vmRun(t, "rdma", "dev", "set", "mon1", "name", "mon2")
			vmRun(t, "rdma", "link", "delete", "mon2")
		}, []want{
			// From UNREGISTER, or from a poll between the two commands.
			{typ: "device_renamed", ifname: "mon2", old: "mon1", new: "mon2", anySource: true},
			{typ: "device_removed", ifname: "mon2", kernel: true},
		}}
	}
	seen := 0
	for _, s := range steps {
		// The port settles (ACTIVE after add and up) before the next
		// step, so that each step's events are its own.
		s.run()
		var evs []monEvent
		ok := waitFor(30*time.Second, func() bool {
			evs = js.events(t)[seen:]
			return len(match(evs, s.want, notifies)) == len(s.want)
		})
		if !ok {
			t.Fatalf("%s: events %v, want %v (kernel events: %v)", s.name, evs, s.want, notifies)
		}
		if s.name == "add" || s.name == "up" {
			if !waitFor(30*time.Second, func() bool {
				l := rdmaList(t, "link", "show")
				for _, p := range l {
					if p["netdev"] == "mnva" {
						return p["state"] == "ACTIVE"
					}
				}
				return false
			}) {
				t.Fatalf("%s: mnva's port not ACTIVE within 30 s", s.name)
			}
		}
		// Anything else this step causes: an absence cannot be waited
		// for, only watched for a while. Four poll intervals hold at
		// least three of monitor's polls, even with one of them late.
		time.Sleep(4 * poll)
		evs = js.events(t)[seen:]
		at := match(evs, s.want, notifies)
		if len(at) != len(s.want) {
			t.Fatalf("%s: events %v no longer match", s.name, evs)
		}
		// Besides what the step must cause, only its device's port may
		// pass through other states (an rxe port comes up in steps).
		for i, e := range evs {
			if !contains(at, i) && !(strings.HasSuffix(e.Type, "_state_changed") && e.Ifname == s.want[0].ifname && e.Source == "poll") {
				t.Errorf("%s: unexpected event %v among %v", s.name, e, evs)
			}
			if e.Ifindex == nil || *e.Ifindex != devIndex {
				t.Errorf("%s: %v has ifindex %v, rdma dev show says %d", s.name, e, e.Ifindex, devIndex)
			}
		}
		t.Logf("%s: %v", s.name, evs)
		seen += len(evs)
	}
	js.interrupt(t)
	txt.interrupt(t)

	// The text monitor saw the same events: type and what. Not always
	// from the same source: an event that both the kernel's notification
	// and the poller report is printed once, from whichever reached that
	// process first (seen on 6.12: the text monitor's poller noticed the
	// rename mon1 -> mon2 before its notification came, the JSON
	// monitor's notification came first).
	all := js.events(t)
	lines, _ := txt.snapshot()
	if len(lines) != len(all) {
		t.Fatalf("text monitor printed %d lines, JSON %d events:\n%s", len(lines), len(all), strings.Join(lines, "\n"))
	}
	for i, l := range lines {
		f := strings.Fields(l)
		e := all[i]
		what := e.Ifname
		if e.Port != 0 {
			what = fmt.Sprintf("%s/%d", e.Ifname, e.Port)
		}
		if len(f) < 4 || (f[1] != "kernel" && f[1] != "poll") || f[2] != e.Type || f[3] != what {
			t.Errorf("text line %q, JSON event %v", l, e)
		}
	}
}

// match finds want in evs in order (each event used once) with the
// source the kernel calls for, and returns the indexes it used: all of
// them, or fewer when something is missing.
func match(evs []monEvent, want []want, notifies bool) []int {
	var at []int
	i := 0
	for _, w := range want {
		src := "poll"
		if w.kernel && notifies {
			src = "kernel"
		}
		for ; i < len(evs); i++ {
			e := evs[i]
			if e.Type == w.typ && e.Ifname == w.ifname && e.Port == w.port && (e.Source == src || w.anySource) && e.New == w.new &&
				(w.old == "" || e.Old == w.old) && (w.netdevIndex == 0 || e.NetdevIndex != nil && *e.NetdevIndex == w.netdevIndex) {
				at = append(at, i)
				i++
				break
			}
		}
	}
	return at
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

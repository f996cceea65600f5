package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// monitorRun is a running 'rdmactl ARGS' that ends on stop: its exit
// code, stdout and stderr.
type monitorRun struct {
	out, errOut syncBuffer
	cancel      func()
	done        chan int
}

func startMonitor(args ...string) *monitorRun {
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitorRun{cancel: cancel, done: make(chan int, 1)}
	go func() { m.done <- run(ctx, args, &m.out, &m.errOut) }()
	return m
}

// waitLine waits until stdout has a line containing s.
func (m *monitorRun) waitLine(t *testing.T, s string) { t.Helper(); m.wait(t, &m.out, s) }

// ready waits for the line that says monitor watches.
func (m *monitorRun) ready(t *testing.T) {
	t.Helper()
	m.wait(t, &m.errOut, "rdmactl: monitoring RDMA devices: ")
}

func (m *monitorRun) wait(t *testing.T, b *syncBuffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q within 10 s; stdout:\n%s\nstderr:\n%s", s, m.out.String(), m.errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop is Ctrl-C: the exit code.
func (m *monitorRun) stop(t *testing.T) int {
	t.Helper()
	m.cancel()
	select {
	case code := <-m.done:
		return code
	case <-time.After(10 * time.Second):
		t.Fatal("monitor still running 10 s after Ctrl-C")
	}
	return -1
}

// TestMonitorCapturedTree: --poll on a captured tree that changes under
// it prints each change once, one JSON object per line, and Ctrl-C ends
// it with status 0 and nothing on stderr but the line saying it watches.
func TestMonitorCapturedTree(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "cap")
	if _, stderr, code := runCmd(t, "--sysfs-root", rxeTree, "capture", tree); code != 0 {
		t.Fatalf("capture: %s", stderr)
	}
	m := startMonitor("-j", "--sysfs-root", tree, "monitor", "--poll", "10ms")
	m.ready(t)
	port := filepath.Join(tree, "class", "infiniband", "rxe0", "ports", "1")
	// Files and directories change atomically, as sysfs's do: a new file
	// renamed into place, a device directory moved out.
	write := func(name, s string) {
		tmp := filepath.Join(filepath.Dir(tree), "new")
		if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(port, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("state", "1: DOWN\n")
	write("phys_state", "3: Disabled\n")
	m.waitLine(t, `"phys_state_changed"`)
	if err := os.Rename(filepath.Join(tree, "class", "infiniband", "rxe1"), filepath.Join(filepath.Dir(tree), "rxe1")); err != nil {
		t.Fatal(err)
	}
	m.waitLine(t, `"device_removed"`)
	if code := m.stop(t); code != 0 || m.errOut.String() != "rdmactl: monitoring RDMA devices: "+tree+" compared every 10ms; Ctrl-C to stop\n" {
		t.Fatalf("Ctrl-C: exit %d, stderr %q", code, m.errOut.String())
	}
	want := []string{
		`{"type":"port_state_changed","ifname":"rxe0","port":1,"old":"ACTIVE","new":"DOWN","source":"poll"}`,
		`{"type":"phys_state_changed","ifname":"rxe0","port":1,"old":"LINK_UP","new":"DISABLED","source":"poll"}`,
		`{"type":"device_removed","ifname":"rxe1","source":"poll"}`,
	}
	got := strings.Split(strings.TrimSuffix(m.out.String(), "\n"), "\n")
	// The state file and the phys_state file change in two writes: a poll
	// between them sees them apart, which changes nothing of the result.
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", m.out.String(), strings.Join(want, "\n"))
	}
	for _, l := range got {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Errorf("not one JSON object per line: %q", l)
		}
	}
}

// TestMonitorText: a line per event.
func TestMonitorText(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "cap")
	if _, stderr, code := runCmd(t, "--sysfs-root", rxeTree, "capture", tree); code != 0 {
		t.Fatalf("capture: %s", stderr)
	}
	m := startMonitor("--sysfs-root", tree, "monitor", "--poll", "10ms")
	m.ready(t)
	if err := os.Rename(filepath.Join(tree, "class", "infiniband", "rxe1"), filepath.Join(filepath.Dir(tree), "rxe1")); err != nil {
		t.Fatal(err)
	}
	m.waitLine(t, "device_removed")
	if code := m.stop(t); code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(m.out.String(), "\n"), "\n")
	if len(lines) != 1 || !strings.HasSuffix(lines[0], "  poll    device_removed      rxe1") {
		t.Errorf("output:\n%s", m.out.String())
	}
}

func TestMonitorBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"monitor", "--poll", "soon"}, cmdutil.ExitUsage, "--poll soon: want an interval"},
		{[]string{"monitor", "--poll", "1ns"}, cmdutil.ExitUsage, "--poll 1ns: want an interval"},
		{[]string{"monitor", "rxe0"}, cmdutil.ExitUsage, "unknown command"},
		{[]string{"--sysfs-root", rxeTree, "monitor"}, cmdutil.ExitUsage, "add --poll INTERVAL"},
		{[]string{"--sysfs-root", t.TempDir(), "monitor", "--poll", "1s"}, cmdutil.ExitUnsupported, "no RDMA"},
	} {
		out, stderr, code := runCmd(t, c.args...)
		if code != c.code || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d and one line with %q", c.args, code, out, stderr, c.code, c.msg)
		}
	}
}

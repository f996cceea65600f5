//go:build vmtest

package inventory

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
)

// Kernel tests of the inventory's models against rdma and the kernel's own
// answers, on the VM's rxe devices (rxeK on veth vrxeK).

func vmLive(t *testing.T) (*Source, *nldev.Client) {
	t.Helper()
	c, err := nldev.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return Live(c), c
}

func sh(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v %s", name, args, err, out)
	}
	return string(out)
}

func waitUntil(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// addRxe makes rxe9 on a new veth pair and removes both at cleanup (if the
// test did not already).
func addRxe(t *testing.T, name, veth string) {
	t.Helper()
	sh(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", veth+"p")
	t.Cleanup(func() { exec.Command("ip", "link", "del", veth).Run() })
	sh(t, "ip", "link", "set", veth, "up")
	sh(t, "ip", "link", "set", veth+"p", "up")
	sh(t, "rdma", "link", "add", name, "type", "rxe", "netdev", veth)
	t.Cleanup(func() { exec.Command("rdma", "link", "delete", name).Run() })
}

// TestVMSystemMatchesRdma: rdma system show prints text even with -j
// ("netns shared copy-on-fork on", privileged-qkey where the kernel and
// iproute2 both have it).
func TestVMSystemMatchesRdma(t *testing.T) {
	src, _ := vmLive(t)
	s, err := src.System()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(sh(t, "rdma", "system", "show"))
	ref := map[string]string{}
	for i := 0; i+1 < len(f); i += 2 {
		ref[f[i]] = f[i+1]
	}
	if ref["netns"] != s.NetnsMode {
		t.Errorf("netns: rdma %q, ours %q", ref["netns"], s.NetnsMode)
	}
	if s.CopyOnFork == nil || onOff(*s.CopyOnFork) != ref["copy-on-fork"] {
		t.Errorf("copy-on-fork: rdma %q, ours %v", ref["copy-on-fork"], s.CopyOnFork)
	}
	// Mainline has the attribute from 6.5; Debian's 6.1 sends it too (a
	// stable backport), so only "6.5 and later must" is checked.
	rel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	old := strings.HasPrefix(string(rel), "6.1.") || strings.HasPrefix(string(rel), "5.")
	if !old && s.PrivilegedQKey == nil {
		t.Errorf("kernel %s: no privileged-qkey", strings.TrimSpace(string(rel)))
	}
	if v, ok := ref["privileged-qkey"]; ok && (s.PrivilegedQKey == nil || onOff(*s.PrivilegedQKey) != v) {
		t.Errorf("privileged-qkey: rdma %q, ours %v", v, s.PrivilegedQKey)
	}
	pq := "absent"
	if s.PrivilegedQKey != nil {
		pq = onOff(*s.PrivilegedQKey)
	}
	t.Logf("kernel %s: netns %s, copy-on-fork %s, privileged-qkey %s (rdma system show: %v)", strings.TrimSpace(string(rel)),
		s.NetnsMode, onOff(*s.CopyOnFork), pq, ref)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// TestVMDiffEvents: a rename, a link down and an added and a removed
// device, seen by Diff as rdma sees them.
func TestVMDiffEvents(t *testing.T) {
	snapshot := func() *Snapshot {
		src, _ := vmLive(t)
		s, err := src.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := snapshot()
	var idx0 uint32
	for _, d := range before.Devices {
		if d.Name == "rxe0" {
			idx0 = *d.Index
		}
	}
	addRxe(t, "rxe9", "nl4va")
	sh(t, "rdma", "dev", "set", "rxe0", "name", "nl4foo")
	t.Cleanup(func() { exec.Command("rdma", "dev", "set", "nl4foo", "name", "rxe0").Run() })
	sh(t, "ip", "link", "set", "vrxe1", "down")
	t.Cleanup(func() { exec.Command("ip", "link", "set", "vrxe1", "up").Run() })
	if !waitUntil(10*time.Second, func() bool {
		b, _ := os.ReadFile("/sys/class/infiniband/rxe1/ports/1/state")
		return strings.Contains(string(b), "DOWN")
	}) {
		t.Fatal("rxe1/1 not DOWN after its netdev went down")
	}
	after := snapshot()
	has := func(evs []Event, e Event) bool {
		for _, x := range evs {
			if x.Type == e.Type && x.Ifname == e.Ifname && x.Old == e.Old && x.New == e.New && x.Port == e.Port {
				return true
			}
		}
		return false
	}
	evs := Diff(before, after)
	t.Logf("events: %s", js(evs))
	for _, e := range []Event{
		{Type: DeviceRenamed, Ifname: "nl4foo", Old: "rxe0", New: "nl4foo"},
		{Type: DeviceAdded, Ifname: "rxe9"},
		{Type: PortStateChanged, Ifname: "rxe1", Port: 1, Old: "ACTIVE", New: "DOWN"},
	} {
		if !has(evs, e) {
			t.Errorf("no %s event for %s", e.Type, e.Ifname)
		}
	}
	for _, e := range evs {
		if e.Type == DeviceRenamed && *e.Ifindex != idx0 {
			t.Errorf("rename of index %d, rxe0 was %d", *e.Ifindex, idx0)
		}
	}
	// rdma agrees on the new state.
	if out := sh(t, "rdma", "link", "show", "rxe1/1"); !strings.Contains(out, "state DOWN") {
		t.Errorf("rdma link show rxe1/1: %s", out)
	}
	// And back: removed, renamed back, up again.
	sh(t, "rdma", "link", "delete", "rxe9")
	sh(t, "rdma", "dev", "set", "nl4foo", "name", "rxe0")
	sh(t, "ip", "link", "set", "vrxe1", "up")
	waitUntil(10*time.Second, func() bool {
		b, _ := os.ReadFile("/sys/class/infiniband/rxe1/ports/1/state")
		return strings.Contains(string(b), "ACTIVE")
	})
	evs = Diff(after, snapshot())
	if !has(evs, Event{Type: DeviceRemoved, Ifname: "rxe9"}) || !has(evs, Event{Type: DeviceRenamed, Ifname: "rxe0", Old: "nl4foo", New: "rxe0"}) ||
		!has(evs, Event{Type: PortStateChanged, Ifname: "rxe1", Port: 1, Old: "DOWN", New: "ACTIVE"}) {
		t.Errorf("events back: %s", js(evs))
	}
	if evs := Diff(before, snapshot()); len(evs) != 0 {
		t.Errorf("not back where it started: %s", js(evs))
	}
}

// TestVMDeviceVanishes removes a device after the source's device dump:
// the kernel's answer to requests about its index, and what the inventory
// makes of it (left out of listings, not-found when named).
func TestVMDeviceVanishes(t *testing.T) {
	addRxe(t, "rxe9", "nl5va")
	src, c := vmLive(t)
	devs, err := src.Devices("", DeviceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var gone *uint32
	for _, d := range devs {
		if d.Name == "rxe9" {
			gone = d.Index
		}
	}
	if gone == nil {
		t.Fatalf("rxe9 not in %+v", devs)
	}
	sh(t, "rdma", "link", "delete", "rxe9")
	_, perr := c.PortsOf(*gone)
	_, qerr := c.QPsOf([]nldev.Device{{Index: *gone, Name: "rxe9"}})
	_, cerr := c.Chardev(*gone, "uverbs")
	t.Logf("kernel's answers for the removed index %d: PORT_GET %v; RES_QP_GET %v; GET_CHARDEV %v", *gone, perr, qerr, cerr)
	for _, err := range []error{perr, qerr, cerr} {
		if !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENODEV) {
			t.Errorf("removed device: %v, want EINVAL or ENODEV (what gone expects)", err)
		}
	}
	qps, err := src.QPs(ResFilter{})
	if err != nil {
		t.Fatalf("QPs with a device gone: %v", err)
	}
	for _, q := range qps {
		if q.DevName == "rxe9" {
			t.Errorf("QP of the removed device: %+v", q)
		}
	}
	if _, err := src.CQs(ResFilter{Dev: "rxe9"}); !IsNotFound(err) {
		t.Errorf("CQs of the removed device: %v", err)
	}
	refs, err := src.Targets("", 0)
	if err != nil {
		t.Fatalf("targets: %v", err)
	}
	for _, r := range refs {
		if r.Dev == "rxe9" {
			t.Errorf("target of the removed device %+v", r)
		}
	}
}

// TestVMRates: traffic between rxe1 and rxe0 shows as rates, no wraps or
// resets, and the deltas lie within what rdma statistic saw before and
// after.
func TestVMRates(t *testing.T) {
	take := func() *CounterSnapshot {
		src, _ := vmLive(t)
		refs, err := src.Targets("", 0)
		if err != nil {
			t.Fatal(err)
		}
		s, err := src.CounterSnapshot(refs, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := take()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", "100", "-p", "18795")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if !vmcheck.Until(30*time.Second, nil, func() bool { return vmcheck.TCPListening(18795) }) {
		t.Fatal("ibv_rc_pingpong server not listening on 18795 within 30 s")
	}
	// The client, which does not retry its connect, starts once the
	// server listens.
	if out, err := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe1", "-g", "1", "-n", "100", "-p", "18795", "127.0.0.1").CombinedOutput(); err != nil {
		t.Fatalf("client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("server: %v", err)
	}
	b := take()
	rep, err := Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Appeared)+len(rep.Vanished) != 0 {
		t.Errorf("appeared %v vanished %v", rep.Appeared, rep.Vanished)
	}
	moved := 0
	for _, r := range rep.Rates {
		if r.Wrapped || r.Reset || r.Saturated {
			t.Errorf("%+v", r)
		}
		if r.Source == SrcNetlink && r.Dev == "rxe1" && r.Name == "sent_pkts" && r.Delta < 100 {
			t.Errorf("rxe1 sent_pkts moved %d over 100 pingpong iterations", r.Delta)
		}
		if r.Moved() {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no counter moved")
	}
	t.Logf("%d of %d counters moved over %v", moved, len(rep.Rates), rep.Interval)
}

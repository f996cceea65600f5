//go:build vmtest

package nldev

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// VM tests: every Client call against rdma -j (and sysfs for GET_CHARDEV)
// on the guest's rxe devices.

func vmRdma(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, err := exec.Command("rdma", append([]string{"-j"}, args...)...).Output()
	if err != nil {
		t.Fatalf("rdma -j %v: %v", args, err)
	}
	var v []map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("rdma -j %v: %v: %q", args, err, out)
	}
	return v
}

func vmDial(t *testing.T) *Client {
	t.Helper()
	c, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func eq(t *testing.T, where string, rdma any, ours any) {
	t.Helper()
	if fmt.Sprint(rdma) != fmt.Sprint(ours) {
		t.Errorf("%s: rdma %v, nldev %v", where, rdma, ours)
	}
}

func TestVMDevicesPorts(t *testing.T) {
	c := vmDial(t)
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	ref := vmRdma(t, "-d", "dev", "show")
	if len(devs) != len(ref) || len(devs) < 2 {
		t.Fatalf("%d devices, rdma %d", len(devs), len(ref))
	}
	links := vmRdma(t, "link", "show")
	for i, r := range ref {
		d := devs[i] // both sorted by index
		w := d.Name
		eq(t, w+" ifindex", r["ifindex"], d.Index)
		eq(t, w+" ifname", r["ifname"], d.Name)
		eq(t, w+" node_type", r["node_type"], NodeTypeName(*d.NodeType))
		eq(t, w+" node_guid", r["node_guid"], vocab.GUID(*d.NodeGUID).String())
		eq(t, w+" sys_image_guid", r["sys_image_guid"], vocab.GUID(*d.SysImageGUID).String())
		eq(t, w+" adaptive-moderation", r["adaptive-moderation"], *d.DIM)
		var caps []any
		for _, n := range DeviceCapNames(*d.Caps) {
			caps = append(caps, n)
		}
		eq(t, w+" caps", r["caps"], caps)
		if d.Protocol != "roce" || *d.NumPorts != 1 {
			t.Errorf("%s: protocol %q ports %d, want roce, 1", w, d.Protocol, *d.NumPorts)
		}
		ps, err := c.PortsOf(d.Index)
		if err != nil || len(ps) != 1 {
			t.Fatalf("%s ports: %v %v", w, ps, err)
		}
		p := ps[0]
		var l map[string]any
		for _, x := range links {
			if x["ifname"] == d.Name {
				l = x
			}
		}
		eq(t, w+" state", l["state"], vocab.PortState(*p.State).String())
		eq(t, w+" physical_state", l["physical_state"], vocab.PhysState(*p.PhysState).String())
		eq(t, w+" netdev", l["netdev"], p.NetdevName)
		eq(t, w+" netdev_index", l["netdev_index"], *p.NetdevIndex)
		if p.LID != nil || p.Caps != nil {
			t.Errorf("%s: RoCE port with IB attributes: %+v", w, p)
		}
	}
	all, err := c.Ports()
	if err != nil || len(all) != len(links) {
		t.Errorf("Ports: %d ports (%v), rdma %d", len(all), err, len(links))
	}
	if _, err := c.Port("rxe0", 2); err == nil {
		t.Error("rxe0/2 found")
	}
	var ke *KernelError
	if _, err := c.PortsOf(4242); !errors.As(err, &ke) {
		t.Errorf("ports of device 4242: %v, want a KernelError", err)
	}
}

// TestVMBatches: the batched requests (one PORT_GET per port, GET_CHARDEV
// per device, up to batchMax per sendmsg) answer what the single ones do,
// across more than one batch, with a kernel error for a device that does
// not exist, and leave the socket in step for the next request.
func TestVMBatches(t *testing.T) {
	c := vmDial(t)
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	n := 4242
	ghost := devs[0]
	ghost.Index = uint32(n)
	var ask []Device
	for len(ask) < 2*batchMax+3 { // three sendmsgs
		ask = append(ask, devs...)
		ask = append(ask, ghost)
	}
	ports, errs := c.PortsOfEach(ask)
	var idxs []uint32
	for i, d := range ask {
		idxs = append(idxs, d.Index)
		var ke *KernelError
		if d.Index == uint32(n) {
			if !errors.As(errs[i], &ke) || ports[i] != nil {
				t.Errorf("ports of device %d: %v %v, want a KernelError", n, ports[i], errs[i])
			}
			continue
		}
		one, err := c.PortsOf(d.Index)
		if errs[i] != nil || err != nil || fmt.Sprintf("%+v", ptrs(ports[i])) != fmt.Sprintf("%+v", ptrs(one)) {
			t.Errorf("%s: batched %+v %v, dumped %+v %v", d.Name, ports[i], errs[i], one, err)
		}
	}
	chs, cerrs := c.ChardevEach(idxs, "uverbs")
	for i, idx := range idxs {
		if idx == uint32(n) {
			if cerrs[i] == nil {
				t.Errorf("chardev of device %d: %+v", n, chs[i])
			}
			continue
		}
		one, err := c.Chardev(idx, "uverbs")
		if cerrs[i] != nil || err != nil || chs[i].Name != one.Name || *chs[i].Dev != *one.Dev {
			t.Errorf("chardev of %d: batched %+v %v, single %+v %v", idx, chs[i], cerrs[i], one, err)
		}
	}
	if _, err := c.Devices(); err != nil {
		t.Errorf("a dump after the batches: %v", err)
	}
}

// ptrs shows what pointer fields point to, for comparing two decodings.
func ptrs(ps []Port) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d %s %d %d %d %s %d", p.DevIndex, p.DevName, p.Port, *p.State, *p.PhysState, p.NetdevName, *p.NetdevIndex))
	}
	return out
}

func TestVMResources(t *testing.T) {
	c := vmDial(t)
	sum, err := c.ResourceSummary()
	if err != nil {
		t.Fatal(err)
	}
	ref := vmRdma(t, "res", "show")
	if len(sum) != len(ref) {
		t.Fatalf("summary of %d devices, rdma %d", len(sum), len(ref))
	}
	for i, r := range ref {
		s := sum[i]
		for _, n := range s.Names {
			eq(t, s.DevName+" "+n, r[n], s.Counts[n])
		}
		eq(t, s.DevName+" ifindex", r["ifindex"], s.DevIndex)
	}
	// The kernel's own objects (GSI QP, ib_core's PD and CQ) always exist.
	qps, err := c.QPs()
	if err != nil {
		t.Fatal(err)
	}
	rq := vmRdma(t, "res", "show", "qp")
	if len(qps) != len(rq) {
		t.Fatalf("%d QPs, rdma %d", len(qps), len(rq))
	}
	for i, r := range rq {
		q := qps[i]
		w := fmt.Sprintf("%s qp %d", q.DevName, *q.LQPN)
		eq(t, w+" ifname", r["ifname"], q.DevName)
		eq(t, w+" lqpn", r["lqpn"], *q.LQPN)
		eq(t, w+" type", r["type"], QPTypeName(*q.Type))
		eq(t, w+" state", r["state"], QPStateName(*q.State))
		eq(t, w+" port", r["port"], *q.Port)
		eq(t, w+" comm", r["comm"], q.KernName)
	}
	for _, x := range []struct {
		obj string
		n   func() (int, error)
	}{
		{"cq", func() (int, error) { l, err := c.CQs(); return len(l), err }},
		{"pd", func() (int, error) { l, err := c.PDs(); return len(l), err }},
		{"mr", func() (int, error) { l, err := c.MRs(); return len(l), err }},
		{"cm_id", func() (int, error) { l, err := c.CMIDs(); return len(l), err }},
		{"ctx", func() (int, error) { l, err := c.Contexts(); return len(l), err }},
		{"srq", func() (int, error) { l, err := c.SRQs(); return len(l), err }},
	} {
		n, err := x.n()
		if err != nil {
			t.Errorf("%s: %v", x.obj, err)
			continue
		}
		if want := len(vmRdma(t, "res", "show", x.obj)); n != want {
			t.Errorf("%s: %d objects, rdma %d", x.obj, n, want)
		}
	}
	pds, _ := c.PDs()
	for _, p := range pds {
		if p.KernName != "ib_core" || p.LocalDMALKey == nil || p.Users == nil {
			t.Errorf("kernel PD %+v", p)
		}
	}
}

func TestVMStatisticsChardevSystem(t *testing.T) {
	c := vmDial(t)
	devs, err := c.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		ref := vmRdma(t, "statistic", "show", "link", d.Name+"/1")
		cs, err := c.PortStatistics(d.Index, 1)
		if err != nil || len(ref) != 1 {
			t.Fatalf("%s: %v (rdma %d objects)", d.Name, err, len(ref))
		}
		// rdma's object: ifname, port and one key per counter. Counters
		// only grow, and rdma read them first.
		if len(ref[0]) != len(cs)+2 {
			t.Errorf("%s: %d counters, rdma %d", d.Name, len(cs), len(ref[0])-2)
		}
		for _, x := range cs {
			rv, ok := ref[0][x.Name].(float64)
			if !ok || uint64(rv) > x.Value {
				t.Errorf("%s %s: rdma %v, nldev %d", d.Name, x.Name, ref[0][x.Name], x.Value)
			}
		}

		ch, err := c.Chardev(d.Index, "uverbs")
		if err != nil {
			t.Fatalf("%s chardev: %v", d.Name, err)
		}
		dir := filepath.Join("/sys/class/infiniband_verbs", ch.Name)
		read := func(f string) string { b, _ := os.ReadFile(filepath.Join(dir, f)); return strings.TrimSpace(string(b)) }
		eq(t, d.Name+" "+ch.Name+" ibdev", read("ibdev"), d.Name)
		eq(t, d.Name+" "+ch.Name+" dev", read("dev"), fmt.Sprintf("%d:%d", *ch.Major, *ch.Minor))
		eq(t, d.Name+" "+ch.Name+" abi_version", read("abi_version"), *ch.ABI)
		if ch.DriverID == nil || *ch.DriverID != 14 { // RDMA_DRIVER_RXE (ib_user_ioctl_verbs.h)
			t.Errorf("%s driver id %v, want 14 (rxe)", d.Name, ch.DriverID)
		}
		if _, err := c.Chardev(d.Index, "nosuch"); err == nil {
			t.Errorf("%s: chardev type nosuch found", d.Name)
		}
		if _, err := c.PortStatistics(d.Index, 9); err == nil {
			t.Errorf("%s: statistics of port 9", d.Name)
		}
	}
	s, err := c.System()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("rdma", "system", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := "netns exclusive"
	if *s.NetnsShared {
		want = "netns shared"
	}
	if s.CopyOnFork != nil {
		want += map[bool]string{true: " copy-on-fork on", false: " copy-on-fork off"}[*s.CopyOnFork]
	}
	if !strings.HasPrefix(strings.TrimSpace(string(out)), want) {
		t.Errorf("rdma system show %q, nldev %+v (%q)", out, s, want)
	}
}

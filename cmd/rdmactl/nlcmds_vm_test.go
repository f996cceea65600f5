//go:build vmtest

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// VM tests of dev show, link show and res against rdma -j and ibv_devinfo
// on the same devices, field by field, also after a rename and on a device
// added after boot. Helpers are prefixed nlvm so that they cannot clash
// with the other commands' VM tests in this package.

func nlvmSh(t *testing.T, name string, args ...string) string {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, e.String())
	}
	return o.String()
}

// nlvmRdma runs rdma -j ARGS and decodes its list of objects.
func nlvmRdma(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out := nlvmSh(t, "rdma", append([]string{"-j"}, args...)...)
	var v []map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("rdma -j %v: %v: %q", args, err, out)
	}
	return v
}

// nlvmOurs runs rdmactl -j ARGS in-process and decodes its list.
func nlvmOurs(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	stdout, stderr, code := runCmd(t, append([]string{"-j"}, args...)...)
	if code != 0 {
		t.Fatalf("rdmactl -j %v: exit %d: %s", args, code, stderr)
	}
	var v []map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("rdmactl -j %v: %v: %q", args, err, stdout)
	}
	return v
}

// nlvmKey identifies an object by the given keys ("rxe0/1", "rxe0/26").
func nlvmKey(o map[string]any, keys ...string) string {
	var s []string
	for _, k := range keys {
		s = append(s, fmt.Sprint(o[k]))
	}
	return strings.Join(s, "/")
}

// nlvmCompare checks that every key of every rdma object has the same
// value in our object with the same identity (rdma's hyphens are our
// underscores), and that both list the same objects.
func nlvmCompare(t *testing.T, what string, ref, ours []map[string]any, id ...string) {
	t.Helper()
	byID := map[string]map[string]any{}
	for _, o := range ours {
		byID[nlvmKey(o, id...)] = o
	}
	if len(ref) != len(ours) {
		t.Errorf("%s: rdma lists %d objects, rdmactl %d", what, len(ref), len(ours))
	}
	for _, r := range ref {
		k := nlvmKey(r, id...)
		o, ok := byID[k]
		if !ok {
			t.Errorf("%s: rdma has %s, rdmactl does not", what, k)
			continue
		}
		for rk, rv := range r {
			ok := strings.ReplaceAll(rk, "-", "_")
			ov, present := o[ok]
			if !present {
				t.Errorf("%s %s: rdma has %s=%v, rdmactl has no %s", what, k, rk, rv, ok)
				continue
			}
			if fmt.Sprint(ov) != fmt.Sprint(rv) {
				t.Errorf("%s %s: %s: rdma %v, rdmactl %v", what, k, rk, rv, ov)
			}
		}
	}
}

// nlvmIbv is ibv_devinfo (without -v) per device: device-level keys and
// port-level keys by port number.
type nlvmIbv struct {
	vals  map[string]string
	ports map[string]map[string]string
}

func nlvmIbvDevinfo(t *testing.T, args ...string) map[string]*nlvmIbv {
	t.Helper()
	out := nlvmSh(t, "ibv_devinfo", args...)
	devs := map[string]*nlvmIbv{}
	var d *nlvmIbv
	var port map[string]string
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case k == "hca_id":
			d = &nlvmIbv{vals: map[string]string{}, ports: map[string]map[string]string{}}
			devs[v] = d
			port = nil
		case d == nil:
		case k == "port":
			port = map[string]string{}
			d.ports[v] = port
		case port != nil:
			port[k] = v
		default:
			d.vals[k] = v
		}
	}
	if len(devs) == 0 {
		t.Fatalf("ibv_devinfo %v: no device in %q", args, out)
	}
	return devs
}

// firstWord is "1024" of "1024 (3)".
func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// nlvmCheckAll compares dev show, link show (plain and -d) with rdma -j
// and ibv_devinfo on every device present.
func nlvmCheckAll(t *testing.T) {
	t.Helper()
	devs := nlvmOurs(t, "-d", "dev", "show")
	nlvmCompare(t, "dev show -d", nlvmRdma(t, "-d", "dev", "show"), devs, "ifname")
	nlvmCompare(t, "dev show", nlvmRdma(t, "dev", "show"), nlvmOurs(t, "dev", "show"), "ifname")
	links := nlvmOurs(t, "link", "show")
	nlvmCompare(t, "link show", nlvmRdma(t, "link", "show"), links, "ifname", "port")
	dlinks := nlvmOurs(t, "-d", "link", "show")
	nlvmCompare(t, "link show -d", nlvmRdma(t, "-d", "link", "show"), dlinks, "ifname", "port")

	ibv := nlvmIbvDevinfo(t)
	if len(ibv) != len(devs) {
		t.Errorf("ibv_devinfo lists %d devices, rdmactl dev show %d", len(ibv), len(devs))
	}
	for _, d := range devs {
		name := d["ifname"].(string)
		iv, ok := ibv[name]
		if !ok {
			t.Errorf("dev show lists %s, ibv_devinfo does not", name)
			continue
		}
		for _, kv := range [][2]string{{"node_guid", "node_guid"}, {"sys_image_guid", "sys_image_guid"}, {"phys_port_cnt", "num_ports"}} {
			if got := fmt.Sprint(d[kv[1]]); got != iv.vals[kv[0]] {
				t.Errorf("%s: ibv_devinfo %s %q, rdmactl %s %q", name, kv[0], iv.vals[kv[0]], kv[1], got)
			}
		}
		// The uverbs node: the one whose sysfs ibdev names this device.
		ibdev, err := os.ReadFile(filepath.Join("/sys/class/infiniband_verbs", fmt.Sprint(d["uverbs"]), "ibdev"))
		if err != nil || strings.TrimSpace(string(ibdev)) != name {
			t.Errorf("%s: uverbs %v, but its ibdev is %q (%v)", name, d["uverbs"], ibdev, err)
		}
		dev, _ := os.ReadFile(filepath.Join("/sys/class/infiniband_verbs", fmt.Sprint(d["uverbs"]), "dev"))
		if want := fmt.Sprintf("%v:%v", d["uverbs_major"], d["uverbs_minor"]); strings.TrimSpace(string(dev)) != want {
			t.Errorf("%s: uverbs dev %q, rdmactl %s", name, dev, want)
		}
	}
	for i, l := range links {
		name, port := l["ifname"].(string), fmt.Sprint(l["port"])
		iv := ibv[name]
		if iv == nil || iv.ports[port] == nil {
			t.Errorf("link %s/%s: not in ibv_devinfo", name, port)
			continue
		}
		ip := iv.ports[port]
		if ip["link_layer"] != l["link_layer"] {
			t.Errorf("%s/%s: link_layer: ibv_devinfo %q, rdmactl %v", name, port, ip["link_layer"], l["link_layer"])
		}
		if want := "PORT_" + fmt.Sprint(l["state"]); firstWord(ip["state"]) != want {
			t.Errorf("%s/%s: state: ibv_devinfo %q, rdmactl %v", name, port, ip["state"], l["state"])
		}
		// active_mtu: derived from the netdev MTU without -d, asked from
		// the device with -d; both must agree with ibv_devinfo.
		for _, x := range []struct {
			what string
			o    map[string]any
		}{{"link show", l}, {"link show -d", dlinks[i]}} {
			if got := fmt.Sprint(x.o["active_mtu"]); got != firstWord(ip["active_mtu"]) {
				t.Errorf("%s %s/%s: active_mtu: ibv_devinfo %q, rdmactl %s", x.what, name, port, ip["active_mtu"], got)
			}
		}
		if got := fmt.Sprint(dlinks[i]["max_mtu"]); got != firstWord(ip["max_mtu"]) {
			t.Errorf("link show -d %s/%s: max_mtu: ibv_devinfo %q, rdmactl %s", name, port, ip["max_mtu"], got)
		}
		if ip["link_layer"] == "InfiniBand" {
			for _, kv := range [][2]string{{"port_lid", "lid"}, {"sm_lid", "sm_lid"}} {
				if got := fmt.Sprint(l[kv[1]]); got != ip[kv[0]] {
					t.Errorf("%s/%s: ibv_devinfo %s %q, rdmactl %s %s", name, port, kv[0], ip[kv[0]], kv[1], got)
				}
			}
		}
	}
}

func TestVMNLDevLinkMatchRdma(t *testing.T) {
	nlvmCheckAll(t)
	// One device and one port, by name.
	one := nlvmOurs(t, "link", "show", "rxe1/1")
	if len(one) != 1 || one[0]["ifname"] != "rxe1" {
		t.Errorf("link show rxe1/1: %v", one)
	}
	nlvmCompare(t, "dev show rxe1", nlvmRdma(t, "dev", "show", "rxe1"), nlvmOurs(t, "dev", "show", "rxe1"), "ifname")
	// Unknown names: one line listing what exists, exitNotFound.
	for _, args := range [][]string{{"link", "show", "nosuch0"}, {"link", "show", "rxe0/9"}, {"dev", "show", "nosuch0"}, {"res", "qp", "nosuch0"}} {
		_, stderr, code := runCmd(t, args...)
		if code != exitNotFound || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "rxe0") {
			t.Errorf("rdmactl %v: exit %d, stderr %q; want %d and one line listing rxe0", args, code, stderr, exitNotFound)
		}
	}
	// Table output works and names every port.
	stdout, _, code := runCmd(t, "link")
	if code != 0 || !strings.Contains(stdout, "rxe0/1") || !strings.Contains(stdout, "rxe1/1") {
		t.Errorf("rdmactl link: exit %d\n%s", code, stdout)
	}
}

// TestVMNLRenamedDevice renames rxe0 (rdma dev set rxe0 name ...), compares
// everything, checks that the old name is gone, and renames it back.
func TestVMNLRenamedDevice(t *testing.T) {
	const tmp = "nlren0"
	nlvmSh(t, "rdma", "dev", "set", "rxe0", "name", tmp)
	t.Cleanup(func() {
		if out, err := exec.Command("rdma", "dev", "set", tmp, "name", "rxe0").CombinedOutput(); err != nil {
			t.Errorf("renaming back: %v: %s", err, out)
		}
	})
	nlvmCheckAll(t)
	if got := nlvmOurs(t, "link", "show", tmp); len(got) != 1 || got[0]["ifname"] != tmp {
		t.Errorf("link show %s: %v", tmp, got)
	}
	_, stderr, code := runCmd(t, "dev", "show", "rxe0")
	if code != exitNotFound || !strings.Contains(stderr, tmp) {
		t.Errorf("dev show rxe0 after rename: exit %d, %q", code, stderr)
	}
}

// TestVMNLAddedDevice adds an rxe device on a new veth after boot,
// compares everything, and deletes both.
func TestVMNLAddedDevice(t *testing.T) {
	const veth, rxe = "nlveth0", "nlrxe0"
	nlvmSh(t, "ip", "link", "add", veth, "type", "veth", "peer", "name", veth+"p")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", veth).Run() })
	nlvmSh(t, "ip", "link", "set", veth, "up")
	nlvmSh(t, "ip", "link", "set", veth+"p", "up")
	nlvmSh(t, "rdma", "link", "add", rxe, "type", "rxe", "netdev", veth)
	t.Cleanup(func() {
		if out, err := exec.Command("rdma", "link", "delete", rxe).CombinedOutput(); err != nil {
			t.Errorf("rdma link delete %s: %v: %s", rxe, err, out)
		}
	})
	// The port of a new rxe device comes up asynchronously.
	for i := 0; i < 50; i++ {
		if strings.Contains(nlvmSh(t, "rdma", "link", "show", rxe+"/1"), "ACTIVE") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	nlvmCheckAll(t)
	got := nlvmOurs(t, "link", "show", rxe)
	if len(got) != 1 || got[0]["netdev"] != veth {
		t.Errorf("link show %s: %v", rxe, got)
	}
	nlvmCompare(t, "res", nlvmRdma(t, "res", "show"), nlvmOurs(t, "res"), "ifname")
}

// TestVMNLResQP compares res (summary) and res qp with rdma while a user QP
// exists (ibv_rc_pingpong waiting for its peer), the --qpn and --pid
// filters, and that nothing is left afterwards.
func TestVMNLResQP(t *testing.T) {
	before := nlvmSh(t, "rdma", "res", "show")
	pp := exec.Command("ibv_rc_pingpong", "-d", "rxe0", "-g", "1")
	if err := pp.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = pp.Process.Kill()
		_ = pp.Wait()
		// The kernel frees the QP when the process's file closes.
		for i := 0; i < 50; i++ {
			if nlvmSh(t, "rdma", "res", "show") == before {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("rdma res show after the test:\n%s\nbefore:\n%s", nlvmSh(t, "rdma", "res", "show"), before)
	}()
	pid := strconv.Itoa(pp.Process.Pid)
	var ref []map[string]any
	for i := 0; i < 100; i++ {
		ref = nlvmRdma(t, "res", "show", "qp")
		for _, q := range ref {
			if fmt.Sprint(q["pid"]) == pid {
				goto found
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("ibv_rc_pingpong (pid %s) has no QP in rdma res show qp", pid)
found:
	nlvmCompare(t, "res qp", ref, nlvmOurs(t, "res", "qp"), "ifname", "lqpn")
	nlvmCompare(t, "res", nlvmRdma(t, "res", "show"), nlvmOurs(t, "res"), "ifname")
	for _, obj := range []string{"cq", "pd", "mr", "ctx"} {
		// rdma prints some keys as hex strings (lkey, rkey, iova,
		// local_dma_lkey); compare the objects and the keys we share.
		ref, ours := nlvmRdma(t, "res", "show", obj), nlvmOurs(t, "res", obj)
		if len(ref) != len(ours) {
			t.Errorf("res %s: rdma %d objects, rdmactl %d", obj, len(ref), len(ours))
		}
	}
	mine := nlvmOurs(t, "res", "qp", "--pid", pid)
	if len(mine) != 1 || mine[0]["comm"] != "ibv_rc_pingpong" || mine[0]["ifname"] != "rxe0" {
		t.Fatalf("res qp --pid %s: %v", pid, mine)
	}
	qpn := fmt.Sprint(mine[0]["lqpn"])
	if byQPN := nlvmOurs(t, "res", "qp", "rxe0", "--qpn", qpn); len(byQPN) != 1 || fmt.Sprint(byQPN[0]["pid"]) != pid {
		t.Errorf("res qp rxe0 --qpn %s: %v", qpn, byQPN)
	}
}

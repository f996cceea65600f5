//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// jsonList runs rdmactl in-process and decodes its JSON list.
func ourList(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	out, stderr, code := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("rdmactl %v: exit %d: %s", args, code, stderr)
	}
	var l []map[string]any
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("rdmactl %v: %v\n%s", args, err, out)
	}
	return l
}

// rdmaList runs rdma -j ... and decodes its JSON list.
func rdmaList(t *testing.T, args ...string) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal([]byte(vmRun(t, "rdma", append([]string{"-j"}, args...)...)), &l); err != nil {
		t.Fatalf("rdma -j %v: %v", args, err)
	}
	return l
}

// sameKeys checks that every key of rdma's object (hyphens as
// underscores) is in ours with the same value. keyConv converts values
// where we differ on purpose (hex strings -> numbers).
func sameKeys(t *testing.T, where string, rdma, ours map[string]any) {
	t.Helper()
	for k, v := range rdma {
		ok := strings.ReplaceAll(k, "-", "_")
		got, has := ours[ok]
		if !has {
			t.Errorf("%s: rdma has %s=%v, we have no %s", where, k, v, ok)
			continue
		}
		if s, isStr := v.(string); isStr && (ok == "local_dma_lkey" || ok == "unsafe_global_rkey" || ok == "rkey" || ok == "lkey" || ok == "iova") {
			n, err := strconv.ParseUint(s, 16, 64)
			if err != nil || got != float64(n) {
				t.Errorf("%s: %s: rdma %q (hex), we %v", where, ok, s, got)
			}
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("%s: %s: rdma %v, we %v", where, ok, v, got)
		}
	}
}

func byKey(l []map[string]any, keys ...string) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, o := range l {
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprint(o[k]))
		}
		m[strings.Join(parts, "/")] = o
	}
	return m
}

func TestVMLinkShowMatchesRdmaAndIbvDevinfo(t *testing.T) {
	rdma := byKey(rdmaList(t, "link", "show", "-d"), "ifname", "port")
	ours := byKey(ourList(t, "-j", "link", "show"), "ifname", "port")
	oursD := byKey(ourList(t, "-j", "-d", "link", "show"), "ifname", "port")
	oursDD := byKey(ourList(t, "-j", "-dd", "link", "show"), "ifname", "port")
	if len(rdma) < 2 || len(rdma) != len(ours) || len(oursD) != len(ours) || len(oursDD) != len(ours) {
		t.Fatalf("ports: rdma %d, ours %d, ours -d %d, -dd %d (want the same, at least rxe0/1 and rxe1/1)", len(rdma), len(ours), len(oursD), len(oursDD))
	}
	devs := parseIbvDevinfo(t, vmRun(t, "ibv_devinfo", "-v")) // -v: active_width and active_speed
	for key, r := range rdma {
		o, ok := ours[key]
		if !ok {
			t.Errorf("%s: in rdma link show, not in ours", key)
			continue
		}
		sameKeys(t, "link "+key, r, oursD[key])
		sameKeys(t, "link -dd "+key, r, oursDD[key])
		// -d asks no device (as rdma -d): no max_mtu, the active MTU as
		// without -d.
		if v, ok := oursD[key]["max_mtu"]; ok {
			t.Errorf("%s: -d link show has max_mtu %v: only -dd asks the device", key, v)
		}
		if fmt.Sprint(oursD[key]["active_mtu"]) != fmt.Sprint(o["active_mtu"]) {
			t.Errorf("%s: -d active_mtu %v, without -d %v", key, oursD[key]["active_mtu"], o["active_mtu"])
		}
		for k := range r {
			if k != "caps" { // caps only with -d, as rdma
				sameKeys(t, "link "+key, map[string]any{k: r[k]}, o)
			}
		}
		// ibv_devinfo's port block: state, MTUs, link layer, LIDs.
		for _, d := range devs {
			if d.name != r["ifname"] {
				continue
			}
			for _, p := range d.ports {
				if p.vals["port"] != fmt.Sprint(r["port"]) {
					continue
				}
				ibvNum := func(k string) string { return strings.Fields(p.vals[k])[0] }
				checks := map[string]string{"link_layer": p.vals["link_layer"], "active_mtu": ibvNum("active_mtu")}
				for k, want := range checks {
					if fmt.Sprint(o[k]) != want {
						t.Errorf("%s: %s: ibv_devinfo %s, we %v", key, k, want, o[k])
					}
				}
				for k, want := range map[string]string{"active_mtu": ibvNum("active_mtu"), "max_mtu": ibvNum("max_mtu")} {
					if fmt.Sprint(oursDD[key][k]) != want {
						t.Errorf("%s: -dd %s: ibv_devinfo %s, we %v", key, k, want, oursDD[key][k])
					}
				}
				// The rate: without -dd from ports/N/rate, with -dd derived
				// from the QUERY_PORT answer; both as ibv_devinfo's active
				// width and per-lane speed make it, and as the kernel's
				// rate file names width and speed.
				rateFile := strings.TrimSpace(vmRun(t, "cat", fmt.Sprintf("/sys/class/infiniband/%v/ports/%v/rate", r["ifname"], r["port"])))
				width := strings.Fields(p.vals["active_width"])[0]
				lanes, _ := strconv.Atoi(strings.TrimSuffix(width, "X"))
				lane, _ := strconv.ParseFloat(strings.Fields(p.vals["active_speed"])[0], 64)
				for name, l := range map[string]map[string]any{"link show": o, "-d link show": oursD[key], "-dd link show": oursDD[key]} {
					g, _ := l["rate_gbps"].(float64)
					if l["width"] != width || g != lane*float64(lanes) {
						t.Errorf("%s: %s: rate %v Gb/s width %v; ibv_devinfo active_width %q active_speed %q", key, name, l["rate_gbps"], l["width"], p.vals["active_width"], p.vals["active_speed"])
					}
					if want := "(" + strings.TrimSpace(fmt.Sprintf("%v %v", l["width"], l["speed"])) + ")"; !strings.HasSuffix(rateFile, want) {
						t.Errorf("%s: %s: width and speed %s, the kernel's rate file %q", key, name, want, rateFile)
					}
				}
				if st := p.vals["state"]; !strings.Contains(st, "PORT_"+fmt.Sprint(o["state"])) {
					t.Errorf("%s: state: ibv_devinfo %q, we %v", key, st, o["state"])
				}
				if p.vals["link_layer"] == "InfiniBand" {
					for ibk, ok := range map[string]string{"port_lid": "lid", "sm_lid": "sm_lid"} {
						if fmt.Sprint(o[ok]) != p.vals[ibk] {
							t.Errorf("%s: %s: ibv_devinfo %s, we %v", key, ok, p.vals[ibk], o[ok])
						}
					}
				}
			}
		}
	}
	t.Logf("%d ports compared with rdma -j link show -d, ibv_devinfo -v and the rate files", len(rdma))
	// One port, and the bare "link".
	one := ourList(t, "-j", "link", "rxe1/1")
	if len(one) != 1 || one[0]["ifname"] != "rxe1" {
		t.Errorf("link rxe1/1: %v", one)
	}
	for _, args := range [][]string{{"link", "show", "rxe7"}, {"link", "show", "rxe0/9"}, {"dev", "show", "nosuch"}, {"res", "qp", "nosuch"}} {
		_, stderr, code := runCmd(t, args...)
		if code != cmdutil.ExitNotFound || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "rxe0") {
			t.Errorf("%v: exit %d, %q; want %d and a line naming what exists", args, code, stderr, cmdutil.ExitNotFound)
		}
	}
}

func TestVMDevShowMatchesRdmaAndIbvDevinfo(t *testing.T) {
	rdma := byKey(rdmaList(t, "dev", "show", "-d"), "ifname")
	ours := byKey(ourList(t, "-j", "-d", "dev", "show"), "ifname")
	if len(rdma) < 2 || len(rdma) != len(ours) {
		t.Fatalf("devices: rdma %d, ours %d", len(rdma), len(ours))
	}
	for name, r := range rdma {
		o := ours[name]
		if o == nil {
			t.Errorf("%s: missing", name)
			continue
		}
		sameKeys(t, "dev "+name, r, o)
		// The uverbs node: GET_CHARDEV must agree with sysfs ibdev.
		ib, err := os.ReadFile("/sys/class/infiniband_verbs/" + fmt.Sprint(o["uverbs"]) + "/ibdev")
		if err != nil || strings.TrimSpace(string(ib)) != name {
			t.Errorf("%s: uverbs %v, but its ibdev is %q (%v)", name, o["uverbs"], ib, err)
		}
		if o["driver"] != "rdma_rxe" || o["driver_id"] == nil || o["netns_mode"] != "shared" {
			t.Errorf("%s: driver %v driver_id %v netns_mode %v", name, o["driver"], o["driver_id"], o["netns_mode"])
		}
	}
	for _, d := range parseIbvDevinfo(t, vmRun(t, "ibv_devinfo")) {
		o := ours[d.name]
		if o == nil {
			t.Errorf("ibv_devinfo has %s, we do not", d.name)
			continue
		}
		for _, k := range []string{"node_guid", "sys_image_guid"} {
			if o[k] != d.vals[k] {
				t.Errorf("%s: %s: ibv_devinfo %s, we %v", d.name, k, d.vals[k], o[k])
			}
		}
		if fmt.Sprint(o["num_ports"]) != d.vals["phys_port_cnt"] {
			t.Errorf("%s: num_ports %v, ibv_devinfo phys_port_cnt %s", d.name, o["num_ports"], d.vals["phys_port_cnt"])
		}
	}
	// ibv_devices: name and GUID without colons.
	for _, line := range strings.Split(vmRun(t, "ibv_devices"), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[0] == "device" || strings.HasPrefix(f[0], "-") {
			continue
		}
		if o := ours[f[0]]; o == nil || strings.ReplaceAll(fmt.Sprint(o["node_guid"]), ":", "") != f[1] {
			t.Errorf("ibv_devices %s %s, we %v", f[0], f[1], o)
		}
	}
}

// waitFor polls cond every 200 ms for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

func TestVMResMatchesRdma(t *testing.T) {
	before := resShow(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-p", "18791")
	if err := srv.Start(); err != nil {
		t.Fatalf("ibv_rc_pingpong: %v", err)
	}
	pid := srv.Process.Pid
	defer func() {
		cancel()
		_ = srv.Wait()
		if !waitFor(10*time.Second, func() bool { return resShow(t) == before }) {
			t.Errorf("rdma res show changed:\nbefore\n%s\nafter\n%s", before, resShow(t))
		}
	}()
	hasUserQP := func() bool {
		for _, q := range rdmaList(t, "res", "show", "qp") {
			if fmt.Sprint(q["pid"]) == strconv.Itoa(pid) {
				return true
			}
		}
		return false
	}
	if !waitFor(20*time.Second, hasUserQP) {
		t.Fatalf("ibv_rc_pingpong (pid %d) created no QP visible to rdma res show qp", pid)
	}
	for _, obj := range []struct {
		name string
		keys []string
	}{{"qp", []string{"ifname", "lqpn"}}, {"cq", []string{"ifname", "cqn"}}, {"pd", []string{"ifname", "pdn"}}, {"mr", []string{"ifname", "mrn"}}, {"ctx", []string{"ifname", "ctxn"}}, {"cm_id", []string{"ifname", "cm-idn"}}, {"srq", []string{"ifname", "srqn"}}} {
		rdmaL := rdmaList(t, "res", "show", obj.name)
		ourKeys := make([]string, len(obj.keys))
		for i, k := range obj.keys {
			ourKeys[i] = strings.ReplaceAll(k, "-", "_")
		}
		rdma := byKey(rdmaL, obj.keys...)
		ours := byKey(ourList(t, "-j", "res", obj.name), ourKeys...)
		if len(rdma) != len(ours) {
			t.Errorf("res %s: rdma %d objects, ours %d", obj.name, len(rdma), len(ours))
		}
		t.Logf("res %s: %d objects compared with rdma -j res show %s", obj.name, len(rdma), obj.name)
		for k, r := range rdma {
			o := ours[k]
			if o == nil {
				t.Errorf("res %s %s: in rdma, not in ours", obj.name, k)
				continue
			}
			// PSNs of a live QP can move between the two reads (not here:
			// the pingpong server waits for its peer).
			sameKeys(t, "res "+obj.name+" "+k, r, o)
		}
	}
	// Filters.
	mine := ourList(t, "-j", "res", "qp", "--pid", strconv.Itoa(pid))
	if len(mine) != 1 || fmt.Sprint(mine[0]["pid"]) != strconv.Itoa(pid) || mine[0]["comm"] != "ibv_rc_pingpon" && mine[0]["comm"] != "ibv_rc_pingpong" {
		t.Errorf("res qp --pid %d: %v", pid, mine)
	} else {
		q := fmt.Sprint(mine[0]["lqpn"])
		byQPN := ourList(t, "-j", "res", "qp", "rxe0", "--qpn", q)
		if len(byQPN) != 1 || fmt.Sprint(byQPN[0]["lqpn"]) != q {
			t.Errorf("res qp rxe0 --qpn %s: %v", q, byQPN)
		}
	}
	sum := byKey(ourList(t, "-j", "res"), "ifname")
	for _, r := range rdmaList(t, "res", "show") {
		sameKeys(t, "res summary "+fmt.Sprint(r["ifname"]), r, sum[fmt.Sprint(r["ifname"])])
	}
}

func TestVMRenamedDevice(t *testing.T) {
	vmRun(t, "rdma", "dev", "set", "rxe0", "name", "nl2foo")
	defer func() {
		if out, err := exec.Command("rdma", "dev", "set", "nl2foo", "name", "rxe0").CombinedOutput(); err != nil {
			t.Errorf("rename back: %v %s", err, out)
		}
	}()
	d := ourList(t, "-j", "dev", "show", "nl2foo")
	r := rdmaList(t, "dev", "show", "nl2foo")
	if len(d) != 1 || len(r) != 1 {
		t.Fatalf("dev show nl2foo: ours %v rdma %v", d, r)
	}
	sameKeys(t, "renamed dev", r[0], d[0])
	if d[0]["uverbs"] == nil {
		t.Errorf("renamed device has no uverbs: %v", d[0])
	}
	l := ourList(t, "-j", "link", "show", "nl2foo/1")
	rl := rdmaList(t, "link", "show", "nl2foo/1")
	if len(l) != 1 || len(rl) != 1 {
		t.Fatalf("link nl2foo/1: ours %v rdma %v", l, rl)
	}
	sameKeys(t, "renamed link", rl[0], l[0])
	if l[0]["link_layer"] != "Ethernet" || l[0]["active_mtu"] == nil {
		t.Errorf("renamed link: sysfs facts missing: %v", l[0])
	}
	if _, stderr, code := runCmd(t, "link", "show", "rxe0"); code != cmdutil.ExitNotFound || !strings.Contains(stderr, "nl2foo") {
		t.Errorf("old name: exit %d %q", code, stderr)
	}
}

func TestVMAddedDevice(t *testing.T) {
	vmRun(t, "ip", "link", "add", "nl2va", "type", "veth", "peer", "name", "nl2vb")
	defer exec.Command("ip", "link", "del", "nl2va").Run()
	vmRun(t, "ip", "link", "set", "nl2va", "up")
	vmRun(t, "ip", "link", "set", "nl2vb", "up")
	vmRun(t, "rdma", "link", "add", "rxe9", "type", "rxe", "netdev", "nl2va")
	defer func() {
		if out, err := exec.Command("rdma", "link", "delete", "rxe9").CombinedOutput(); err != nil {
			t.Errorf("rdma link delete rxe9: %v %s", err, out)
		}
	}()
	// The port comes up asynchronously.
	waitFor(10*time.Second, func() bool {
		l := rdmaList(t, "link", "show", "rxe9/1")
		return len(l) == 1 && l[0]["state"] == "ACTIVE"
	})
	l := ourList(t, "-j", "link", "show", "rxe9/1")
	rl := rdmaList(t, "link", "show", "-d", "rxe9/1")
	if len(l) != 1 || len(rl) != 1 {
		t.Fatalf("link rxe9/1: ours %v rdma %v", l, rl)
	}
	sameKeys(t, "added link", rl[0], l[0])
	d := ourList(t, "-j", "-d", "dev", "show", "rxe9")
	rd := rdmaList(t, "dev", "show", "-d", "rxe9")
	if len(d) != 1 || len(rd) != 1 {
		t.Fatalf("dev rxe9: ours %v rdma %v", d, rd)
	}
	sameKeys(t, "added dev", rd[0], d[0])
	if len(ourList(t, "-j", "link")) != len(rdmaList(t, "link", "show")) {
		t.Error("link show: not every port listed after adding rxe9")
	}
}

// TestVMManyDevices: with 12 devices the per-device requests run on
// forked sockets (inventory's nlFanout: one worker per 4 devices); link
// show, dev show (with -d) and counters still agree with rdma on every
// device and port.
func TestVMManyDevices(t *testing.T) {
	const extra = 10
	for i := 0; i < extra; i++ {
		a, b, dev := fmt.Sprintf("mdva%d", i), fmt.Sprintf("mdvb%d", i), fmt.Sprintf("rxe%d", 40+i)
		vmRun(t, "ip", "link", "add", a, "type", "veth", "peer", "name", b)
		defer exec.Command("ip", "link", "del", a).Run()
		vmRun(t, "ip", "link", "set", a, "up")
		vmRun(t, "ip", "link", "set", b, "up")
		vmRun(t, "rdma", "link", "add", dev, "type", "rxe", "netdev", a)
		defer func() {
			if out, err := exec.Command("rdma", "link", "delete", dev).CombinedOutput(); err != nil {
				t.Errorf("rdma link delete %s: %v %s", dev, err, out)
			}
		}()
	}
	waitFor(20*time.Second, func() bool {
		for _, p := range rdmaList(t, "link", "show") {
			if p["state"] != "ACTIVE" {
				return false
			}
		}
		return true
	})
	for _, c := range []struct {
		ours, rdma []string
		key        []string
	}{
		{[]string{"-j", "link", "show"}, []string{"link", "show"}, []string{"ifname", "port"}},
		{[]string{"-j", "-d", "link", "show"}, []string{"-d", "link", "show"}, []string{"ifname", "port"}},
		{[]string{"-j", "-d", "dev", "show"}, []string{"-d", "dev", "show"}, []string{"ifname"}},
	} {
		ours, theirs := byKey(ourList(t, c.ours...), c.key...), byKey(rdmaList(t, c.rdma...), c.key...)
		if len(theirs) < extra+2 || len(ours) != len(theirs) {
			t.Errorf("%v: we list %d, rdma %d", c.ours, len(ours), len(theirs))
		}
		for k, o := range theirs {
			if _, ok := ours[k]; !ok {
				t.Errorf("%v: rdma lists %s, we do not", c.ours, k)
				continue
			}
			sameKeys(t, strings.Join(c.ours, " ")+" "+k, o, ours[k])
		}
	}
	// Every port's NLDEV statistics: the counter names rdma statistic
	// show lists for it (values move between the two reads).
	names := map[string]map[string]bool{}
	for _, c := range ourList(t, "-j", "counters") {
		if c["source"] == "netlink" {
			k := fmt.Sprintf("%v/%v", c["ifname"], c["port"])
			if names[k] == nil {
				names[k] = map[string]bool{}
			}
			names[k][fmt.Sprint(c["name"])] = true
		}
	}
	theirs := rdmaList(t, "statistic", "show")
	if len(names) != len(theirs) || len(theirs) < extra+2 {
		t.Errorf("counters: %d ports with netlink statistics, rdma statistic show %d", len(names), len(theirs))
	}
	for _, o := range theirs {
		k := fmt.Sprintf("%v/%v", o["ifname"], o["port"])
		for name := range o {
			if name != "ifname" && name != "ifindex" && name != "port" && !names[k][name] {
				t.Errorf("counters %s: rdma statistic show has %s, we do not", k, name)
			}
		}
	}
}

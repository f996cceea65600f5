//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestVMRdmaGrammar runs the "works unchanged" read lines of the README's
// rdma table through rdma -j and rdmactl -j (the same words) and compares
// the facts: which objects are listed (device names, ports, object
// numbers) and their fields (indexes, states, netdevs, counts, counter
// values). The writes' lines are checked in writes_vm_test.go.
func TestVMRdmaGrammar(t *testing.T) {
	type cmp struct {
		line   string
		keys   []string // rdma's keys that name an object
		fields []string // rdma's keys whose values must agree
		min    int      // objects both must list (so that a filter can fail)
	}
	// A user QP in INIT, with its context, PD, MR and CQ, while we compare.
	// (rxe binds no QP counter, even in auto mode: "stat qp show" lists
	// none in both tools; the mode lines compare each port's mode.)
	pid := startPingpongServer(t, "18793")
	devF := []string{"ifindex", "node_type", "node_guid", "sys_image_guid"}
	linkF := []string{"ifindex", "state", "physical_state", "netdev", "netdev_index"}
	sumF := []string{"ifindex", "pd", "cq", "qp", "cm_id", "mr", "ctx", "srq"}
	qpF := []string{"ifindex", "port", "type", "state", "sq-psn", "rqpn", "pdn", "pid"}
	lines := []cmp{
		{"dev", []string{"ifname"}, devF, 2},
		{"d", []string{"ifname"}, devF, 0},
		{"dev show", []string{"ifname"}, devF, 0},
		{"dev list", []string{"ifname"}, devF, 0},
		{"dev show rxe1", []string{"ifname"}, devF, 0},
		{"link", []string{"ifname", "port"}, linkF, 2},
		{"link show", []string{"ifname", "port"}, linkF, 0},
		{"link list", []string{"ifname", "port"}, linkF, 0},
		{"l s rxe0/1", []string{"ifname", "port"}, linkF, 0},
		{"res", []string{"ifname"}, sumF, 2},
		{"r", []string{"ifname"}, sumF, 0},
		{"resource show", []string{"ifname"}, sumF, 0},
		{"res list", []string{"ifname"}, sumF, 0},
		{"res show rxe0", []string{"ifname"}, sumF, 0},
		{"res show qp", []string{"ifname", "lqpn"}, qpF, 3},
		{"r s q", []string{"ifname", "lqpn"}, qpF, 0},
		{"res show qp link rxe0/1", []string{"ifname", "lqpn"}, qpF, 2},
		{"res show qp link rxe1", []string{"ifname", "lqpn"}, qpF, 0},
		{"res show qp lqpn 0-5", []string{"ifname", "lqpn"}, qpF, 0},
		{"res show qp lqpn 2-100000", []string{"ifname", "lqpn"}, qpF, 1},
		{"res show qp lqpn 0-5,7", []string{"ifname", "lqpn"}, qpF, 2},
		{"res show qp pid " + pid, []string{"ifname", "lqpn"}, qpF, 1},
		{"res show qp link rxe0/1 state init pdn 0-1000", []string{"ifname", "lqpn"}, qpF, 1},
		{"res show qp type gsi state rts", []string{"ifname", "lqpn"}, qpF, 0},
		{"res show qp state init", []string{"ifname", "lqpn"}, qpF, 1},
		{"res show qp type rc", []string{"ifname", "lqpn"}, qpF, 1},
		{"res show cm_id", []string{"ifname", "cm-idn"}, []string{"ifindex"}, 0},
		{"res show cq", []string{"ifname", "cqn"}, []string{"ifindex", "cqe", "users", "poll-ctx"}, 3},
		{"res show cq dev rxe1", []string{"ifname", "cqn"}, []string{"ifindex", "cqe", "users", "poll-ctx"}, 0},
		{"res show cq cqn 0-100", []string{"ifname", "cqn"}, []string{"ifindex", "cqe"}, 0},
		{"res show mr", []string{"ifname", "mrn"}, []string{"ifindex", "mrlen", "pdn", "pid"}, 1},
		{"res show mr dev rxe0 mrn 0-100000", []string{"ifname", "mrn"}, []string{"ifindex", "mrlen"}, 1},
		{"res show pd", []string{"ifname", "pdn"}, []string{"ifindex", "users"}, 0},
		{"res show pd dev rxe0 pdn 0-100", []string{"ifname", "pdn"}, []string{"ifindex", "users"}, 0},
		{"res show ctx", []string{"ifname", "ctxn"}, []string{"ifindex", "pid"}, 1},
		{"res show ctx pid " + pid, []string{"ifname", "ctxn"}, []string{"ifindex", "pid"}, 1},
		{"res show srq", []string{"ifname", "srqn"}, []string{"ifindex"}, 0},
		{"stat qp", []string{"ifname", "port", "cntn"}, []string{"ifindex", "qp-type"}, 0},
		{"statistic qp show", []string{"ifname", "port", "cntn"}, nil, 0},
		{"stat qp list link rxe0/1", []string{"ifname", "port", "cntn"}, []string{"ifindex", "qp-type"}, 0},
		{"stat qp mode", []string{"ifname", "port"}, []string{"ifindex", "mode"}, 2},
		{"stat qp mode link rxe0/1", []string{"ifname", "port"}, []string{"ifindex"}, 0},
		{"stat mode", []string{"ifname", "port"}, nil, 0},
		{"stat mode supported", []string{"ifname", "port"}, nil, 0},
		{"stat mr", []string{"ifname", "mrn"}, nil, 0},
		{"stat show mr", []string{"ifname", "mrn"}, nil, 0},
	}
	for _, c := range lines {
		words := strings.Fields(c.line)
		theirs := rdmaJSONList(t, words)
		ours := ourList(t, append([]string{"-j"}, words...)...)
		if compareFacts(t, c.line, c.keys, c.fields, theirs, ours) < c.min {
			t.Errorf("%s: both list %d objects, want at least %d", c.line, len(ours), c.min)
		}
	}

	// The counters of "rdma statistic show": ours as rows (name, value),
	// rdma's as keys of each port. Counters may move between reads, so each
	// of ours lies between an rdma read before and one after.
	for _, line := range []string{"statistic", "stat", "stat show", "statistic list", "stat show link rxe0/1", "stat s l rxe1"} {
		words := strings.Fields(line)
		before := statByPort(rdmaJSONList(t, words))
		ours := ourList(t, append([]string{"-j"}, words...)...)
		after := statByPort(rdmaJSONList(t, words))
		got := map[string]map[string]uint64{}
		for _, r := range ours {
			if r["source"] != "netlink" {
				t.Errorf("rdmactl %s: a row from %v, want netlink only", line, r["source"])
			}
			k := fmt.Sprintf("%v/%v", r["ifname"], r["port"])
			if got[k] == nil {
				got[k] = map[string]uint64{}
			}
			got[k][fmt.Sprint(r["name"])] = uint64(r["value"].(float64))
		}
		if fmt.Sprint(sortedKeys(got)) != fmt.Sprint(sortedKeys(before)) {
			t.Errorf("%s: ports rdma %v, rdmactl %v", line, sortedKeys(before), sortedKeys(got))
		}
		for port, cs := range before {
			if fmt.Sprint(sortedKeys(cs)) != fmt.Sprint(sortedKeys(got[port])) {
				t.Errorf("%s %s: counters rdma %v, rdmactl %v", line, port, sortedKeys(cs), sortedKeys(got[port]))
			}
			for name, lo := range cs {
				if v := got[port][name]; v < lo || v > after[port][name] {
					t.Errorf("%s %s %s: rdmactl %d, rdma %d before and %d after", line, port, name, v, lo, after[port][name])
				}
			}
		}
		t.Logf("%s: %d ports compared", line, len(before))
	}

	// rdma system show prints text even with -j (iproute2 6.1): "netns
	// shared copy-on-fork on [privileged-qkey off]".
	for _, line := range []string{"system", "sys", "s", "system show", "sys show netns", "sys s"} {
		words := strings.Fields(line)
		f := strings.Fields(vmRun(t, "rdma", words...))
		theirs := map[string]string{}
		for i := 0; i+1 < len(f); i += 2 {
			theirs[f[i]] = f[i+1]
		}
		out, stderr, code := runCmd(t, append([]string{"-j"}, words...)...)
		if code != 0 {
			t.Fatalf("rdmactl -j %s: exit %d: %s", line, code, stderr)
		}
		var ours map[string]any
		if err := json.Unmarshal([]byte(out), &ours); err != nil {
			t.Fatalf("rdmactl -j %s: %v: %s", line, err, out)
		}
		onOff := map[bool]string{true: "on", false: "off"}
		if theirs["netns"] == "" || theirs["netns"] != ours["netns"] {
			t.Errorf("%s: netns rdma %q, rdmactl %v", line, theirs["netns"], ours["netns"])
		}
		if v, ok := theirs["copy-on-fork"]; ok {
			if b, _ := ours["copy_on_fork"].(bool); onOff[b] != v {
				t.Errorf("%s: copy-on-fork rdma %s, rdmactl %v", line, v, ours["copy_on_fork"])
			}
		}
		if v, ok := theirs["privileged-qkey"]; ok {
			if b, _ := ours["privileged_qkey"].(bool); onOff[b] != v {
				t.Errorf("%s: privileged-qkey rdma %s, rdmactl %v", line, v, ours["privileged_qkey"])
			}
		}
	}
}

// rdmaJSONList runs rdma -j WORDS; no output at all (rdma prints nothing
// for an empty dump of some objects) is an empty list.
func rdmaJSONList(t *testing.T, words []string) []map[string]any {
	t.Helper()
	out := strings.TrimSpace(vmRun(t, "rdma", append([]string{"-j"}, words...)...))
	if out == "" {
		return nil
	}
	var l []map[string]any
	if err := json.Unmarshal([]byte(out), &l); err != nil {
		t.Fatalf("rdma -j %s: %v\n%s", strings.Join(words, " "), err, out)
	}
	return l
}

// compareFacts: the same objects (by keys), with the same fields.
func compareFacts(t *testing.T, line string, keys, fields []string, theirs, ours []map[string]any) int {
	t.Helper()
	ourKeys := make([]string, len(keys))
	for i, k := range keys {
		ourKeys[i] = strings.ReplaceAll(k, "-", "_")
	}
	r, o := byKey(theirs, keys...), byKey(ours, ourKeys...)
	if fmt.Sprint(sortedKeys(r)) != fmt.Sprint(sortedKeys(o)) {
		t.Errorf("%s: rdma lists %v, rdmactl %v", line, sortedKeys(r), sortedKeys(o))
		return len(r)
	}
	for k, ro := range r {
		for _, f := range fields {
			rv, has := ro[f]
			ov, ourHas := o[k][strings.ReplaceAll(f, "-", "_")]
			if has != ourHas || fmt.Sprint(rv) != fmt.Sprint(ov) {
				t.Errorf("%s %s: %s rdma %v, rdmactl %v", line, k, f, rv, ov)
			}
		}
	}
	t.Logf("%s: %d objects agree", line, len(r))
	return len(r)
}

// startPingpongServer leaves an ibv_rc_pingpong server waiting on rxe0
// (a QP in INIT, its context, PD, MR, CQs) until the test ends, then
// waits for rdma res show to be as before; it returns the server's pid.
func startPingpongServer(t *testing.T, port string) string {
	t.Helper()
	before := resShow(t)
	ctx, cancel := context.WithCancel(context.Background())
	srv := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-p", port)
	if err := srv.Start(); err != nil {
		t.Fatalf("ibv_rc_pingpong: %v", err)
	}
	pid := strconv.Itoa(srv.Process.Pid)
	t.Cleanup(func() {
		cancel()
		_ = srv.Wait()
		if !waitFor(10*time.Second, func() bool { return resShow(t) == before }) {
			t.Errorf("rdma res show changed:\nbefore\n%s\nafter\n%s", before, resShow(t))
		}
	})
	if !waitFor(20*time.Second, func() bool {
		for _, q := range rdmaList(t, "res", "show", "qp") {
			if fmt.Sprint(q["pid"]) == pid {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("ibv_rc_pingpong (pid %s) created no QP visible to rdma res show qp", pid)
	}
	return pid
}

func statByPort(l []map[string]any) map[string]map[string]uint64 {
	m := map[string]map[string]uint64{}
	for _, o := range l {
		k := fmt.Sprintf("%v/%v", o["ifname"], o["port"])
		m[k] = map[string]uint64{}
		for name, v := range o {
			if f, ok := v.(float64); ok && name != "port" && name != "ifindex" {
				m[k][name] = uint64(f)
			}
		}
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

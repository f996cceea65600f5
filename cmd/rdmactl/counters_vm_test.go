//go:build vmtest

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/vocab"
)

// rdmaStat runs rdma -j statistic show and returns "dev/port" -> counter -> value.
func rdmaStat(t *testing.T) map[string]map[string]uint64 {
	t.Helper()
	var objs []map[string]any
	if err := json.Unmarshal([]byte(vmRun(t, "rdma", "-j", "statistic", "show")), &objs); err != nil {
		t.Fatal(err)
	}
	m := map[string]map[string]uint64{}
	for _, o := range objs {
		key := o["ifname"].(string) + "/" + strconv.Itoa(int(o["port"].(float64)))
		m[key] = map[string]uint64{}
		for k, v := range o {
			if f, ok := v.(float64); ok && k != "port" {
				m[key][k] = uint64(f)
			}
		}
	}
	return m
}

// pingpong makes some RC traffic between rxe1 and rxe0 so that the
// counters are not all zero, and waits until it is over.
func pingpong(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe0", "-g", "1", "-n", "50", "-p", "18777")
	if err := srv.Start(); err != nil {
		t.Fatalf("ibv_rc_pingpong server: %v", err)
	}
	// The client does not retry its connect: it starts once the server
	// listens.
	waitListening(t, 18777, 30*time.Second)
	if out, err := exec.CommandContext(ctx, "ibv_rc_pingpong", "-d", "rxe1", "-g", "1", "-n", "50", "-p", "18777", "127.0.0.1").CombinedOutput(); err != nil {
		t.Fatalf("ibv_rc_pingpong client: %v\n%s", err, out)
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("ibv_rc_pingpong server: %v", err)
	}
}

// TestVMCountersMatchRdmaStatistic compares rdmactl -j counters with
// rdma -j statistic show and with the sysfs hw_counters files. Counters are
// monotonic and may still move between reads (rxe timers, other tests), so
// instead of equality each of our values must lie between an rdma read made
// before and one made after it: exact when nothing moves, and never a flaky
// tolerance. The test makes traffic first, then none while comparing.
func TestVMCountersMatchRdmaStatistic(t *testing.T) {
	pingpong(t)
	before := rdmaStat(t)
	// Both ways of reading a port's hw counters, asked for by name.
	rows := countersJSON(t, "-j", "counters", "--source", "counters,hw_counters,netlink")
	after := rdmaStat(t)

	hw := map[string]map[string]uint64{}
	nl := map[string]map[string]uint64{}
	for _, r := range rows {
		if r.Source == srcCounters {
			t.Errorf("rxe has no PMA counters, rdmactl shows %+v", r)
		}
		// Every counter this kernel's rxe reports is in vocab's table, and
		// the JSON carries its category.
		if info := vocab.Counter(r.Name); !info.Known || r.Category != info.Category.String() {
			t.Errorf("%s %s: category %q, table %+v (a counter vocab does not know?)", r.Source, r.Name, r.Category, info)
		}
		m := hw
		if r.Source == srcNetlink {
			m = nl
		}
		key := r.Ifname + "/" + strconv.Itoa(int(r.Port))
		if m[key] == nil {
			m[key] = map[string]uint64{}
		}
		m[key][r.Name] = r.Value
	}
	if len(hw) != len(before) || len(nl) != len(before) {
		t.Fatalf("rdmactl has hw_counters for %d ports and netlink for %d, rdma statistic %d", len(hw), len(nl), len(before))
	}
	moved, nonzero := 0, 0
	for _, src := range []map[string]map[string]uint64{hw, nl} {
		for key, theirs := range before {
			ours := src[key]
			if len(ours) != len(theirs) {
				t.Errorf("%s: rdmactl %d counters, rdma statistic %d", key, len(ours), len(theirs))
			}
			for name, lo := range theirs {
				v, ok := ours[name]
				hi := after[key][name]
				if !ok {
					t.Errorf("%s %s: missing in rdmactl", key, name)
					continue
				}
				if v < lo || v > hi {
					t.Errorf("%s %s: rdmactl %d, rdma statistic %d before and %d after", key, name, v, lo, hi)
				}
				if lo != hi {
					moved++
				}
				if v != 0 {
					nonzero++
				}
			}
		}
	}
	if nonzero == 0 {
		t.Error("all counters are 0 after ibv_rc_pingpong: the comparison proves little")
	}
	t.Logf("%d ports, %d non-zero counters (hw_counters and netlink sources) agree with rdma statistic (%d moved between reads)", len(hw), nonzero, moved)

	// Direct sysfs reads, made after the second rdma read.
	for key, ours := range hw {
		dev, port, _ := strings.Cut(key, "/")
		dir := filepath.Join("/sys/class/infiniband", dev, "ports", port, "hw_counters")
		for name, v := range ours {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sv, _ := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			// Read last: it cannot be below the rdma read made before it (which is >= v).
			if sv < after[key][name] {
				t.Errorf("%s %s: sysfs %d below the earlier rdma statistic %d (rdmactl %d)", key, name, sv, after[key][name], v)
			}
		}
	}
}

// TestVMCountersDefaultOnce: by default each port's hw counters appear
// once, from netlink (rdma statistic's source), not also from the sysfs
// hw_counters files.
func TestVMCountersDefaultOnce(t *testing.T) {
	theirs := rdmaStat(t)
	ports := map[string]bool{}
	for _, r := range countersJSON(t, "-j", "counters") {
		key := r.Ifname + "/" + strconv.Itoa(int(r.Port))
		switch {
		case r.Source == srcHWCounters && r.Port != 0:
			t.Errorf("%s %s: read from sysfs hw_counters although netlink answered", key, r.Name)
		case r.Source == srcNetlink:
			ports[key] = true
		}
	}
	if len(ports) != len(theirs) {
		t.Errorf("netlink counters for %d ports, rdma statistic shows %d", len(ports), len(theirs))
	}
}

// TestVMCountersWatch runs --watch for a short while and cancels it as
// Ctrl-C does: clean exit, one JSON array per interval.
func TestVMCountersWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var o, e strings.Builder
	code := run(ctx, []string{"-j", "counters", "rxe0", "--watch=500ms"}, &o, &e)
	if code != 0 || e.Len() != 0 {
		t.Fatalf("exit %d stderr %q", code, e.String())
	}
	lines := strings.Split(strings.TrimSpace(o.String()), "\n")
	if len(lines) < 1 {
		t.Fatalf("no output")
	}
	watchRates(t, o.String())
	t.Logf("%d intervals printed", len(lines))
}

// resSummary is rdma -j res show: per-device object counts. Tests that run
// traffic tools check it is unchanged afterwards (no leaked QP/CQ/MR/PD/ctx).
func resSummary(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(vmRun(t, "rdma", "-j", "res", "show"))
}

func TestVMTrafficToolsLeakNothing(t *testing.T) {
	before := resSummary(t)
	pingpong(t)
	if after := resSummary(t); after != before {
		t.Errorf("rdma res show changed:\nbefore %s\nafter  %s", before, after)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

func countersJSON(t *testing.T, args ...string) []counterJSON {
	t.Helper()
	out, stderr, code := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	var rows []counterJSON
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return rows
}

func byName(rows []counterJSON) map[string]counterJSON {
	m := map[string]counterJSON{}
	for _, r := range rows {
		m[r.Source+"/"+r.Name] = r
	}
	return m
}

func TestCountersMLX5(t *testing.T) {
	rows := countersJSON(t, "--sysfs-root", mlx5Tree, "-j", "counters", "mlx5_0/1")
	if len(rows) != 21+29 {
		t.Fatalf("%d rows, want 21 PMA + 29 hw counters", len(rows))
	}
	m := byName(rows)
	x := m["counters/port_xmit_data"]
	if x.Value != 20000000000 || x.Unit != "bytes" || x.Raw == nil || *x.Raw != 5000000000 || x.Ifname != "mlx5_0" || x.Port != 1 {
		t.Errorf("port_xmit_data: %+v", x)
	}
	if r := m["counters/port_rcv_data"]; r.Value != 10000000000 || r.Unit != "bytes" {
		t.Errorf("port_rcv_data: %+v", r)
	}
	if r := m["counters/port_xmit_packets"]; r.Value != 8000000 || r.Unit != "count" || r.Raw != nil {
		t.Errorf("port_xmit_packets: %+v", r)
	}
	for name, v := range map[string]uint64{"out_of_buffer": 17, "np_cnp_sent": 9, "rp_cnp_handled": 11, "rx_write_requests": 1000} {
		if r := m["hw_counters/"+name]; r.Value != v || r.Unit != "count" {
			t.Errorf("%s: %+v, want %d", name, r, v)
		}
	}
	if _, ok := m["hw_counters/lifespan"]; ok {
		t.Error("lifespan is a setting, not a counter")
	}
	// category comes from vocab's table; every captured mlx5 counter is in it.
	for name, want := range map[string]string{"counters/port_xmit_data": "traffic_bytes",
		"counters/port_xmit_packets": "traffic_packets", "counters/symbol_error": "errors",
		"counters/port_xmit_discards": "discards", "counters/port_xmit_wait": "congestion",
		"hw_counters/out_of_buffer": "discards", "hw_counters/np_cnp_sent": "congestion",
		"hw_counters/local_ack_timeout_err": "retransmissions", "hw_counters/out_of_sequence": "out_of_sequence",
		"hw_counters/rnr_nak_retry_err": "rnr", "hw_counters/rx_dct_connect": "other"} {
		if r := m[name]; r.Category != want {
			t.Errorf("%s: category %q, want %q", name, r.Category, want)
		}
	}
	for _, r := range rows {
		if r.Category == "" {
			t.Errorf("%s/%s: no category", r.Source, r.Name)
		}
	}
	nz := countersJSON(t, "--sysfs-root", mlx5Tree, "-j", "counters", "mlx5_0", "--nonzero")
	if len(nz) != 17 {
		t.Errorf("--nonzero: %d rows, want 17", len(nz))
	}
	for _, r := range nz {
		if r.Value == 0 {
			t.Errorf("--nonzero kept %+v", r)
		}
	}
	hw := countersJSON(t, "--sysfs-root", mlx5Tree, "-j", "counters", "--source", "hw_counters")
	if len(hw) != 2*29 {
		t.Errorf("--source hw_counters on both devices: %d rows", len(hw))
	}
}

func TestCountersRXE(t *testing.T) {
	rows := countersJSON(t, "--sysfs-root", rxeTree, "-j", "counters")
	if len(rows) != 2*15 {
		t.Fatalf("%d rows, want 15 hw counters per rxe device (no PMA counters, no netlink with --sysfs-root)", len(rows))
	}
	for _, r := range rows {
		if r.Source != srcHWCounters || r.Port != 1 || r.Value != 0 {
			t.Errorf("unexpected %+v", r)
		}
	}
	if _, ok := byName(rows)["hw_counters/rcvd_pkts"]; !ok {
		t.Error("rcvd_pkts missing")
	}
	cats := map[string]string{}
	for _, r := range rows {
		cats[r.Name] = r.Category
	}
	for name, want := range map[string]string{"sent_pkts": "traffic_packets", "rcvd_pkts": "traffic_packets",
		"duplicate_request": "retransmissions", "out_of_seq_request": "out_of_sequence", "rcvd_rnr_err": "rnr",
		"send_rnr_err": "rnr", "rcvd_seq_err": "out_of_sequence", "ack_deferred": "other",
		"retry_exceeded_err": "retransmissions", "retry_rnr_exceeded_err": "rnr", "completer_retry_err": "retransmissions",
		"send_err": "errors", "link_downed": "errors", "rdma_sends": "traffic_packets", "rdma_recvs": "traffic_packets"} {
		if cats[name] != want {
			t.Errorf("%s: category %q, want %q", name, cats[name], want)
		}
	}
	if len(cats) != 15 {
		t.Errorf("%d rxe counter names, want 15: %v", len(cats), cats)
	}
	out, _, code := runCmd(t, "--sysfs-root", rxeTree, "counters", "rxe1/1")
	if code != 0 || !strings.HasPrefix(out, "DEV") || !strings.Contains(out, "duplicate_request") || strings.Count(out, "\n") != 16 {
		t.Errorf("table (code %d):\n%s", code, out)
	}
	if rows := countersJSON(t, "--sysfs-root", rxeTree, "-j", "counters", "--nonzero"); len(rows) != 0 {
		t.Errorf("--nonzero on idle rxe: %+v", rows)
	}
}

func TestCountersDeviceLevel(t *testing.T) {
	root := copyTree(t, rxeTree)
	dir := filepath.Join(root, "class/infiniband/rxe0/hw_counters")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "dev_cnt"), []byte("5\n"), 0o644))
	rows := countersJSON(t, "--sysfs-root", root, "-j", "counters", "rxe0", "--nonzero")
	if len(rows) != 1 || rows[0].Port != 0 || rows[0].Name != "dev_cnt" || rows[0].Value != 5 || rows[0].Category != "other" {
		t.Errorf("device-level: %+v", rows)
	}
}

func TestCountersUsage(t *testing.T) {
	for _, args := range [][]string{
		{"counters", "--watch=-1s"}, {"counters", "--watch=abc"}, {"counters", "--source", "pma"},
	} {
		_, stderr, code := runCmd(t, append([]string{"--sysfs-root", rxeTree}, args...)...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: code %d stderr %q", args, code, stderr)
		}
	}
	for in, want := range map[string]time.Duration{"1s": time.Second, "2": 2 * time.Second, "250ms": 250 * time.Millisecond, "0.5": 500 * time.Millisecond} {
		if d, err := cmdutil.ParseInterval(in); err != nil || d != want {
			t.Errorf("parseInterval(%q) = %v, %v", in, d, err)
		}
	}
}

// TestCountersWatch bumps a counter while --watch runs, then cancels the
// context as Ctrl-C does: the rate must be printed and the exit clean.
func TestCountersWatch(t *testing.T) {
	root := copyTree(t, rxeTree)
	file := filepath.Join(root, "class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts")
	ctx, cancel := context.WithCancel(context.Background())
	var o, e syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"--sysfs-root", root, "-j", "counters", "rxe0", "--watch=100ms"}, &o, &e)
	}()
	// The bump must come after the first sample: wait for an interval's
	// line (a sleep was not enough under qemu-user).
	waitOutput(t, &o, func(s string) bool { return strings.Contains(s, "\n") })
	must(t, os.WriteFile(file, []byte("1000\n"), 0o644))
	waitOutput(t, &o, func(s string) bool { return strings.Contains(s, `"rcvd_pkts"`) })
	cancel()
	select {
	case code := <-done:
		if code != 0 || e.Len() != 0 {
			t.Fatalf("exit %d, stderr %q", code, e.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("--watch did not stop on cancel")
	}
	rates := watchRates(t, o.String())
	for _, r := range rates {
		if r.Name != "rcvd_pkts" || r.Delta != 1000 || r.Value != 1000 || r.Rate <= 0 || r.IntervalS <= 0 {
			t.Errorf("unexpected rate %+v", r)
		}
	}
	if len(rates) == 0 {
		t.Fatalf("no rate line for rcvd_pkts:\n%s", o.String())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// copyTree copies a fixture tree (regular files and directories; symlinks
// are recreated) into a temp dir so a test can change it.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case info.IsDir():
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	must(t, err)
	return dst
}

// TestCountersSysfsRootSkipsNetlink: with --sysfs-root the captured tree is
// all there is; the live kernel's netlink must not be asked.
func TestCountersSysfsRootSkipsNetlink(t *testing.T) {
	rows := countersJSON(t, "--sysfs-root", rxeTree, "-j", "counters")
	for _, r := range rows {
		if r.Source == srcNetlink {
			t.Fatalf("netlink row from a captured tree: %+v", r)
		}
	}
	if len(rows) != 30 {
		t.Fatalf("%d rows", len(rows))
	}
}

// TestCountersWatchReset: a counter that goes down between two samples is
// a reset, printed as such (JSON "reset": true, delta counted from 0; the
// table's NOTE column), not dropped and not a huge rate.
func TestCountersWatchReset(t *testing.T) {
	for _, jsonOut := range []bool{true, false} {
		root := copyTree(t, rxeTree)
		file := filepath.Join(root, "class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts")
		must(t, os.WriteFile(file, []byte("1000\n"), 0o644))
		ctx, cancel := context.WithCancel(context.Background())
		var o, e syncBuffer
		done := make(chan int)
		args := []string{"--sysfs-root", root, "counters", "rxe0", "--watch=100ms"}
		if jsonOut {
			args = append([]string{"-j"}, args...)
		}
		go func() { done <- run(ctx, args, &o, &e) }()
		// The reset goes in after a sample of 1000 was taken (the table's
		// first line, the JSON's first interval), and the watch stops once
		// it was reported: no sleeps to guess, however loaded the machine.
		waitOutput(t, &o, func(s string) bool { return strings.Contains(s, "\n") })
		must(t, os.WriteFile(file, []byte("5\n"), 0o644))
		waitOutput(t, &o, func(s string) bool { return strings.Contains(s, "reset") })
		cancel()
		if code := <-done; code != 0 || e.Len() != 0 {
			t.Fatalf("exit %d, stderr %q", code, e.String())
		}
		if !jsonOut {
			if !strings.Contains(o.String(), "NOTE") || !strings.Contains(o.String(), "reset: delta counts from 0") {
				t.Errorf("table without the reset note:\n%s", o.String())
			}
			continue
		}
		rates := watchRates(t, o.String())
		for _, r := range rates {
			if r.Name != "rcvd_pkts" || !r.Reset || r.Delta != 5 || r.Value != 5 || r.Wrapped {
				t.Errorf("unexpected rate %+v", r)
			}
		}
		if len(rates) == 0 {
			t.Fatalf("no reset line for rcvd_pkts:\n%s", o.String())
		}
		if !strings.Contains(o.String(), `"reset":true`) {
			t.Errorf("no reset key:\n%s", o.String())
		}
	}
}

// watchRates decodes the output of counters -j --watch: a JSON array of
// rates a line.
func watchRates(t *testing.T, out string) []counterRateJSON {
	t.Helper()
	var all []counterRateJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rates []counterRateJSON
		if err := json.Unmarshal([]byte(line), &rates); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		all = append(all, rates...)
	}
	return all
}

// syncBuffer is a bytes.Buffer safe for a command writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Len() int { return len(b.String()) }

// waitOutput waits up to 10 s for b's content to satisfy ok.
func waitOutput(t *testing.T, b *syncBuffer, ok func(string) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok(b.String()) {
			return
		}
	}
	t.Fatalf("timed out; output so far:\n%s", b.String())
}

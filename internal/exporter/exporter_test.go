package exporter

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/promtext"
)

const (
	rxeTree  = "../sysfs/testdata/rxe"
	mlx5Tree = "../sysfs/testdata/mlx5"
)

// series writes one scrape of c in the text format (failing on a
// duplicate series, as a Prometheus scrape would), parses it with
// Prometheus's own parser (tests only: the binary does not link it) and
// returns "name{l1=v1,...}" -> value, labels sorted by name.
func series(t *testing.T, c *Collector) map[string]float64 {
	t.Helper()
	var b bytes.Buffer
	if err := promtext.Write(&b, c.Collect()); err != nil {
		t.Fatalf("write: %v", err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := key(mf.GetName(), m)
			if _, dup := out[k]; dup {
				t.Fatalf("series %s twice", k)
			}
			out[k] = value(m)
		}
	}
	return out
}

func key(name string, m *dto.Metric) string {
	var ls []string
	for _, l := range m.GetLabel() {
		ls = append(ls, l.GetName()+"="+l.GetValue())
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return -1
}

func captured(root string) Options {
	return Options{Open: func() (*inventory.Source, func(), error) { return inventory.Captured(root), func() {}, nil },
		Timeout: 10 * time.Second}
}

func readUint(t *testing.T, path string) float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, c := range strings.TrimSpace(string(b)) {
		v = v*10 + float64(c-'0')
	}
	return v
}

// TestCapturedMLX5: the facts and counters of a captured ConnectX tree,
// each compared with the file it comes from.
func TestCapturedMLX5(t *testing.T) {
	s := series(t, New(captured(mlx5Tree)))
	port := filepath.Join(mlx5Tree, "class/infiniband/mlx5_0/ports/1")
	want := map[string]float64{
		"rdma_exporter_scrape_success{}":                                               1,
		"rdma_exporter_snapshot_stale{}":                                               0,
		"rdma_port_xmit_data_bytes_total{category=traffic_bytes,device=mlx5_0,port=1}": 4 * readUint(t, port+"/counters/port_xmit_data"),
		"rdma_port_rcv_data_bytes_total{category=traffic_bytes,device=mlx5_0,port=1}":  4 * readUint(t, port+"/counters/port_rcv_data"),
		"rdma_port_symbol_error_total{category=errors,device=mlx5_0,port=1}":           readUint(t, port+"/counters/symbol_error"),
		"rdma_port_vl15_dropped_total{category=discards,device=mlx5_0,port=1}":         readUint(t, port+"/counters/VL15_dropped"),
		"rdma_hw_out_of_sequence_total{category=out_of_sequence,device=mlx5_0,port=1}": readUint(t, port+"/hw_counters/out_of_sequence"),
		"rdma_port_state_id{device=mlx5_0,port=1}":                                     4,
		"rdma_port_physical_state_id{device=mlx5_0,port=1}":                            5,
	}
	for k, v := range want {
		got, ok := s[k]
		if !ok {
			t.Errorf("missing %s", k)
			continue
		}
		if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	var info, rate, gids bool
	for k, v := range s {
		switch {
		case strings.HasPrefix(k, "rdma_device_info{") && strings.Contains(k, "device=mlx5_0,") && strings.Contains(k, "driver=mlx5_core"):
			info = v == 1
		case strings.HasPrefix(k, "rdma_port_rate_bytes_per_second{device=mlx5_0,port=1}"):
			rate = v > 1e9 // at least 8 Gb/s on any ConnectX
		case strings.HasPrefix(k, "rdma_port_gid_entries{device=mlx5_0,port=1}"):
			gids = v > 0 && v <= s["rdma_port_gid_table_size{device=mlx5_0,port=1}"]
		}
	}
	if !info || !rate || !gids {
		t.Errorf("device info %v, rate %v, gid entries <= table size %v; series:\n%s", info, rate, gids, dump(s, "rdma_device_info", "rdma_port_"))
	}
}

func dump(s map[string]float64, prefixes ...string) string {
	var b strings.Builder
	for k, v := range s {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				b.WriteString(k + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
				break
			}
		}
	}
	return b.String()
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// TestEveryCounterExported: every counter `rdmactl counters` reads from a
// captured tree (inventory.Counters, the same default) has exactly one
// series, of the same value in base units.
func TestEveryCounterExported(t *testing.T) {
	for _, root := range []string{rxeTree, mlx5Tree} {
		s := series(t, New(captured(root)))
		src := inventory.Captured(root)
		refs, err := src.Targets("", 0)
		if err != nil {
			t.Fatal(err)
		}
		sets, err := src.Counters(refs, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, set := range sets {
			for _, c := range set.Counters {
				name, mult := CounterMetric(set.Source, c.Name, set.Port)
				found := false
				for k, v := range s {
					if strings.HasPrefix(k, name+"{") && strings.Contains(k, "device="+set.Dev) &&
						(set.Port == 0 || strings.Contains(k, "port="+itoa(set.Port)+"}")) {
						found = true
						if v != float64(c.Value)*float64(mult) {
							t.Errorf("%s: %s = %v, want %v", root, k, v, float64(c.Value)*float64(mult))
						}
					}
				}
				if !found {
					t.Errorf("%s: %s/%d %s %s: no series %s", root, set.Dev, set.Port, set.Source, c.Name, name)
				}
				n++
			}
		}
		if n < 20 {
			t.Fatalf("%s: only %d counters read; the fixture is not what this test expects", root, n)
		}
	}
}

// TestDevicesComeAndGo: a device removed between scrapes loses its series
// and the scrape still succeeds; one added gains them.
func TestDevicesComeAndGo(t *testing.T) {
	root := t.TempDir()
	if out, err := exec.Command("cp", "-a", mlx5Tree+"/.", root).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	c := New(captured(root))
	has := func(s map[string]float64, dev string) bool {
		for k := range s {
			if strings.Contains(k, "device="+dev+",") || strings.Contains(k, "device="+dev+"}") {
				return true
			}
		}
		return false
	}
	s := series(t, c)
	if !has(s, "mlx5_1") || s["rdma_exporter_scrape_success{}"] != 1 {
		t.Fatal("mlx5_1 missing before removal")
	}
	dir := filepath.Join(root, "class/infiniband/mlx5_1")
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	s = series(t, c)
	if has(s, "mlx5_1") || !has(s, "mlx5_0") || s["rdma_exporter_scrape_success{}"] != 1 {
		t.Fatalf("after removal: mlx5_1 %v, mlx5_0 %v, success %v", has(s, "mlx5_1"), has(s, "mlx5_0"), s["rdma_exporter_scrape_success{}"])
	}
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	if s = series(t, c); !has(s, "mlx5_1") {
		t.Fatal("mlx5_1 did not come back")
	}
}

// TestHangingSnapshot: while a snapshot hangs, scrapes time out, get no
// (or the last) RDMA series marked stale, and start no second reader;
// once it returns, the next scrape is fresh.
func TestHangingSnapshot(t *testing.T) {
	var opens atomic.Int32
	var hang atomic.Bool
	release := make(chan struct{})
	o := Options{Timeout: 50 * time.Millisecond, Open: func() (*inventory.Source, func(), error) {
		opens.Add(1)
		if hang.Load() {
			<-release
		}
		return inventory.Captured(rxeTree), func() {}, nil
	}}
	c := New(o)
	if s := series(t, c); s["rdma_exporter_scrape_success{}"] != 1 {
		t.Fatal("first scrape failed")
	}
	hang.Store(true)
	for i := 0; i < 5; i++ {
		s := series(t, c)
		if s["rdma_exporter_scrape_success{}"] != 0 || s["rdma_exporter_snapshot_stale{}"] != 1 {
			t.Fatalf("scrape %d while hanging: success %v stale %v", i, s["rdma_exporter_scrape_success{}"], s["rdma_exporter_snapshot_stale{}"])
		}
		found := false
		for k := range s {
			found = found || strings.HasPrefix(k, "rdma_device_info{")
		}
		if !found {
			t.Fatalf("scrape %d while hanging: the last snapshot's series are missing", i)
		}
		if s["rdma_exporter_scrape_timeouts_total{}"] != float64(i+1) {
			t.Fatalf("timeouts %v, want %d", s["rdma_exporter_scrape_timeouts_total{}"], i+1)
		}
	}
	if n := opens.Load(); n != 2 {
		t.Fatalf("%d snapshots started, want 2 (one before the hang, one hanging)", n)
	}
	hang.Store(false)
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := series(t, c)
		if s["rdma_exporter_scrape_success{}"] == 1 && s["rdma_exporter_snapshot_stale{}"] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh scrape after the hang ended")
		}
	}
}

// TestFailedSnapshot: a source that cannot be opened gives a scrape with
// success 0, no RDMA series and a failure count, not an HTTP error.
func TestFailedSnapshot(t *testing.T) {
	c := New(Options{Timeout: time.Second, Open: func() (*inventory.Source, func(), error) {
		return nil, nil, errors.New("no netlink")
	}})
	s := series(t, c)
	if s["rdma_exporter_scrape_success{}"] != 0 || s["rdma_exporter_snapshot_failures_total{}"] != 1 {
		t.Fatalf("%v", s)
	}
	for k := range s {
		if strings.HasPrefix(k, "rdma_device_") || strings.HasPrefix(k, "rdma_port_") {
			t.Fatalf("series %s without a snapshot", k)
		}
	}
	// A captured tree without class/infiniband is a failed device list too.
	c = New(captured(t.TempDir()))
	if s := series(t, c); s["rdma_exporter_scrape_success{}"] != 0 {
		t.Fatalf("empty tree: %v", s)
	}
}

// TestGIDInterval: GID figures are reused within the interval and read
// again after it (or every scrape with 0).
func TestGIDInterval(t *testing.T) {
	root := t.TempDir()
	if out, err := exec.Command("cp", "-a", rxeTree+"/.", root).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	gids := filepath.Join(root, "class/infiniband/rxe0/ports/1/gids")
	ents, err := os.ReadDir(gids)
	if err != nil {
		t.Fatal(err)
	}
	empty := ""
	for _, e := range ents {
		if b, _ := os.ReadFile(filepath.Join(gids, e.Name())); strings.TrimSpace(string(b)) == "0000:0000:0000:0000:0000:0000:0000:0000" {
			empty = e.Name()
			break
		}
	}
	if empty == "" {
		t.Fatal("no empty GID slot in the fixture")
	}
	const k = "rdma_port_gid_entries{device=rxe0,port=1}"
	o := captured(root)
	o.GIDInterval = time.Hour
	cached, every := New(o), New(captured(root))
	before := series(t, cached)[k]
	if before == 0 || series(t, every)[k] != before {
		t.Fatalf("gid entries %v", before)
	}
	if err := os.WriteFile(filepath.Join(gids, empty), []byte("fe80:0000:0000:0000:0000:0000:0000:0099\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := series(t, cached)[k]; got != before {
		t.Errorf("within the interval: %v entries, want the cached %v", got, before)
	}
	if got := series(t, every)[k]; got != before+1 {
		t.Errorf("interval 0: %v entries, want %v", got, before+1)
	}
}

package exporter

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

// fakeNL lists devices, and ports where given, as netlink would.
type fakeNL struct {
	devs  []nldev.Device
	ports map[uint32][]nldev.Port
}

func (f *fakeNL) Devices() ([]nldev.Device, error)               { return f.devs, nil }
func (f *fakeNL) PortsOf(i uint32) ([]nldev.Port, error)         { return f.ports[i], nil }
func (f *fakeNL) Chardev(uint32, string) (*nldev.Chardev, error) { return nil, os.ErrNotExist }
func (f *fakeNL) System() (*nldev.System, error)                 { return nil, os.ErrNotExist }
func (f *fakeNL) PortStatistics(uint32, uint32) ([]nldev.Counter, error) {
	return nil, os.ErrNotExist
}

// A device's sysfs facts are read when it is first seen and again only
// when it registers anew (a new index); a device that left is forgotten.
func TestDeviceFactsReadOncePerRegistration(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(mlx5Tree)); err != nil {
		t.Fatal(err)
	}
	boardID := filepath.Join(root, "class/infiniband/mlx5_0/board_id")
	nl := &fakeNL{devs: []nldev.Device{{Index: 1, Name: "mlx5_0"}, {Index: 2, Name: "mlx5_1"}}}
	var dc devCache
	snap := func() map[string]string {
		t.Helper()
		devs, err := devices(inventory.LiveWith(nl, root), &dc)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, d := range devs {
			m[d.Name] = d.BoardID
		}
		return m
	}
	first := snap()["mlx5_0"]
	if first == "" {
		t.Fatal("no board_id read for mlx5_0")
	}
	if err := os.WriteFile(boardID, []byte("CHANGED_0001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := snap()["mlx5_0"]; got != first {
		t.Errorf("same registration: board_id %q, want the remembered %q (read once)", got, first)
	}
	nl.devs[0].Index = 3 // re-registered
	if got := snap()["mlx5_0"]; got != "CHANGED_0001" {
		t.Errorf("new registration: board_id %q, want it read again", got)
	}
	nl.devs = nl.devs[:1]
	snap()
	if len(dc) != 1 {
		t.Errorf("cache holds %d devices after one left, want 1", len(dc))
	}
}

// A counter directory a device registration lacks is looked for once: the
// next snapshots skip it, until the device registers anew (a new index).
func TestAbsentCounterDirsOncePerRegistration(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(mlx5Tree)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "class/infiniband/mlx5_0/hw_counters") // the device's: the fixture has none
	nl := &fakeNL{devs: []nldev.Device{{Index: 1, Name: "mlx5_0"}},
		ports: map[uint32][]nldev.Port{1: {{Port: 1}}, 3: {{Port: 1}}}}
	var gc gidCache
	var dc devCache
	ad := inventory.AbsentDirs{}
	metric, _ := CounterMetric(inventory.SrcHWCounters, "test_events", 0)
	has := func() bool {
		t.Helper()
		snap, err := take(inventory.LiveWith(nl, root), Options{GIDInterval: time.Hour}, &gc, &dc, ad)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range snap.Metrics() {
			if m.Desc.Name() == metric {
				return true
			}
		}
		return false
	}
	if has() || len(ad) != 1 {
		t.Fatalf("first snapshot: %s present or %d absent directories recorded, want absent and 1 (%v)", metric, len(ad), ad)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "test_events"), []byte("7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if has() {
		t.Errorf("same registration: %s read, want its directory skipped as absent", metric)
	}
	nl.devs[0].Index = 3 // re-registered
	if !has() {
		t.Errorf("new registration: %s missing, want the directory read again", metric)
	}
	if len(ad) != 0 {
		t.Errorf("after re-registration: %d absent directories remembered (%v), want 0", len(ad), ad)
	}
}

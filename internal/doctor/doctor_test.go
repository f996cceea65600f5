package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// verdicts runs every check on the captured tree dir and returns the
// results by "check target".
func verdicts(t *testing.T, dir string) map[string]Result {
	t.Helper()
	rs := Run(&Env{Src: inventory.Captured(dir)}, Checks)
	out := map[string]Result{}
	for _, r := range rs {
		k := r.Check
		if r.Device != "" {
			k += " " + r.Device
			if r.Port != 0 {
				k += "/" + string(rune('0'+r.Port))
			}
		}
		if _, dup := out[k]; dup {
			t.Errorf("%s: two results", k)
		}
		out[k] = r
	}
	return out
}

func want(t *testing.T, got map[string]Result, key string, st Status, words ...string) {
	t.Helper()
	r, ok := got[key]
	if !ok {
		t.Errorf("%s: no result", key)
		return
	}
	if r.Status != st {
		t.Errorf("%s: %s (%s), want %s", key, r.Status, r.Evidence, st)
	}
	for _, w := range words {
		if !strings.Contains(r.Evidence, w) {
			t.Errorf("%s: evidence %q lacks %q", key, r.Evidence, w)
		}
	}
	if (st == Fail || st == Warn) && r.Fix == "" {
		t.Errorf("%s: %s without a fix", key, st)
	}
	if (st == Pass || st == Skip) && r.Fix != "" {
		t.Errorf("%s: %s with a fix %q", key, st, r.Fix)
	}
}

// The healthy trees: the captured rxe VM and the hand-made mlx5 host.
func TestFixturesHealthy(t *testing.T) {
	rxe := verdicts(t, "../sysfs/testdata/rxe")
	want(t, rxe, "port_state rxe0/1", Pass, "ACTIVE", "LINK_UP")
	want(t, rxe, "roce_netdev rxe1/1", Pass, "vrxe1 is up")
	want(t, rxe, "roce_mtu rxe0/1", Pass, "MTU 1500", "RDMA MTU of 1024")
	want(t, rxe, "pcie_link rxe0", Skip, "no PCIe function")
	want(t, rxe, "ib_sm", Skip, "no InfiniBand ports")
	want(t, rxe, "firmware", Skip)
	want(t, rxe, "error_counters rxe0/1", Pass)
	for _, c := range Checks {
		if c.NeedsLive {
			want(t, rxe, c.ID, Skip, "needs the live system")
		}
	}
	if Worst(Run(&Env{Src: inventory.Captured("../sysfs/testdata/rxe")}, Checks)) != Pass {
		t.Error("rxe capture: not PASS overall")
	}

	mlx := verdicts(t, "../sysfs/testdata/mlx5")
	want(t, mlx, "ib_sm mlx5_1/1", Pass, "LID 0xd", "SM LID 0x1")
	want(t, mlx, "firmware mlx5_0", Pass, "16.35.2000")
	want(t, mlx, "roce_mtu mlx5_0/1", Pass, "MTU 9000", "4096")
	// The fixture's counters: link_downed 1, port_xmit_discards 3 (PMA),
	// out_of_buffer 17 (hw_counters); congestion counters do not count.
	want(t, mlx, "error_counters mlx5_0/1", Warn, "link_downed 1 (errors)", "port_xmit_discards 3 (discards)", "out_of_buffer 17 (discards)")
	if r := mlx["error_counters mlx5_0/1"]; strings.Contains(r.Evidence, "cnp") || strings.Contains(r.Evidence, "ecn") {
		t.Errorf("congestion counters judged as errors: %s", r.Evidence)
	}
}

func TestFixturePCIe(t *testing.T) {
	got := verdicts(t, "testdata/pcie")
	want(t, got, "pcie_link mlx5_0", Fail, "0000:03:00.0 runs 8.0 GT/s PCIe x8, capable of 16.0 GT/s PCIe x16")
	want(t, got, "pcie_link mlx5_1", Pass, "16.0 GT/s PCIe x16, its maximum")
}

func TestFixtureFirmware(t *testing.T) {
	got := verdicts(t, "testdata/fwmismatch")
	want(t, got, "firmware mlx5_0", Warn, "firmware 16.35.2000", "16.31.1014")
	want(t, got, "firmware mlx5_1", Warn, "firmware 16.31.1014", "16.35.2000")
}

func TestFixtureIBNoSM(t *testing.T) {
	got := verdicts(t, "testdata/ibnosm")
	want(t, got, "ib_sm mlx5_1/1", Fail, "SM LID 0", "no subnet manager")
	want(t, got, "port_state mlx5_1/1", Fail, "state INIT")
	want(t, got, "port_state mlx5_0/1", Pass)
	if Worst(Run(&Env{Src: inventory.Captured("testdata/ibnosm")}, Checks)) != Fail {
		t.Error("ibnosm: not FAIL overall")
	}
}

func TestFixtureRoCEMTU(t *testing.T) {
	got := verdicts(t, "testdata/roce_mtu")
	want(t, got, "roce_mtu mlx5_0/1", Fail, "MTU 1000 is below 1024 + 96")
}

// A host whose RDMA class is empty is not fit: FAIL, not a row of SKIPs.
func TestNoDevices(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "class", "infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	rs := Run(&Env{Src: inventory.Captured(root)}, Checks)
	if Worst(rs) != Fail || rs[0].Check != "port_state" || rs[0].Evidence != "no RDMA ports on this host" {
		t.Errorf("empty class: %+v", rs)
	}
}

func TestSelect(t *testing.T) {
	cs, err := Select([]string{"memlock", "port_state"})
	if err != nil || len(cs) != 2 || cs[0].ID != "memlock" {
		t.Fatalf("Select: %v %v", cs, err)
	}
	if _, err := Select([]string{"nope"}); err == nil || !strings.Contains(err.Error(), "port_state") {
		t.Errorf("unknown id: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range Checks {
		if seen[c.ID] || c.ID == "" || c.Doc == "" || c.Run == nil {
			t.Errorf("check %q: duplicate or incomplete", c.ID)
		}
		seen[c.ID] = true
	}
}

func TestParsers(t *testing.T) {
	for in, w := range map[string]float64{"8.0 GT/s PCIe": 8, "16 GT/s": 16, "2.5 GT/s PCIe": 2.5, "Unknown": 0, "": 0, "x GT/s": 0} {
		if g := inventory.ParseGTs(in); g != w {
			t.Errorf("ParseGTs(%q) = %v, want %v", in, g, w)
		}
	}
}

// FuzzPCIeAttrs: the PCIe link files are kernel input.
func FuzzPCIeAttrs(f *testing.F) {
	for _, s := range []string{"8.0 GT/s PCIe", "16 GT/s", "Unknown", "x16", "16", "", "1e309 GT/s", "-1 GT/s", "NaN GT/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v := inventory.ParseGTs(s); v < 0 || v > 1e3 || v != v {
			t.Errorf("ParseGTs(%q) = %v", s, v)
		}
		_ = inventory.ParseWidth(s)
	})
}

package placement

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeNUMA is a sysfs tree of two nodes (CPUs 0-1 and 2-3) and devices
// mlx5_0 on node 1, rxe0 without a PCI function, mlx5_1 on no node (-1).
func fakeNUMA(t *testing.T) Host {
	root := t.TempDir()
	for f, v := range map[string]string{
		"devices/system/node/possible":             "0-1\n",
		"devices/system/node/node0/cpulist":        "0-1\n",
		"devices/system/node/node1/cpulist":        "2-3\n",
		"class/infiniband/mlx5_0/device/numa_node": "1\n",
		"class/infiniband/mlx5_1/device/numa_node": "-1\n",
		"class/infiniband/rxe0/node_type":          "1: CA\n",
		"class/infiniband/mlx5_2/device/numa_node": "x\n",
		"devices/system/node/node9/cpulist":        "\n",
		"devices/system/node/node8/cpulist":        "0-99999\n",
	} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Host{Root: root}
}

// TestNUMAHost: the facts the placement reads, and what it makes of
// absent or malformed files.
func TestNUMAHost(t *testing.T) {
	h := fakeNUMA(t)
	if n, err := h.MaxNode(); n != 1 || err != nil {
		t.Errorf("MaxNode: %d %v", n, err)
	}
	for dev, want := range map[string]int{"mlx5_0": 1, "mlx5_1": -1, "rxe0": -1, "mlx5_2": -1, "nosuch": -1} {
		if got := h.DeviceNode(dev); got != want {
			t.Errorf("DeviceNode(%s) = %d, want %d", dev, got, want)
		}
	}
	if set, err := h.NodeCPUs(1); err != nil || set.Count() != 2 || !set.IsSet(2) || !set.IsSet(3) {
		t.Errorf("NodeCPUs(1): %v %v", set, err)
	}
	for _, n := range []int{9, 8, 5} {
		if _, err := h.NodeCPUs(n); err == nil {
			t.Errorf("NodeCPUs(%d): no error", n)
		}
	}
	if _, err := (Host{Root: t.TempDir()}).MaxNode(); err == nil {
		t.Error("MaxNode without devices/system/node: no error")
	}
}

func TestParseCPUList(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"0", []int{0}}, {"0,2", []int{0, 2}}, {"0, 1, 2", []int{0, 1, 2}}, {"1-3", []int{1, 2, 3}}, {"0-1,5,6-7", []int{0, 1, 5, 6, 7}},
	} {
		set, err := ParseCPUList(c.in, 8)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		var got []int
		for i := 0; i < 8; i++ {
			if set.IsSet(i) {
				got = append(got, i)
			}
		}
		if len(got) != len(c.want) {
			t.Fatalf("%q: %v, want %v", c.in, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("%q: %v, want %v", c.in, got, c.want)
			}
		}
	}
	for _, bad := range []string{"", "x", "-1", "3-1", "8", "0-8", "1,,2", "0-"} {
		if _, err := ParseCPUList(bad, 8); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// PinProcess pins every thread of the process (then the test restores
// the mask it found).
func TestPinProcess(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	first := -1
	for i := 0; i < 1024; i++ {
		if orig.IsSet(i) {
			first = i
			break
		}
	}
	var one unix.CPUSet
	one.Set(first)
	if err := PinProcess(one); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := PinProcess(orig); err != nil {
			t.Fatal(err)
		}
	}()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil || len(ents) < 2 {
		t.Fatalf("%d threads: %v", len(ents), err)
	}
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/task/" + e.Name() + "/status")
		if err != nil {
			continue // ended meanwhile
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok && strings.TrimSpace(v) != strconv.Itoa(first) {
				t.Errorf("thread %s: Cpus_allowed_list %q, want %d", e.Name(), strings.TrimSpace(v), first)
			}
		}
	}
}

// TestListMax: the kernel's CPU and node lists, and what is not one.
func TestListMax(t *testing.T) {
	for s, want := range map[string]int{"0": 0, "0-3\n": 3, "0,2-3": 3, "4-7,0-1": 7} {
		if got, ok := listMax(s); !ok || got != want {
			t.Errorf("listMax(%q) = %d %v, want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "x", "3-", "-1", "0,,1", "a-3"} {
		if _, ok := listMax(s); ok {
			t.Errorf("listMax(%q): ok", s)
		}
	}
	root := t.TempDir()
	p := filepath.Join(root, "devices/system/cpu/possible")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("0-5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := (Host{Root: root}).NumCPUsConf(); n != 6 {
		t.Errorf("NumCPUsConf with possible 0-5: %d, want 6", n)
	}
}

package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// fakeNUMA is a sysfs tree of two nodes (CPUs 0-1 and 2-3) and devices
// mlx5_0 on node 1, rxe0 without a PCI function, mlx5_1 on no node (-1).
func fakeNUMA(t *testing.T) numaHost {
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
	return numaHost{root: root}
}

// TestNUMAHost: the facts the placement reads, and what it makes of
// absent or malformed files.
func TestNUMAHost(t *testing.T) {
	h := fakeNUMA(t)
	if n, err := h.maxNode(); n != 1 || err != nil {
		t.Errorf("maxNode: %d %v", n, err)
	}
	for dev, want := range map[string]int{"mlx5_0": 1, "mlx5_1": -1, "rxe0": -1, "mlx5_2": -1, "nosuch": -1} {
		if got := h.deviceNode(dev); got != want {
			t.Errorf("deviceNode(%s) = %d, want %d", dev, got, want)
		}
	}
	if set, err := h.nodeCPUs(1); err != nil || set.Count() != 2 || !set.IsSet(2) || !set.IsSet(3) {
		t.Errorf("nodeCPUs(1): %v %v", set, err)
	}
	for _, n := range []int{9, 8, 5} {
		if _, err := h.nodeCPUs(n); err == nil {
			t.Errorf("nodeCPUs(%d): no error", n)
		}
	}
	if _, err := (numaHost{root: t.TempDir()}).maxNode(); err == nil {
		t.Error("maxNode without devices/system/node: no error")
	}
}

// TestCheckNUMANode: --numa_node's refusals, as perftest's parser's: one
// line, exit 2.
func TestCheckNUMANode(t *testing.T) {
	h := fakeNUMA(t)
	for _, c := range []struct {
		node int
		pin  bool
		want string
	}{
		{0, false, ""},
		{1, false, ""},
		{2, false, "--numa_node 2: NUMA node 2 does not exist (available: 0-1)"},
		{-3, false, "--numa_node -3: a node number is 0 or more"},
		{0, true, "--numa_node and --pin_cores cannot be used together (as perftest)"},
	} {
		err := checkNUMANode(h, c.node, c.pin)
		code, msg := cmdutil.ExitStatus(err)
		if (c.want == "") != (err == nil) || msg != c.want || (err != nil && code != cmdutil.ExitUsage) {
			t.Errorf("node %d pin %v: exit %d %q, want %q", c.node, c.pin, code, msg, c.want)
		}
	}
	if err := checkNUMANode(numaHost{root: t.TempDir()}, 0, false); err == nil || !strings.Contains(err.Error(), "shows no NUMA nodes") {
		t.Errorf("no NUMA: %v", err)
	}
}

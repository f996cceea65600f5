package perf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/placement"
)

// TestCheckNUMANode: --numa_node's refusals, as perftest's parser's: one
// line, exit 2.
func TestCheckNUMANode(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "devices/system/node/possible")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("0-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := placement.Host{Root: root}
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
	if err := checkNUMANode(placement.Host{Root: t.TempDir()}, 0, false); err == nil || !strings.Contains(err.Error(), "shows no NUMA nodes") {
		t.Errorf("no NUMA: %v", err)
	}
}

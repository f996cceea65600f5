package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// On a machine without RDMA (this build host) every netlink command prints
// one line and exits non-zero (exitUnsupported). Where the kernel has RDMA
// the commands must simply work.
func TestNetlinkCommandsWithoutRDMA(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Log("this kernel has RDMA; checking only that the commands succeed")
	}
	for _, args := range [][]string{{"link"}, {"link", "show"}, {"-j", "link", "show", "rxe0/1"}, {"dev", "show"}, {"res"}, {"res", "qp"}} {
		_, stderr, code := runCmd(t, args...)
		if _, err := os.Stat("/sys/class/infiniband"); err == nil {
			continue
		}
		if code != cmdutil.ExitUnsupported || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "no RDMA") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line", args, code, stderr, cmdutil.ExitUnsupported)
		}
	}
}

func TestLinkSysfs(t *testing.T) {
	out, stderr, code := runCmd(t, "--sysfs-root", rxeTree, "-j", "link")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	r := rows[0]
	want := map[string]any{"ifname": "rxe0", "port": 1.0, "state": "ACTIVE", "physical_state": "LINK_UP",
		"netdev": "vrxe0", "netdev_index": 4.0, "link_layer": "Ethernet", "active_mtu": 1024.0}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s = %v, want %v", k, r[k], v)
		}
	}
	if _, ok := r["lid"]; ok {
		t.Error("lid on an Ethernet port (rdma omits it)")
	}
	// The one-port form and the bare "link" are the same command.
	a, _, _ := runCmd(t, "--sysfs-root", rxeTree, "link", "show", "rxe1/1")
	if !strings.Contains(a, "rxe1/1") || strings.Contains(a, "rxe0/1") {
		t.Errorf("link show rxe1/1:\n%s", a)
	}
}

func TestLinkDevShowNotFound(t *testing.T) {
	for _, args := range [][]string{{"link", "show", "mlx5_9"}, {"link", "show", "rxe0/3"}, {"dev", "show", "foo"}} {
		_, stderr, code := runCmd(t, append([]string{"--sysfs-root", rxeTree}, args...)...)
		if code != cmdutil.ExitNotFound || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "rxe0") {
			t.Errorf("%v: exit %d, %q; want exit %d naming what exists", args, code, stderr, cmdutil.ExitNotFound)
		}
	}
	_, stderr, code := runCmd(t, "link", "show", "rxe0/x")
	if code != cmdutil.ExitUsage {
		t.Errorf("bad port: exit %d %q", code, stderr)
	}
}

func TestDevShowSysfs(t *testing.T) {
	out, stderr, code := runCmd(t, "--sysfs-root", mlx5Tree, "-j", "-d", "dev", "show", "mlx5_1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("%v %s", err, out)
	}
	r := rows[0]
	for k, v := range map[string]any{"ifname": "mlx5_1", "node_type": "ca", "fw": "16.35.2000", "pci_addr": "0000:03:00.1",
		"driver": "mlx5_core", "uverbs": "uverbs1", "hca_type": "MT4119", "board_id": "MT_0000000010"} {
		if r[k] != v {
			t.Errorf("%s = %v, want %v", k, r[k], v)
		}
	}
}

func TestResSysfsRootUnsupported(t *testing.T) {
	_, stderr, code := runCmd(t, "--sysfs-root", rxeTree, "res", "qp")
	if code != cmdutil.ExitUnsupported || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d %q", code, stderr)
	}
	_, _, code = runCmd(t, "res", "--pid", "1")
	if code != cmdutil.ExitUsage {
		t.Errorf("res --pid without an object: exit %d", code)
	}
}

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

const (
	rxeTree  = "../../internal/sysfs/testdata/rxe"
	mlx5Tree = "../../internal/sysfs/testdata/mlx5"
)

func gidsJSON(t *testing.T, args ...string) []gidJSON {
	t.Helper()
	out, stderr, code := runCmd(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
	}
	var rows []gidJSON
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return rows
}

func s(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestGIDsRXE(t *testing.T) {
	rows := gidsJSON(t, "--sysfs-root", rxeTree, "-j", "gids")
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4 (2 per rxe device): %+v", len(rows), rows)
	}
	r := rows[1]
	if r.Ifname != "rxe0" || r.Port != 1 || r.Index != 1 || r.GID != "0000:0000:0000:0000:0000:ffff:0a4d:0001" ||
		s(r.Type) != "RoCE v2" || s(r.SysfsType) != "RoCE v2" || s(r.Netdev) != "vrxe0" || s(r.IPv4) != "10.77.0.1" || r.IPv6 != nil {
		t.Errorf("rxe0 index 1: %+v", r)
	}
	r = rows[2]
	if r.Ifname != "rxe1" || r.Index != 0 || s(r.IPv6) != "fe80::10da:f9ff:fe8e:33c5" || r.IPv4 != nil {
		t.Errorf("rxe1 index 0: %+v", r)
	}
	all := gidsJSON(t, "--sysfs-root", rxeTree, "-j", "gids", "rxe0/1", "--all")
	if len(all) != 16 || all[5].GID != "0000:0000:0000:0000:0000:0000:0000:0000" || all[5].Type != nil || all[5].Netdev != nil {
		t.Errorf("--all: %d rows, slot 5 %+v", len(all), all[5])
	}
	// The benchmark recipe from the help.
	best := gidsJSON(t, "--sysfs-root", rxeTree, "-j", "gids", "--netdev", "vrxe1", "--type", "v2", "--ipv4")
	if len(best) != 1 || best[0].Ifname != "rxe1" || best[0].Index != 1 {
		t.Errorf("--netdev vrxe1 --type v2 --ipv4: %+v", best)
	}
	if rows := gidsJSON(t, "--sysfs-root", rxeTree, "-j", "gids", "--type", "v1"); len(rows) != 0 {
		t.Errorf("rxe has no RoCE v1 GIDs, got %+v", rows)
	}
	if rows := gidsJSON(t, "--sysfs-root", rxeTree, "-j", "gids", "--ip", "10.77.0.2"); len(rows) != 1 || rows[0].Ifname != "rxe1" {
		t.Errorf("--ip 10.77.0.2: %+v", rows)
	}
	if rows := gidsJSON(t, "--sysfs-root", rxeTree, "-j", "gids", "--best"); len(rows) != 2 || rows[0].Index != 1 || rows[1].Index != 1 {
		t.Errorf("--best: %+v", rows)
	}
}

func TestGIDsMLX5(t *testing.T) {
	rows := gidsJSON(t, "--sysfs-root", mlx5Tree, "-j", "gids")
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 6 RoCE + 1 IB", len(rows))
	}
	kinds := []string{"RoCE v1", "RoCE v2", "RoCE v1", "RoCE v2", "RoCE v1", "RoCE v2", "IB"}
	for i, r := range rows {
		if s(r.Type) != kinds[i] {
			t.Errorf("row %d type %s, want %s", i, s(r.Type), kinds[i])
		}
	}
	ib := rows[6]
	if ib.Ifname != "mlx5_1" || s(ib.SysfsType) != "IB/RoCE v1" || ib.Netdev != nil {
		t.Errorf("IB GID: %+v", ib)
	}
	for _, c := range []struct {
		args []string
		idx  []uint32
	}{
		{[]string{"--type", "v2", "--ipv4"}, []uint32{3}},
		{[]string{"--type", "v1", "--ipv6"}, []uint32{0, 4}},
		{[]string{"--ipv4", "--ipv6", "--type", "v2"}, []uint32{1, 3, 5}},
		{[]string{"--ip", "2001:db8::10"}, []uint32{4, 5}},
		{[]string{"--ip", "::ffff:192.168.1.10", "--type", "v2"}, []uint32{3}},
		{[]string{"--type", "ib"}, []uint32{0}},
		{[]string{"--netdev", "ens1f0", "--best"}, []uint32{3}},
		{[]string{"mlx5_0", "--best", "--ipv6"}, []uint32{5}}, // global over link-local (perftest 57927ab; 6.06 took 1)
		{[]string{"--netdev", "eth9"}, nil},
	} {
		rows := gidsJSON(t, append([]string{"--sysfs-root", mlx5Tree, "-j", "gids"}, c.args...)...)
		var got []uint32
		for _, r := range rows {
			got = append(got, r.Index)
		}
		if fmtU(got) != fmtU(c.idx) {
			t.Errorf("%v: indices %v, want %v", c.args, got, c.idx)
		}
	}
}

func fmtU(v []uint32) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestGIDsTable(t *testing.T) {
	out, _, code := runCmd(t, "--sysfs-root", mlx5Tree, "gids", "mlx5_0/1", "--type", "v2")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 4 || !strings.HasPrefix(lines[0], "DEV") {
		t.Fatalf("code %d:\n%s", code, out)
	}
	for _, want := range []string{"192.168.1.10", "RoCE v2", "ens1f0", "2001:db8::10"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestGIDsErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--sysfs-root", rxeTree, "gids", "mlx5_0"}, cmdutil.ExitNotFound, `no RDMA device "mlx5_0" (devices: rxe0, rxe1)`},
		{[]string{"--sysfs-root", rxeTree, "gids", "rxe0/2"}, cmdutil.ExitNotFound, "no RDMA port rxe0/2 (ports: rxe0/1)"},
		{[]string{"--sysfs-root", rxeTree, "gids", "rxe0/x"}, cmdutil.ExitUsage, "port must be a number"},
		{[]string{"--sysfs-root", rxeTree, "gids", "--type", "v3"}, cmdutil.ExitUsage, "want v1, v2 or ib"},
		{[]string{"--sysfs-root", rxeTree, "gids", "--ip", "10.1"}, cmdutil.ExitUsage, "not an IP address"},
		{[]string{"--sysfs-root", t.TempDir(), "gids"}, cmdutil.ExitUnsupported, "has no RDMA devices (no class/infiniband in it"},
		{[]string{"--sysfs-root", "/does/not/exist", "gids"}, cmdutil.ExitUsage, "--sysfs-root /does/not/exist: no such file or directory"},
		{[]string{"--sysfs-root", rxeTree, "counters", "rxe7"}, cmdutil.ExitNotFound, "devices: rxe0, rxe1"},
		{[]string{"--sysfs-root", t.TempDir(), "counters"}, cmdutil.ExitUnsupported, "no RDMA devices"},
	} {
		_, stderr, code := runCmd(t, c.args...)
		if code != c.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.msg) {
			t.Errorf("%v: code %d stderr %q; want code %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

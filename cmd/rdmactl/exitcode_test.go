package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/mlx5cmd"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
)

// TestExitStatus table-drives the one mapping with the errors each package
// makes, as the commands return them (often wrapped).
func TestExitStatus(t *testing.T) {
	kernel := func(op string, e syscall.Errno) error { return &nldev.KernelError{Op: op, Errno: e} }
	path := func(e syscall.Errno) error {
		return &fs.PathError{Op: "open", Path: "/sys/class/infiniband/rxe0/ports/1/counters/x", Err: e}
	}
	for _, c := range []struct {
		name string
		err  error
		code int
		msg  string // "" = the error's own text
	}{
		{"nil", nil, ExitOK, ""},
		{"plain", errors.New("something broke"), ExitFailure, ""},
		{"first line only", errors.New("line one\nline two"), ExitFailure, "line one"},
		{"canceled", fmt.Errorf("interrupted: %w (results so far printed)", context.Canceled), ExitInterrupted, ""},
		{"canceled beats a code", WithCode(ExitPeer, fmt.Errorf("x: %w", context.Canceled)), ExitInterrupted, "x: context canceled"},
		{"usage", UsageErrorf("--type %q: want v1, v2 or ib", "v9"), ExitUsage, `--type "v9": want v1, v2 or ib`},
		{"unsupportedf", Unsupportedf("res needs the live kernel"), ExitUnsupported, ""},
		{"cobra unknown command", errors.New(`unknown command "x" for "rdmactl"`), ExitUsage, ""},
		{"cobra unknown flag", errors.New("unknown flag: --x"), ExitUsage, ""},
		{"cobra args", errors.New("accepts at most 1 arg(s), received 2"), ExitUsage, ""},
		{"peer", &perf.PeerError{Err: errors.New("peer closed the connection")}, ExitPeer, ""},
		{"perf threshold", fmt.Errorf("write_bw: %w", &perf.LimitError{Check: perf.LimitCheck{Name: "bw_avg", Limit: 20, Value: 15, Unit: "MiB/s"}}),
			ExitPerfThreshold, "write_bw: bw_avg 15.00 MiB/s is below -w/--limit_bw 20 by 5.00 MiB/s (25.0%)"},
		{"peer wrapping verbs", &perf.PeerError{Err: &verbs.DeviceNotFoundError{Name: "x"}}, ExitPeer, ""},
		{"no netlink", fmt.Errorf("%w: %v", nldev.ErrNoRDMA, syscall.EPROTONOSUPPORT), ExitUnsupported, ErrNoRDMA.Error()},
		{"no sysfs", sysfs.ErrNoRDMA, ExitUnsupported, ""},
		{"nldev unknown device", &nldev.NotFoundError{Kind: "device", Name: "mlx5_9", Exists: []string{"rxe0"}}, ExitNotFound, ""},
		{"sysfs unknown port", &sysfs.NotFoundError{Kind: "port", Name: "rxe0/9", Exists: []string{"rxe0/1"}}, ExitNotFound, ""},
		{"verbs unknown device", &verbs.DeviceNotFoundError{Name: "x"}, ExitNotFound, ""},
		{"verbs unknown port", &verbs.PortNotFoundError{Device: "rxe0", Port: 2, Ports: 1}, ExitNotFound, ""},
		{"netlink ENODEV", fmt.Errorf("ports of rxe0: %w", kernel("PORT_GET", syscall.ENODEV)), ExitNotFound, ""},
		{"netlink ENOENT", kernel("GET", syscall.ENOENT), ExitNotFound, ""},
		{"sysfs file gone", path(syscall.ENOENT), ExitNotFound, ""},
		{"other file missing", &fs.PathError{Op: "open", Path: "/tmp/x", Err: syscall.ENOENT}, ExitFailure, ""},
		{"capture into a full DIR", fmt.Errorf("capture: %w", &inventory.DestNotEmptyError{Dir: "d"}), ExitUsage, ""},
		{"netlink EPERM", kernel("RES_QP_GET", syscall.EPERM), ExitPermission, "netlink RES_QP_GET: operation not permitted (needs root or CAP_NET_ADMIN)"},
		{"netlink EACCES", kernel("STAT_GET", syscall.EACCES), ExitPermission, "netlink STAT_GET: permission denied (needs root or CAP_NET_ADMIN)"},
		{"sysfs EACCES", path(syscall.EACCES), ExitPermission, ""},
		{"uverbs open", &verbs.PermissionError{Device: "rxe0", Path: "/dev/infiniband/uverbs0", Err: syscall.EACCES}, ExitPermission, ""},
		{"memlock", &verbs.MemlockError{Device: "rxe0", Op: "REG_MR", Limit: 65536, Need: 1 << 20}, ExitPermission, ""},
		{"uverbs EPERM", &verbs.CommandError{Device: "mlx5_0", Op: "DEVX_OTHER", Errno: syscall.EPERM}, ExitPermission, ""},
		{"netlink EOPNOTSUPP", kernel("STAT_GET", syscall.EOPNOTSUPP), ExitUnsupported, "netlink STAT_GET: operation not supported (this kernel does not support the request)"},
		{"uverbs EOPNOTSUPP", &verbs.CommandError{Device: "rxe0", Op: "QUERY_GID_TABLE", Errno: syscall.EOPNOTSUPP}, ExitUnsupported, ""},
		{"no data path", &verbs.NoDataPathError{Device: "efa0", Driver: "efa"}, ExitUnsupported, ""},
		{"not mlx5", fmt.Errorf("%w; hca-caps needs an mlx5 (ConnectX) device", &verbs.NotMLX5Error{Device: "rxe0", Driver: "rxe"}), ExitUnsupported, ""},
		{"no uverbs device", inventory.ErrNoVerbsDevice, ExitUnsupported, ""},
		// A device removed while open is not an unknown device: exit 1,
		// as before the mapping was one function.
		{"uverbs ENODEV", &verbs.CommandError{Device: "rxe0", Op: "POST_SEND", Errno: syscall.ENODEV}, ExitFailure, ""},
		{"mlx5 status", fmt.Errorf("mlx5_0: %w", &mlx5cmd.StatusError{Opcode: mlx5cmd.OpQueryHCACap, Status: 2}), ExitFailure, ""},
	} {
		code, msg := ExitStatus(c.err)
		want := c.msg
		if want == "" && c.err != nil {
			want = c.err.Error()
		}
		if code != c.code || msg != want {
			t.Errorf("%s: (%d, %q), want (%d, %q)", c.name, code, msg, c.code, want)
		}
	}
}

// TestExitCodesOfCommands: commands' codes on inputs that give the same
// answer on any machine (captured trees, bad arguments), one stderr line
// each.
func TestExitCodesOfCommands(t *testing.T) {
	root := "--sysfs-root=" + rxeFixture
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{root, "link", "show"}, ExitOK},
		{[]string{root, "link", "show", "rxe0/0"}, ExitUsage},
		{[]string{root, "link", "show", "nosuch0"}, ExitNotFound},
		{[]string{root, "dev", "show", "nosuch0"}, ExitNotFound},
		{[]string{root, "gids", "rxe0/9"}, ExitNotFound},
		{[]string{root, "counters", "nosuch0"}, ExitNotFound},
		{[]string{root, "gids", "--type", "v9"}, ExitUsage},
		{[]string{root, "dev", "query"}, ExitUnsupported},
		{[]string{root, "dev", "hca-caps"}, ExitUnsupported},
		{[]string{root, "res"}, ExitUnsupported},
		{[]string{"--sysfs-root", t.TempDir(), "link", "show"}, ExitUnsupported},
		{[]string{"dev", "query", "rxe0/x"}, ExitUsage},
		{[]string{"perf", "write", "--bogus"}, ExitUsage},
		{[]string{"version", "extra"}, ExitUsage},
		{[]string{"--bogus"}, ExitUsage},
	} {
		_, stderr, code := runCmd(t, c.args...)
		if code != c.code || (code != 0) != (strings.Count(stderr, "\n") == 1) || code != 0 && !strings.HasPrefix(stderr, "rdmactl: ") {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, c.code, stderr)
		}
	}
}

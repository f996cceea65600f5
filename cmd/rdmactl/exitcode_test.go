package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/mlx5cmd"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
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
		{"nil", nil, cmdutil.ExitOK, ""},
		{"plain", errors.New("something broke"), cmdutil.ExitFailure, ""},
		{"first line only", errors.New("line one\nline two"), cmdutil.ExitFailure, "line one"},
		{"canceled", fmt.Errorf("interrupted: %w (results so far printed)", context.Canceled), cmdutil.ExitInterrupted, ""},
		{"canceled beats a code", cmdutil.WithCode(cmdutil.ExitPeer, fmt.Errorf("x: %w", context.Canceled)), cmdutil.ExitInterrupted, "x: context canceled"},
		{"usage", cmdutil.UsageErrorf("--type %q: want v1, v2 or ib", "v9"), cmdutil.ExitUsage, `--type "v9": want v1, v2 or ib`},
		{"unsupportedf", cmdutil.Unsupportedf("res needs the live kernel"), cmdutil.ExitUnsupported, ""},
		{"cobra unknown command", errors.New(`unknown command "x" for "rdmactl"`), cmdutil.ExitUsage, ""},
		{"cobra unknown flag", errors.New("unknown flag: --x"), cmdutil.ExitUsage, ""},
		{"cobra args", errors.New("accepts at most 1 arg(s), received 2"), cmdutil.ExitUsage, ""},
		{"peer", &perf.PeerError{Err: errors.New("peer closed the connection")}, cmdutil.ExitPeer, ""},
		{"perf threshold", fmt.Errorf("write_bw: %w", &perf.LimitError{Check: perf.LimitCheck{Name: "bw_avg", Limit: 20, Value: 15, Unit: "MiB/s"}}),
			cmdutil.ExitPerfThreshold, "write_bw: bw_avg 15.00 MiB/s is below -w/--limit_bw 20 by 5.00 MiB/s (25.0%)"},
		{"peer wrapping verbs", &perf.PeerError{Err: &verbs.DeviceNotFoundError{Name: "x"}}, cmdutil.ExitPeer, ""},
		{"no netlink", fmt.Errorf("%w: %v", nldev.ErrNoRDMA, syscall.EPROTONOSUPPORT), cmdutil.ExitUnsupported, cmdutil.ErrNoRDMA.Error()},
		{"no sysfs", sysfs.ErrNoRDMA, cmdutil.ExitUnsupported, ""},
		{"nldev unknown device", &nldev.NotFoundError{Kind: "device", Name: "mlx5_9", Exists: []string{"rxe0"}}, cmdutil.ExitNotFound, ""},
		{"sysfs unknown port", &sysfs.NotFoundError{Kind: "port", Name: "rxe0/9", Exists: []string{"rxe0/1"}}, cmdutil.ExitNotFound, ""},
		{"verbs unknown device", &verbs.DeviceNotFoundError{Name: "x"}, cmdutil.ExitNotFound, ""},
		{"verbs unknown port", &verbs.PortNotFoundError{Device: "rxe0", Port: 2, Ports: 1}, cmdutil.ExitNotFound, ""},
		{"netlink ENODEV", fmt.Errorf("ports of rxe0: %w", kernel("PORT_GET", syscall.ENODEV)), cmdutil.ExitNotFound, ""},
		{"netlink ENOENT", kernel("GET", syscall.ENOENT), cmdutil.ExitNotFound, ""},
		{"sysfs file gone", path(syscall.ENOENT), cmdutil.ExitNotFound, ""},
		{"other file missing", &fs.PathError{Op: "open", Path: "/tmp/x", Err: syscall.ENOENT}, cmdutil.ExitFailure, ""},
		{"capture into a full DIR", fmt.Errorf("capture: %w", &inventory.DestNotEmptyError{Dir: "d"}), cmdutil.ExitUsage, ""},
		{"netlink EPERM", kernel("RES_QP_GET", syscall.EPERM), cmdutil.ExitPermission, "netlink RES_QP_GET: operation not permitted (needs root or CAP_NET_ADMIN)"},
		{"netlink EACCES", kernel("STAT_GET", syscall.EACCES), cmdutil.ExitPermission, "netlink STAT_GET: permission denied (needs root or CAP_NET_ADMIN)"},
		{"sysfs EACCES", path(syscall.EACCES), cmdutil.ExitPermission, ""},
		{"uverbs open", &verbs.PermissionError{Device: "rxe0", Path: "/dev/infiniband/uverbs0", Err: syscall.EACCES}, cmdutil.ExitPermission, ""},
		{"memlock", &verbs.MemlockError{Device: "rxe0", Op: "REG_MR", Limit: 65536, Need: 1 << 20}, cmdutil.ExitPermission, ""},
		{"uverbs EPERM", &verbs.CommandError{Device: "mlx5_0", Op: "DEVX_OTHER", Errno: syscall.EPERM}, cmdutil.ExitPermission, ""},
		{"netlink EOPNOTSUPP", kernel("STAT_GET", syscall.EOPNOTSUPP), cmdutil.ExitUnsupported, "netlink STAT_GET: operation not supported (this kernel does not support the request)"},
		{"uverbs EOPNOTSUPP", &verbs.CommandError{Device: "rxe0", Op: "QUERY_GID_TABLE", Errno: syscall.EOPNOTSUPP}, cmdutil.ExitUnsupported, ""},
		{"no data path", &verbs.NoDataPathError{Device: "efa0", Driver: "efa"}, cmdutil.ExitUnsupported, ""},
		{"not mlx5", fmt.Errorf("%w; hca-caps needs an mlx5 (ConnectX) device", &mlx5.NotMLX5Error{Device: "rxe0", Driver: "rxe"}), cmdutil.ExitUnsupported, ""},
		{"no uverbs device", inventory.ErrNoVerbsDevice, cmdutil.ExitUnsupported, ""},
		// A device removed while open is not an unknown device: exit 1,
		// as before the mapping was one function.
		{"uverbs ENODEV", &verbs.CommandError{Device: "rxe0", Op: "POST_SEND", Errno: syscall.ENODEV}, cmdutil.ExitFailure, ""},
		{"mlx5 status", fmt.Errorf("mlx5_0: %w", &mlx5cmd.StatusError{Opcode: mlx5cmd.OpQueryHCACap, Status: 2}), cmdutil.ExitFailure, ""},
	} {
		code, msg := cmdutil.ExitStatus(c.err)
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
		{[]string{root, "link", "show"}, cmdutil.ExitOK},
		{[]string{root, "link", "show", "rxe0/0"}, cmdutil.ExitUsage},
		{[]string{root, "link", "show", "nosuch0"}, cmdutil.ExitNotFound},
		{[]string{root, "dev", "show", "nosuch0"}, cmdutil.ExitNotFound},
		{[]string{root, "gids", "rxe0/9"}, cmdutil.ExitNotFound},
		{[]string{root, "counters", "nosuch0"}, cmdutil.ExitNotFound},
		{[]string{root, "gids", "--type", "v9"}, cmdutil.ExitUsage},
		{[]string{root, "dev", "query"}, cmdutil.ExitUnsupported},
		{[]string{root, "dev", "hca-caps"}, cmdutil.ExitUnsupported},
		{[]string{root, "res"}, cmdutil.ExitUnsupported},
		{[]string{"--sysfs-root", t.TempDir(), "link", "show"}, cmdutil.ExitUnsupported},
		{[]string{"dev", "query", "rxe0/x"}, cmdutil.ExitUsage},
		{[]string{"perf", "write", "--bogus"}, cmdutil.ExitUsage},
		{[]string{"version", "extra"}, cmdutil.ExitUsage},
		{[]string{"--bogus"}, cmdutil.ExitUsage},
	} {
		_, stderr, code := runCmd(t, c.args...)
		if code != c.code || (code != 0) != (strings.Count(stderr, "\n") == 1) || code != 0 && !strings.HasPrefix(stderr, "rdmactl: ") {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, c.code, stderr)
		}
	}
}

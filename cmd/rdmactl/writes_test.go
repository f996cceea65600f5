package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/nldev"
	"github.com/spf13/cobra"
)

// Bad input to the writes is one line on stderr and exit 2, before any
// netlink request (this machine has no RDMA: reaching the kernel would be
// exit 5 instead).
func TestWritesBadInput(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := [][]string{
		{"link", "add"},
		{"link", "add", "rxe9", "type", "rxe"},
		{"link", "add", "rxe9", "type", "roce", "netdev", "lo"},
		{"link", "add", "rxe%d", "type", "rxe", "netdev", "lo"},
		{"link", "add", long, "type", "rxe", "netdev", "lo"},
		{"link", "add", "rxe9", "type", "rxe", "netdev", "lo", "netdev", "lo"},
		{"link", "add", "rxe9", "kind", "rxe", "netdev", "lo"},
		{"link", "delete"},
		{"dev", "set", "rxe0"},
		{"dev", "set", "rxe0", "name", long},
		{"dev", "set", "rxe0", "name", "a/b"},
		{"dev", "set", "rxe0", "colour", "red"},
		{"dev", "set", "rxe0", "adaptive-moderation", "maybe"},
		{"dev", "set", "rxe0", "name", "x", "netns", "y"},
		{"system", "set"},
		{"system", "set", "netns", "private"},
		{"system", "set", "privileged-qkey", "yes"},
		{"system", "set", "copy-on-fork", "on"},
		{"statistic", "frobnicate"},
		{"statistic", "qp", "set", "link", "rxe0/1", "auto", "color", "on"},
		{"statistic", "qp", "set", "link", "rxe0", "auto", "type", "on"},
		{"statistic", "qp", "set", "link", "rxe0/1", "auto"},
		{"statistic", "qp", "set", "link", "rxe0/1", "auto", "type", "on", "optional-counters", "sometimes"},
		{"statistic", "qp", "bind", "link", "rxe0/1"},
		{"statistic", "qp", "bind", "link", "rxe0/1", "lqpn", "x"},
		{"statistic", "qp", "unbind", "link", "rxe0/1", "lqpn", "5"},
		{"statistic", "qp", "show", "lqpn"},
		{"statistic", "qp", "show", "qpn", "3"},
		{"statistic", "set", "link", "rxe0/1", "optional-counters"},
		{"statistic", "set", "link", "rxe0/1", "optional-counters", "a,,b"},
		{"statistic", "unset", "link", "rxe0/1", "optional-counters", "a"},
		{"statistic", "mode", "link", "rxe0/x"},
	}
	for _, args := range cases {
		_, stderr, code := runCmd(t, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "rdmactl: ") {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line", args, code, stderr, cmdutil.ExitUsage)
		}
	}
}

func TestOpenNetns(t *testing.T) {
	dir := t.TempDir()
	old := netnsRunDir
	netnsRunDir = dir
	t.Cleanup(func() { netnsRunDir = old })
	if err := os.WriteFile(filepath.Join(dir, "blue"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := openNetns("blue")
	if err != nil {
		t.Fatal(err)
	}
	syscall.Close(fd)
	_, err = openNetns("green")
	var ee *cmdutil.ExitError
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitNotFound || !strings.Contains(err.Error(), "blue") {
		t.Fatalf("unknown namespace: %v (want exit 3 listing blue)", err)
	}
	if got := netnsNames(); len(got) != 1 || got[0] != "blue" {
		t.Fatalf("netnsNames %v", got)
	}
}

func TestWriteErrorCodes(t *testing.T) {
	why := map[syscall.Errno]cmdutil.Refusal{syscall.EBUSY: {Code: cmdutil.ExitFailure, Msg: "busy because"}}
	cases := []struct {
		err  error
		code int
		has  string
	}{
		{&nldev.KernelError{Op: "SET", Errno: syscall.EPERM}, cmdutil.ExitPermission, "CAP_NET_ADMIN"},
		{&nldev.KernelError{Op: "SET", Errno: syscall.EACCES}, cmdutil.ExitPermission, "CAP_NET_ADMIN"},
		{&nldev.KernelError{Op: "SET", Errno: syscall.EOPNOTSUPP}, cmdutil.ExitUnsupported, "EOPNOTSUPP"},
		{&nldev.KernelError{Op: "SET", Errno: syscall.EBUSY}, cmdutil.ExitFailure, "busy because"},
		{&nldev.KernelError{Op: "SET", Errno: syscall.EINVAL}, cmdutil.ExitFailure, "EINVAL"},
		{&nldev.NotFoundError{Kind: "device", Name: "x"}, cmdutil.ExitNotFound, "no RDMA device"},
	}
	for _, tc := range cases {
		err := cmdutil.WriteError("dev set x", tc.err, why)
		var ee *cmdutil.ExitError
		if !errors.As(err, &ee) || ee.Code != tc.code || !strings.Contains(err.Error(), tc.has) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: got %v", tc.err, err)
		}
	}
}

// The keyword commands complete their keywords, then each keyword's
// values: devices and ports, netns names, on|off, modes.
func TestKeywordCompletion(t *testing.T) {
	dir := t.TempDir()
	old := netnsRunDir
	netnsRunDir = dir
	t.Cleanup(func() { netnsRunDir = old })
	os.WriteFile(filepath.Join(dir, "blue"), nil, 0o644)
	complete := func(args ...string) string {
		var out bytes.Buffer
		root := newRootCmd(&cmdutil.App{Stdout: &out, Stderr: &out})
		root.SetArgs(append([]string{cobra.ShellCompRequestCmd, "--sysfs-root", rxeFixture}, args...))
		if err := root.Execute(); err != nil {
			t.Fatalf("__complete %q: %v", args, err)
		}
		var words []string
		for _, l := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if !strings.HasPrefix(l, ":") && !strings.HasPrefix(l, "Completion ended") {
				w, _, _ := strings.Cut(l, "\t")
				words = append(words, w)
			}
		}
		return strings.Join(words, " ")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "set", "rx"}, "rxe0 rxe1"},
		{[]string{"dev", "set", "rxe0", ""}, "name netns adaptive-moderation"},
		{[]string{"dev", "set", "rxe0", "netns", ""}, "blue"},
		{[]string{"dev", "set", "rxe0", "adaptive-moderation", ""}, "on off"},
		{[]string{"system", "set", ""}, "netns privileged-qkey"},
		{[]string{"system", "set", "netns", ""}, "shared exclusive"},
		{[]string{"statistic", "qp", "show", ""}, "link lqpn pid cntn"},
		{[]string{"statistic", "qp", "show", "link", "rxe0/"}, "rxe0/1"},
		{[]string{"statistic", "qp", "set", "link", "rxe0/1", "auto", ""}, "type pid type,pid off"},
		{[]string{"statistic", "qp", "set", "link", "rxe0/1", "auto", "type", ""}, "on off"},
		{[]string{"statistic", "mode", ""}, "supported link"},
		{[]string{"statistic", "set", "link", "rxe0/1", "optional-counters", "rdma_s"}, "rdma_sends"},
		{[]string{"statistic", "set", "link", "rxe0/1", "optional-counters", "ack_deferred,rdma_s"}, "ack_deferred,rdma_sends"},
	} {
		if got := complete(tc.args...); got != tc.want {
			t.Errorf("%q: completes %q, want %q", tc.args, got, tc.want)
		}
	}
}

// statistic qp bind needs lqpn, unbind cntn; each takes the other too.
func TestParseQPArgs(t *testing.T) {
	q, err := parseQPArgs("statistic qp bind", []string{"link", "rxe0/1", "cntn", "4", "lqpn", "17"}, "lqpn", "cntn")
	if err != nil || q.dev != "rxe0" || q.port != 1 || q.lqpn == nil || *q.lqpn != 17 || q.cntn == nil || *q.cntn != 4 {
		t.Fatalf("bind: %+v, %v", q, err)
	}
	q, err = parseQPArgs("statistic qp unbind", []string{"link", "rxe0/2", "cntn", "4"}, "cntn", "lqpn")
	if err != nil || q.port != 2 || q.lqpn != nil || q.cntn == nil || *q.cntn != 4 {
		t.Fatalf("unbind: %+v, %v", q, err)
	}
	for _, c := range []struct {
		need, other string
		args        []string
		want        string
	}{
		{"lqpn", "cntn", []string{"link", "rxe0/1", "cntn", "4"}, "statistic qp bind: needs lqpn N"},
		{"cntn", "lqpn", []string{"link", "rxe0/1", "lqpn", "4"}, "statistic qp bind: needs cntn N"},
		{"lqpn", "cntn", []string{"link", "rxe0/1", "lqpn", "x", "cntn", "y"}, `statistic qp bind: lqpn "x": want a number`},
		{"cntn", "lqpn", []string{"link", "rxe0/1", "lqpn", "x", "cntn", "y"}, `statistic qp bind: cntn "y": want a number`},
		{"lqpn", "cntn", []string{"link", "rxe0", "lqpn", "1"}, "statistic qp bind: link rxe0: needs a port, as in rxe0/1"},
		{"lqpn", "cntn", []string{"lqpn", "1"}, "statistic qp bind: needs link DEV/PORT"},
		{"lqpn", "cntn", []string{"link", "rxe0/1", "qpn", "1"}, `statistic qp bind: unexpected "qpn" (expected: link, lqpn, cntn)`},
	} {
		_, err := parseQPArgs("statistic qp bind", c.args, c.need, c.other)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v (need %s): %v, want %q", c.args, c.need, err, c.want)
		}
	}
}

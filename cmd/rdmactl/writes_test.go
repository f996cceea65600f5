package main

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/nldev"
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
// values: devices and ports, on|off, modes (netns names: dev's
// TestNetnsCompletion).
func TestKeywordCompletion(t *testing.T) {
	complete := func(args ...string) string { return strings.Join(completeWords(t, args...), " ") }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"dev", "set", "rx"}, "rxe0 rxe1"},
		{[]string{"dev", "set", "rxe0", ""}, "name netns adaptive-moderation"},
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

package dropin

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// TestGetoptLong: the forms glibc's getopt_long takes, and its
// diagnostics (posix/getopt.c).
func TestGetoptLong(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // options as name=arg, then | and the operands, or the error
	}{
		{[]string{"-lv"}, "l= v= |"},
		{[]string{"-drxe0", "-i", "1"}, "d=rxe0 i=1 |"},
		{[]string{"-d", "rxe0", "extra", "-v"}, "d=rxe0 v= | extra"},
		{[]string{"--ib-dev=rxe1", "--ib-port", "2"}, "d=rxe1 i=2 |"},
		{[]string{"--ib-d", "rxe1", "--verb"}, "d=rxe1 v= |"},
		{[]string{"--", "-v"}, "| -v"},
		{[]string{"-", "-v"}, "v= | -"},
		{[]string{"-x"}, "invalid option -- 'x'"},
		{[]string{"-vx"}, "invalid option -- 'x'"},
		{[]string{"-d"}, "option requires an argument -- 'd'"},
		{[]string{"--ib-dev"}, "option '--ib-dev' requires an argument"},
		{[]string{"--list=1"}, "option '--list' doesn't allow an argument"},
		{[]string{"--foo"}, "unrecognized option '--foo'"},
		{[]string{"--ib"}, "option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'"},
	} {
		opts, operands, err := getoptLong(c.args, ibvDevinfoOptions)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			var f []string
			for _, o := range opts {
				f = append(f, o.Name+"="+o.Arg)
			}
			got = strings.TrimSpace(strings.Join(f, " ") + " | " + strings.Join(operands, " "))
		}
		if got != c.want {
			t.Errorf("%q: %q, want %q", c.args, got, c.want)
		}
	}
}

func TestStrtol(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, " 2": 2, "0x1f": 31, "010": 8, "1abc": 1, "abc": 0, "-3": -3, "+4": 4, "": 0, "0x": 0, "09": 0} {
		if got := strtol(in); got != want {
			t.Errorf("strtol(%q) = %d, want %d", in, got, want)
		}
	}
}

func run(t *testing.T, tool string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	tl, ok := Lookup(tool)
	if !ok {
		t.Fatalf("no tool %s", tool)
	}
	var o, e strings.Builder
	env := Env{Stdout: &o, Stderr: &e, Open: func() (*inventory.Source, error) { return nil, errors.New("no RDMA here") }}
	code = tl.Run(env, append([]string{"/usr/bin/" + tool}, args...))
	return o.String(), e.String(), code
}

// TestIbvDevinfoCommandLine: ibv_devinfo's refusals, with its words and
// exit statuses (devinfo.c: usage on stdout, -1 for a bad option, 1 for
// a bad port).
func TestIbvDevinfoCommandLine(t *testing.T) {
	o, e, code := run(t, "ibv_devinfo", "-x")
	if code != 255 || e != "/usr/bin/ibv_devinfo: invalid option -- 'x'\n" || !strings.HasPrefix(o, "Usage: /usr/bin/ibv_devinfo             print the ca attributes\n") {
		t.Errorf("-x: exit %d, stderr %q, stdout %q", code, e, o)
	}
	if _, _, code := run(t, "ibv_devinfo", "-i", "0"); code != 1 {
		t.Errorf("-i 0: exit %d, want 1", code)
	}
	if _, e, code := run(t, "ibv_devinfo", "-i", "0x1", "-d", "rxe0"); code != 255 || !strings.HasPrefix(e, "Failed to get IB devices list") {
		t.Errorf("without RDMA: exit %d, %q", code, e)
	}
	if _, e, code := run(t, "ibv_devices"); code != 1 || !strings.HasPrefix(e, "Failed to get IB devices list") {
		t.Errorf("ibv_devices without RDMA: exit %d, %q", code, e)
	}
}

// TestNames: what 'rdmactl links' makes.
func TestNames(t *testing.T) {
	if got := fmt.Sprint(Names()); got != "[ib_atomic_bw ib_atomic_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat ib_write_bw ib_write_lat ibstat ibv_devices ibv_devinfo rdma]" {
		t.Errorf("names %s", got)
	}
	if _, ok := Lookup("rdmactl"); ok {
		t.Error("rdmactl is a tool name")
	}
}

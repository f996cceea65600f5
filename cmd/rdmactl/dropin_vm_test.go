//go:build vmtest

package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVMDropinMatchesTools: through the links 'rdmactl links' makes, each
// command line prints what Debian's ibv_devices, ibv_devinfo, ibstat and
// rdma (iproute2 6.1) print on the same devices, byte for byte, on stdout and stderr, with
// the same exit status. Both are run by bare name from PATH, so that
// argv[0] (in getopt's diagnostics and the usage) is the same. ibstat's
// ibwarn/ibpanic lines carry the process id, which is masked in both.
func TestVMDropinMatchesTools(t *testing.T) {
	dir := toolLinks(t)
	tools := map[string]string{}
	for _, n := range []string{"ibv_devices", "ibv_devinfo", "ibstat", "rdma"} {
		p, err := exec.LookPath(n)
		if err != nil {
			t.Fatalf("%s: %v (the VM must provide it)", n, err)
		}
		tools[n] = filepath.Dir(p)
	}
	run := func(pathDir string, argv []string) (string, string, int, error) {
		cmd := exec.Command(filepath.Join(pathDir, argv[0]), argv[1:]...)
		cmd.Args[0] = argv[0]
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			code = xe.ExitCode()
		} else if err != nil {
			return "", "", 0, fmt.Errorf("%v: %v", argv, err)
		}
		return cntrRE.ReplaceAllString(o.String(), "$1:\t\t[N]"), pidRE.ReplaceAllString(e.String(), "$1: [PID]"), code, nil
	}
	lines := [][]string{
		{"ibv_devices"},
		{"ibv_devices", "extra"},
		{"ibv_devinfo"},
		{"ibv_devinfo", "-d", "rxe0"},
		{"ibv_devinfo", "-drxe1", "-i", "1"},
		{"ibv_devinfo", "--ib-dev=rxe1", "--ib-port", "1"},
		{"ibv_devinfo", "-i", "1"},
		{"ibv_devinfo", "-i", "0x1"},
		{"ibv_devinfo", "-l"},
		{"ibv_devinfo", "--list"},
		{"ibv_devinfo", "-d", "nosuch"},
		{"ibv_devinfo", "-i", "0"},
		{"ibv_devinfo", "-i", "2"},
		{"ibv_devinfo", "-x"},
		{"ibv_devinfo", "--foo"},
		{"ibv_devinfo", "-d"},
		{"ibv_devinfo", "--ib"},
		{"ibv_devinfo", "-v"},
		{"ibv_devinfo", "-v", "-d", "rxe0"},
		{"ibv_devinfo", "--verbose", "-d", "rxe1", "-i", "1"},
		{"ibv_devinfo", "-v", "-l"},
		{"ibv_devinfo", "-vi1"},
		{"ibv_devinfo", "-v", "-i", "2"},
		{"ibstat"},
		{"ibstat", "rxe0"},
		{"ibstat", "rxe1", "1"},
		{"ibstat", "rxe0", "0x1"},
		{"ibstat", "-l"},
		{"ibstat", "--list_of_cas", "rxe1"},
		{"ibstat", "-s"},
		{"ibstat", "rxe1", "-s"},
		{"ibstat", "-p"},
		{"ibstat", "--port_list", "rxe0"},
		{"ibstat", "nosuch"},
		{"ibstat", "rxe0", "2"},
		{"ibstat", "rxe0", "x"},
		{"ibstat", "-x"},
		{"ibstat", "-C", "rxe0"},
		{"ibstat", "--v"},
		{"ibstat", "-z"},
		{"ibstat", "-h"},
		{"ibstat", "--help"},
		{"ibstat", "-V"},
		{"ibstat", "-d", "-v", "-l"},
		{"ibstat", "-dd", "-p", "rxe1"},
		{"rdma"},
		{"rdma", "-V"},
		{"rdma", "help"},
		{"rdma", "-x"},
		{"rdma", "-b"},
		{"rdma", "foo"},
		{"rdma", "dev"},
		{"rdma", "dev", "show"},
		{"rdma", "-j", "dev", "show"},
		{"rdma", "-j", "-p", "dev", "show"},
		{"rdma", "-d", "dev", "show"},
		{"rdma", "-j", "-d", "dev", "show"},
		{"rdma", "-p", "-j", "-d", "dev", "show"},
		{"rdma", "dev", "show", "rxe1"},
		{"rdma", "d", "s", "rxe0"},
		{"rdma", "dev", "show", "-j", "rxe0"},
		{"rdma", "dev", "show", "rxe0", "extra"},
		{"rdma", "dev", "show", "nosuch"},
		{"rdma", "-j", "dev", "show", "nosuch"},
		{"rdma", "-j", "-p", "dev", "show", "nosuch"},
		{"rdma", "dev", "foo"},
		{"rdma", "dev", "help"},
		{"rdma", "link"},
		{"rdma", "link", "show"},
		{"rdma", "-d", "link", "show"},
		{"rdma", "-j", "link", "show"},
		{"rdma", "-j", "-p", "-d", "link", "show"},
		{"rdma", "link", "show", "rxe1/1"},
		{"rdma", "l", "s", "rxe0/01"},
		{"rdma", "l", "rxe0/1"},
		{"rdma", "link", "show", "rxe0"},
		{"rdma", "link", "show", "rxe0/"},
		{"rdma", "link", "show", "rxe0/0"},
		{"rdma", "link", "show", "rxe0/2"},
		{"rdma", "link", "show", "rxe0/-"},
		{"rdma", "-j", "link", "show", "nosuch/1"},
		{"rdma", "link", "help"},
		{"rdma", "system"},
		{"rdma", "system", "show"},
		{"rdma", "-j", "system", "show"},
		{"rdma", "sys", "show", "netns"},
		{"rdma", "system", "show", "foo"},
		{"rdma", "system", "help"},
		{"rdma", "resource"},
		{"rdma", "res", "show"},
		{"rdma", "-j", "res", "show"},
		{"rdma", "-j", "-p", "resource", "show"},
		{"rdma", "res", "show", "rxe0"},
		{"rdma", "-j", "res", "show", "rxe1"},
		{"rdma", "res", "show", "rxe0", "extra"},
		{"rdma", "res", "show", "qp"},
		{"rdma", "-j", "-p", "res", "show", "qp"},
		{"rdma", "-j", "res", "show", "qp"},
		{"rdma", "-d", "res", "show", "qp"},
		{"rdma", "res", "show", "cq"},
		{"rdma", "-j", "res", "show", "cq"},
		{"rdma", "-j", "-p", "-d", "res", "show", "cq"},
		{"rdma", "res", "show", "pd"},
		{"rdma", "-j", "-p", "res", "show", "pd"},
		{"rdma", "res", "show", "mr"},
		{"rdma", "-j", "res", "show", "mr"},
		{"rdma", "res", "show", "ctx"},
		{"rdma", "-j", "res", "show", "ctx"},
		{"rdma", "res", "show", "srq"},
		{"rdma", "-j", "res", "show", "srq"},
		{"rdma", "res", "show", "cm_id"},
		{"rdma", "-j", "res", "show", "cm_id"},
		{"rdma", "r", "s", "q", "l", "rxe1/1"},
		{"rdma", "res", "show", "qp", "link", "rxe1/1"},
		{"rdma", "res", "show", "qp", "link", "rxe1"},
		{"rdma", "res", "show", "qp", "link", "rxe1/-"},
		{"rdma", "res", "show", "qp", "link", "rxe0/2"},
		{"rdma", "res", "show", "qp", "lqpn", "1"},
		{"rdma", "res", "show", "qp", "lqpn", "0-5", "link", "rxe0/1"},
		{"rdma", "res", "show", "qp", "type", "gsi", "state", "RTS,rtr"},
		{"rdma", "res", "show", "qp", "path-mig-state", "migrated"},
		{"rdma", "res", "show", "qp", "pdn", "0"},
		{"rdma", "res", "show", "qp", "lqpn"},
		{"rdma", "res", "show", "qp", "lqpn", "1", "pid"},
		{"rdma", "res", "show", "qp", "foo", "1"},
		{"rdma", "res", "show", "qp", "lqpn", "x"},
		{"rdma", "res", "show", "qp", "rxe0"},
		{"rdma", "res", "show", "cq", "dev", "rxe1", "poll-ctx", "workqueue"},
		{"rdma", "res", "show", "cq", "cqn", "0"},
		{"rdma", "res", "show", "pd", "users", "1"},
		{"rdma", "res", "show", "pd", "dev", "rxe0", "pdn", "0"},
		{"rdma", "res", "show", "pd", "dev", "nosuch"},
		{"rdma", "-j", "res", "show", "pd", "dev", "nosuch"},
		{"rdma", "res", "show", "nosuch"},
		{"rdma", "res", "foo"},
		{"rdma", "res", "help"},
		{"rdma", "-r", "res", "show", "qp"},
		{"rdma", "-j", "-r", "res", "show", "cq"},
		{"rdma", "-r", "res", "show", "mr"},
		{"rdma", "-r", "res", "show", "pd"},
		{"rdma", "-r", "-j", "res", "show", "qp", "link", "rxe0/1"},
		{"rdma", "statistic"},
		{"rdma", "statistic", "show"},
		{"rdma", "-j", "statistic", "show"},
		{"rdma", "-j", "-p", "statistic", "show"},
		{"rdma", "-p", "statistic", "show"},
		{"rdma", "stat", "show", "link", "rxe1/1"},
		{"rdma", "statistic", "show", "link", "rxe0"},
		{"rdma", "statistic", "show", "link", "nosuch"},
		{"rdma", "statistic", "foo"},
		{"rdma", "statistic", "help"},
		{"rdma", "statistic", "mode"},
		{"rdma", "statistic", "mode", "supported"},
		{"rdma", "-j", "statistic", "mode", "supported"},
		{"rdma", "statistic", "mode", "link", "rxe0/1"},
		{"rdma", "statistic", "qp", "show"},
		{"rdma", "-j", "statistic", "qp", "show"},
		{"rdma", "statistic", "qp", "show", "link", "rxe1/1"},
		{"rdma", "statistic", "qp", "show", "lqpn", "1"},
		{"rdma", "statistic", "qp", "mode"},
		{"rdma", "-j", "-p", "statistic", "qp", "mode"},
		{"rdma", "statistic", "qp", "mode", "link", "rxe1/1"},
		{"rdma", "statistic", "mr"},
		{"rdma", "-j", "statistic", "mr"},
		{"rdma", "stat", "show", "mr"},
		{"rdma", "statistic", "mr", "dev", "rxe0"},
	}
	diffs, again := readOnlyDiffs(len(lines), func(i int) string {
		argv := lines[i]
		wo, we, wc, err := run(tools[argv[0]], argv)
		if err != nil {
			return err.Error()
		}
		o, e, c, err := run(dir, argv)
		if err != nil {
			return err.Error()
		}
		if o == wo && e == we && c == wc {
			return ""
		}
		return fmt.Sprintf("differs from the tool's\n--- the tool: exit %d, stderr %q, stdout:\n%s\n--- rdmactl: exit %d, stderr %q, stdout:\n%s",
			wc, we, wo, c, e, o)
	})
	same := 0
	for i, d := range diffs {
		if d == "" {
			same++
		} else {
			t.Errorf("%s: %s", strings.Join(lines[i], " "), d)
		}
	}
	t.Logf("%d of %d command lines identical to the tool's (%d run again alone)", same, len(lines), again)
}

// pidRE is the process id libibmad's and libibumad's IBWARN and IBPANIC
// print ("ibwarn: [1234] ca_stat: ...").
var pidRE = regexp.MustCompile(`(ibwarn|ibpanic): \[\d+\]`)

// cntrRE is a port's bad P_Key and Q_Key counters in ibv_devinfo -v: the
// device counts packets it dropped for a bad key, which tests running
// meanwhile in other packages may send between the tool's run and ours.
var cntrRE = regexp.MustCompile(`(bad_pkey_cntr|qkey_viol_cntr):\t\t0x[0-9a-f]+`)

// toolLinks is a directory of the links 'rdmactl links' makes to the
// binary under test (RDMACTL_BIN): the tools' names.
func toolLinks(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("RDMACTL_BIN")
	if bin == "" {
		t.Fatal("RDMACTL_BIN is not set (make vmtest sets it)")
	}
	dir := t.TempDir()
	if out, err := exec.Command(bin, "links", dir).CombinedOutput(); err != nil {
		t.Fatalf("rdmactl links %s: %v\n%s", dir, err, out)
	}
	return dir
}

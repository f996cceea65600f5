//go:build vmtest

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/doctor"
	"golang.org/x/sys/unix"
)

// doctorRun runs 'rdmactl -j doctor ARGS' in-process and returns the
// results by "check target" and the exit code.
func doctorRun(t *testing.T, args ...string) (map[string]doctor.Result, int) {
	t.Helper()
	out, stderr, code := runCmd(t, append([]string{"-j", "doctor"}, args...)...)
	return doctorParse(t, out, stderr, code), code
}

func doctorParse(t *testing.T, out, stderr string, code int) map[string]doctor.Result {
	t.Helper()
	var v struct{ Results []doctor.Result }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("doctor -j: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if (code == cmdutil.ExitDoctorFail) != (doctor.Worst(v.Results) == doctor.Fail) || (code != 0 && code != cmdutil.ExitDoctorFail) {
		t.Fatalf("doctor exit %d for worst verdict %s; stderr %q", code, doctor.Worst(v.Results), stderr)
	}
	m := map[string]doctor.Result{}
	for _, r := range v.Results {
		m[doctorKey(r)] = r
	}
	return m
}

func doctorKey(r doctor.Result) string {
	k := r.Check
	if r.Device != "" {
		k += " " + r.Device
	}
	if r.Port != 0 {
		k += fmt.Sprintf("/%d", r.Port)
	}
	return k
}

func doctorExpect(t *testing.T, got map[string]doctor.Result, key string, st doctor.Status, words ...string) {
	t.Helper()
	r, ok := got[key]
	if !ok {
		t.Errorf("%s: no result", key)
		return
	}
	if r.Status != st {
		t.Errorf("%s: %s (%s), want %s", key, r.Status, r.Evidence, st)
		return
	}
	for _, w := range words {
		if !strings.Contains(r.Evidence+" "+r.Fix, w) {
			t.Errorf("%s: %q / %q lacks %q", key, r.Evidence, r.Fix, w)
		}
	}
}

// doctorWait polls doctor until key has status st (the kernel updates GIDs
// and port states asynchronously), and returns the last results.
func doctorWait(t *testing.T, check, key string, st doctor.Status) map[string]doctor.Result {
	t.Helper()
	var got map[string]doctor.Result
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		got, _ = doctorRun(t, "--check", check)
		if got[key].Status == st || time.Now().After(deadline) {
			return got
		}
	}
}

// TestVMDoctorHealthy: the VM as booted passes every check that applies
// (as root: memlock and uverbs access pass rightly).
func TestVMDoctorHealthy(t *testing.T) {
	got, code := doctorRun(t)
	if code != 0 {
		t.Errorf("doctor exit %d on the healthy VM: %v", code, got)
	}
	for _, dev := range []string{"rxe0", "rxe1"} {
		p := dev + "/1"
		doctorExpect(t, got, "port_state "+p, doctor.Pass, "ACTIVE", "LINK_UP")
		doctorExpect(t, got, "roce_netdev "+p, doctor.Pass, "is up")
		doctorExpect(t, got, "roce_mtu "+p, doctor.Pass)
		doctorExpect(t, got, "roce_active_mtu "+p, doctor.Pass)
		doctorExpect(t, got, "roce_gid "+p, doctor.Pass, "10.77.0.")
		doctorExpect(t, got, "uverbs_access "+dev, doctor.Pass, "opens read-write")
		doctorExpect(t, got, "pcie_link "+dev, doctor.Skip, "no PCIe function")
	}
	doctorExpect(t, got, "memlock", doctor.Pass)
	doctorExpect(t, got, "ib_sm", doctor.Skip, "no InfiniBand ports")
	// The two module results share the key "kernel_modules": check them
	// in the table of the check alone.
	out, _, _ := runCmd(t, "doctor", "--check", "kernel_modules")
	for _, m := range doctor.Modules {
		if !strings.Contains(out, m+" is loaded") {
			t.Errorf("kernel_modules: %s not PASS:\n%s", m, out)
		}
	}
}

// TestVMDoctorBreakAndRepair breaks each live fact on purpose and requires
// doctor to FAIL it with the right words, then PASS after the repair.
func TestVMDoctorBreakAndRepair(t *testing.T) {
	t.Run("netdev_down", func(t *testing.T) {
		sh(t, "ip", "link", "set", "vrxe1", "down")
		t.Cleanup(func() { restoreLink(t, "vrxe1", "rxe1") })
		got := doctorWait(t, "port_state,roce_netdev", "port_state rxe1/1", doctor.Fail)
		doctorExpect(t, got, "port_state rxe1/1", doctor.Fail, "state DOWN", "ip link set vrxe1 up")
		doctorExpect(t, got, "roce_netdev rxe1/1", doctor.Fail, "netdev vrxe1 is down")
		doctorExpect(t, got, "port_state rxe0/1", doctor.Pass)
		restoreLink(t, "vrxe1", "rxe1")
		got = doctorWait(t, "port_state,roce_netdev", "port_state rxe1/1", doctor.Pass)
		doctorExpect(t, got, "port_state rxe1/1", doctor.Pass)
		doctorExpect(t, got, "roce_netdev rxe1/1", doctor.Pass)
	})

	t.Run("address_removed", func(t *testing.T) {
		sh(t, "ip", "addr", "del", "10.77.0.2/24", "dev", "vrxe1")
		t.Cleanup(func() { exec.Command("ip", "addr", "replace", "10.77.0.2/24", "dev", "vrxe1").Run() })
		got := doctorWait(t, "roce_gid", "roce_gid rxe1/1", doctor.Fail)
		doctorExpect(t, got, "roce_gid rxe1/1", doctor.Fail, "netdev vrxe1 has no IPv4 or global IPv6 address", "ip addr add")
		doctorExpect(t, got, "roce_gid rxe0/1", doctor.Pass)
		sh(t, "ip", "addr", "add", "10.77.0.2/24", "dev", "vrxe1")
		got = doctorWait(t, "roce_gid", "roce_gid rxe1/1", doctor.Pass)
		doctorExpect(t, got, "roce_gid rxe1/1", doctor.Pass, "10.77.0.2")
	})

	t.Run("mtu_too_small", func(t *testing.T) {
		b, err := os.ReadFile("/sys/class/net/vrxe1/mtu")
		if err != nil {
			t.Fatal(err)
		}
		mtu := strings.TrimSpace(string(b))
		sh(t, "ip", "link", "set", "vrxe1", "mtu", "1000")
		t.Cleanup(func() { exec.Command("ip", "link", "set", "vrxe1", "mtu", mtu).Run() })
		got, code := doctorRun(t, "--check", "roce_mtu")
		if code != cmdutil.ExitDoctorFail {
			t.Errorf("exit %d, want %d", code, cmdutil.ExitDoctorFail)
		}
		doctorExpect(t, got, "roce_mtu rxe1/1", doctor.Fail, "MTU 1000 is below 1024 + 96")
		sh(t, "ip", "link", "set", "vrxe1", "mtu", mtu)
		got, _ = doctorRun(t, "--check", "roce_mtu")
		doctorExpect(t, got, "roce_mtu rxe1/1", doctor.Pass, "MTU "+mtu)
	})

	t.Run("rdma_ucm_unloaded", func(t *testing.T) {
		// The guest's modules live in the initramfs root (PID 1's), not in
		// this chroot: reload from there.
		rel, err := os.ReadFile("/proc/sys/kernel/osrelease")
		if err != nil {
			t.Fatal(err)
		}
		kos, _ := filepath.Glob("/proc/1/root/lib/modules/" + strings.TrimSpace(string(rel)) + "/kernel/drivers/infiniband/core/rdma_ucm.ko*")
		if len(kos) == 0 {
			t.Fatalf("rdma_ucm.ko not found under /proc/1/root/lib/modules")
		}
		// delete_module(2) and finit_module(2) directly: the chroot may
		// have no kmod tools.
		if err := unix.DeleteModule("rdma_ucm", unix.O_NONBLOCK); err != nil {
			// In use: nothing to break; say so rather than pass.
			t.Fatalf("delete_module rdma_ucm: %v (something uses it)", err)
		}
		load := func() error {
			f, err := os.Open(kos[0])
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.FinitModule(int(f.Fd()), "", 0)
		}
		t.Cleanup(func() {
			if _, err := os.Stat("/sys/module/rdma_ucm"); err != nil {
				if err := load(); err != nil {
					t.Errorf("finit_module %s: %v", kos[0], err)
				}
			}
		})
		out, _, code := runCmd(t, "doctor", "--check", "kernel_modules")
		if code != cmdutil.ExitDoctorFail || !strings.Contains(out, "rdma_ucm is not loaded") || !strings.Contains(out, "modprobe rdma_ucm") ||
			!strings.Contains(out, "ib_uverbs is loaded") {
			t.Errorf("rdma_ucm unloaded: exit %d\n%s", code, out)
		}
		if err := load(); err != nil {
			t.Fatalf("finit_module %s: %v", kos[0], err)
		}
		out, _, code = runCmd(t, "doctor", "--check", "kernel_modules")
		if code != 0 || !strings.Contains(out, "rdma_ucm is loaded") {
			t.Errorf("rdma_ucm reloaded: exit %d\n%s", code, out)
		}
	})

	t.Run("counters_grow", func(t *testing.T) {
		// rxe counts link_downed on every NETDEV_DOWN: take vrxe1 down and
		// up while doctor watches, again and again until it ends, not
		// once at a fixed time: in a loaded guest doctor's first reading
		// may come after such a flap, which then does not count.
		bin := doctorBin(t)
		cmd := exec.Command(bin, "-j", "doctor", "--check", "error_counters_growth", "--watch", "6s")
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
	flap:
		for {
			select {
			case err = <-done:
				break flap
			default:
				sh(t, "ip", "link", "set", "vrxe1", "down")
				restoreLink(t, "vrxe1", "rxe1")
			}
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		got := doctorParse(t, o.String(), e.String(), code)
		doctorExpect(t, got, "error_counters_growth rxe1/1", doctor.Fail, "link_downed +")
		doctorExpect(t, got, "error_counters_growth rxe0/1", doctor.Pass)
		got, _ = doctorRun(t, "--check", "error_counters_growth", "--watch", "1s")
		doctorExpect(t, got, "error_counters_growth rxe1/1", doctor.Pass, "no error counter grew")
	})
}

func doctorBin(t *testing.T) string {
	t.Helper()
	return rdmactlBin(t)
}

// doctorAsNobody runs the rdmactl binary as uid/gid 65534 without capabilities
// (the VM runs tests as root, where memlock and permissions rightly pass),
// with RLIMIT_MEMLOCK set to memlock first.
func doctorAsNobody(t *testing.T, memlock string, args ...string) (map[string]doctor.Result, int) {
	t.Helper()
	bin := doctorBin(t)
	cmd := exec.Command("prlimit", append([]string{"--memlock=" + memlock, "setpriv", "--reuid=65534", "--regid=65534",
		"--clear-groups", "--inh-caps=-all", bin, "-j"}, args...)...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return doctorParse(t, o.String(), e.String(), code), code
}

// TestVMDoctorUnprivileged: memlock and uverbs access as an ordinary user.
// The kernel makes the uverbs nodes 0666 (uverbs_devnode); a distribution
// whose udev rules make them 0600 or 0660 is what this check finds, so
// the test takes uverbs0 to 0600 and back.
func TestVMDoctorUnprivileged(t *testing.T) {
	for _, tool := range []string{"setpriv", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (util-linux must provide it in the VM)", tool, err)
		}
	}
	node := ""
	ibdevs, _ := filepath.Glob("/sys/class/infiniband_verbs/uverbs*/ibdev")
	for _, p := range ibdevs {
		if b, _ := os.ReadFile(p); strings.TrimSpace(string(b)) == "rxe0" {
			node = "/dev/infiniband/" + filepath.Base(filepath.Dir(p))
		}
	}
	if node == "" {
		t.Fatalf("no uverbs node of rxe0 in /sys/class/infiniband_verbs")
	}
	st, err := os.Stat(node)
	if err != nil {
		t.Fatal(err)
	}
	mode := st.Mode().Perm()
	t.Logf("%s: mode %v", node, mode)
	if err := os.Chmod(node, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(node, mode) })

	checks := "memlock,uverbs_access"
	got, code := doctorAsNobody(t, "65536", "doctor", "--check", checks)
	if code != cmdutil.ExitDoctorFail {
		t.Errorf("as nobody with 64 KiB: exit %d", code)
	}
	doctorExpect(t, got, "memlock", doctor.Fail, "RLIMIT_MEMLOCK 64 KiB is below", "ulimit -l")
	doctorExpect(t, got, "uverbs_access rxe0", doctor.Fail, "cannot open "+node, "permission denied", "uid 65534")

	// Repair: a limit that covers perf write -a; the node's mode back.
	if err := os.Chmod(node, mode); err != nil {
		t.Fatal(err)
	}
	got, code = doctorAsNobody(t, "unlimited", "doctor", "--check", checks)
	if code != 0 {
		t.Errorf("as nobody after the repair: exit %d", code)
	}
	doctorExpect(t, got, "memlock", doctor.Pass, "unlimited")
	doctorExpect(t, got, "uverbs_access rxe0", doctor.Pass, node+" opens read-write")
	doctorExpect(t, got, "uverbs_access rxe1", doctor.Pass)
	got, _ = doctorAsNobody(t, "33554432", "doctor", "--check", "memlock")
	doctorExpect(t, got, "memlock", doctor.Pass, "32 MiB covers")
	got, _ = doctorAsNobody(t, "1048576", "doctor", "--check", "memlock")
	doctorExpect(t, got, "memlock", doctor.Warn, "not for its -a")
	// As root the same limit passes: CAP_IPC_LOCK lifts it.
	cmd := exec.Command("prlimit", "--memlock=65536", doctorBin(t), "-j", "doctor", "--check", "memlock")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("as root: %v", err)
	}
	doctorExpect(t, doctorParse(t, string(out), "", 0), "memlock", doctor.Pass, "CAP_IPC_LOCK")
}

// TestVMDoctorCaptureSameVerdicts: a capture of the VM, read back offline
// (directory and tarball), gives the live verdicts for every check that
// does not need the live system, and SKIPs the others.
func TestVMDoctorCaptureSameVerdicts(t *testing.T) {
	live, _ := doctorRun(t)
	dir := t.TempDir()
	for _, dst := range []string{filepath.Join(dir, "cap"), filepath.Join(dir, "cap.tar.gz")} {
		if out, stderr, code := runCmd(t, "capture", dst); code != 0 || out != "" || stderr != "" {
			t.Fatalf("capture %s: exit %d %q %q", dst, code, out, stderr)
		}
		off, _ := doctorRun(t, "--sysfs-root", dst)
		needsLive := map[string]bool{}
		for _, c := range doctor.Checks {
			needsLive[c.ID] = c.NeedsLive
		}
		n := 0
		for k, l := range live {
			if needsLive[l.Check] {
				continue
			}
			n++
			o, ok := off[k]
			if !ok {
				t.Errorf("%s: %s live, absent offline", dst, k)
				continue
			}
			if o.Status != l.Status || (l.Check != "error_counters" && o.Evidence != l.Evidence) {
				t.Errorf("%s: %s live %s (%s), offline %s (%s)", dst, k, l.Status, l.Evidence, o.Status, o.Evidence)
			}
		}
		for k, o := range off {
			if needsLive[o.Check] {
				if o.Status != doctor.Skip {
					t.Errorf("%s: %s offline %s, want SKIP", dst, k, o.Status)
				}
			} else if _, ok := live[k]; !ok {
				t.Errorf("%s: %s offline only", dst, k)
			}
		}
		if n < 8 {
			t.Errorf("only %d live results compared", n)
		}
	}
}

// TestVMDoctorExpect: --expect judges against what the reference tools
// report for the same ports (ibstat's Rate, ibv_devinfo's active_mtu):
// the VM's own figures pass, a port more, a faster rate or a larger MTU
// fail with exit 8.
func TestVMDoctorExpect(t *testing.T) {
	rate := regexp.MustCompile(`(?m)^\s+Rate: (\d+)\b`).FindStringSubmatch(vmRun(t, "ibstat", "rxe0"))
	mtu := regexp.MustCompile(`(?m)^\s+active_mtu:\s+(\d+) \(`).FindStringSubmatch(vmRun(t, "ibv_devinfo", "-d", "rxe0"))
	if rate == nil || mtu == nil {
		t.Fatalf("no Rate in ibstat or active_mtu in ibv_devinfo: %v %v", rate, mtu)
	}
	r, _ := strconv.Atoi(rate[1])
	m, _ := strconv.Atoi(mtu[1])
	got, code := doctorRun(t, "--check", "port_state", "--expect", fmt.Sprintf("ports=2,rate=%d,mtu=%d", r, m))
	if code != 0 {
		t.Errorf("exit %d for what the VM has: %v", code, got)
	}
	doctorExpect(t, got, "expect_ports", doctor.Pass, "2 of 2 ports ACTIVE, 2 expected")
	for _, p := range []string{"rxe0/1", "rxe1/1"} {
		doctorExpect(t, got, "expect_rate "+p, doctor.Pass, fmt.Sprintf("rate %d Gb/s", r))
		doctorExpect(t, got, "expect_mtu "+p, doctor.Pass, fmt.Sprintf("active MTU %d", m))
	}
	got, code = doctorRun(t, "--check", "port_state", "--expect", fmt.Sprintf("ports=3,rate=%d,mtu=%d", r+1, 2*m))
	if code != cmdutil.ExitDoctorFail {
		t.Errorf("exit %d for more than the VM has, want 8", code)
	}
	doctorExpect(t, got, "expect_ports", doctor.Fail, "2 of 2 ports ACTIVE, 3 expected")
	for _, p := range []string{"rxe0/1", "rxe1/1"} {
		doctorExpect(t, got, "expect_rate "+p, doctor.Fail, fmt.Sprintf("rate %d Gb/s, %d expected", r, r+1), "ethtool vrxe")
		doctorExpect(t, got, "expect_mtu "+p, doctor.Fail, fmt.Sprintf("active MTU %d, %d expected", m, 2*m), "mtu 9000")
	}
	if _, stderr, code := runBin(t, nil, "doctor", "--expect", "speed=100"); code != cmdutil.ExitUsage || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("--expect speed=100: exit %d, stderr %q; want exit 2 and one line", code, stderr)
	}
}

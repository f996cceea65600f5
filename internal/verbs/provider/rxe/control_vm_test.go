//go:build vmtest

package rxe

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/verbs"
	"github.com/rdmactl/rdmactl/internal/vmcheck"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// resCounts is `rdma -j res show`: per device, how many kernel objects of
// each kind exist.
type resCounts map[string]map[string]int

func rdmaRes(t *testing.T) resCounts {
	t.Helper()
	out, err := exec.Command("rdma", "-j", "res", "show").Output()
	if err != nil {
		t.Fatalf("rdma -j res show: %v", err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("rdma -j res show: %v\n%s", err, out)
	}
	rc := resCounts{}
	for _, r := range rows {
		name, _ := r["ifname"].(string)
		m := map[string]int{}
		for k, v := range r {
			if f, ok := v.(float64); ok && k != "ifindex" {
				m[k] = int(f)
			}
		}
		rc[name] = m
	}
	return rc
}

func checkNoLeak(t *testing.T, before resCounts) {
	t.Helper()
	if after := rdmaRes(t); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("rdma res show changed:\nbefore %v\nafter  %v", before, after)
	}
}

// checkSpeedEx checks QUERY_PORT's active_speed_ex as each path gives it.
// write() QUERY_PORT's answer has no such field (nor port_cap_flags2):
// both are 0, as rdma-core's ibv_query_port leaves them on its write()
// fallback. The ioctl answer has it where the kernel's
// ib_uverbs_query_port_resp_ex does: 6.12 fills it with the port's speed
// (rxe's 8, which also fits active_speed); 6.1 has reserved bytes there,
// so 0. Kernels between are allowed either.
func checkSpeedEx(t *testing.T, dev string, forceWrite bool, p *verbs.PortAttr) {
	t.Helper()
	if forceWrite {
		if p.ActiveSpeedEx != 0 || p.PortCapFlags2 != 0 {
			t.Errorf("%s: write() QUERY_PORT gave active_speed_ex %d, port_cap_flags2 %#x: the legacy answer has neither", dev, p.ActiveSpeedEx, p.PortCapFlags2)
		}
		return
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor)
	switch speed := uint32(p.ActiveSpeed); {
	case major < 6 || major == 6 && minor <= 1:
		if p.ActiveSpeedEx != 0 {
			t.Errorf("%s: kernel %d.%d: ioctl QUERY_PORT gave active_speed_ex %d where its answer is reserved", dev, major, minor, p.ActiveSpeedEx)
		}
	case major == 6 && minor < 12:
		if p.ActiveSpeedEx != 0 && p.ActiveSpeedEx != speed {
			t.Errorf("%s: ioctl QUERY_PORT: active_speed_ex %d, active_speed %d", dev, p.ActiveSpeedEx, speed)
		}
	default:
		if speed == 0 || p.ActiveSpeedEx != speed {
			t.Errorf("%s: kernel %d.%d: ioctl QUERY_PORT gave active_speed_ex %d, want the port's speed %d", dev, major, minor, p.ActiveSpeedEx, speed)
		}
	}
}

// TestVMOpenQuery opens every rxe device both ways (ioctl and write-only),
// checks the answers agree, and runs a PD/MR lifecycle whose objects
// `rdma res show` sees while they live and not after.
func TestVMOpenQuery(t *testing.T) {
	before := rdmaRes(t)
	defer checkNoLeak(t, before)
	devs, err := providers.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) < 2 {
		t.Fatalf("want rxe0 and rxe1, got %+v", devs)
	}
	for _, d := range devs {
		if d.DriverID != verbs.DriverRXE || d.ABI != 2 {
			t.Errorf("%s: driver %d ABI %d, want rxe (14) ABI 2", d.Name, d.DriverID, d.ABI)
		}
		var prev *verbs.DeviceAttr
		var prevPort *verbs.PortAttr
		var prevGIDs string
		for _, force := range []bool{false, true} {
			c, err := verbs.OpenDevice(d, verbs.Options{ForceWrite: force})
			if err != nil {
				t.Fatalf("open %s force=%v: %v", d.Name, force, err)
			}
			if c.UsesIoctl() == force {
				t.Errorf("%s: UsesIoctl %v with ForceWrite %v", d.Name, c.UsesIoctl(), force)
			}
			a, err := c.QueryDevice()
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			if !a.Extended || a.ResponseLength != 304 {
				t.Errorf("%s: EX QUERY_DEVICE extended %v length %d, want 304", d.Name, a.Extended, a.ResponseLength)
			}
			p, err := c.QueryPort(1)
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			if prev != nil && *prev != *a {
				t.Errorf("%s: device attrs differ between ioctl and write():\n%+v\n%+v", d.Name, *prev, *a)
			}
			checkSpeedEx(t, d.Name, force, p)
			if prevPort != nil {
				// Only the ioctl answer has active_speed_ex (and
				// port_cap_flags2); the rest must agree.
				ioc, wr := *prevPort, *p
				ioc.ActiveSpeedEx, ioc.PortCapFlags2 = 0, 0
				if ioc != wr {
					t.Errorf("%s: port attrs differ between ioctl and write():\n%+v\n%+v", d.Name, *prevPort, *p)
				}
			}
			prev, prevPort = a, p
			if _, err := c.QueryPort(2); !verbs.IsNotFound(err) {
				t.Errorf("%s: port 2: want PortNotFoundError, got %v", d.Name, err)
			}
			g, err := c.QueryGIDTable(int(p.GIDTblLen))
			if err != nil {
				t.Fatalf("%s: %v", d.Name, err)
			}
			if len(g) != 2 || g[1].Type != vocab.GIDTypeRoCEv2 || !g[1].Addr().Is4In6() {
				t.Errorf("%s: GID table %+v", d.Name, g)
			}
			if s := fmt.Sprint(g); prevGIDs != "" && s != prevGIDs {
				t.Errorf("%s: GID table differs between ioctl and sysfs:\n%s\n%s", d.Name, prevGIDs, s)
			} else {
				prevGIDs = s
			}

			pd, err := c.AllocPD()
			if err != nil {
				t.Fatal(err)
			}
			buf, err := verbs.NewBuffer(1 << 16)
			if err != nil {
				t.Fatal(err)
			}
			mr, err := pd.RegMR(buf, verbs.AccessAll)
			if err != nil {
				t.Fatal(err)
			}
			during := rdmaRes(t)[d.Name]
			b := before[d.Name]
			if during["pd"] != b["pd"]+1 || during["mr"] != b["mr"]+1 || during["ctx"] != b["ctx"]+1 {
				t.Errorf("%s: rdma res show with a context, PD and MR open: %v (before %v)", d.Name, during, b)
			}
			if mr.LKey == 0 || mr.LKey != mr.RKey || mr.Addr != buf.Addr() || mr.Length != 1<<16 {
				t.Errorf("%s: MR %+v", d.Name, mr)
			}
			if err := buf.Close(); err == nil {
				t.Errorf("buffer closed under a live MR")
			}
			if err := pd.Close(); !errors.Is(err, unix.EBUSY) {
				t.Errorf("PD closed under a live MR: %v (want EBUSY)", err)
			}
			if err := mr.Close(); err != nil {
				t.Fatal(err)
			}
			if err := pd.Close(); err != nil {
				t.Fatal(err)
			}
			if err := buf.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestVMCloseReleasesChildren: Context.Close destroys what the caller left
// open (MR before PD), and a later Close of the children is harmless.
func TestVMCloseReleasesChildren(t *testing.T) {
	before := rdmaRes(t)
	defer checkNoLeak(t, before)
	c, err := openDevice("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	buf, err := verbs.NewBuffer(8192)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	mr, err := pd.RegMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	pd2, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if pd2.Handle == pd.Handle {
		t.Errorf("two PDs share handle %d", pd.Handle)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close with children open: %v", err)
	}
	if err := mr.Close(); err != nil {
		t.Errorf("MR Close after context Close: %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Errorf("PD Close after context Close: %v", err)
	}
	if err := buf.Close(); err != nil {
		t.Errorf("buffer Close after its MR went: %v", err)
	}
	if _, err := c.AllocPD(); !errors.Is(err, verbs.ErrClosed) {
		t.Errorf("AllocPD on a closed context: %v", err)
	}
}

// helperEnv selects what TestVMHelperProcess does in a child process.
const helperEnv = "RDMACTL_VERBS_VM_HELPER"

// TestVMHelperProcess is not a test: it is the body of the child processes
// started (as an unprivileged user) by the tests below. Without the
// variable it does nothing.
func TestVMHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "memlock":
		// A 64 KiB limit and a 1 MiB buffer: REG_MR must fail with
		// ENOMEM, reported as a MemlockError.
		lim := unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
			fmt.Println("setrlimit:", err)
			os.Exit(2)
		}
		c, err := openDevice("rxe0")
		if err != nil {
			fmt.Println("open:", err)
			os.Exit(2)
		}
		defer c.Close()
		pd, err := c.AllocPD()
		if err != nil {
			fmt.Println("alloc pd:", err)
			os.Exit(2)
		}
		buf, err := verbs.NewBuffer(1 << 20)
		if err != nil {
			fmt.Println("buffer:", err)
			os.Exit(2)
		}
		small, err := pd.RegMR(buf, verbs.AccessLocalWrite) // whole MiB: too much
		var me *verbs.MemlockError
		if !errors.As(err, &me) || !verbs.IsPermission(err) {
			fmt.Printf("want MemlockError, got %v (%T) %v\n", err, err, small)
			os.Exit(3)
		}
		fmt.Println("ERR:", err)
		// Within the limit it works.
		ok, err := pd.RegMRRange(buf, 0, 16<<10, verbs.AccessLocalWrite)
		if err != nil {
			fmt.Println("16 KiB MR under a 64 KiB limit:", err)
			os.Exit(3)
		}
		ok.Close()
		pd.Close()
		buf.Close()
		os.Exit(0)
	case "open":
		_, err := openDevice("rxe0")
		var pe *verbs.PermissionError
		if !errors.As(err, &pe) || !verbs.IsPermission(err) {
			fmt.Printf("want PermissionError, got %v (%T)\n", err, err)
			os.Exit(3)
		}
		fmt.Println("ERR:", err)
		os.Exit(0)
	}
	t.Fatalf("unknown helper %q", os.Getenv(helperEnv))
}

// runHelper runs TestVMHelperProcess as user nobody (no CAP_IPC_LOCK,
// no root) and returns its output.
func runHelper(t *testing.T, what string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestVMHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+what)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper %s as nobody: %v\n%s", what, err, out)
	}
	return string(out)
}

// TestVMMemlock: with RLIMIT_MEMLOCK at 64 KiB and no CAP_IPC_LOCK,
// registering 1 MiB fails with one line naming the limit, the need and
// the ulimit fix.
func TestVMMemlock(t *testing.T) {
	before := rdmaRes(t)
	defer checkNoLeak(t, before)
	out := runHelper(t, "memlock")
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "ERR: ") {
			line = strings.TrimPrefix(l, "ERR: ")
		}
	}
	t.Logf("memlock error: %s", line)
	for _, want := range []string{"rxe0", "REG_MR", "1024 KiB", "RLIMIT_MEMLOCK is 64 KiB", "ulimit -l"} {
		if !strings.Contains(line, want) {
			t.Errorf("memlock message lacks %q: %q", want, line)
		}
	}
}

// TestVMPermission: a node the user cannot open gives one line naming it
// and the fix.
func TestVMPermission(t *testing.T) {
	d, err := providers.LookupDevice("rxe0")
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(d.Path, &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Chmod(d.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := unix.Chmod(d.Path, st.Mode&0o7777); err != nil {
			t.Errorf("restoring the mode of %s: %v", d.Path, err)
		}
	}()
	out := runHelper(t, "open")
	t.Logf("%s", out)
	for _, want := range []string{"/dev/infiniband/" + d.Uverbs, "permission denied", "rdma", "root"} {
		if !strings.Contains(out, want) {
			t.Errorf("permission message lacks %q: %q", want, out)
		}
	}
}

// TestVMDeviceRemoval removes an rxe device (made for the test on its own
// veth) while a context is open on it. rxe cannot disassociate a live
// context, so the kernel's unregister waits for the fd to close: calls
// made meanwhile must answer (with data or a clear error) rather than
// hang, Close must work, and then the removal must finish.
func TestVMDeviceRemoval(t *testing.T) {
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	run("ip", "link", "add", "vqrm0", "type", "veth", "peer", "name", "vqrm1")
	defer exec.Command("ip", "link", "del", "vqrm0").Run()
	run("ip", "link", "set", "vqrm0", "up")
	run("ip", "link", "set", "vqrm1", "up")
	run("rdma", "link", "add", "rxeqrm", "type", "rxe", "netdev", "vqrm0")
	removed := false
	defer func() {
		if !removed {
			exec.Command("rdma", "link", "delete", "rxeqrm").Run()
		}
	}()
	var c *verbs.Context
	var err error
	// Until it opens: udev/devtmpfs may take a moment.
	if !vmcheck.Until(30*time.Second, nil, func() bool { c, err = openDevice("rxeqrm"); return err == nil }) {
		t.Fatalf("open the new device: %v", err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	del := exec.Command("rdma", "link", "delete", "rxeqrm")
	if err := del.Start(); err != nil {
		t.Fatal(err)
	}
	delDone, delEnded := make(chan error, 1), make(chan struct{})
	go func() { delDone <- del.Wait(); close(delEnded) }()
	// The removal is under way once the device's uverbs node is gone: the
	// kernel then waits for this context's fd to close. (rdma link delete
	// ending first would be logged below.)
	gone := func() bool { _, err := providers.LookupDevice("rxeqrm"); return verbs.IsNotFound(err) }
	if !vmcheck.Until(30*time.Second, vmcheck.Closed(delEnded), gone) && !vmcheck.Closed(delEnded)() {
		t.Fatal("rxeqrm's uverbs node still there 30 s after rdma link delete began")
	}

	// Calls while the device is being removed: an answer or an error,
	// never a hang.
	callDone := make(chan error, 1)
	go func() {
		_, err := c.QueryPort(1)
		if err == nil {
			_, err = c.QueryDevice()
		}
		callDone <- err
	}()
	select {
	case err := <-callDone:
		t.Logf("query during removal: %v", err)
		if err != nil && !errors.Is(err, verbs.ErrDeviceGone) && !errors.Is(err, unix.EINVAL) {
			t.Errorf("query during removal: unexpected error %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("query hung while the device was being removed")
	}
	select {
	case err := <-delDone:
		t.Logf("rdma link delete finished before Close: %v", err)
	default:
	}
	closeDone := make(chan error, 1)
	go func() {
		pd.Close()
		closeDone <- c.Close()
	}()
	select {
	case err := <-closeDone:
		if err != nil {
			t.Errorf("Close during removal: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Close hung while the device was being removed")
	}
	select {
	case err := <-delDone:
		removed = true
		if err != nil {
			t.Errorf("rdma link delete: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rdma link delete did not finish after Close")
	}
	if _, err := providers.LookupDevice("rxeqrm"); !verbs.IsNotFound(err) {
		t.Errorf("device still listed after removal: %v", err)
	}
	if _, err := openDevice("rxeqrm"); !verbs.IsNotFound(err) {
		t.Errorf("open after removal: %v", err)
	}
}

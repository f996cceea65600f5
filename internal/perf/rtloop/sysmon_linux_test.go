package rtloop

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSleepsInNanosleep(t *testing.T) {
	ns := strconv.Itoa(unix.SYS_NANOSLEEP)
	for in, want := range map[string]bool{
		ns + " 0xc000067f28 0x0 0x0 0x0 0x0 0x0 0xc000067ef8 0x46e7a3\n": true,
		ns + "\n": true,
		strconv.Itoa(unix.SYS_FUTEX) + " 0x5b2c38 0x80 0x0 0x0 0x0 0x0 0x7ffe 0x46e7a3\n": false,
		"running\n":                  false,
		"-1 0x7ffd5c0a1e28 0x4660a1": false,
		"":                           false,
		" " + ns:                     true, // leading space trimmed
		ns + "x 0x0":                 false,
	} {
		if got := sleepsInNanosleep([]byte(in)); got != want {
			t.Errorf("sleepsInNanosleep(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzSleepsInNanosleep: any content of a syscall file is handled, and a
// yes means its first field is nanosleep's number.
func FuzzSleepsInNanosleep(f *testing.F) {
	f.Add([]byte(strconv.Itoa(unix.SYS_NANOSLEEP) + " 0x1 0x0\n"))
	f.Add([]byte("running\n"))
	f.Add([]byte("-1 0x7ffd5c0a1e28 0x4660a1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !sleepsInNanosleep(b) {
			return
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			t.Fatalf("yes for %q", b)
		}
		if n, err := strconv.Atoi(f[0]); err != nil || n != unix.SYS_NANOSLEEP {
			t.Fatalf("yes for %q", b)
		}
	})
}

func TestInSyscall(t *testing.T) {
	futex := strconv.Itoa(unix.SYS_FUTEX)
	for in, want := range map[string]bool{
		futex + " 0x83a9a0 0x80 0x0 0xc0000": true,
		futex + "\n":                         true,
		futex:                                false, // cut off: maybe 2021...
		futex + "1 0x0":                      false,
		strconv.Itoa(unix.SYS_NANOSLEEP) + " 0x0": false,
		"running\n":          false,
		"-1 0x7ffd5c0a1e28":  false,
		" " + futex + " 0x0": false,
		"":                   false,
	} {
		if got := inSyscall([]byte(in), unix.SYS_FUTEX); got != want {
			t.Errorf("inSyscall(%q, futex) = %v, want %v", in, got, want)
		}
	}
}

// FuzzInSyscall: inSyscall agrees with a strconv reading of the first
// field, for any bytes.
func FuzzInSyscall(f *testing.F) {
	f.Add([]byte(strconv.Itoa(unix.SYS_FUTEX)+" 0x1 0x0\n"), unix.SYS_FUTEX)
	f.Add([]byte("running\n"), 0)
	f.Add([]byte("0000000202 0x0"), 202)
	f.Fuzz(func(t *testing.T, b []byte, nr int) {
		got := inSyscall(b, nr)
		end := bytes.IndexAny(b, " \n")
		want := false
		if end > 0 && end <= 9 {
			n, err := strconv.Atoi(string(b[:end]))
			want = err == nil && n == nr && b[0] >= '0' && b[0] <= '9'
		}
		if got != want {
			t.Fatalf("inSyscall(%q, %d) = %v, want %v", b, nr, got, want)
		}
	})
}

func TestMostSeen(t *testing.T) {
	for _, c := range []struct {
		seen map[int]int
		tid  int
		ok   bool
	}{
		{map[int]int{}, 0, false},
		{map[int]int{7: 2}, 0, false},
		{map[int]int{7: 3}, 7, true},
		{map[int]int{7: 3, 9: 1}, 7, true},
		{map[int]int{7: 3, 9: 2}, 0, false},
	} {
		tid, ok := mostSeen(c.seen)
		if tid != c.tid && ok || ok != c.ok {
			t.Errorf("mostSeen(%v) = %d, %v; want %d, %v", c.seen, tid, ok, c.tid, c.ok)
		}
	}
}

// fakeTasks writes a /proc/PID/task look-alike: tid -> syscall file.
func fakeTasks(t *testing.T, tasks map[int]string) string {
	dir := t.TempDir()
	for tid, sys := range tasks {
		d := filepath.Join(dir, strconv.Itoa(tid))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "syscall"), []byte(sys), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestFindSysmonFake(t *testing.T) {
	ns := strconv.Itoa(unix.SYS_NANOSLEEP) + " 0x0 0x0\n"
	futex := strconv.Itoa(unix.SYS_FUTEX) + " 0x0 0x0\n"
	dir := fakeTasks(t, map[int]string{100: ns, 101: ns, 102: futex, 103: "running\n"})
	if tid, err := findSysmon(dir, 100); err != nil || tid != 101 {
		t.Errorf("findSysmon = %d, %v; want 101 (100 is the caller)", tid, err)
	}
	if tid, err := findSysmon(dir, 1); !errors.Is(err, errNoSysmon) {
		t.Errorf("two threads in nanosleep: findSysmon = %d, %v; want errNoSysmon", tid, err)
	}
	dir = fakeTasks(t, map[int]string{100: futex, 101: "running\n"})
	if tid, err := findSysmon(dir, 1); !errors.Is(err, errNoSysmon) {
		t.Errorf("none in nanosleep: findSysmon = %d, %v; want errNoSysmon", tid, err)
	}
	if _, err := findSysmon(filepath.Join(dir, "missing"), 1); err == nil || errors.Is(err, errNoSysmon) {
		t.Errorf("missing task dir: err = %v", err)
	}
}

// TestIdleSysmon runs in a child process (its monitor thread stays
// SCHED_IDLE): the thread found wakes again and again while a goroutine
// runs, as sysmon does, and idleSysmon leaves it SCHED_IDLE.
func TestIdleSysmon(t *testing.T) {
	if os.Getenv("RDMACTL_TEST_SYSMON_CHILD") == "1" {
		if err := sysmonChild(); err != nil {
			fmt.Println("FAIL:", err)
			os.Exit(1)
		}
		fmt.Println("sysmon ok")
		return
	}
	cmd := selfCommand("-test.run", "^TestIdleSysmon$", "-test.v")
	cmd.Env = append(os.Environ(), "RDMACTL_TEST_SYSMON_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("sysmon ok")) {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if i := bytes.Index(out, []byte("SKIP: ")); i >= 0 {
		l, _, _ := bytes.Cut(out[i+len("SKIP: "):], []byte("\n"))
		t.Skipf("%s", l)
	}
	if i := bytes.Index(out, []byte("letHandoffRun waited")); i >= 0 {
		l, _, _ := bytes.Cut(out[i:], []byte("\n"))
		t.Logf("%s", l)
	}
}

func sysmonChild() error {
	tid, err := findSysmon("/proc/self/task", unix.Gettid())
	if err != nil {
		return err
	}
	before, err := voluntarySwitches(tid)
	if err != nil {
		return err
	}
	for t0 := time.Now(); time.Since(t0) < 100*time.Millisecond; {
	}
	after, err := voluntarySwitches(tid)
	if err != nil {
		return err
	}
	// sysmon sleeps at most 10 ms at a time while a P runs.
	if after-before < 3 {
		return fmt.Errorf("thread %d slept %d times in 100 ms of spinning; sysmon sleeps at least 10", tid, after-before)
	}
	got, err := idleSysmon()
	if err != nil || got != tid {
		return fmt.Errorf("idleSysmon = %d, %v; want %d", got, err, tid)
	}
	attr, err := unix.SchedGetAttr(tid, 0)
	if err != nil {
		return err
	}
	if attr.Policy != unix.SCHED_IDLE {
		return fmt.Errorf("thread %d policy %d, want SCHED_IDLE", tid, attr.Policy)
	}
	if self, err := unix.SchedGetAttr(0, 0); err != nil || self.Policy == unix.SCHED_IDLE {
		return fmt.Errorf("the caller's thread policy: %+v, %v", self, err)
	}
	// While a goroutine runs, sysmon naps in nanosleep, never deep.
	for t0 := time.Now(); time.Since(t0) < 30*time.Millisecond; {
		if sysmonDeepSleepNow() {
			return fmt.Errorf("sysmonDeepSleepNow while a P runs")
		}
	}
	// parkSysmon, then a loop's start as runLatLoop does it: sysmon,
	// woken from its deep sleep by parkSysmon's exitsyscall, naps briefly
	// and parks again within letHandoffRun's first 2 ms, and stays
	// parked. (Without parkSysmon, after spinning as above, letHandoffRun
	// took 2-11 ms, median about 6.) Five tries a round
	// (parkedHandoffRound). A round that fails while other processes kept
	// the host's CPUs busy (other test binaries) says nothing: sysmon, a
	// SCHED_IDLE thread, could not run. Such rounds are retried for up to
	// 3 s, and if all were so, the parent reports a skip. A round that
	// fails on a quiet host fails the test.
	var busy []float64
	for end := time.Now().Add(3 * time.Second); ; {
		before, err := readCPUTimes()
		if err != nil {
			return err
		}
		roundErr := parkedHandoffRound()
		if roundErr == nil {
			break
		}
		after, err := readCPUTimes()
		if err != nil {
			return err
		}
		others := after.othersBusySince(before)
		if others < 0.25 {
			return fmt.Errorf("%v (other processes used %.0f%% of the CPUs meanwhile)", roundErr, 100*others)
		}
		busy = append(busy, others)
		if time.Now().After(end) {
			fmt.Printf("SKIP: other processes kept the host's CPUs busy (%.2f of their time in each try), so sysmon, a SCHED_IDLE thread, could not run: %v\n", busy, roundErr)
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Unknown sysmon: no answer, and so no wait.
	saved := sysmonSyscallFD
	sysmonSyscallFD = -1
	defer func() { sysmonSyscallFD = saved }()
	if sysmonDeepSleepNow() {
		return fmt.Errorf("sysmonDeepSleepNow with no sysmon known")
	}
	return nil
}

// cpuTimes: the host's total and idle CPU time and this process's, in
// clock ticks (/proc/stat, /proc/self/stat).
type cpuTimes struct{ total, idle, self uint64 }

func readCPUTimes() (cpuTimes, error) {
	var c cpuTimes
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 6 || f[0] != "cpu" {
		return c, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("/proc/stat: %v", err)
		}
		c.total += n
		if i == 3 || i == 4 { // idle, iowait
			c.idle += n
		}
	}
	b, err = os.ReadFile("/proc/self/stat")
	if err != nil {
		return c, err
	}
	_, rest, _ := bytes.Cut(b, []byte(") ")) // after the command name
	f = strings.Fields(string(rest))
	if len(f) < 13 {
		return c, fmt.Errorf("/proc/self/stat: too few fields")
	}
	for _, v := range f[11:13] { // utime, stime
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("/proc/self/stat: %v", err)
		}
		c.self += n
	}
	return c, nil
}

// othersBusySince is the fraction of the host's CPU time since before
// that other processes used.
func (c cpuTimes) othersBusySince(before cpuTimes) float64 {
	total := c.total - before.total
	if total == 0 {
		return 0
	}
	busy := int64(total) - int64(c.idle-before.idle) - int64(c.self-before.self)
	return float64(max(busy, 0)) / float64(total)
}

// parkedHandoffRound: five times parkSysmon, some spinning, and a loop's
// start (detachedHandoff); sysmon must be parked each time, and
// letHandoffRun must take 2 ms and a little in most.
func parkedHandoffRound() error {
	var waits []time.Duration
	for range 5 {
		parkSysmon()
		growStack()
		deep, deepLater, waited := detachedHandoff()
		if !deep || !deepLater {
			return fmt.Errorf("after parkSysmon and letHandoffRun (%v): sysmon deep asleep: %v, 5 ms later: %v", waited, deep, deepLater)
		}
		waits = append(waits, waited)
		for t0 := time.Now(); time.Since(t0) < 30*time.Millisecond; {
		}
	}
	fmt.Println("letHandoffRun waited", waits)
	slices.Sort(waits)
	if waits[0] < 2*time.Millisecond || waits[2] > 4*time.Millisecond {
		return fmt.Errorf("letHandoffRun after parkSysmon took %v, want 2 ms and a little", waits)
	}
	return nil
}

// detachedHandoff runs letHandoffRun detached, as runLatLoop does, and
// asks sysmonDeepSleepNow right after it and 5 ms later.
//
//go:nosplit
func detachedHandoff() (deep, deepLater bool, waited time.Duration) {
	t0 := nanotime()
	entersyscallblock()
	letHandoffRun()
	t1 := nanotime()
	deep = sysmonDeepSleepNow()
	sleepDetached(5e6)
	deepLater = sysmonDeepSleepNow()
	exitsyscall()
	return deep, deepLater, time.Duration(t1 - t0)
}

func voluntarySwitches(tid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("thread %d: no voluntary_ctxt_switches", tid)
}

package perf

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// --pin_cores=LIST (perftest 6.29's set_process_affinity in
// src/perftest_resources.c): the benchmark runs on these CPUs only. perftest
// is one thread and calls sched_setaffinity(0); rdmactl has several (the
// Go runtime's), so it sets the mask on each of them, and the threads the
// runtime starts later inherit it from the thread that clones them. LIST
// is perftest's parse_cpu_list's: single (0), list (0,1,2), range (0-3)
// or mixed (0-3,8,12-15).

// parseCPUList reads LIST into a CPU set; ncpu is the CPUs the system
// has (sysconf(_SC_NPROCESSORS_CONF) in perftest).
func parseCPUList(s string, ncpu int) (unix.CPUSet, error) {
	var set unix.CPUSet
	if strings.TrimSpace(s) == "" {
		return set, fmt.Errorf("no CPU given")
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return set, fmt.Errorf("%q is not a CPU number", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < 0 {
				return set, fmt.Errorf("%q is not a CPU range", part)
			}
			if a > b {
				return set, fmt.Errorf("CPU range %d-%d: start > end", a, b)
			}
		}
		if b >= ncpu {
			return set, fmt.Errorf("CPU %d out of range: the system has %d (0-%d)", b, ncpu, ncpu-1)
		}
		for c := a; c <= b; c++ {
			set.Set(c)
		}
	}
	return set, nil
}

// pinProcess sets set as the CPU affinity of every thread of the
// process, twice over the thread list so that a thread started during the
// first pass (by a thread not yet pinned) is pinned by the second.
func pinProcess(set unix.CPUSet) error {
	runtime.LockOSThread() // this thread first: threads it clones inherit
	defer runtime.UnlockOSThread()
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return err
	}
	for pass := 0; pass < 2; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return err
			}
		}
	}
	return nil
}

// applyPinCores pins the process for --pin_cores (before any device is
// opened): a list that names no online CPU the process may use is the
// user's mistake, exit 2, as perftest's "Failed to set CPU affinity".
func applyPinCores(list string, set unix.CPUSet) error {
	if err := pinProcess(set); err != nil {
		return cmdutil.UsageErrorf("--pin_cores %s: setting the CPU affinity: %v", list, err)
	}
	return nil
}

// numCPUsConf is the CPUs the system has (configured, online or not):
// the entries of /sys/devices/system/cpu/possible, else runtime.NumCPU.
func numCPUsConf() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/possible")
	if err != nil {
		return runtime.NumCPU()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			return runtime.NumCPU()
		}
		n = max(n, b+1)
	}
	return n
}

// Package placement puts the benchmark process on CPUs and NUMA nodes as
// perftest 6.29 does (set_process_affinity in src/perftest_resources.c,
// parse_cpu_list in src/perftest_parameters.c): --pin_cores' CPU lists,
// a node's CPUs, a device's node, every thread's affinity. It reads
// sysfs under a root, so tests give it a tree of their own.
package placement

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// Host reads NUMA facts under a sysfs root ("/sys").
type Host struct{ Root string }

// System is the running system's.
var System = Host{Root: "/sys"}

// MaxNode is the highest possible node number
// (devices/system/node/possible, "0" or "0-1" or "0,2-3").
func (h Host) MaxNode() (int, error) {
	b, err := sysfs.ReadBounded(filepath.Join(h.Root, "devices", "system", "node", "possible"))
	if err != nil {
		return 0, fmt.Errorf("this kernel shows no NUMA nodes (%w)", err)
	}
	hi, ok := listMax(string(b))
	if !ok {
		return 0, fmt.Errorf("devices/system/node/possible: malformed %q", b)
	}
	return hi, nil
}

// listMax is the highest number of a kernel CPU or node list ("0",
// "0-3", "0,2-3": devices/system/*/possible); ok is false when any part
// is not N or N-M.
func listMax(s string) (hi int, ok bool) {
	hi = -1
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, last, isRange := strings.Cut(part, "-")
		if !isRange {
			last = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(last)
		if err1 != nil || err2 != nil || a < 0 || b < 0 {
			return 0, false
		}
		hi = max(hi, b)
	}
	return hi, true
}

// NodeCPUs is node's CPUs (devices/system/node/nodeN/cpulist); an error
// if the node has none online.
func (h Host) NodeCPUs(node int) (unix.CPUSet, error) {
	b, err := sysfs.ReadBounded(filepath.Join(h.Root, "devices", "system", "node", "node"+strconv.Itoa(node), "cpulist"))
	if err != nil {
		return unix.CPUSet{}, fmt.Errorf("NUMA node %d: %w", node, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return unix.CPUSet{}, fmt.Errorf("NUMA node %d has no CPU online", node)
	}
	set, err := ParseCPUList(s, CPUSetBits)
	if err != nil {
		return unix.CPUSet{}, fmt.Errorf("NUMA node %d's cpulist %q: %v", node, s, err)
	}
	return set, nil
}

// DeviceNode is the NUMA node of RDMA device dev's PCI function
// (class/infiniband/DEV/device/numa_node), -1 when it has none (a
// software device, a machine of one node, or an unreadable file).
func (h Host) DeviceNode(dev string) int {
	b, err := sysfs.ReadBounded(filepath.Join(h.Root, "class", "infiniband", dev, "device", "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// AffinityLimited says whether the process already runs on fewer CPUs
// than are online, in which case perftest does no placement of its own.
func (h Host) AffinityLimited() bool {
	var cur unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cur); err != nil {
		return false
	}
	online, err := h.OnlineCPUs()
	return err == nil && cur.Count() < online
}

// OnlineCPUs counts devices/system/cpu/online's CPUs.
func (h Host) OnlineCPUs() (int, error) {
	b, err := sysfs.ReadBounded(filepath.Join(h.Root, "devices", "system", "cpu", "online"))
	if err != nil {
		return 0, err
	}
	set, err := ParseCPUList(strings.TrimSpace(string(b)), CPUSetBits)
	if err != nil {
		return 0, err
	}
	return set.Count(), nil
}

// ParseCPUList reads LIST into a CPU set; ncpu is the CPUs the system
// has (sysconf(_SC_NPROCESSORS_CONF) in perftest).
func ParseCPUList(s string, ncpu int) (unix.CPUSet, error) {
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

// PinProcess sets set as the CPU affinity of every thread of the
// process, twice over the thread list so that a thread started during the
// first pass (by a thread not yet pinned) is pinned by the second.
func PinProcess(set unix.CPUSet) error {
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

// NumCPUsConf is the CPUs the system has (configured, online or not):
// the entries of devices/system/cpu/possible, else runtime.NumCPU.
func (h Host) NumCPUsConf() int {
	b, err := sysfs.ReadBounded(filepath.Join(h.Root, "devices", "system", "cpu", "possible"))
	if err != nil {
		return runtime.NumCPU()
	}
	hi, ok := listMax(string(b))
	if !ok {
		return runtime.NumCPU()
	}
	return hi + 1
}

// CPUSetBits is how many CPUs a unix.CPUSet holds (glibc's CPU_SETSIZE).
const CPUSetBits = len(unix.CPUSet{}) * 64

package perf

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

// NUMA placement as perftest 6.29's set_process_affinity
// (src/perftest_resources.c) and its parser (src/perftest_parameters.c):
//   - --numa_node=N runs the benchmark on node N's CPUs with its memory on
//     node N; N must exist (exit 2) and excludes --pin_cores (exit 2).
//   - Without either, and without --disable_numa, a device whose PCI
//     function reports a NUMA node (device/numa_node >= 0; rxe has none)
//     gets the same placement on that node, unless the process was
//     already limited to fewer CPUs than are online (taskset, a cgroup's
//     cpuset): perftest then leaves the placement as it found it.
// The CPUs are set on every thread (pinProcess); the memory is the
// benchmark's buffer, bound with mbind before it is faulted in
// (verbs.NewBufferOnNode), where perftest binds all its later
// allocations (numa_set_membind).

// numaHost reads NUMA facts under a sysfs root ("/sys").
type numaHost struct{ root string }

// sysNUMA is the running system's.
var sysNUMA = numaHost{root: "/sys"}

// maxNode is the highest possible node number
// (devices/system/node/possible, "0" or "0-1" or "0,2-3").
func (h numaHost) maxNode() (int, error) {
	b, err := sysfs.ReadBounded(filepath.Join(h.root, "devices", "system", "node", "possible"))
	if err != nil {
		return 0, fmt.Errorf("this kernel shows no NUMA nodes (%w)", err)
	}
	hi := -1
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		_, last, _ := strings.Cut(part, "-")
		if last == "" {
			last = part
		}
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("devices/system/node/possible: malformed %q", b)
		}
		hi = max(hi, n)
	}
	if hi < 0 {
		return 0, errors.New("devices/system/node/possible is empty")
	}
	return hi, nil
}

// nodeCPUs is node's CPUs (devices/system/node/nodeN/cpulist); an error
// if the node has none online.
func (h numaHost) nodeCPUs(node int) (unix.CPUSet, error) {
	b, err := sysfs.ReadBounded(filepath.Join(h.root, "devices", "system", "node", "node"+strconv.Itoa(node), "cpulist"))
	if err != nil {
		return unix.CPUSet{}, fmt.Errorf("NUMA node %d: %w", node, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return unix.CPUSet{}, fmt.Errorf("NUMA node %d has no CPU online", node)
	}
	set, err := parseCPUList(s, cpuSetBits)
	if err != nil {
		return unix.CPUSet{}, fmt.Errorf("NUMA node %d's cpulist %q: %v", node, s, err)
	}
	return set, nil
}

// deviceNode is the NUMA node of RDMA device dev's PCI function
// (class/infiniband/DEV/device/numa_node), -1 when it has none (a
// software device, a machine of one node, or an unreadable file).
func (h numaHost) deviceNode(dev string) int {
	b, err := sysfs.ReadBounded(filepath.Join(h.root, "class", "infiniband", dev, "device", "numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// checkNUMANode validates --numa_node (parse time, before any device).
func checkNUMANode(h numaHost, node int, pinCores bool) error {
	if pinCores {
		return cmdutil.UsageErrorf("--numa_node and --pin_cores cannot be used together (as perftest)")
	}
	if node < 0 {
		return cmdutil.UsageErrorf("--numa_node %d: a node number is 0 or more", node)
	}
	hi, err := h.maxNode()
	if err != nil {
		return cmdutil.UsageErrorf("--numa_node %d: %v", node, err)
	}
	if node > hi {
		return cmdutil.UsageErrorf("--numa_node %d: NUMA node %d does not exist (available: 0-%d)", node, node, hi)
	}
	return nil
}

// affinityLimited says whether the process already runs on fewer CPUs
// than are online, in which case perftest does no placement of its own.
func (h numaHost) affinityLimited() bool {
	var cur unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cur); err != nil {
		return false
	}
	online, err := h.onlineCPUs()
	return err == nil && cur.Count() < online
}

// onlineCPUs counts devices/system/cpu/online's CPUs.
func (h numaHost) onlineCPUs() (int, error) {
	b, err := sysfs.ReadBounded(filepath.Join(h.root, "devices", "system", "cpu", "online"))
	if err != nil {
		return 0, err
	}
	set, err := parseCPUList(strings.TrimSpace(string(b)), cpuSetBits)
	if err != nil {
		return 0, err
	}
	return set.Count(), nil
}

// placeOnNode runs the process on node's CPUs; explicit says the user
// asked for the node (--numa_node), so that a failure is an error, where
// the automatic placement goes on without (perftest's "Continuing
// without NUMA binding").
func placeOnNode(h numaHost, node int, explicit bool) (bound bool, err error) {
	set, err := h.nodeCPUs(node)
	if err == nil {
		err = pinProcess(set)
	}
	if err != nil {
		if explicit {
			return false, cmdutil.UsageErrorf("--numa_node %d: cannot run on the node: %v", node, err)
		}
		return false, nil
	}
	return true, nil
}

// cpuSetBits is how many CPUs a unix.CPUSet holds (glibc's CPU_SETSIZE).
const cpuSetBits = len(unix.CPUSet{}) * 64

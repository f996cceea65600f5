package perf

import (
	"golang.org/x/sys/unix"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/placement"
)

// The CPU and NUMA placement flags, as perftest 6.29's
// set_process_affinity (src/perftest_resources.c) and its parser
// (src/perftest_parameters.c); internal/placement reads and sets, this
// file turns the user's mistakes into exit 2:
//   - --pin_cores=LIST runs the benchmark on these CPUs only (LIST as
//     perftest's parse_cpu_list: 0, 0,1,2, 0-3 or 0-3,8,12-15).
//   - --numa_node=N runs it on node N's CPUs with its memory on node N;
//     N must exist and excludes --pin_cores.
//   - Without either, and without --disable_numa, a device whose PCI
//     function reports a NUMA node (device/numa_node >= 0; rxe has none)
//     gets the same placement on that node, unless the process was
//     already limited to fewer CPUs than are online (taskset, a cgroup's
//     cpuset): perftest then leaves the placement as it found it.
// The CPUs are set on every thread (placement.PinProcess); the memory is
// the benchmark's buffer, bound with mbind before it is faulted in
// (verbs.NewBufferOnNode), where perftest binds all its later
// allocations (numa_set_membind).

// applyPinCores pins the process for --pin_cores (before any device is
// opened): a list that names no online CPU the process may use is the
// user's mistake, exit 2, as perftest's "Failed to set CPU affinity".
func applyPinCores(list string, set unix.CPUSet) error {
	if err := placement.PinProcess(set); err != nil {
		return cmdutil.UsageErrorf("--pin_cores %s: setting the CPU affinity: %v", list, err)
	}
	return nil
}

// checkNUMANode validates --numa_node (parse time, before any device).
func checkNUMANode(h placement.Host, node int, pinCores bool) error {
	if pinCores {
		return cmdutil.UsageErrorf("--numa_node and --pin_cores cannot be used together (as perftest)")
	}
	if node < 0 {
		return cmdutil.UsageErrorf("--numa_node %d: a node number is 0 or more", node)
	}
	hi, err := h.MaxNode()
	if err != nil {
		return cmdutil.UsageErrorf("--numa_node %d: %v", node, err)
	}
	if node > hi {
		return cmdutil.UsageErrorf("--numa_node %d: NUMA node %d does not exist (available: 0-%d)", node, node, hi)
	}
	return nil
}

// placeOnNode runs the process on node's CPUs; explicit says the user
// asked for the node (--numa_node), so that a failure is an error, where
// the automatic placement goes on without (perftest's "Continuing
// without NUMA binding").
func placeOnNode(h placement.Host, node int, explicit bool) (bound bool, err error) {
	set, err := h.NodeCPUs(node)
	if err == nil {
		err = placement.PinProcess(set)
	}
	if err != nil {
		if explicit {
			return false, cmdutil.UsageErrorf("--numa_node %d: cannot run on the node: %v", node, err)
		}
		return false, nil
	}
	return true, nil
}

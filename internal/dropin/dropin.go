// Package dropin runs rdmactl under the names of the tools it replaces:
// invoked through a link named ibv_devices, ibv_devinfo, ibstat, rdma or
// one of perftest's ib_{send,write,read,atomic}_{bw,lat}, rdmactl reads
// that tool's command line as the tool does and prints what the tool
// prints, so that scripts written for the tool keep working. Each tool
// here follows the release Debian 12 ships (rdma-core 44, iproute2 6.1,
// perftest 6.06); rdmactl's own commands and JSON are not affected.
package dropin

import (
	"io"
	"sort"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// Env is what a tool runs with: its output streams and the live system.
type Env struct {
	Stdout, Stderr io.Writer
	// Open opens the live inventory (tests give a fake).
	Open func() (*inventory.Source, error)
	// Netlink opens RDMA netlink, for rdma (tests give a fake).
	Netlink func() (NLSource, error)
	// TaskName is a process's name as /proc/PID/comm gives it, false
	// when there is none; nil reads /proc.
	TaskName func(pid uint32) (string, bool)
	// Perf runs rdmactl's args (perf ...) as the perftest test tool
	// and returns the exit status.
	Perf func(tool string, args []string) int
}

// Tool is one reference tool's personality: Run takes argv (argv[0]
// included, as the tool prints it in its usage) and returns the tool's
// exit status.
type Tool struct {
	Name string
	// Upstream is the file whose behaviour Run follows.
	Upstream string
	Run      func(env Env, argv []string) int
}

var tools = func() map[string]Tool {
	m := map[string]Tool{
		"ibv_devices": {Name: "ibv_devices", Upstream: "rdma-core libibverbs/examples/device_list.c", Run: ibvDevices},
		"ibv_devinfo": {Name: "ibv_devinfo", Upstream: "rdma-core libibverbs/examples/devinfo.c", Run: ibvDevinfo},
		"ibstat":      {Name: "ibstat", Upstream: "rdma-core infiniband-diags/ibstat.c", Run: ibstat},
		"rdma":        {Name: "rdma", Upstream: "iproute2 6.1 rdma/rdma.c", Run: rdmaMain},
	}
	for _, t := range perftestTests {
		m[t.name] = perftestTool(t.name, t.verb, t.lat)
	}
	return m
}()

// Lookup finds the tool invoked as name (argv[0]'s base name).
func Lookup(name string) (Tool, bool) {
	t, ok := tools[name]
	return t, ok
}

// Names are the tools' names, sorted: the links 'rdmactl links' makes.
func Names() []string {
	var out []string
	for n := range tools {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// OpenLive opens the live system's inventory, as the tools read it.
func OpenLive() (*inventory.Source, error) { return inventory.Open("", true) }

// Package doctor judges whether a host is fit to run RDMA jobs:
// a list of checks, each a function of the inventory that returns one
// Result per device, port or host fact it looked at. Checks read nothing
// themselves; every fact comes from internal/inventory, so that the same
// checks run on the live host and on a capture (--sysfs-root), where the
// checks that need the live system (NeedsLive) are skipped.
//
// The checks are data (Checks) so that other commands (top, the
// exporter) can run them too.
package doctor

import (
	"fmt"
	"sort"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// Status is a check's verdict.
type Status string

// Verdicts, from best to worst (SKIP: the check could not run here).
const (
	Pass Status = "PASS"
	Warn Status = "WARN"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Result is one verdict: of a check, on a device/port (port 0: the device;
// "" and 0: the host), with one line of evidence and one of what to do
// ("" on PASS and SKIP). Every key is always present in JSON.
type Result struct {
	Check    string `json:"check"`
	Status   Status `json:"status"`
	Device   string `json:"device"`
	Port     uint32 `json:"port"`
	Evidence string `json:"evidence"`
	Fix      string `json:"fix"`
}

// Check is one health check.
type Check struct {
	ID string
	// NeedsLive: the check judges the running process or network
	// namespace (addresses, limits, permissions, modules, counter growth);
	// on a capture it is skipped.
	NeedsLive bool
	// Doc is one line for --help and the README.
	Doc string
	Run func(*Env) []Result
}

// Env is what checks read: an inventory source, with the facts several
// checks share gathered once.
type Env struct {
	Src *inventory.Source
	// Watch is how long the growth check watches the error counters; 0
	// disables it.
	Watch time.Duration
	// Sleep waits between the two counter snapshots (tests replace it).
	Sleep func(time.Duration)
	// PerfPins is the memory 'rdmactl perf write' pins with its defaults
	// (Run) and with -a, every size up to 8 MiB (All): the limits the
	// memlock check holds RLIMIT_MEMLOCK to. The caller works them out
	// (perf.PinnedBytes), so that doctor does not link the benchmark
	// engine; without them the check is skipped.
	PerfPins struct{ Run, All uint64 }

	devs     []inventory.Device
	devsErr  error
	ports    []inventory.Port
	portsErr error
	loaded   bool
}

func (e *Env) load() {
	if e.loaded {
		return
	}
	e.loaded = true
	e.devs, e.devsErr = e.Src.Devices("", inventory.DeviceOptions{Chardev: true, Sysfs: true, Board: true})
	if e.devsErr != nil {
		return
	}
	// The active MTU from the device (uverbs QUERY_PORT) where it answers;
	// offline it is derived from the netdev MTU, so the roce_active_mtu
	// check needs the live system.
	e.ports, e.portsErr = e.Src.Ports("", 0, inventory.PortOptions{QueryPort: !e.Src.Offline()})
}

// Devices is every device, with their sysfs facts.
func (e *Env) Devices() ([]inventory.Device, error) {
	e.load()
	return e.devs, e.devsErr
}

// Ports is every port of every device.
func (e *Env) Ports() ([]inventory.Port, error) {
	e.load()
	if e.devsErr != nil {
		return nil, e.devsErr
	}
	return e.ports, e.portsErr
}

// Run runs checks on env, in order. A NeedsLive check on a capture gives
// one SKIP. The results of each check are sorted by device and port.
func Run(env *Env, checks []Check) []Result {
	if env.Sleep == nil {
		env.Sleep = time.Sleep
	}
	var out []Result
	for _, c := range checks {
		if c.NeedsLive && env.Src.Offline() {
			out = append(out, Result{Check: c.ID, Status: Skip,
				Evidence: "needs the live system; a capture (--sysfs-root) does not have it"})
			continue
		}
		rs := c.Run(env)
		sort.SliceStable(rs, func(i, j int) bool {
			if rs[i].Device != rs[j].Device {
				return rs[i].Device < rs[j].Device
			}
			return rs[i].Port < rs[j].Port
		})
		for i := range rs {
			rs[i].Check = c.ID
		}
		out = append(out, rs...)
	}
	return out
}

// Worst is the worst verdict of rs: FAIL over WARN over PASS; SKIPs do
// not count. PASS for none.
func Worst(rs []Result) Status {
	w := Pass
	for _, r := range rs {
		switch {
		case r.Status == Fail:
			return Fail
		case r.Status == Warn:
			w = Warn
		}
	}
	return w
}

// Select returns the checks named in ids (all for none), or an error
// naming an unknown id and listing the known ones.
func Select(ids []string) ([]Check, error) {
	if len(ids) == 0 {
		return Checks, nil
	}
	byID := map[string]Check{}
	for _, c := range Checks {
		byID[c.ID] = c
	}
	var out []Check
	for _, id := range ids {
		c, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("unknown check %q (known: %s)", id, IDs())
		}
		out = append(out, c)
	}
	return out, nil
}

// IDs lists the check ids, comma-separated, in run order.
func IDs() string {
	s := ""
	for i, c := range Checks {
		if i > 0 {
			s += ", "
		}
		s += c.ID
	}
	return s
}

// errResult is a check that could not read what it judges: SKIP, with the
// error as evidence (doctor does not guess).
func errResult(dev string, port uint32, what string, err error) Result {
	return Result{Status: Skip, Device: dev, Port: port, Evidence: fmt.Sprintf("could not read %s: %v", what, err)}
}

func none(what string) []Result {
	return []Result{{Status: Skip, Evidence: "no " + what + " on this host"}}
}

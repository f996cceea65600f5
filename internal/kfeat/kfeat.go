// Package kfeat records what this kernel offers where kernels differ, so
// that rdmactl probes a feature instead of reading a version string (RHEL
// backports features to old version numbers; upstream removes them).
//
// Each feature is probed at most once per process, by the code that needs
// it, and the answer is cached here: later users skip the probe, and
// `rdmactl version -d` lists what was found. RDMACTL_KERNEL_ABSENT (a
// comma-separated list of feature names, or "all") forces features to
// absent, so that the paths taken on older kernels (RHEL 8/9, Ubuntu 22.04)
// can be tested on a new one.
package kfeat

import (
	"os"
	"sort"
	"strings"
	"sync"
)

// Feature names. docs/kernels.md says what each changes.
const (
	// UverbsIoctl: write() commands also through the ioctl uAPI's
	// INVOKE_WRITE, and the native ioctl methods (4.20+; rdma-core
	// prefers them).
	UverbsIoctl = "uverbs_ioctl"
	// GetContextIoctl: UVERBS_METHOD_GET_CONTEXT (5.4+).
	GetContextIoctl = "get_context_ioctl"
	// QueryPortIoctl: UVERBS_METHOD_QUERY_PORT (5.4+), whose answer has
	// port_cap_flags2 and active_speed_ex.
	QueryPortIoctl = "query_port_ioctl"
	// QueryGIDTable: UVERBS_METHOD_QUERY_GID_TABLE (5.10+); without it
	// GIDs come from sysfs.
	QueryGIDTable = "query_gid_table"
	// NLDEVSystem: RDMA_NLDEV_CMD_SYS_GET (5.2+): the netns mode.
	NLDEVSystem = "nldev_sys"
	// NLDEVNotify: the kernel multicasts NLDEV events to
	// RDMA_NL_GROUP_NOTIFY (6.12+): SYS_GET's MONITOR_MODE says so.
	NLDEVNotify = "nldev_notify"
)

// requires: features that are only tried through another (the native
// uverbs methods need the ioctl uAPI; the notify probe asks SYS_GET).
var requires = map[string]string{GetContextIoctl: UverbsIoctl, QueryPortIoctl: UverbsIoctl, QueryGIDTable: UverbsIoctl,
	NLDEVNotify: NLDEVSystem}

// Known lists every feature, in the order `version -d` prints them.
var Known = []string{UverbsIoctl, GetContextIoctl, QueryPortIoctl, QueryGIDTable, NLDEVSystem, NLDEVNotify}

// Result is what is known about one feature.
type Result struct {
	Name    string `json:"name"`
	Present bool   `json:"present"`
	// Forced: RDMACTL_KERNEL_ABSENT named it; it was not probed.
	Forced bool `json:"forced,omitempty"`
	// Detail: how the probe decided (the errno it saw, say).
	Detail string `json:"detail,omitempty"`
}

var (
	mu      sync.Mutex
	results = map[string]Result{}
	absent  map[string]bool // parsed RDMACTL_KERNEL_ABSENT; nil until read
)

// EnvAbsent is the environment variable that forces features absent.
const EnvAbsent = "RDMACTL_KERNEL_ABSENT"

func forcedLocked(name string) bool {
	if absent == nil {
		absent = map[string]bool{}
		for _, f := range strings.Split(os.Getenv(EnvAbsent), ",") {
			if f = strings.TrimSpace(f); f != "" {
				absent[f] = true
			}
		}
	}
	return absent["all"] || absent[name]
}

// Has reports whether the kernel has feature name, running probe the
// first time it is asked (probe returns the answer and how it decided).
// A feature forced absent is never probed.
func Has(name string, probe func() (bool, string)) bool {
	mu.Lock()
	defer mu.Unlock()
	if present, decided := decidedLocked(name); decided {
		return present
	}
	ok, detail := probe()
	results[name] = Result{Name: name, Present: ok, Detail: detail}
	return ok
}

// Worth trying reports whether code should try feature name: it is not
// forced absent and not known to be absent. For features learned in
// passing: the caller tries, then records the outcome with Set.
func Worth(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	if present, decided := decidedLocked(name); decided {
		return present
	}
	return true
}

// decidedLocked is what is known of name without probing: a recorded
// answer, or absent when forced (which it records). mu is held.
func decidedLocked(name string) (present, decided bool) {
	if r, ok := results[name]; ok {
		return r.Present, true
	}
	if forcedLocked(name) {
		results[name] = Result{Name: name, Forced: true, Detail: "forced absent by " + EnvAbsent}
		return false, true
	}
	return false, false
}

// Forced reports whether feature name is forced absent.
func Forced(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	return forcedLocked(name)
}

// Set records an answer learned in passing (a method that answered
// EPROTONOSUPPORT while in use). The first answer stays.
func Set(name string, present bool, detail string) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := results[name]; !ok {
		results[name] = Result{Name: name, Present: present, Detail: detail}
	}
}

// Lookup returns what is known of feature name, if anything.
func Lookup(name string) (Result, bool) {
	mu.Lock()
	defer mu.Unlock()
	r, ok := results[name]
	return r, ok
}

// All returns every recorded result: the known features in their order,
// then any others by name.
func All() []Result {
	mu.Lock()
	defer mu.Unlock()
	var out []Result
	seen := map[string]bool{}
	for _, n := range Known {
		if r, ok := results[n]; ok {
			out = append(out, r)
			seen[n] = true
		}
	}
	var rest []string
	for n := range results {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	for _, n := range rest {
		out = append(out, results[n])
	}
	return out
}

// State is what is known of feature name, for reports: "present",
// "absent", "forced_absent" (RDMACTL_KERNEL_ABSENT) or "unknown" (not
// probed: nothing to probe it with), and how that was decided.
func State(name string) (state, detail string) {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := results[name]; ok {
		switch {
		case r.Forced:
			return "forced_absent", r.Detail
		case r.Present:
			return "present", r.Detail
		}
		return "absent", r.Detail
	}
	if forcedLocked(name) {
		return "forced_absent", "forced absent by " + EnvAbsent
	}
	if req, ok := requires[name]; ok {
		if r, known := results[req]; known && !r.Present {
			return "absent", "needs " + req
		}
	}
	return "unknown", "not probed: no RDMA device or netlink to probe with"
}

// Reset forgets every answer and rereads RDMACTL_KERNEL_ABSENT (tests).
func Reset() {
	mu.Lock()
	defer mu.Unlock()
	results = map[string]Result{}
	absent = nil
}

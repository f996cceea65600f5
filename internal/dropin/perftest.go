package dropin

import "strings"

// perftest's eight tests (perftest's src/{send,write,read,atomic}_{bw,lat}.c)
// are rdmactl perf's: 'rdmactl perf VERB [--lat]' takes perftest's options
// with perftest's meaning and prints perftest's report (internal/perf).
// Run under a test's name, rdmactl hands perf that test's command line
// with two differences removed: the test is in the name, and -j is
// perftest's --source_ip rather than rdmactl's --json.
var perftestTests = []struct {
	name, verb string
	lat        bool
}{
	{"ib_send_bw", "send", false},
	{"ib_send_lat", "send", true},
	{"ib_write_bw", "write", false},
	{"ib_write_lat", "write", true},
	{"ib_read_bw", "read", false},
	{"ib_read_lat", "read", true},
	{"ib_atomic_bw", "atomic", false},
	{"ib_atomic_lat", "atomic", true},
}

// perftestTool is the Tool for one perftest test.
func perftestTool(name, verb string, lat bool) Tool {
	return Tool{Name: name, Upstream: "perftest 6.06 src/" + strings.TrimPrefix(name, "ib_") + ".c", Run: func(env Env, argv []string) int {
		return env.Perf(name, PerftestArgs(verb, lat, argv[1:]))
	}}
}

// PerftestArgs is the rdmactl command line for a perftest test's
// arguments: perf VERB, --lat for a latency test, then args, where -j
// (perftest's --source_ip, a raw Ethernet option that perf refuses by
// that name) is spelled --source_ip. Operands and what follows "--" are
// left alone.
func PerftestArgs(verb string, lat bool, args []string) []string {
	out := []string{"perf", verb}
	if lat {
		out = append(out, "--lat")
	}
	for i, a := range args {
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "-j":
			out = append(out, "--source_ip")
		case strings.HasPrefix(a, "-j"):
			out = append(out, "--source_ip="+a[2:])
		default:
			out = append(out, a)
		}
	}
	return out
}

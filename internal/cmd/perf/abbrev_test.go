package perf

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// TestExpandLongPrefixes: a long option's unambiguous prefix is that
// option, as getopt_long takes it (NVIDIA's ngc_multinode_perf writes
// --report_gbit); an ambiguous one is refused with getopt's wording;
// option arguments, operands and what follows "--" are not touched.
func TestExpandLongPrefixes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"--report_gbit -b -q 4 --output=bandwidth", "--report_gbits -b -q 4 --output=bandwidth"},
		{"--report_gbits", "--report_gbits"},
		{"--ib-d rxe0 --siz=4096 10.0.0.1", "--ib-dev rxe0 --size=4096 10.0.0.1"},
		{"-d --report 10.0.0.1", "-d --report 10.0.0.1"},   // -d's argument
		{"-drxe0 --report_g", "-drxe0 --report_gbits"},     // attached argument
		{"-bd --report 10.0.0.1", "-bd --report 10.0.0.1"}, // a cluster ending in -d
		{"-- --report_g", "-- --report_g"},                 // after "--"
		{"--no_such_option", "--no_such_option"},           // pflag's to report
		{"--perform_warm --dont_xchg", "--perform_warm_up --dont_xchg_versions"},
	} {
		fs := perfFlagSet(&perfFlags{}, perf.VerbWrite)
		out, err := expandLongPrefixes(fs, strings.Fields(c.in))
		if err != nil || strings.Join(out, " ") != c.want {
			t.Errorf("%q: %q, %v; want %q", c.in, out, err, c.want)
		}
	}
	fs := perfFlagSet(&perfFlags{}, perf.VerbWrite)
	_, err := expandLongPrefixes(fs, []string{"--report"})
	if code, msg := cmdutil.ExitStatus(err); code != cmdutil.ExitUsage || !strings.HasPrefix(msg, "option '--report' is ambiguous; possibilities: --report") {
		t.Errorf("--report: exit %d %q, want 2 and getopt's ambiguity", code, msg)
	}
}

// TestLimitArgsAsStrtof: -w and -y read the number an argument starts
// with, as perftest's strtof; public suites write "-w 100M", "-y 10G".
func TestLimitArgsAsStrtof(t *testing.T) {
	for _, c := range []struct {
		arg  string
		want float64
	}{{"100M", 100}, {"10G", 10}, {"2.5", 2.5}, {" 7e1x", 70}, {".5", 0.5}, {"x", 0}, {"", 0}, {"1e", 1}, {"+3", 3}} {
		f, err := parsePerfArgs(perf.VerbWrite, []string{"-w", c.arg, "-y", c.arg, "10.77.0.1"})
		if err != nil || f.p.Limits.BW != c.want || f.p.Limits.MsgRate != c.want {
			t.Errorf("-w/-y %q: %v %v, %v; want %v", c.arg, f.p.Limits.BW, f.p.Limits.MsgRate, err, c.want)
		}
	}
}

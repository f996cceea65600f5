package perf

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

func TestPerfReportFlags(t *testing.T) {
	f, err := parsePerfArgs(perf.VerbWrite, []string{"-N", "-F", "--disable_dynamic_polling", "--cqe_poll", "8", "--output=message_rate", "-D", "5", "-f", "0", "h"})
	if err != nil {
		t.Fatal(err)
	}
	if r := f.p.Report; !r.NoPeak || r.Output != perf.OutputMsgRate || !r.UserMargin || f.p.Margin != 0 || f.p.CQEPoll != 8 {
		t.Fatalf("%+v margin %v", r, f.p.Margin)
	}
	f, err = parsePerfArgs(perf.VerbSend, []string{"--lat", "--output", "latency", "-D", "10", "-f", "3", "h"})
	if err != nil || f.p.Report.Output != perf.OutputLat || f.p.Margin != 3*time.Second {
		t.Fatalf("%v %+v %v", err, f.p.Report, f.p.Margin)
	}
	// Without -f: rdmactl's default margin.
	f, err = parsePerfArgs(perf.VerbWrite, []string{"-D", "10", "h"})
	if err != nil || f.p.Report.UserMargin || f.p.Margin != 2*time.Second {
		t.Fatalf("%v %+v %v", err, f.p.Report, f.p.Margin)
	}
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"perf", "write", "--lat", "-N", "h"}, "-N"},
		{[]string{"perf", "write", "--output=latency", "h"}, "--output"},
		{[]string{"perf", "write", "--output", "bw", "h"}, "--output"},
		{[]string{"perf", "send", "--lat", "--output=bandwidth", "h"}, "--output"},
		{[]string{"perf", "send", "--lat", "-H", "--output=latency", "h"}, "--output"},
		{[]string{"perf", "write", "-D", "4", "-f", "2", "h"}, "-f 2"},
		{[]string{"perf", "write", "-f", "-1", "h"}, "-f -1"},
		{[]string{"perf", "write", "--cpu_util", "--run_infinitely", "h"}, "--cpu_util"},
		{[]string{"perf", "write", "--cqe_poll", "0", "h"}, "--cqe_poll 0"},
		// HW, --rate_limit's default: a rate perftest's RATE_VALUES names
		// (by its text), no packet rate, not with -R.
		{[]string{"perf", "write", "--rate_limit", "7", "h"}, "2.5, 5, 10, 14, 20, 25, 30, 40, 56, 60, 80, 100, 112, 120, 168, 200, 300 (Gb/s"},
		{[]string{"perf", "write", "--rate_limit", "5", "--rate_units", "p", "h"}, "--rate_units p"},
		{[]string{"perf", "write", "-R", "--rate_limit", "5", "h"}, "-R"},
		{[]string{"perf", "write", "--rate_limit", "5", "--rate_limit_type", "HW", "--rate_units", "p", "h"}, "--rate_units p"},
		{[]string{"perf", "write", "--rate_limit", "0", "--rate_limit_type", "SW", "h"}, "--rate_limit 0"},
		{[]string{"perf", "write", "--rate_limit", "5", "--rate_limit_type", "XX", "h"}, "--rate_limit_type"},
		{[]string{"perf", "write", "--rate_limit", "5", "--rate_limit_type", "SW", "--rate_units", "G", "h"}, "--rate_units"},
		{[]string{"perf", "write", "--burst_size", "8", "h"}, "--burst_size"},
		{[]string{"perf", "write", "--lat", "--rate_limit", "5", "--rate_limit_type", "SW", "h"}, "--rate_limit_type SW"},
		{[]string{"perf", "write", "--lat", "--cqe_poll", "4", "h"}, "--cqe_poll"},
	} {
		out, stderr, code := cmdtest.Run(t, NewCmd, c.args...)
		if code != cmdutil.ExitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.name) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2, one line naming %s", c.args, code, stderr, c.name)
		}
	}
}

// -V prints perftest's "Version: %s" line with the version rdmactl
// claims in the exchange, and exits 0 without opening a device.
func TestPerfVersion(t *testing.T) {
	for _, args := range [][]string{{"perf", "write", "-V"}, {"perf", "atomic", "--lat", "--version"}} {
		out, stderr, code := cmdtest.Run(t, NewCmd, args...)
		if code != 0 || out != "Version: "+perf.OurVersion+"\n" || stderr != "" {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q", args, code, out, stderr)
		}
	}
	if !strings.HasPrefix(perf.OurVersion, "6.") {
		t.Fatalf("OurVersion %q", perf.OurVersion)
	}
}

func TestPerfOutJSONFlags(t *testing.T) {
	f, err := parsePerfArgs(perf.VerbWrite, []string{"--out_json", "h"})
	if err != nil || f.p.Report.OutJSON != "perftest_out.json" {
		t.Fatalf("%v %q", err, f.p.Report.OutJSON)
	}
	f, err = parsePerfArgs(perf.VerbRead, []string{"--out_json", "--out_json_file=/tmp/r.json", "h"})
	if err != nil || f.p.Report.OutJSON != "/tmp/r.json" {
		t.Fatalf("%v %q", err, f.p.Report.OutJSON)
	}
	f, err = parsePerfArgs(perf.VerbRead, []string{"h"})
	if err != nil || f.p.Report.OutJSON != "" {
		t.Fatalf("%v %q", err, f.p.Report.OutJSON)
	}
	for _, args := range [][]string{{"perf", "write", "--out_json_file", "x.json", "h"}, {"perf", "write", "--out_json", "--out_json_file=", "h"}} {
		out, stderr, code := cmdtest.Run(t, NewCmd, args...)
		if code != cmdutil.ExitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--out_json_file") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

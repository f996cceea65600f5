package perf

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

func TestPerfQoSFlags(t *testing.T) {
	f, err := parsePerfArgs(perf.VerbWrite, []string{"-S", "3", "--tclass", "104", "--flow_label", "0x12345,7", "-u", "0",
		"--retry_count", "5", "--pkey_index", "2", "-w", "9000.5", "-y", "0.25", "10.77.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	q, l := f.p.QoS, f.p.Limits
	if q.SL != 3 || q.TrafficClass() != 104 || !slices.Equal(q.FlowLabels, []uint32{0x12345, 7}) || q.FlowLabel(3) != 7 ||
		q.QPTimeout() != 0 || q.RetryCount() != 5 || q.PKeyIndex != 2 || l.BW != 9000.5 || l.MsgRate != 0.25 || l.LatPct != 0 {
		t.Fatalf("%+v %+v", q, l)
	}
	// Defaults: perftest's 14 and 7, traffic class 0, no limits.
	f, err = parsePerfArgs(perf.VerbSend, []string{"--lat", "-T", "184", "--limit_lat", "12.5", "--limit_lat_pct", "99.9"})
	if err != nil {
		t.Fatal(err)
	}
	q, l = f.p.QoS, f.p.Limits
	if q.QPTimeout() != 14 || q.RetryCount() != 7 || q.TrafficClass() != 184 || q.TClass != -1 || q.TOS != 184 || l.Lat != 12.5 || l.LatPct != 99.9 {
		t.Fatalf("%+v %+v", q, l)
	}
	f, _ = parsePerfArgs(perf.VerbRead, nil)
	if q := f.p.QoS; q.TrafficClass() != 0 || q.SL != 0 || q.FlowLabels != nil || q.QPTimeout() != 14 || q.RetryCount() != 7 {
		t.Fatalf("defaults %+v", q)
	}
}

// Every bad QoS or threshold value is one line and exit 2, naming the
// option.
func TestPerfQoSUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-S", "16"}, "-S 16"},
		{[]string{"-S", "300"}, "sl"},
		{[]string{"--tclass", "256"}, "--tclass 256"},
		{[]string{"--tclass", "-2"}, "--tclass -2"},
		{[]string{"-T", "300"}, "-T 300"},
		{[]string{"--tclass", "104", "-T", "96"}, "disagree"},
		{[]string{"--flow_label", "0x100000"}, "--flow_label"},
		{[]string{"--flow_label", "1,,2"}, "--flow_label"},
		{[]string{"--flow_label", ""}, "--flow_label"},
		{[]string{"-u", "32"}, "-u 32"},
		{[]string{"--retry_count", "8"}, "--retry_count 8"},
		{[]string{"--pkey_index", "-1"}, "--pkey_index -1"},
		{[]string{"-w", "-1"}, "-w"},
		{[]string{"-y", "-0.5x"}, "limit must not be negative"},
		{[]string{"--lat", "-w", "10"}, "-w and -y apply to bandwidth"},
		{[]string{"--limit_lat", "10"}, "--limit_lat applies to latency"},
		{[]string{"--lat", "--limit_lat", "10", "--limit_lat_pct", "90"}, "--limit_lat_pct 90"},
		{[]string{"--lat", "--limit_lat_pct", "99"}, "needs --limit_lat"},
		{[]string{"-R", "--tclass", "104"}, "--tclass (use -T) not supported with -R"},
		{[]string{"-R", "--flow_label", "5", "--pkey_index", "1"}, "--flow_label, --pkey_index not supported with -R"},
	} {
		args := append([]string{"perf", "write"}, c.args...)
		args = append(args, "10.77.0.1")
		_, stderr, code := cmdtest.Run(t, NewCmd, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: code %d stderr %q (want %q)", c.args, code, stderr, c.want)
		}
	}
}

func TestPerfQoSHelp(t *testing.T) {
	stdout, _, code := cmdtest.Run(t, NewCmd, "perf", "write", "--help")
	for _, s := range []string{"-S, --sl", "--tclass", "-T, --tos", "--flow_label", "-u, --qp-timeout", "--retry_count",
		"--pkey_index", "-w, --limit_bw", "-y, --limit_msgrate", "--limit_lat ", "--limit_lat_pct", "--tclass 104 -S 3 -w 9000"} {
		if code != 0 || !strings.Contains(stdout, s) {
			t.Errorf("perf write --help lacks %q", s)
		}
	}
}

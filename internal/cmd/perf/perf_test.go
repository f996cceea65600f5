package perf

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// perftest's -d (device) and -p (TCP port) shadow the root's persistent
// -d/--details and -p/--pretty on the perf subcommands only.
func TestPerfFlagsShadowGlobalShorthands(t *testing.T) {
	f, err := parsePerfArgs(perf.VerbWrite, []string{"-d", "rxe1", "-p", "1234", "-s", "4K", "-n", "100", "-j", "10.77.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	p := f.p
	if p.Device != "rxe1" || p.Port != 1234 || p.Size != 4096 || p.Iters != 100 || p.Server || p.Host != "10.77.0.1" || !f.json {
		t.Fatalf("%+v", p)
	}
	f, err = parsePerfArgs(perf.VerbSend, []string{"--lat", "-d", "rxe0", "-c", "UD", "-x", "1", "-D", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if !f.p.Server || f.p.Test != perf.TestLat || f.p.Conn != perf.UD || !f.p.UserGID || f.p.GIDIndex != 1 || f.p.Size != 2 || f.p.Duration.Seconds() != 3 {
		t.Fatalf("%+v", f.p)
	}
	// The whole command tree builds (no shorthand panic) and the global
	// flags still work elsewhere.
	_, stderr, code := cmdtest.Run(t, NewCmd, "-d", "-p", "perf", "write", "--help")
	if code != 0 {
		t.Fatalf("code %d: %s", code, stderr)
	}
	stdout, _, code := cmdtest.Run(t, NewCmd, "perf", "read", "--help")
	if code != 0 || !strings.Contains(stdout, "-d, --ib-dev") || !strings.Contains(stdout, "-p, --port") {
		t.Fatalf("code %d:\n%s", code, stdout)
	}
}

func TestPerfUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"perf"},
		{"perf", "write", "-s", "0"},
		{"perf", "write", "-c", "XY"},
		{"perf", "write", "-c", "UD", "h"},
		{"perf", "write", "--lat", "-q", "2", "h"},
		{"perf", "write", "a", "b"},
		{"perf", "read", "--nosuch"},
	} {
		_, stderr, code := cmdtest.Run(t, NewCmd, args...)
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: code %d stderr %q", args, code, stderr)
		}
	}
}

func TestPerfUnknownDevice(t *testing.T) {
	_, stderr, code := cmdtest.Run(t, NewCmd, "perf", "write", "-d", "nosuchdev0", "127.0.0.1")
	if code == 0 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "rdmactl: ") {
		t.Fatalf("code %d stderr %q", code, stderr)
	}
}

// TestPerfFlagRangesFirst: every flag's range is checked before any device
// is looked up, for every test: one line naming the flag, exit 2 (on a
// host without RDMA a missed check would say "no RDMA device", exit 5).
func TestPerfFlagRangesFirst(t *testing.T) {
	bad := [][]string{
		{"-p", "70000"}, {"-p", "0"}, {"-n", "0"}, {"-t", "0"}, {"-r", "0"}, {"-q", "0"}, {"-Q", "0"}, {"-i", "0"}, {"-i", "300"},
		{"--tclass", "-1"}, {"-T", "-3"}, {"-w", "NaN"}, {"-y", "Inf"}, {"--limit_lat", "NaN"},
		{"-D", "9223372036854775807"}, {"-D", "-1"}, {"-s", "0"}, {"-w", "-1"},
	}
	for _, test := range [][]string{{"write"}, {"write", "--lat"}, {"read"}, {"read", "--lat"}, {"send"}, {"send", "--lat"}, {"atomic"}, {"atomic", "--lat"}} {
		for _, b := range bad {
			args := append(append([]string{"perf"}, test...), b...)
			out, stderr, code := cmdtest.Run(t, NewCmd, args...)
			if code != cmdutil.ExitUsage || out != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, b[0]) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d and one line naming %s", args, code, stderr, cmdutil.ExitUsage, b[0])
			}
		}
	}
}

// TestPerfForceLinkFlag: --force-link takes what perftest's
// str_link_layer takes (the first 2 or 8 letters of IB or Ethernet, any
// case) and refuses the rest in one line, exit 2, before any device.
func TestPerfForceLinkFlag(t *testing.T) {
	for _, v := range []string{"IB", "ib", "IBoE", "Ethernet", "ETHERNET", "ethernet0"} {
		f, err := parsePerfArgs(perf.VerbWrite, []string{"--force-link", v, "h"})
		if err != nil || f.p.ForceLink == 0 {
			t.Errorf("--force-link %s: %v", v, err)
		}
	}
	_, stderr, code := cmdtest.Run(t, NewCmd, "perf", "write", "--force-link", "eth", "h")
	if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "--force-link") {
		t.Errorf("--force-link eth: exit %d, stderr %q", code, stderr)
	}
}

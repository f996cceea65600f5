package dropin

import (
	"slices"
	"strings"
	"testing"
)

// TestPerftestArgs: a perftest test's command line becomes rdmactl perf's
// with the test from the name and perftest's -j kept as perftest's
// (--source_ip), whatever its place.
func TestPerftestArgs(t *testing.T) {
	for _, c := range []struct {
		verb string
		lat  bool
		args []string
		want string
	}{
		{"write", false, nil, "perf write"},
		{"write", true, []string{"-d", "rxe0", "-s", "8", "10.0.0.1"}, "perf write --lat -d rxe0 -s 8 10.0.0.1"},
		{"send", false, []string{"-F", "--report_gbits", "--output=bandwidth", "-j", "1.2.3.4"}, "perf send -F --report_gbits --output=bandwidth --source_ip 1.2.3.4"},
		{"read", false, []string{"-j1.2.3.4", "h"}, "perf read --source_ip=1.2.3.4 h"},
		{"atomic", true, []string{"-A", "FETCH_AND_ADD", "--", "-j"}, "perf atomic --lat -A FETCH_AND_ADD -- -j"},
		{"send", false, []string{"--json"}, "perf send --json"},
	} {
		if got := strings.Join(PerftestArgs(c.verb, c.lat, c.args), " "); got != c.want {
			t.Errorf("%s %v %q: %q, want %q", c.verb, c.lat, c.args, got, c.want)
		}
	}
}

// TestPerftestNames: the eight names are tools, each runs perf with its
// own name and test, and 'rdmactl links' makes them.
func TestPerftestNames(t *testing.T) {
	for _, n := range []string{"ib_send_bw", "ib_send_lat", "ib_write_bw", "ib_write_lat", "ib_read_bw", "ib_read_lat", "ib_atomic_bw", "ib_atomic_lat"} {
		tool, ok := Lookup(n)
		if !ok || !slices.Contains(Names(), n) {
			t.Fatalf("%s: not a tool", n)
		}
		var gotTool string
		var gotArgs []string
		code := tool.Run(Env{Perf: func(tool string, args []string) int { gotTool, gotArgs = tool, args; return 6 }}, []string{"/usr/lib/rdmactl/bin/" + n, "-d", "rxe0"})
		verb, kind, _ := strings.Cut(strings.TrimPrefix(n, "ib_"), "_")
		want := []string{"perf", verb}
		if kind == "lat" {
			want = append(want, "--lat")
		}
		want = append(want, "-d", "rxe0")
		if code != 6 || gotTool != n || !slices.Equal(gotArgs, want) {
			t.Errorf("%s: exit %d, perf as %q with %q; want exit 6, %q", n, code, gotTool, gotArgs, want)
		}
	}
}

package perf

import (
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/perf"
)

// -R/--rdma_cm is parsed as perftest's, and the transports the CM path
// lacks are refused in one line with exit 2 before anything is opened.
func TestPerfRDMACMFlag(t *testing.T) {
	for _, args := range [][]string{{"-R"}, {"--rdma_cm"}, {"-R", "10.0.0.1"}} {
		f, err := parsePerfArgs(perf.VerbWrite, args)
		if err != nil || !f.p.RDMACM {
			t.Fatalf("%q: RDMACM %v, err %v", args, f.p.RDMACM, err)
		}
	}
	f, err := parsePerfArgs(perf.VerbWrite, nil)
	if err != nil || f.p.RDMACM {
		t.Fatalf("no -R: RDMACM %v, err %v", f.p.RDMACM, err)
	}
	for _, c := range []string{"UD", "UC"} {
		_, stderr, code := cmdtest.Run(t, NewCmd, "perf", "send", "-R", "-c", c, "10.0.0.1")
		if code != cmdutil.ExitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "-R") {
			t.Fatalf("-R -c %s: code %d, stderr %q", c, code, stderr)
		}
	}
}

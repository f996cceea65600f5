package perf

import (
	"context"
	"strings"
	"testing"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdtest"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/cmd/root"
	"github.com/rdmactl/rdmactl/internal/dropin"
	"github.com/rdmactl/rdmactl/internal/perf"
	"github.com/spf13/cobra"
)

// runAs runs a perftest test's command line as rdmactl does under that
// name (internal/dropin, root.MainAs).
func runAs(t *testing.T, argv ...string) (stdout, stderr string, code int) {
	t.Helper()
	tool, ok := dropin.Lookup(argv[0])
	if !ok {
		t.Fatalf("%s: no such tool", argv[0])
	}
	var o, e strings.Builder
	code = tool.Run(dropin.Env{Stdout: &o, Stderr: &e, Perf: func(name string, args []string) int {
		return root.Run(&cmdutil.App{Stdout: &o, Stderr: &e, Ctx: context.Background(), Tool: name}, []func(*cmdutil.App) *cobra.Command{NewCmd}, args)
	}}, argv)
	return o.String(), e.String(), code
}

// TestAsPerftest: under a perftest test's name -V prints the version and
// exits 1 (perftest's VERSION_EXIT), -j is perftest's --source_ip, and
// an error line starts with the tool's name.
func TestAsPerftest(t *testing.T) {
	o, e, code := runAs(t, "ib_write_bw", "-V")
	if o != "Version: "+perf.OurVersion+"\n" || e != "" || code != 1 {
		t.Errorf("ib_write_bw -V: %q %q exit %d", o, e, code)
	}
	o, e, code = runAs(t, "ib_send_lat", "-j", "1.2.3.4", "10.0.0.1")
	if o != "" || !strings.HasPrefix(e, "ib_send_lat: --source_ip: ") || strings.Count(e, "\n") != 1 || code != cmdutil.ExitUsage {
		t.Errorf("ib_send_lat -j: %q %q exit %d", o, e, code)
	}
	o, e, code = runAs(t, "ib_read_lat", "-p", "70000", "10.0.0.1")
	if o != "" || e != "ib_read_lat: -p 70000: TCP port must be 1..65535\n" || code != cmdutil.ExitUsage {
		t.Errorf("ib_read_lat -p 70000: %q %q exit %d", o, e, code)
	}
	// rdmactl's own -V is unchanged.
	o, _, code = cmdtest.Run(t, NewCmd, "perf", "write", "-V")
	if o != "Version: "+perf.OurVersion+"\n" || code != 0 {
		t.Errorf("rdmactl perf write -V: %q exit %d", o, code)
	}
}

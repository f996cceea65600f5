// Command rdmactl inspects RDMA devices and benchmarks RDMA fabrics without
// libibverbs: it talks to the kernel over RDMA netlink, sysfs and the uverbs
// character devices.
package main

import (
	"os"
	"path/filepath"

	"github.com/rdmactl/rdmactl/internal/cmd/capture"
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/cmd/completion"
	"github.com/rdmactl/rdmactl/internal/cmd/counters"
	"github.com/rdmactl/rdmactl/internal/cmd/dev"
	"github.com/rdmactl/rdmactl/internal/cmd/doctor"
	"github.com/rdmactl/rdmactl/internal/cmd/exporter"
	"github.com/rdmactl/rdmactl/internal/cmd/gids"
	"github.com/rdmactl/rdmactl/internal/cmd/link"
	"github.com/rdmactl/rdmactl/internal/cmd/links"
	"github.com/rdmactl/rdmactl/internal/cmd/monitor"
	"github.com/rdmactl/rdmactl/internal/cmd/perf"
	"github.com/rdmactl/rdmactl/internal/cmd/res"
	"github.com/rdmactl/rdmactl/internal/cmd/root"
	"github.com/rdmactl/rdmactl/internal/cmd/statistic"
	"github.com/rdmactl/rdmactl/internal/cmd/system"
	"github.com/rdmactl/rdmactl/internal/cmd/top"
	versioncmd "github.com/rdmactl/rdmactl/internal/cmd/version"
	"github.com/rdmactl/rdmactl/internal/dropin"
	"github.com/spf13/cobra"
)

// commands are rdmactl's top-level commands, each a package under
// internal/cmd. A new command is added here: one explicit list instead of
// init() registration, so that nothing depends on the order in which the
// compiler sees the files. Help lists commands sorted by name (cobra's
// default), whatever the order here.
var commands = []func(*cmdutil.App) *cobra.Command{
	dev.NewCmd,
	link.NewCmd,
	gids.NewCmd,
	counters.NewCmd,
	top.NewCmd,
	res.NewCmd,
	perf.NewCmd,
	capture.NewCmd,
	monitor.NewCmd,
	doctor.NewCmd,
	exporter.NewCmd,
	versioncmd.NewCmd,
	completion.NewCmd,
	system.NewCmd,
	statistic.NewCmd,
	links.NewCmd,
}

// Stamped at link time by the Makefile, goreleaser and
// scripts/release-snapshot.sh:
//
//	-X main.version=v1.2.3 -X main.commit=<sha> -X main.date=<RFC 3339 UTC>
//
// Left empty, cmdutil.Stamp.Info fills them from what the Go toolchain
// recorded.
var (
	version string
	commit  string
	date    string
)

func main() {
	// Invoked through a link named as a reference tool (ibv_devinfo...):
	// that tool's command line and output (rdmactl links makes them).
	if t, ok := dropin.Lookup(filepath.Base(os.Args[0])); ok {
		stamp := cmdutil.Stamp{Version: version, Commit: commit, Date: date}
		os.Exit(t.Run(dropin.Env{Stdout: os.Stdout, Stderr: os.Stderr, Open: dropin.OpenLive, Netlink: dropin.DialNetlink,
			Perf: func(tool string, args []string) int { return root.MainAs(stamp, commands, tool, args) }}, os.Args))
	}
	os.Exit(root.Main(cmdutil.Stamp{Version: version, Commit: commit, Date: date}, commands))
}

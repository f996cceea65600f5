package capture

import (
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/spf13/cobra"
)

func NewCmd(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "capture DIR|FILE.tar.gz",
		Short: "Write a support bundle (sysfs copy, NLDEV dumps, versions) to DIR or FILE.tar.gz, to read back with --sysfs-root",
		Long: `Write a support bundle of this host's RDMA state for a bug report: the
sysfs files rdmactl reads (class/infiniband, class/infiniband_verbs, the
netdevs the devices name in class/net, the PCI device and driver links with
the PCIe link attributes), laid out like /sys, and under rdmactl/ the RDMA
netlink dumps (nldev.json: device index, protocol, caps, ports, NLDEV
statistics, netns mode) and the versions and kernel probes (bundle.json).
'rdmactl --sysfs-root DIR|FILE.tar.gz ...' then shows offline what link
show, dev show, gids, counters and doctor showed on this host.

A name ending in .tar.gz or .tgz writes one compressed file (it must not
exist); any other name is a directory, which must be new or empty. Each
file is read once, up to 64 KiB and for at most a few seconds; files the
kernel refuses to read (such as the GID attributes of empty slots) are left
out and listed in UNREADABLE. Nothing is printed on success. With
--sysfs-root the copy is made from that capture instead of /sys (keeping
its netlink dump, if it has one).`,
		Example: `  rdmactl capture rdma-$(hostname).tar.gz
  rdmactl --sysfs-root rdma-host1.tar.gz doctor
  rdmactl capture rdma-sysfs && rdmactl --sysfs-root rdma-sysfs link show`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return cmdutil.UsageErrorf("capture needs one argument, the directory or .tar.gz file to write (try 'rdmactl capture rdma.tar.gz')")
			}
			return nil
		},
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return nil, cobra.ShellCompDirectiveFilterDirs
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			// Live: netlink too, for the NLDEV dump; without it, sysfs alone.
			src, err := inventory.Open(a.Opts.SysfsRoot, true)
			if err != nil {
				return err
			}
			defer src.Close()
			v := a.Stamp.Info()
			if a.Opts.SysfsRoot == "" {
				v.Kernel = cmdutil.ProbeKernel()
			}
			return src.CaptureBundle(args[0], v)
		},
	}
}

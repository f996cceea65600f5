package main

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/spf13/cobra"
)

func newCaptureCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "capture DIR",
		Short: "Copy the part of /sys rdmactl reads into DIR, to attach to a bug report (read back with --sysfs-root DIR)",
		Long: `Copy the sysfs files rdmactl reads (class/infiniband, class/infiniband_verbs,
the netdevs the devices name in class/net, and the PCI device and driver
links) into DIR, laid out like /sys, so that 'rdmactl --sysfs-root DIR ...'
shows offline what link show, dev show, gids and counters showed on this
host, less what only RDMA netlink knows (device index, protocol, caps, netns
mode, netlink statistics).

DIR must be new or empty. Each file is read once, up to 64 KiB and for at
most a few seconds; files the kernel refuses to read (such as the GID
attributes of empty slots) are left out and listed in DIR/UNREADABLE.
Nothing is printed on success. With --sysfs-root the copy is made from that
tree instead of /sys.`,
		Example: `  rdmactl capture rdma-sysfs && tar czf rdma-sysfs.tar.gz rdma-sysfs
  rdmactl --sysfs-root rdma-sysfs link show`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usageErrorf("capture needs one argument, the directory to copy into (try 'rdmactl capture rdma-sysfs')")
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
			return inventory.Captured(a.opts.sysfsRoot).Capture(args[0])
		},
	}
}

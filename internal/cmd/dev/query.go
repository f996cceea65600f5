package dev

import (
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/spf13/cobra"
)

func newDevQueryCmd(a *cmdutil.App) *cobra.Command {
	var port uint
	c := &cobra.Command{
		Use:   "query [DEV[/PORT]]",
		Short: "Query device and port attributes through uverbs (like ibv_devinfo -v)",
		Long: `Open each RDMA device's uverbs node (/dev/infiniband/uverbsN) and print
everything 'ibv_devinfo -v' prints: device limits and capability flags,
extended attributes (ODP, timestamps, RSS, tag matching, CQ moderation,
device memory), and for every port its state, MTUs, LIDs, link layer,
capability flags, counters, width, speed and GID table. Without DEV, every
device is queried. It needs read/write access to /dev/infiniband/uverbsN
(mode 0666 by default) and no libibverbs.

With -j, keys are the names ibv_devinfo prints; "NAME (n)" values are split
into a number (key) and text (key_name); flag words come with a list of
flag names (key_names).`,
		Example: `  rdmactl dev query
  rdmactl dev query rxe0 --port 1
  rdmactl dev query rxe0/1
  rdmactl -j dev query rxe0 | jq '.[0].ports[0].active_mtu_name'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			arg := ""
			if len(args) == 1 {
				arg = args[0]
			}
			return runDevQuery(a, arg, port)
		},
	}
	// -p is the global --pretty, so the port is --port/-i (ibv_devinfo's -i).
	c.Flags().UintVarP(&port, "port", "i", 0, "query only port `N` (as DEV/N)")
	addHCACapsFlag(a, c)
	return cmdutil.Needs(cmdutil.NeedUverbs, c)
}

func runDevQuery(a *cmdutil.App, arg string, port uint) error {
	name, p, hasPort := strings.Cut(arg, "/")
	if hasPort {
		n, err := strconv.ParseUint(p, 10, 8)
		if err != nil || n == 0 {
			return cmdutil.UsageErrorf("%q: the port must be a number from 1, as in rxe0/1", arg)
		}
		if port != 0 && uint(n) != port {
			return cmdutil.UsageErrorf("port given twice (%s and --port %d)", arg, port)
		}
		port = uint(n)
	}
	if port > 255 {
		return cmdutil.UsageErrorf("--port %d: ports are numbered 1..255", port)
	}
	// The uverbs nodes and driver ids come from netlink (GET_CHARDEV),
	// else from sysfs.
	src, err := inventory.Open("", true)
	if err != nil {
		return err
	}
	defer src.Close()
	qs, err := src.Query(name, uint8(port))
	if err != nil {
		return err
	}
	devs := render.DevInfos(qs)
	if a.Opts.JSON {
		return a.PrintJSON(devs)
	}
	return render.DevInfoText(a.Stdout, devs)
}

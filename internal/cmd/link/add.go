package link

import (
	"fmt"
	"net"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// rdmactl link add / link delete: software RDMA devices (Soft-RoCE rxe,
// soft iWARP siw) on a netdev, as "rdma link add|delete".

// linkSubcommands are the write children of "rdmactl link" (link.go adds
// them beside show).
var linkSubcommands = []func(*cmdutil.App) *cobra.Command{newLinkAddCmd, newLinkDeleteCmd}

func newLinkAddCmd(a *cmdutil.App) *cobra.Command {
	return cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "add NAME type rxe|siw netdev NETDEV",
		Short: "Create a software RDMA device on a netdev (needs CAP_NET_ADMIN)",
		Long: `Create a software RDMA device NAME of type rxe (Soft-RoCE) or siw (soft
iWARP) on the network device NETDEV, as 'rdma link add'. The kernel loads
the driver (rdma_rxe, siw) on demand. Prints nothing on success.

Fails in one line when NAME exists (exit 1), NETDEV does not exist (exit 3),
NETDEV already has a device of that type (exit 1), the kernel has no such
driver (exit 5) or the caller lacks CAP_NET_ADMIN (exit 4).`,
		Example: `  rdmactl link add rxe0 type rxe netdev eth0
  rdmactl link add siw0 type siw netdev eth0`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmdutil.UsageErrorf("link add: needs NAME type rxe|siw netdev NETDEV")
			}
			kw, err := cmdutil.Keywords("link add", args[1:], "type", "netdev")
			if err != nil {
				return err
			}
			if kw["type"] == "" || kw["netdev"] == "" {
				return cmdutil.UsageErrorf("link add: needs NAME type rxe|siw netdev NETDEV")
			}
			return runLinkAdd(a, args[0], kw["type"], kw["netdev"])
		},
	})
}

func runLinkAdd(a *cmdutil.App, name, typ, netdev string) error {
	what := fmt.Sprintf("link add %s", name)
	if err := cmdutil.CheckDevName("link add", name); err != nil {
		return err
	}
	if typ != "rxe" && typ != "siw" {
		return cmdutil.UsageErrorf("link add: type %q: want rxe or siw", typ)
	}
	if _, err := net.InterfaceByName(netdev); err != nil {
		return cmdutil.WithCode(cmdutil.ExitNotFound, fmt.Errorf("%s: no network device %q in this network namespace", what, netdev))
	}
	c, _, closeFn, err := a.OpenWrite()
	if err != nil {
		return err
	}
	defer closeFn()
	devs, err := c.Devices()
	if err != nil {
		return err
	}
	for _, d := range devs {
		if d.Name == name {
			return cmdutil.WithCode(cmdutil.ExitFailure, fmt.Errorf("%s: an RDMA device called %s exists already", what, name))
		}
	}
	return cmdutil.WriteError(what, c.NewLink(name, typ, netdev), map[syscall.Errno]cmdutil.Refusal{
		syscall.EEXIST: {Code: cmdutil.ExitFailure, Msg: fmt.Sprintf("%s already has an %s device (EEXIST)", netdev, typ)},
		syscall.ENFILE: {Code: cmdutil.ExitFailure, Msg: fmt.Sprintf("an RDMA device called %s exists already (ENFILE)", name)},
		syscall.ENODEV: {Code: cmdutil.ExitNotFound, Msg: fmt.Sprintf("no network device %q (ENODEV)", netdev)},
		syscall.EINVAL: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("the kernel refused (EINVAL): it has no %s link type (module rdma-link-%s not available?), or %s cannot carry one", typ, typ, netdev)},
	})
}

func newLinkDeleteCmd(a *cmdutil.App) *cobra.Command {
	return cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:     "delete NAME",
		Aliases: []string{"del"},
		Short:   "Remove a software RDMA device (rxe, siw; needs CAP_NET_ADMIN)",
		Long: `Remove the software RDMA device NAME, as 'rdma link delete'. Only devices
created with 'link add' (rxe, siw) can be removed; hardware devices are
refused (exit 5). Prints nothing on success.`,
		Example: `  rdmactl link delete rxe0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runLinkDelete(a, args[0])
		},
	})
}

func runLinkDelete(a *cmdutil.App, name string) error {
	c, _, closeFn, err := a.OpenWrite()
	if err != nil {
		return err
	}
	defer closeFn()
	d, err := c.Device(name)
	if err != nil {
		return err
	}
	return cmdutil.WriteError("link delete "+name, c.DelLink(d.Index), map[syscall.Errno]cmdutil.Refusal{
		syscall.EINVAL: {Code: cmdutil.ExitUnsupported, Msg: "the kernel refused (EINVAL): only software devices (rxe, siw) can be deleted"},
	})
}

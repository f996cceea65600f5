package system

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/spf13/cobra"
)

// rdmactl system [show] and system set: the RDMA subsystem's settings, as
// "rdma system".

// systemJSON is `rdmactl -j system show`: rdma's keys with underscores
// (rdma 6.1's -j prints this as text, newer rdma as JSON with these
// keys and booleans). A setting the kernel does not report is left out.
type systemJSON struct {
	Netns          string `json:"netns,omitempty"`
	PrivilegedQKey *bool  `json:"privileged_qkey,omitempty"`
	CopyOnFork     *bool  `json:"copy_on_fork,omitempty"`
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	show := func(c *cobra.Command, args []string) error { return runSystemShow(a) }
	c := cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:     "system",
		Aliases: []string{"sys"},
		Short:   "RDMA subsystem settings: netns mode, privileged Q_Key, copy-on-fork (like rdma system)",
		Example: `  rdmactl system
  rdmactl system set netns exclusive
  rdmactl system set privileged-qkey on`,
		Args: cobra.NoArgs,
		RunE: show,
	})
	c.AddCommand(cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:   "show",
		Short: "Show the netns mode, the privileged Q_Key setting and copy-on-fork",
		Long: `Show the RDMA subsystem's settings (RDMA netlink SYS_GET): the netns mode
(shared: every device in every network namespace; exclusive: each device in
one), whether unprivileged processes may use the privileged Q_Key (kernels
that have the setting) and whether fork() keeps DMA-pinned memory valid.`,
		Example: `  rdmactl system show
  rdmactl -j system show | jq -r .netns`,
		Args: cobra.NoArgs,
		RunE: show,
	}))
	c.AddCommand(cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "set netns|privileged-qkey VALUE",
		Short: "Set the netns mode (shared|exclusive) or privileged-qkey (on|off); needs CAP_NET_ADMIN",
		Long: `Change one subsystem setting, as 'rdma system set':

  netns shared|exclusive     the netns mode; the kernel changes it only while no
                             network namespace but the initial one exists (else
                             exit 1, EBUSY)
  privileged-qkey on|off     let unprivileged processes use the privileged Q_Key
                             (kernels with the setting; else exit 5)

Prints nothing on success; without CAP_NET_ADMIN exit 4.`,
		Example: `  rdmactl system set netns exclusive
  rdmactl system set privileged-qkey on`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) != 2 {
				return cmdutil.UsageErrorf("system set: needs one setting: netns shared|exclusive or privileged-qkey on|off")
			}
			kw, err := cmdutil.Keywords("system set", args, "netns", "privileged-qkey")
			if err != nil {
				return err
			}
			return runSystemSet(a, kw)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0:
				return cmdutil.Prefixed(toComplete, "netns", "privileged-qkey"), cobra.ShellCompDirectiveNoFileComp
			case len(args) == 1 && args[0] == "netns":
				return cmdutil.Prefixed(toComplete, "shared", "exclusive"), cobra.ShellCompDirectiveNoFileComp
			case len(args) == 1 && args[0] == "privileged-qkey":
				return cmdutil.Prefixed(toComplete, "on", "off"), cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}))
	return c
}

func runSystemShow(a *cmdutil.App) error {
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return err
	}
	defer closeSrc()
	st, err := src.System()
	if err != nil {
		if errors.Is(err, inventory.ErrNoSystem) {
			return cmdutil.WithCode(cmdutil.ExitUnsupported, err)
		}
		return err
	}
	j := systemJSON{Netns: st.NetnsMode, PrivilegedQKey: st.PrivilegedQKey, CopyOnFork: st.CopyOnFork}
	if a.Opts.JSON {
		return a.PrintJSON(j)
	}
	tb := render.NewTable(a.Stdout, "NETNS", "PRIVILEGED_QKEY", "COPY_ON_FORK")
	tb.Row(j.Netns, render.OnOff(j.PrivilegedQKey), render.OnOff(j.CopyOnFork))
	return tb.Flush()
}

func runSystemSet(a *cmdutil.App, kw map[string]string) error {
	if v, ok := kw["netns"]; ok && v != "shared" && v != "exclusive" {
		return cmdutil.UsageErrorf("system set netns: %q: want shared or exclusive", v)
	}
	var on bool
	if v, ok := kw["privileged-qkey"]; ok {
		b, err := cmdutil.ParseOnOff("system set privileged-qkey", v)
		if err != nil {
			return err
		}
		on = b
	}
	c, _, closeFn, err := a.OpenWrite()
	if err != nil {
		return err
	}
	defer closeFn()
	if v, ok := kw["netns"]; ok {
		return cmdutil.WriteError("system set netns "+v, c.SetNetnsMode(v == "shared"), map[syscall.Errno]cmdutil.Refusal{
			syscall.EBUSY: {Code: cmdutil.ExitFailure, Msg: "a network namespace besides the initial one exists (EBUSY): the kernel changes the mode only without them (ip netns list)"},
		})
	}
	v := kw["privileged-qkey"]
	// Kernels without the setting do not report it; they would refuse the
	// attribute with a bare EINVAL.
	st, err := c.System()
	if err != nil && !errors.Is(err, inventory.ErrNoSystem) {
		return cmdutil.WriteError("system set privileged-qkey "+v, err, nil)
	}
	if err != nil || st.PrivilegedQKey == nil {
		return cmdutil.WithCode(cmdutil.ExitUnsupported, fmt.Errorf("system set privileged-qkey %s: this kernel has no privileged Q_Key setting (Linux 6.5+)", v))
	}
	return cmdutil.WriteError("system set privileged-qkey "+v, c.SetPrivilegedQKey(on), map[syscall.Errno]cmdutil.Refusal{
		syscall.EINVAL: {Code: cmdutil.ExitUnsupported, Msg: "the kernel refused (EINVAL): it has no privileged Q_Key setting"},
	})
}

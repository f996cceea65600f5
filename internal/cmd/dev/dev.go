// Package dev is "rdmactl dev": show (rdma dev show), query (ibv_devinfo),
// hca-caps and set (rdma dev set).
package dev

import (
	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/spf13/cobra"
)

// subcommands are the children of "rdmactl dev".
var subcommands = []func(*cmdutil.App) *cobra.Command{
	newDevShowCmd,
	newDevQueryCmd,
	newDevHCACapsCmd,
	newDevSetCmd,
}

// NewCmd is "rdmactl dev", the parent of subcommands.
func NewCmd(a *cmdutil.App) *cobra.Command {
	dev := &cobra.Command{
		Use:   "dev",
		Short: "RDMA devices: show, query",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cmdutil.UsageErrorf("'rdmactl dev' needs a subcommand: try 'rdmactl dev show' (as in 'rdma dev show') or 'rdmactl dev query' (as ibv_devinfo -v)")
		},
	}
	for _, f := range subcommands {
		dev.AddCommand(f(a))
	}
	return dev
}

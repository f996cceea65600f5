package version

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/render"
)

func NewCmd(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rdmactl's version, commit, build date and Go version",
		Args:  cobra.NoArgs,
		Long: `Print rdmactl's version, commit, build date and Go version.

With -d it also probes the running kernel where kernels differ (the uverbs
ioctl methods, the RDMA netlink system settings)
and lists what it found; RDMACTL_KERNEL_ABSENT=name,... forces features
absent, to try the paths older kernels take.`,
		Example: `  rdmactl version
  rdmactl -j version
  rdmactl version -d                                        # what this kernel offers
  RDMACTL_KERNEL_ABSENT=query_gid_table rdmactl gids        # GIDs as on a kernel without QUERY_GID_TABLE`,
		RunE: func(c *cobra.Command, args []string) error {
			v := a.Stamp.Info()
			if a.Opts.Details {
				v.Kernel = cmdutil.ProbeKernel()
			}
			if a.Opts.JSON {
				return a.PrintJSON(v)
			}
			_, err := io.WriteString(a.Stdout, cmdutil.VersionLines(v))
			if err != nil || v.Kernel == nil {
				return err
			}
			k := v.Kernel
			dev := k.ProbedDevice
			if dev == "" {
				dev = "no device"
			}
			fmt.Fprintf(a.Stdout, "kernel:   %s\nfeatures (probed on %s; see docs/kernels.md):\n", k.Release, dev)
			tw := render.NewTable(a.Stdout, "  FEATURE", "STATE", "HOW")
			for _, f := range k.Features {
				tw.Row("  "+f.Name, f.State, f.Detail)
			}
			return tw.Flush()
		},
	}
}

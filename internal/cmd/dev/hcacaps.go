package dev

import (
	"fmt"
	"strings"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/spf13/cobra"
)

// hcaCapsJSON is one device in `rdmactl -j dev hca-caps`.
//
// caps maps each capability page (general, roce, odp, atomic, qos) to its
// fields under the names of the kernel's mlx5_ifc.h, values as numbers
// (log_* fields are the log2 the firmware reports, not expanded). Vport
// counters use "<counter>_packets"/"<counter>_octets". cong_status lists,
// per congestion protocol, the priorities (0..7) on which it is enabled.
// Parts the device or the kernel refused (a context without DEVX gets
// QUERY_HCA_CAP only) are absent and named in "unavailable" with the
// reason.
type hcaCapsJSON struct {
	Ifname        string                       `json:"ifname"`
	Driver        string                       `json:"driver"`
	DevX          bool                         `json:"devx"`
	Caps          map[string]map[string]uint64 `json:"caps"`
	VportCounters map[string]uint64            `json:"vport_counters,omitempty"`
	CongStatus    map[string][]int             `json:"cong_status,omitempty"`
	Unavailable   []string                     `json:"unavailable,omitempty"`
}

func newDevHCACapsCmd(a *cmdutil.App) *cobra.Command {
	return cmdutil.Needs(cmdutil.NeedUverbs, &cobra.Command{
		Use:   "hca-caps [DEV]",
		Short: "Show an mlx5 (ConnectX) device's firmware capabilities and counters through DEVX",
		Long: `Ask a ConnectX device's firmware directly, through the kernel's mlx5 DEVX
command channel (no mlx5 tools, no libibverbs), for its capability pages
(general device limits and features, RoCE, ODP, atomics, QoS), its vport
traffic counters, and which congestion-control protocols (DCQCN reaction
and notification point) are enabled per priority. Field names are those of
the kernel's mlx5_ifc.h.

Only mlx5 devices have this; on any other device the command fails with
exit code 5. The DEVX context it opens needs CAP_NET_RAW (root); without
it only the capability pages are shown, when the kernel allows it.`,
		Example: `  rdmactl dev hca-caps mlx5_0
  rdmactl -j dev hca-caps mlx5_0 | jq '.[0].caps.general.log_max_qp'
  rdmactl dev hca-caps            # every mlx5 device`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runHCACaps(a, name)
		},
	})
}

func runHCACaps(a *cmdutil.App, name string) error {
	src, err := inventory.Open("", true)
	if err != nil {
		return err
	}
	defer src.Close()
	caps, err := src.HCACaps(name)
	if err != nil {
		return err
	}
	return printHCACaps(a, caps)
}

func printHCACaps(a *cmdutil.App, caps []inventory.HCACaps) error {
	if a.Opts.JSON {
		res := make([]hcaCapsJSON, 0, len(caps))
		for _, c := range caps {
			res = append(res, hcaCapsJSON{Ifname: c.Device, Driver: c.Driver, DevX: c.DevX, Caps: c.Caps,
				VportCounters: c.VportCounters, CongStatus: c.CongStatus, Unavailable: c.Unavailable})
		}
		return a.PrintJSON(res)
	}
	t := render.NewTable(a.Stdout, "DEV", "GROUP", "FIELD", "VALUE")
	for _, j := range caps {
		for _, p := range j.Pages {
			for _, f := range j.Order[p] {
				t.Row(j.Device, p, f, j.Caps[p][f])
			}
		}
		for _, f := range j.Order["vport_counters"] {
			t.Row(j.Device, "vport_counters", f, j.VportCounters[f])
		}
		for _, p := range []string{"rroce_rp", "rroce_np"} {
			if prios, ok := j.CongStatus[p]; ok {
				t.Row(j.Device, "cong_status", p+"_enabled_priorities", fmt.Sprint(prios))
			}
		}
		for _, u := range j.Unavailable {
			t.Row(j.Device, "unavailable", u, "-")
		}
	}
	return t.Flush()
}

// addHCACapsFlag gives `dev query` its --hca-caps flag: with it, the query
// becomes `dev hca-caps` for the same device (the DEV part of DEV/PORT).
// The dev query command (devquery.go, not this file) calls it once in
// newDevQueryCmd: addHCACapsFlag(a, c).
func addHCACapsFlag(a *cmdutil.App, c *cobra.Command) {
	var on bool
	c.Flags().BoolVar(&on, "hca-caps", false, "show the mlx5 firmware capability pages and counters instead (as 'dev hca-caps')")
	inner := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if !on {
			return inner(cmd, args)
		}
		name := ""
		if len(args) == 1 {
			name, _, _ = strings.Cut(args[0], "/")
		}
		return runHCACaps(a, name)
	}
}

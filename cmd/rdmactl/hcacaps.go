package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rdmactl/rdmactl/internal/mlx5cmd"
	"github.com/rdmactl/rdmactl/internal/verbs"
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

	order map[string][]string // field order per page, for the table
}

// hcaCapsSession is an open mlx5 device that runs PRM commands.
type hcaCapsSession interface {
	mlx5cmd.Runner
	Close() error
}

// Hooks for tests (no ConnectX here): device lookup and opening.
var (
	hcaCapsLookup = verbsDevice
	hcaCapsOpen   = openHCACaps
)

// openHCACaps opens d with a DEVX context (needs CAP_NET_RAW); without the
// capability it falls back to an ordinary context, where the kernel still
// lets QUERY_HCA_CAP through (its DEVX whitelist) if the device has a
// whitelist uid.
func openHCACaps(d verbs.Device) (hcaCapsSession, bool, error) {
	ctx, err := verbs.OpenMLX5DevX(d)
	if err == nil {
		return ctx, true, nil
	}
	if !verbs.IsPermission(err) {
		return nil, false, err
	}
	ctx, err2 := verbs.OpenDevice(d, verbs.Options{})
	if err2 != nil {
		return nil, false, err2
	}
	return ctx, false, nil
}

func newDevHCACapsCmd(a *app) *cobra.Command {
	return &cobra.Command{
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
	}
}

func runHCACaps(a *app, name string) error {
	if a.opts.sysfsRoot != "" {
		return withCode(exitUnsupported, errors.New("dev hca-caps talks to the device through /dev/infiniband and cannot read a captured --sysfs-root"))
	}
	var devs []verbs.Device
	if name != "" {
		d, err := hcaCapsLookup(name)
		if err != nil {
			return verbsError(err)
		}
		if d.DriverID != verbs.DriverMLX5 {
			return withCode(exitUnsupported, fmt.Errorf("%w; hca-caps needs an mlx5 (ConnectX) device", &verbs.NotMLX5Error{Device: d.Name, Driver: d.Driver}))
		}
		devs = append(devs, d)
	} else {
		all, err := verbsDevices()
		if err != nil {
			return verbsError(err)
		}
		var others []string
		for _, d := range all {
			if d.DriverID == verbs.DriverMLX5 {
				devs = append(devs, d)
			} else {
				others = append(others, d.Name+" ("+d.Driver+")")
			}
		}
		if len(devs) == 0 {
			found := "no RDMA devices"
			if len(others) > 0 {
				found = "only " + strings.Join(others, ", ")
			}
			return withCode(exitUnsupported, fmt.Errorf("no mlx5 (ConnectX) device: found %s", found))
		}
	}
	var res []*hcaCapsJSON
	for _, d := range devs {
		j, err := queryHCACaps(d)
		if err != nil {
			return verbsError(err)
		}
		res = append(res, j)
	}
	if a.opts.json {
		return a.printJSON(res)
	}
	t := newTable(a.stdout, "DEV", "GROUP", "FIELD", "VALUE")
	for _, j := range res {
		for _, ct := range mlx5cmd.CapTypes {
			p := ct.String()
			for _, f := range j.order[p] {
				t.row(j.Ifname, p, f, j.Caps[p][f])
			}
		}
		for _, f := range j.order["vport_counters"] {
			t.row(j.Ifname, "vport_counters", f, j.VportCounters[f])
		}
		for _, p := range []string{"rroce_rp", "rroce_np"} {
			if prios, ok := j.CongStatus[p]; ok {
				t.row(j.Ifname, "cong_status", p+"_enabled_priorities", fmt.Sprint(prios))
			}
		}
		for _, u := range j.Unavailable {
			t.row(j.Ifname, "unavailable", u, "-")
		}
	}
	return t.render()
}

// queryHCACaps reads everything from one device. A failure of the first
// capability page fails the device; later parts are optional.
func queryHCACaps(d verbs.Device) (*hcaCapsJSON, error) {
	s, devx, err := hcaCapsOpen(d)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	j := &hcaCapsJSON{Ifname: d.Name, Driver: d.Driver, DevX: devx, Caps: map[string]map[string]uint64{}, order: map[string][]string{}}
	for i, ct := range mlx5cmd.CapTypes {
		vs, err := mlx5cmd.QueryHCACap(s, ct)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("%s: %w", d.Name, hcaCapsHint(err, devx))
			}
			j.Unavailable = append(j.Unavailable, oneLine(err.Error()))
			continue
		}
		page := map[string]uint64{}
		for _, v := range vs {
			page[v.Name] = v.Value
			j.order[ct.String()] = append(j.order[ct.String()], v.Name)
		}
		j.Caps[ct.String()] = page
	}
	if !devx {
		j.Unavailable = append(j.Unavailable, "vport counters and congestion status: need a DEVX context (CAP_NET_RAW)")
		return j, nil
	}
	if vc, err := mlx5cmd.QueryVportCounter(s, 0); err != nil {
		j.Unavailable = append(j.Unavailable, oneLine(err.Error()))
	} else {
		j.VportCounters = map[string]uint64{}
		for _, v := range vc {
			j.VportCounters[v.Name] = v.Value
			j.order["vport_counters"] = append(j.order["vport_counters"], v.Name)
		}
	}
	j.CongStatus = map[string][]int{}
	for _, p := range []struct {
		name  string
		proto uint8
	}{{"rroce_rp", mlx5cmd.CongProtocolRRoCERP}, {"rroce_np", mlx5cmd.CongProtocolRRoCENP}} {
		prios := []int{}
		for prio := uint8(0); prio < 8; prio++ {
			st, err := mlx5cmd.QueryCongStatus(s, p.proto, prio)
			if err != nil {
				j.Unavailable = append(j.Unavailable, oneLine(err.Error()))
				prios = nil
				break
			}
			if st.Enable {
				prios = append(prios, int(prio))
			}
		}
		if prios != nil {
			j.CongStatus[p.name] = prios
		}
	}
	if len(j.CongStatus) == 0 {
		j.CongStatus = nil
	}
	return j, nil
}

// hcaCapsHint adds what to do when the kernel refuses the first query.
func hcaCapsHint(err error, devx bool) error {
	if !devx && (errors.Is(err, verbs.ErrUnsupported) || verbs.IsPermission(err)) {
		return fmt.Errorf("%w (without CAP_NET_RAW there is no DEVX context and this kernel/device does not allow QUERY_HCA_CAP otherwise: run as root)", err)
	}
	return err
}

// addHCACapsFlag gives `dev query` its --hca-caps flag: with it, the query
// becomes `dev hca-caps` for the same device (the DEV part of DEV/PORT).
// The dev query command (devquery.go, not this file) calls it once in
// newDevQueryCmd: addHCACapsFlag(a, c).
func addHCACapsFlag(a *app, c *cobra.Command) {
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

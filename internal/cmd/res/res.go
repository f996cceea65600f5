package res

import (
	"math"
	"strings"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/resobj"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

type resFlags struct {
	qpn     int64
	link    string
	match   map[string]*string // rdma's filters res applies: key -> flag value
	refused map[string]string  // rdma's filters res refuses: key -> why
}

func NewCmd(a *cmdutil.App) *cobra.Command {
	var fl resFlags
	c := &cobra.Command{
		Use:     "res [qp|cq|mr|pd|cm_id|ctx|srq] [DEV]",
		Aliases: []string{"resource"},
		Short:   "Show RDMA resources: per-device counts, or QPs, CQs, MRs, PDs, CM IDs, contexts, SRQs (like rdma resource show)",
		Long: `Without OBJECT, count the resources of every device (or DEV), as
rdma resource show. With OBJECT, list those objects with the fields rdma
resource show OBJECT prints. Needs the live kernel (RDMA netlink); MR keys
and addresses are only reported to root.

Filters are rdma's: --link DEV[/PORT] (qp, cm_id); numbers as lists and
ranges ("1-3,7"): --pid, --lqpn, --rqpn, --pdn, --cqn, --mrn, --ctxn, --srqn,
--cm-idn, --sq-psn, --rq-psn, --rkey, --lkey; names ("rts,init", any case):
--state, --type, --qp-type, --path-mig-state, --poll-ctx, --ps. Each applies
to the objects that have the field, as in rdma; an object the kernel did
not report the field for is left out. Also --users (cq, pd), --mrlen (mr),
--src-addr, --dst-addr (addresses, as "10.0.0.1,10.0.0.2"), --src-port,
--dst-port (cm_id). rdma's spelling works too:
'rdmactl res show qp link rxe0/1 lqpn 5-9'. --qpn N is --lqpn N.

-dd (rdma's driver details) adds what the device's driver reports about
each object (mlx5, hns, bnxt_re... do; rxe and siw report nothing): a
DRIVER column, and drv_KEY keys in JSON.

-r/--raw (rdma -r) dumps qp, cq, mr or srq as the driver's own binary image
(the hardware context): hex in the table, "data" as a list of byte values
in JSON. Only drivers with raw dumps (mlx5, and hns, bnxt_re on newer
kernels) have them; for others the kernel refuses (exit 5). Filters do not
apply to raw objects, except DEV and --link.`,
		Example: `  rdmactl res
  rdmactl res qp rxe0
  rdmactl -j res qp --pid 1234
  rdmactl res qp --link rxe0/1 --lqpn 5-9 --state rts
  rdmactl res show qp link rxe0/1 lqpn 5-9
  rdmactl res cq mlx5_0
  rdmactl -dd -j res qp mlx5_0
  rdmactl -r res qp mlx5_0`,
		Args: cobra.MaximumNArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			obj, dev := "", ""
			if len(args) > 0 {
				if resobj.Lookup(args[0]) != nil {
					obj = args[0]
					if len(args) == 2 {
						dev = args[1]
					}
				} else if len(args) == 1 {
					dev = args[0]
				} else {
					return cmdutil.UsageErrorf("%q is not a resource: want one of %s", args[0], strings.Join(resobj.Names(), ", "))
				}
			}
			var set []string
			c.Flags().Visit(func(f *pflag.Flag) {
				if f.Name == "qpn" || f.Name == "link" || fl.match[f.Name] != nil || fl.refused[f.Name] != "" {
					set = append(set, f.Name)
				}
			})
			if obj == "" && len(set) > 0 {
				return cmdutil.UsageErrorf("--%s filters objects: name one, as in 'rdmactl res qp --pid 1234'", set[0])
			}
			for _, k := range set {
				if !resFilterApplies(obj, k) {
					return cmdutil.UsageErrorf("--%s does not apply to %s (rdma has no such filter for it)", k, obj)
				}
				if why := fl.refused[k]; why != "" {
					return cmdutil.UsageErrorf("--%s: %s", k, why)
				}
			}
			if a.Opts.Raw {
				return runResRaw(a, obj, dev, fl.link, set)
			}
			if !c.Flags().Changed("qpn") {
				fl.qpn = -1
			}
			m, err := resMatch(&fl, c.Flags().Changed)
			if err != nil {
				return err
			}
			if fl.link != "" {
				ldev, port, err := cmdutil.ParseDevPort(fl.link)
				if err != nil {
					return err
				}
				if dev != "" && dev != ldev {
					return cmdutil.UsageErrorf("res %s %s --link %s: two different devices", obj, dev, fl.link)
				}
				dev = ldev
				if port != 0 {
					m.Port = &port
				}
			}
			return runRes(a, obj, dev, &fl, m)
		},
	}
	c.Flags().Int64Var(&fl.qpn, "qpn", -1, "only the QP (or CM ID) with local QP number `N`")
	c.Flags().StringVar(&fl.link, "link", "", "only QPs or CM IDs of `DEV[/PORT]`")
	fl.match, fl.refused = map[string]*string{}, map[string]string{}
	for _, f := range resobj.AllFilters() {
		switch k := f.Name; f.Kind {
		case resobj.KindNumbers:
			fl.match[k] = c.Flags().String(k, "", "only objects whose "+k+" is in `LIST` (numbers and ranges: 1-3,7)")
		case resobj.KindNames:
			fl.match[k] = c.Flags().String(k, "", "only objects whose "+k+" is one of `NAMES` (comma-separated, any case)")
		case resobj.KindIgnored:
			fl.refused[k] = f.Why
			c.Flags().String(k, "", "refused: rdma accepts it for cm_id but filters nothing")
		}
	}
	return cmdutil.Needs(cmdutil.NeedNetlink, c)
}

// resFilterApplies: rdma's filter table of obj has key (--qpn is lqpn).
func resFilterApplies(obj, key string) bool {
	if key == "qpn" {
		key = "lqpn"
	}
	o := resobj.Lookup(obj)
	return o != nil && o.HasFilter(key)
}

// resMatch builds the objects' match from the filter flags that were set:
// the number filters, then the name filters (the first bad value is the
// error), each in resobj.AllFilters' order.
func resMatch(fl *resFlags, changed func(string) bool) (resobj.Match, error) {
	var m resobj.Match
	for _, kind := range []resobj.Kind{resobj.KindNumbers, resobj.KindNames} {
		for _, f := range resobj.AllFilters() {
			k := f.Name
			if f.Kind != kind || !changed(k) {
				continue
			}
			if kind == resobj.KindNumbers {
				if err := m.SetNum(k, *fl.match[k]); err != nil {
					return m, cmdutil.UsageErrorf("--%v", err)
				}
				continue
			}
			if *fl.match[k] == "" {
				return m, cmdutil.UsageErrorf("--%s: want one or more names", k)
			}
			m.SetNames(k, *fl.match[k])
		}
	}
	return m, nil
}

func runRes(a *cmdutil.App, obj, dev string, fl *resFlags, match resobj.Match) error {
	src, closeSrc, err := a.OpenInventory(false)
	if err != nil {
		return err
	}
	defer closeSrc()
	src.SetDriverDetails(a.Opts.DriverDetails)
	dd := a.Opts.DriverDetails
	f := inventory.ResFilter{Dev: dev}
	if fl.qpn >= 0 {
		if fl.qpn > math.MaxUint32 {
			return cmdutil.UsageErrorf("--qpn %d: not a QP number", fl.qpn)
		}
		q := uint32(fl.qpn)
		f.LQPN = &q
	}
	o := resobj.Summary
	if obj != "" {
		o = resobj.Lookup(obj)
	}
	rs, err := o.Rows(src, f, match)
	if err != nil {
		return err
	}
	tbl := render.NewTable(a.Stdout, o.Header(dd)...)
	rows := make([]any, 0, len(rs))
	for _, r := range rs {
		rows = append(rows, r.JSONObject(dd))
		tbl.Row(r.TableCells(dd)...)
	}
	if a.Opts.JSON {
		return a.PrintJSON(rows)
	}
	return tbl.Flush()
}

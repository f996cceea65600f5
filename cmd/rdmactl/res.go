package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/rdmagrammar"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// JSON of `rdmactl -j res [OBJECT]`. Keys are rdma -j resource show's,
// hyphens turned into underscores (sq-psn -> sq_psn, path-mig-state ->
// path_mig_state, poll-ctx -> poll_ctx, cm-idn -> cm_idn, qp-type ->
// qp_type, src-addr -> src_addr, adaptive-moderation ->
// adaptive_moderation). As in rdma, a key is absent when the kernel did
// not report the field (rqpn of an unconnected QP, pid of a kernel-owned
// object...). Differences from rdma -j, on purpose: rkey, lkey, iova,
// local_dma_lkey and unsafe_global_rkey are numbers (rdma prints bare hex
// strings, and truncates iova to 32 bits); comm of a kernel-owned object
// is the module name without brackets (as rdma -j; its text output adds
// []), of a user object /proc/PID/comm ("" if the process is gone).

// resSummaryJSON is one device of `rdmactl -j res` (rdma -j res show).
type resSummaryJSON struct {
	Ifindex uint32 `json:"ifindex"`
	Ifname  string `json:"ifname"`
	PD      uint64 `json:"pd"`
	CQ      uint64 `json:"cq"`
	QP      uint64 `json:"qp"`
	CMID    uint64 `json:"cm_id"`
	MR      uint64 `json:"mr"`
	Ctx     uint64 `json:"ctx"`
	SRQ     uint64 `json:"srq"`
}

type resHeadJSON struct {
	Ifindex uint32 `json:"ifindex"`
	Ifname  string `json:"ifname"`
}

type resOwnerJSON struct {
	PID  *uint32 `json:"pid,omitempty"`
	Comm string  `json:"comm,omitempty"`
}

type resQPJSON struct {
	resHeadJSON
	Port         *uint32 `json:"port,omitempty"`
	LQPN         *uint32 `json:"lqpn,omitempty"`
	RQPN         *uint32 `json:"rqpn,omitempty"`
	Type         string  `json:"type,omitempty"`
	Subtype      string  `json:"subtype,omitempty"` // a driver QP's kind (type DRIVER)
	State        string  `json:"state,omitempty"`
	RQPSN        *uint32 `json:"rq_psn,omitempty"`
	SQPSN        *uint32 `json:"sq_psn,omitempty"`
	PathMigState string  `json:"path_mig_state,omitempty"`
	PDN          *uint32 `json:"pdn,omitempty"`
	resOwnerJSON
}

type resCQJSON struct {
	resHeadJSON
	CQN     *uint32 `json:"cqn,omitempty"`
	CQE     *uint32 `json:"cqe,omitempty"`
	Users   *uint64 `json:"users,omitempty"`
	PollCtx string  `json:"poll_ctx,omitempty"`
	DIM     *bool   `json:"adaptive_moderation,omitempty"`
	CtxN    *uint32 `json:"ctxn,omitempty"`
	resOwnerJSON
}

type resMRJSON struct {
	resHeadJSON
	MRN   *uint32 `json:"mrn,omitempty"`
	RKey  *uint32 `json:"rkey,omitempty"`
	LKey  *uint32 `json:"lkey,omitempty"`
	IOVA  *uint64 `json:"iova,omitempty"`
	MRLen *uint64 `json:"mrlen,omitempty"`
	PDN   *uint32 `json:"pdn,omitempty"`
	CtxN  *uint32 `json:"ctxn,omitempty"`
	resOwnerJSON
}

type resPDJSON struct {
	resHeadJSON
	PDN              *uint32 `json:"pdn,omitempty"`
	LocalDMALKey     *uint32 `json:"local_dma_lkey,omitempty"`
	Users            *uint64 `json:"users,omitempty"`
	UnsafeGlobalRKey *uint32 `json:"unsafe_global_rkey,omitempty"`
	CtxN             *uint32 `json:"ctxn,omitempty"`
	resOwnerJSON
}

type resCMIDJSON struct {
	resHeadJSON
	Port    *uint32 `json:"port,omitempty"`
	CMIDN   *uint32 `json:"cm_idn,omitempty"`
	LQPN    *uint32 `json:"lqpn,omitempty"`
	QPType  string  `json:"qp_type,omitempty"`
	State   string  `json:"state,omitempty"`
	PS      string  `json:"ps,omitempty"`
	SrcAddr string  `json:"src_addr,omitempty"`
	DstAddr string  `json:"dst_addr,omitempty"`
	resOwnerJSON
}

type resCtxJSON struct {
	resHeadJSON
	CtxN *uint32 `json:"ctxn,omitempty"`
	resOwnerJSON
}

// resSRQJSON: lqpn is rdma's list of QP numbers and ranges ("126-128").
type resSRQJSON struct {
	resHeadJSON
	SRQN *uint32  `json:"srqn,omitempty"`
	Type string   `json:"type,omitempty"`
	LQPN []string `json:"lqpn,omitempty"`
	PDN  *uint32  `json:"pdn,omitempty"`
	CQN  *uint32  `json:"cqn,omitempty"`
	resOwnerJSON
}

var resObjects = []string{"qp", "cq", "mr", "pd", "cm_id", "ctx", "srq"}

type resFlags struct {
	qpn   int64
	link  string
	match map[string]*string // rdma's filters: key -> flag value
}

// resNumFilters and resNameFilters are rdma's res filters rdmactl has, as
// --KEY flags (and as "KEY VALUE" after "res show OBJECT", internal/rdmagrammar).
var (
	resNumFilters = []string{"pid", "lqpn", "rqpn", "pdn", "cqn", "mrn", "ctxn", "srqn", "cm-idn", "sq-psn", "rq-psn", "rkey", "lkey",
		"users", "mrlen", "src-port", "dst-port"}
	resNameFilters = []string{"state", "type", "qp-type", "path-mig-state", "poll-ctx", "ps", "src-addr", "dst-addr"}
)

// resIgnoredFilters are in rdma's cm_id filter table, but rdma never
// applies them (res-cmid.c has no check for them: every CM ID passes) and
// the kernel reports neither per CM ID. rdmactl refuses them rather than
// print everything as if it had filtered.
var resIgnoredFilters = map[string]string{
	"dev-type":       "the kernel reports no device type per CM ID (rdma accepts dev-type and filters nothing)",
	"transport-type": "the kernel reports no transport type per CM ID (rdma accepts transport-type and filters nothing)",
}

func newResCmd(a *app) *cobra.Command {
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
				if isResObject(args[0]) {
					obj = args[0]
					if len(args) == 2 {
						dev = args[1]
					}
				} else if len(args) == 1 {
					dev = args[0]
				} else {
					return usageErrorf("%q is not a resource: want one of %s", args[0], strings.Join(resObjects, ", "))
				}
			}
			var set []string
			c.Flags().Visit(func(f *pflag.Flag) {
				if f.Name == "qpn" || f.Name == "link" || fl.match[f.Name] != nil || resIgnoredFilters[f.Name] != "" {
					set = append(set, f.Name)
				}
			})
			if obj == "" && len(set) > 0 {
				return usageErrorf("--%s filters objects: name one, as in 'rdmactl res qp --pid 1234'", set[0])
			}
			for _, k := range set {
				if !resFilterApplies(obj, k) {
					return usageErrorf("--%s does not apply to %s (rdma has no such filter for it)", k, obj)
				}
				if why := resIgnoredFilters[k]; why != "" {
					return usageErrorf("--%s: %s", k, why)
				}
			}
			if a.opts.raw {
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
				ldev, port, err := parseDevPort(fl.link)
				if err != nil {
					return err
				}
				if dev != "" && dev != ldev {
					return usageErrorf("res %s %s --link %s: two different devices", obj, dev, fl.link)
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
	fl.match = map[string]*string{}
	for _, k := range resNumFilters {
		fl.match[k] = c.Flags().String(k, "", "only objects whose "+k+" is in `LIST` (numbers and ranges: 1-3,7)")
	}
	for _, k := range resNameFilters {
		fl.match[k] = c.Flags().String(k, "", "only objects whose "+k+" is one of `NAMES` (comma-separated, any case)")
	}
	for _, k := range []string{"dev-type", "transport-type"} {
		c.Flags().String(k, "", "refused: rdma accepts it for cm_id but filters nothing")
	}
	return needs(needNetlink, c)
}

// resFilterApplies: rdma's filter table of obj has key.
func resFilterApplies(obj, key string) bool {
	if key == "qpn" {
		key = "lqpn"
	}
	for _, k := range rdmagrammar.ResFilters(obj) {
		if k == key {
			return true
		}
	}
	return false
}

// resMatch builds the inventory's filter from the flags that were set.
func resMatch(fl *resFlags, changed func(string) bool) (inventory.ResMatch, error) {
	var m inventory.ResMatch
	for _, k := range resNumFilters {
		if changed(k) {
			if err := m.SetNum(k, *fl.match[k]); err != nil {
				return m, usageErrorf("--%v", err)
			}
		}
	}
	for _, k := range resNameFilters {
		if changed(k) {
			if *fl.match[k] == "" {
				return m, usageErrorf("--%s: want one or more names", k)
			}
			m.SetNames(k, *fl.match[k])
		}
	}
	return m, nil
}

func isResObject(s string) bool {
	for _, o := range resObjects {
		if s == o {
			return true
		}
	}
	return false
}

func runRes(a *app, obj, dev string, fl *resFlags, match inventory.ResMatch) error {
	src, closeSrc, err := a.openInventory(false)
	if err != nil {
		return err
	}
	defer closeSrc()
	src.SetDriverDetails(a.opts.driverDetails)
	dd := a.opts.driverDetails
	f := inventory.ResFilter{Dev: dev}
	if fl.qpn >= 0 {
		if fl.qpn > math.MaxUint32 {
			return usageErrorf("--qpn %d: not a QP number", fl.qpn)
		}
		q := uint32(fl.qpn)
		f.LQPN = &q
	}
	head := func(h inventory.ResHead) resHeadJSON { return resHeadJSON{Ifindex: h.DevIndex, Ifname: h.Dev} }

	var rows []any
	var tbl *table
	switch obj {
	case "":
		sums, err := src.ResSummaries(dev)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, "IDX", "DEV", "PD", "CQ", "QP", "CM_ID", "MR", "CTX", "SRQ")
		for _, s := range sums {
			r := resSummaryJSON{Ifindex: s.DevIndex, Ifname: s.Dev, PD: s.Counts["pd"], CQ: s.Counts["cq"], QP: s.Counts["qp"],
				CMID: s.Counts["cm_id"], MR: s.Counts["mr"], Ctx: s.Counts["ctx"], SRQ: s.Counts["srq"]}
			rows = append(rows, r)
			tbl.row(r.Ifindex, r.Ifname, r.PD, r.CQ, r.QP, r.CMID, r.MR, r.Ctx, r.SRQ)
		}
	case "qp":
		qps, err := src.QPs(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "LINK", "LQPN", "RQPN", "TYPE", "STATE", "RQ_PSN", "SQ_PSN", "PATH_MIG", "PDN", "PID", "COMM")...)
		for _, q := range qps {
			if !match.QP(q) {
				continue
			}
			r := resQPJSON{resHeadJSON: head(q.ResHead), Port: q.Port, LQPN: q.LQPN, RQPN: q.RQPN, Type: q.Type, Subtype: q.Subtype, State: q.State,
				RQPSN: q.RQPSN, SQPSN: q.SQPSN, PathMigState: q.PathMigState, PDN: q.PDN, resOwnerJSON: owner(q.Owner)}
			rows = append(rows, withDriver(dd, r, q.Driver))
			tbl.row(resCells(dd, q.Driver, link(q.ResHead, q.Port), optU32(r.LQPN), optU32(r.RQPN), r.Type, r.State, optU32(r.RQPSN), optU32(r.SQPSN), r.PathMigState, optU32(r.PDN), optU32(r.PID), commText(q.Owner))...)
		}
	case "cq":
		cqs, err := src.CQs(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "DEV", "CQN", "CQE", "USERS", "POLL_CTX", "ADAPTIVE_MOD", "CTXN", "PID", "COMM")...)
		for _, q := range cqs {
			if !match.CQ(q) {
				continue
			}
			r := resCQJSON{resHeadJSON: head(q.ResHead), CQN: q.CQN, CQE: q.CQE, Users: q.Users, PollCtx: q.PollCtx, DIM: q.DIM, CtxN: q.CtxN, resOwnerJSON: owner(q.Owner)}
			rows = append(rows, withDriver(dd, r, q.Driver))
			tbl.row(resCells(dd, q.Driver, q.Dev, optU32(r.CQN), optU32(r.CQE), optU64(r.Users), r.PollCtx, onOff(r.DIM), optU32(r.CtxN), optU32(r.PID), commText(q.Owner))...)
		}
	case "mr":
		mrs, err := src.MRs(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "DEV", "MRN", "RKEY", "LKEY", "IOVA", "MRLEN", "PDN", "PID", "COMM")...)
		for _, m := range mrs {
			if !match.MR(m) {
				continue
			}
			r := resMRJSON{resHeadJSON: head(m.ResHead), MRN: m.MRN, RKey: m.RKey, LKey: m.LKey, IOVA: m.IOVA, MRLen: m.Len, PDN: m.PDN, CtxN: m.CtxN, resOwnerJSON: owner(m.Owner)}
			rows = append(rows, withDriver(dd, r, m.Driver))
			tbl.row(resCells(dd, m.Driver, m.Dev, optU32(r.MRN), hex32(r.RKey), hex32(r.LKey), hex64(r.IOVA), optU64(r.MRLen), optU32(r.PDN), optU32(r.PID), commText(m.Owner))...)
		}
	case "pd":
		pds, err := src.PDs(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "DEV", "PDN", "LOCAL_DMA_LKEY", "USERS", "UNSAFE_GLOBAL_RKEY", "CTXN", "PID", "COMM")...)
		for _, p := range pds {
			if !match.PD(p) {
				continue
			}
			r := resPDJSON{resHeadJSON: head(p.ResHead), PDN: p.PDN, LocalDMALKey: p.LocalDMALKey, Users: p.Users, UnsafeGlobalRKey: p.UnsafeGlobalRKey, CtxN: p.CtxN, resOwnerJSON: owner(p.Owner)}
			rows = append(rows, withDriver(dd, r, p.Driver))
			tbl.row(resCells(dd, p.Driver, p.Dev, optU32(r.PDN), hex32(r.LocalDMALKey), optU64(r.Users), hex32(r.UnsafeGlobalRKey), optU32(r.CtxN), optU32(r.PID), commText(p.Owner))...)
		}
	case "cm_id":
		ids, err := src.CMIDs(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "LINK", "CM_IDN", "LQPN", "QP_TYPE", "STATE", "PS", "SRC_ADDR", "DST_ADDR", "PID", "COMM")...)
		for _, m := range ids {
			if !match.CMID(m) {
				continue
			}
			r := resCMIDJSON{resHeadJSON: head(m.ResHead), Port: m.Port, CMIDN: m.CMIDN, LQPN: m.LQPN, QPType: m.QPType, State: m.State, PS: m.PS, resOwnerJSON: owner(m.Owner)}
			if m.SrcAddr.IsValid() {
				r.SrcAddr = m.SrcAddr.String()
			}
			if m.DstAddr.IsValid() {
				r.DstAddr = m.DstAddr.String()
			}
			rows = append(rows, withDriver(dd, r, m.Driver))
			tbl.row(resCells(dd, m.Driver, link(m.ResHead, m.Port), optU32(r.CMIDN), optU32(r.LQPN), r.QPType, r.State, r.PS, r.SrcAddr, r.DstAddr, optU32(r.PID), commText(m.Owner))...)
		}
	case "ctx":
		ctxs, err := src.Contexts(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "DEV", "CTXN", "PID", "COMM")...)
		for _, x := range ctxs {
			if !match.Ctx(x) {
				continue
			}
			r := resCtxJSON{resHeadJSON: head(x.ResHead), CtxN: x.CtxN, resOwnerJSON: owner(x.Owner)}
			rows = append(rows, withDriver(dd, r, x.Driver))
			tbl.row(resCells(dd, x.Driver, x.Dev, optU32(r.CtxN), optU32(r.PID), commText(x.Owner))...)
		}
	case "srq":
		srqs, err := src.SRQs(f)
		if err != nil {
			return err
		}
		tbl = newTable(a.stdout, resHeader(dd, "DEV", "SRQN", "TYPE", "LQPN", "PDN", "CQN", "PID", "COMM")...)
		for _, s := range srqs {
			if !match.SRQ(s) {
				continue
			}
			r := resSRQJSON{resHeadJSON: head(s.ResHead), SRQN: s.SRQN, Type: s.Type, PDN: s.PDN, CQN: s.CQN, resOwnerJSON: owner(s.Owner)}
			for _, q := range s.QPs {
				if q.Min == q.Max {
					r.LQPN = append(r.LQPN, strconv.FormatUint(uint64(q.Min), 10))
				} else {
					r.LQPN = append(r.LQPN, fmt.Sprintf("%d-%d", q.Min, q.Max))
				}
			}
			rows = append(rows, withDriver(dd, r, s.Driver))
			tbl.row(resCells(dd, s.Driver, s.Dev, optU32(r.SRQN), r.Type, strings.Join(r.LQPN, ","), optU32(r.PDN), optU32(r.CQN), optU32(r.PID), commText(s.Owner))...)
		}
	}
	if a.opts.json {
		if rows == nil {
			rows = []any{}
		}
		return a.printJSON(rows)
	}
	return tbl.render()
}

// link is a QP's or CM ID's DEV/PORT, DEV/- before it has a port.
func link(h inventory.ResHead, port *uint32) string {
	if port == nil {
		return h.Dev + "/-"
	}
	return fmt.Sprintf("%s/%d", h.Dev, *port)
}

func owner(o inventory.Owner) resOwnerJSON { return resOwnerJSON{PID: o.PID, Comm: o.Comm} }

// commText brackets kernel owners in the table, as rdma's text output.
func commText(o inventory.Owner) string {
	if o.Kernel {
		return "[" + o.Comm + "]"
	}
	return o.Comm
}

func optU64(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}

func hex32(p *uint32) any {
	if p == nil {
		return nil
	}
	return fmt.Sprintf("0x%x", *p)
}

func hex64(p *uint64) any {
	if p == nil {
		return nil
	}
	return fmt.Sprintf("0x%x", *p)
}

func onOff(b *bool) string {
	if b == nil {
		return ""
	}
	if *b {
		return "on"
	}
	return "off"
}

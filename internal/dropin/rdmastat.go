package dropin

import (
	"strings"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// rdma statistic: iproute2 6.1 rdma/stat.c and stat-mr.c. Its reads are
// printed (show, qp show, qp mode, mode [supported], mr); its writes are
// refused.

func statHelp(r *rd) int {
	f := r.filename
	for _, l := range []string{
		"Usage: %s [ OPTIONS ] statistic { COMMAND | help }",
		"       %s statistic OBJECT show",
		"       %s statistic OBJECT show link [ DEV/PORT_INDEX ] [ FILTER-NAME FILTER-VALUE ]",
		"       %s statistic OBJECT mode",
		"       %s statistic OBJECT set COUNTER_SCOPE [DEV/PORT_INDEX] auto {CRITERIA | off}",
		"       %s statistic OBJECT bind COUNTER_SCOPE [DEV/PORT_INDEX] [OBJECT-ID] [COUNTER-ID]",
		"       %s statistic OBJECT unbind COUNTER_SCOPE [DEV/PORT_INDEX] [COUNTER-ID]",
		"       %s statistic show",
		"       %s statistic show link [ DEV/PORT_INDEX ]",
		"       %s statistic mode [ supported ]",
		"       %s statistic mode [ supported ] link [ DEV/PORT_INDEX ]",
		"       %s statistic set link [ DEV/PORT_INDEX ] optional-counters [ OPTIONAL-COUNTERS ]",
		"       %s statistic unset link [ DEV/PORT_INDEX ] optional-counters",
	} {
		r.outf(l+"\n", f)
	}
	r.outf("where  OBJECT: = { qp }\n")
	r.outf("       CRITERIA : = { type }\n")
	r.outf("       COUNTER_SCOPE: = { link | dev }\n")
	r.outf("       FILTER_NAME: = { cntn | lqpn | pid }\n")
	r.outf("Examples:\n")
	for _, l := range []string{
		"statistic qp show",
		"statistic qp show link mlx5_2/1",
		"statistic qp mode",
		"statistic qp mode link mlx5_0",
		"statistic qp set link mlx5_2/1 auto type on",
		"statistic qp set link mlx5_2/1 auto off",
		"statistic qp bind link mlx5_2/1 lqpn 178",
		"statistic qp bind link mlx5_2/1 lqpn 178 cntn 4",
		"statistic qp unbind link mlx5_2/1 cntn 4",
		"statistic qp unbind link mlx5_2/1 cntn 4 lqpn 178",
		"statistic show",
		"statistic show link mlx5_2/1",
		"statistic mode",
		"statistic mode link mlx5_2/1",
		"statistic mode supported",
		"statistic mode supported link mlx5_2/1",
		"statistic set link mlx5_2/1 optional-counters cc_rx_ce_pkts,cc_rx_cnp_pkts",
		"statistic unset link mlx5_2/1 optional-counters",
	} {
		r.outf("       %s %s\n", f, l)
	}
	return 0
}

func cmdStat(r *rd) int {
	qp := func(r *rd) int {
		return r.exec([]rdCmd{
			{"", statQPShow},
			{"show", statQPShow},
			{"list", statQPShow},
			{"mode", statQPMode},
			{"set", readOnly("statistic qp set", "rdmactl statistic qp set")},
			{"bind", readOnly("statistic qp bind", "rdmactl statistic qp bind")},
			{"unbind", readOnly("statistic qp unbind", "rdmactl statistic qp unbind")},
			{"help", statHelp},
		}, "parameter")
	}
	mr := resObject(statMR)
	return r.exec([]rdCmd{
		{"", statShow},
		{"show", statShow},
		{"list", statShow},
		{"help", statHelp},
		{"qp", qp},
		{"mr", mr},
		{"mode", statMode},
		{"set", readOnly("statistic set", "rdmactl statistic set")},
		{"unset", readOnly("statistic unset", "rdmactl statistic unset")},
	}, "statistic command")
}

func statShow(r *rd) int {
	link := func(r *rd) int { return r.execLink(statShowOneLink, false) }
	return r.exec([]rdCmd{
		{"", link},
		{"link", link},
		{"mr", resObject(statMR)},
		{"help", statHelp},
	}, "parameter")
}

// statShowOneLink prints the current port's hardware counters (stat.c's
// stat_show_parse_cb on the answer to STAT_GET); -p without -j puts each
// on its own indented line.
func statShowOneLink(r *rd) int {
	if r.portIdx == 0 {
		return 0
	}
	cs, err := r.nl.PortStatistics(r.devIdx, r.portIdx)
	if err != nil {
		return r.netErr(err)
	}
	r.p.openObject()
	r.p.str(printAny, "ifname", "link %s/", r.curDev().name)
	r.p.uint(printAny, "port", "%d ", uint64(r.portIdx))
	for _, c := range cs {
		if r.pretty && !r.json {
			r.newlineIndent()
		}
		r.resPrintU64(c.Name, c.Value, true)
	}
	r.newline()
	return 0
}

// statLinkCmd is the tables of stat.c's qp show, qp mode and mode: the
// default and "link" run one per port (rd_exec_link, any port).
func statLinkCmd(one func(*rd) int) func(*rd) int {
	link := func(r *rd) int { return r.execLink(one, false) }
	return func(r *rd) int {
		return r.exec([]rdCmd{{"", link}, {"link", link}, {"help", statHelp}}, "parameter")
	}
}

var (
	statQPShow = statLinkCmd(statQPShowOne)
	statQPMode = statLinkCmd(statQPModeOne)
)

func statMode(r *rd) int {
	link := func(r *rd) int { return r.execLink(statModeOne(false), false) }
	return r.exec([]rdCmd{
		{"", link},
		{"link", link},
		{"show", link},
		{"supported", statLinkCmd(statModeOne(true))},
		{"help", statHelp},
	}, "parameter")
}

// statQPModeOne prints the current port's QP counter mode (stat.c's
// qp_link_get_mode_parse_cb): "qp auto type,pid on" or "qp auto off".
func statQPModeOne(r *rd) int {
	if r.portIdx == 0 {
		return 0
	}
	m, err := r.nl.QPCounterMode(r.devIdx, r.portIdx)
	if err != nil {
		return r.netErr(err)
	}
	mode := "qp auto off"
	if m.Mode == nldev.CounterModeAuto {
		if m.Mask == nil {
			return -1
		}
		var on []string
		if *m.Mask&nldev.CounterMaskQPType != 0 {
			on = append(on, "type")
		}
		if *m.Mask&nldev.CounterMaskPID != 0 {
			on = append(on, "pid")
		}
		switch {
		case *m.Mask == 0:
		case len(on) == 0:
			mode = "qp auto on"
		default:
			mode = "qp auto " + strings.Join(on, ",") + " on"
		}
	}
	port := r.portIdx
	r.p.openObject()
	r.printLink(r.devIdx, r.curDev().name, &port)
	r.p.str(printAny, "mode", "mode %s ", mode)
	r.newline()
	return 0
}

var statQPFilters = []resFilter{{name: "cntn", isNumber: true}, {name: "lqpn", isNumber: true},
	{name: "pid", isNumber: true}, {name: "qp-type"}}

// statQPShowOne prints the current port's QP counters (stat.c's
// res_counter_line): a counter is hidden when any QP bound to it is
// filtered out.
func statQPShowOne(r *rd) int {
	if r.portIdx == 0 {
		return 0
	}
	// rdma reads the filters again for each port.
	if rc := r.buildFilter(statQPFilters); rc != 0 {
		return rc
	}
	qcs, err := r.nl.QPCounters(r.devIdx, r.portIdx)
	if err != nil {
		return r.netErr(err)
	}
next:
	for _, q := range qcs {
		if q.ID == nil {
			continue
		}
		if r.isFiltered("cntn", *q.ID, true) ||
			r.isStringFiltered("qp-type", qpTypeName(val8(q.QPType))) {
			continue
		}
		h := nldev.ResHead{DevIndex: q.DevIndex, DevName: q.DevName, Owner: q.Owner}
		comm, ok := r.comm(h)
		if r.pidFiltered(h) {
			continue
		}
		for _, n := range q.LQPNs {
			if r.isFiltered("lqpn", n, true) {
				continue next
			}
		}
		r.p.openObject()
		r.printLink(q.DevIndex, q.DevName, q.Port)
		r.p.uint(printAny, "cntn", "cntn %d ", uint64(*q.ID))
		if q.QPType != nil {
			r.p.str(printAny, "qp-type", "qp-type %s ", qpTypeName(*q.QPType))
		}
		if q.PID != nil {
			r.resPrintU64("pid", uint64(*q.PID), true)
		}
		r.printComm(comm, ok, h)
		for _, c := range q.Counters {
			if r.pretty && !r.json {
				r.newlineIndent()
			}
			r.resPrintU64(c.Name, c.Value, true)
		}
		r.p.openArray(printJSON, "lqpn")
		r.p.text("\n    LQPN: <")
		for i, n := range q.LQPNs {
			if i > 0 {
				r.p.text(",")
			}
			r.p.uint(printAny, "", "%d", uint64(n))
		}
		r.p.closeArray(printAny, ">")
		r.newline()
	}
	return 0
}

// statModeOne prints the current port's optional counters (stat.c's
// do_stat_mode_parse_cb): those on, or with supported all of them; a
// port without any prints nothing.
func statModeOne(supported bool) func(*rd) int {
	return func(r *rd) int {
		if r.portIdx == 0 {
			return 0
		}
		cs, err := r.nl.CounterStatus(r.devIdx, r.portIdx)
		if err != nil {
			return r.netErr(err)
		}
		first := true
		for _, c := range cs {
			if !c.Optional || !(supported || c.Enabled) {
				continue
			}
			if first {
				r.p.openObject()
				r.p.str(printAny, "ifname", "link %s/", r.curDev().name)
				r.p.uint(printAny, "port", "%d ", uint64(r.portIdx))
				if supported {
					r.p.openArray(printAny, "supported optional-counters")
				} else {
					r.p.openArray(printAny, "optional-counters")
				}
				r.p.text(" ")
				first = false
			} else {
				r.p.text(",")
			}
			if r.pretty && !r.json {
				r.newlineIndent()
			}
			r.p.str(printAny, "", "%s", c.Name)
		}
		if !first {
			r.p.closeArray(printJSON, "")
			r.newline()
		}
		return 0
	}
}

// statMR is stat.h's RES_FUNC(stat_mr): each MR of each device with the
// counters its driver keeps (none for rxe), filtered by mrn only (so
// "dev" is an unsupported filter there, in rdma too).
var statMR = &resKind{
	name: "mr", byDev: true,
	filters: numeric("mrn"),
	show: func(r *rd, d nldev.Device) int {
		mrs, err := r.nl.MRStatistics(d.Index)
		if err != nil {
			return r.netErr(err)
		}
		for _, m := range mrs {
			if r.isFiltered("mrn", val32(m.MRN), m.MRN != nil) {
				continue
			}
			r.p.openObject()
			r.printDev(m.DevIndex, m.DevName)
			r.resPrintU32("mrn", m.MRN)
			for _, c := range m.Counters {
				if r.pretty && !r.json {
					r.newlineIndent()
				}
				r.resPrintU64(c.Name, c.Value, true)
			}
			r.newline()
		}
		return 0
	},
}

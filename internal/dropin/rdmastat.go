package dropin

// rdma statistic: iproute2 6.1 rdma/stat.c. Its show (a port's hardware
// counters) is printed; its QP counters, modes and MR counters are not
// yet (refused, exit 2), and its writes are refused.

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

// notYet refuses a part of rdma rdmactl's rdma does not print yet.
func notYet(what, instead string) func(*rd) int {
	return func(r *rd) int {
		r.errf("%s: rdmactl's %s does not print '%s' yet (use '%s')\n", r.filename, r.filename, what, instead)
		return exitReadOnly
	}
}

func cmdStat(r *rd) int {
	qp := func(r *rd) int {
		show := notYet("statistic qp show", "rdmactl statistic qp show")
		return r.exec([]rdCmd{
			{"", show},
			{"show", show},
			{"list", show},
			{"mode", notYet("statistic qp mode", "rdmactl statistic qp mode")},
			{"set", readOnly("statistic qp set", "rdmactl statistic qp set")},
			{"bind", readOnly("statistic qp bind", "rdmactl statistic qp bind")},
			{"unbind", readOnly("statistic qp unbind", "rdmactl statistic qp unbind")},
			{"help", statHelp},
		}, "parameter")
	}
	mr := notYet("statistic mr", "rdmactl statistic mr")
	return r.exec([]rdCmd{
		{"", statShow},
		{"show", statShow},
		{"list", statShow},
		{"help", statHelp},
		{"qp", qp},
		{"mr", mr},
		{"mode", notYet("statistic mode", "rdmactl statistic mode")},
		{"set", readOnly("statistic set", "rdmactl statistic set")},
		{"unset", readOnly("statistic unset", "rdmactl statistic unset")},
	}, "statistic command")
}

func statShow(r *rd) int {
	link := func(r *rd) int { return r.execLink(statShowOneLink, false) }
	return r.exec([]rdCmd{
		{"", link},
		{"link", link},
		{"mr", notYet("statistic show mr", "rdmactl statistic mr")},
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

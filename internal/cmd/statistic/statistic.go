package statistic

import (
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
	"github.com/rdmactl/rdmactl/internal/complete"
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
	"github.com/rdmactl/rdmactl/internal/statobj"
	"github.com/spf13/cobra"
)

// NewCmd is rdmactl statistic: QP counters and their modes, optional
// counters, MR statistics, as "rdma statistic qp|mode|set|unset|mr" (a
// port's own counters, "rdma statistic show", are 'rdmactl counters').
// Arguments are rdma's "KEYWORD VALUE" pairs; the read-only views are
// internal/statobj's objects.
func NewCmd(a *cmdutil.App) *cobra.Command {
	c := &cobra.Command{
		Use:     "statistic",
		Aliases: []string{"stat"},
		Short:   "QP counters and their modes, optional counters, MR statistics (like rdma statistic)",
		Long: `QP counters (bound automatically by QP type or process, or by hand), the
optional counters of a port and per-MR statistics, as 'rdma statistic'.
A port's own counters ('rdma statistic show') are 'rdmactl counters'.`,
		Example: `  rdmactl statistic qp show link mlx5_0/1
  rdmactl statistic qp set link mlx5_0/1 auto type on
  rdmactl statistic mode supported`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cmdutil.UsageErrorf("'rdmactl statistic' needs a subcommand: qp, mode, set, unset or mr (a port's counters: rdmactl counters)")
		},
	}
	qp := cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:   "qp [show] [link DEV[/PORT]] [lqpn N] [pid N] [cntn N]",
		Short: "QP counters: show, mode, set, bind, unbind",
		Args:  cobra.ArbitraryArgs,
		RunE:  func(c *cobra.Command, args []string) error { return runQPShow(a, args) },
	})
	qp.AddCommand(cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:   "show [link DEV[/PORT]] [lqpn N] [pid N] [cntn N]",
		Short: "Show the QP counters: bound QPs and values (filters: lqpn, pid, cntn)",
		Long: `Show each QP counter: its port, id (cntn), the QP type or process it counts in
auto mode, the QPs bound to it (lqpn) and its values. link DEV or DEV/PORT,
lqpn N (counters with QP N), pid N and cntn N select, as rdma's filters.`,
		Example: `  rdmactl statistic qp show
  rdmactl -j statistic qp show link mlx5_0/1 lqpn 178`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runQPShow(a, args) },
		ValidArgsFunction: objectCompletion(statobj.QPCounters),
	}))
	qp.AddCommand(cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:     "mode [link DEV[/PORT]]",
		Short:   "Show each port's QP counter mode: none, auto (by type, pid) or manual",
		Example: "  rdmactl statistic qp mode\n  rdmactl statistic qp mode link rxe0/1",
		Args:    cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runShow(a, "statistic qp mode", statobj.QPModes, args)
		},
		ValidArgsFunction: objectCompletion(statobj.QPModes),
	}))
	qp.AddCommand(cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "set link DEV/PORT auto type|pid|type,pid on|off [optional-counters on|off]",
		Short: "Set automatic QP counters by QP type and/or process, or off (needs CAP_NET_ADMIN)",
		Long: `Bind new QPs of DEV/PORT to counters automatically, one counter per QP type
(type), per process (pid) or both ('auto type,pid on'), or stop ('auto off'),
as 'rdma statistic qp set'. optional-counters on|off (kernels 6.11+) also
enables the port's optional counters on each such counter. Prints nothing
on success.`,
		Example: `  rdmactl statistic qp set link mlx5_0/1 auto type on
  rdmactl statistic qp set link mlx5_0/1 auto off`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runQPSet(a, args) },
		ValidArgsFunction: qpSetCompletion,
	}))
	qp.AddCommand(cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "bind link DEV/PORT lqpn N [cntn N]",
		Short: "Bind QP N to counter cntn, or to a new counter (needs CAP_NET_ADMIN)",
		Example: `  rdmactl statistic qp bind link mlx5_0/1 lqpn 178
  rdmactl statistic qp bind link mlx5_0/1 lqpn 178 cntn 4`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runQPBind(a, args) },
		ValidArgsFunction: keywordCompletion(map[string]cobra.CompletionFunc{"link": complete.DevPorts}, "link", "lqpn", "cntn"),
	}))
	qp.AddCommand(cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "unbind link DEV/PORT cntn N [lqpn N]",
		Short: "Unbind QP N, or every QP, from counter cntn (needs CAP_NET_ADMIN)",
		Example: `  rdmactl statistic qp unbind link mlx5_0/1 cntn 4
  rdmactl statistic qp unbind link mlx5_0/1 cntn 4 lqpn 178`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runQPUnbind(a, args) },
		ValidArgsFunction: keywordCompletion(map[string]cobra.CompletionFunc{"link": complete.DevPorts}, "link", "cntn", "lqpn"),
	}))
	c.AddCommand(qp)
	c.AddCommand(cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:   "mode [supported] [link DEV[/PORT]]",
		Short: "Show the optional counters each port has on, or (supported) has",
		Long: `Show the optional counters that are on, per port, or with 'supported' all the
optional counters each port has, as 'rdma statistic mode'. Ports without
optional counters (rxe) are left out.`,
		Example: `  rdmactl statistic mode
  rdmactl statistic mode supported link mlx5_0/1`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runStatMode(a, args) },
		ValidArgsFunction: statModeCompletion,
	}))
	c.AddCommand(cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:   "set link DEV/PORT optional-counters NAME[,NAME...]",
		Short: "Turn on exactly these optional counters of a port (needs CAP_NET_ADMIN)",
		Long: `Turn on the optional counters named (and every other optional counter of the
port off), as 'rdma statistic set'. A name the port does not have as an
optional counter is exit 3, listing those it has; a port without optional
counters exit 5. Prints nothing on success.`,
		Example:           `  rdmactl statistic set link mlx5_0/1 optional-counters cc_rx_ce_pkts,cc_rx_cnp_pkts`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runStatSetOpt(a, args) },
		ValidArgsFunction: optCountersCompletion,
	}))
	c.AddCommand(cmdutil.Needs(cmdutil.NeedNetAdmin, &cobra.Command{
		Use:               "unset link DEV/PORT optional-counters",
		Short:             "Turn every optional counter of a port off (needs CAP_NET_ADMIN)",
		Example:           `  rdmactl statistic unset link mlx5_0/1 optional-counters`,
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runStatUnsetOpt(a, args) },
		ValidArgsFunction: optCountersCompletion,
	}))
	c.AddCommand(cmdutil.Needs(cmdutil.NeedNetlink, &cobra.Command{
		Use:               "mr [dev DEV] [mrn N]",
		Short:             "Show each memory region's driver counters (none on rxe)",
		Example:           "  rdmactl statistic mr\n  rdmactl -j statistic mr dev mlx5_0",
		Args:              cobra.ArbitraryArgs,
		RunE:              func(c *cobra.Command, args []string) error { return runShow(a, "statistic mr", statobj.MRs, args) },
		ValidArgsFunction: objectCompletion(statobj.MRs),
	}))
	return c
}

// linkArg parses "link DEV[/PORT]" of kw; needPort refuses a bare DEV.
func linkArg(cmd string, kw map[string]string, need, needPort bool) (string, uint32, error) {
	v, ok := kw["link"]
	if !ok {
		if need {
			return "", 0, cmdutil.UsageErrorf("%s: needs link DEV/PORT", cmd)
		}
		return "", 0, nil
	}
	dev, port, err := cmdutil.ParseDevPort(v)
	if err != nil {
		return "", 0, err
	}
	if needPort && port == 0 {
		return "", 0, cmdutil.UsageErrorf("%s: link %s: needs a port, as in %s/1", cmd, v, dev)
	}
	return dev, port, nil
}

// runShow prints the statistic objects o that args select by o's
// keywords (its device, then its number filters); cmd names the command
// in errors.
func runShow(a *cmdutil.App, cmd string, o *statobj.Object, args []string) error {
	kw, err := cmdutil.Keywords(cmd, args, append([]string{o.DevKey}, o.Filters...)...)
	if err != nil {
		return err
	}
	var q statobj.Query
	if o.DevKey == "link" {
		if q.Dev, q.Port, err = linkArg(cmd, kw, false, false); err != nil {
			return err
		}
	} else {
		q.Dev = kw[o.DevKey]
	}
	for _, k := range o.Filters {
		n, err := optU32Arg(cmd, kw, k)
		if err != nil {
			return err
		}
		if n != nil {
			if q.Num == nil {
				q.Num = map[string]uint32{}
			}
			q.Num[k] = *n
		}
	}
	rows, err := cmdutil.Inventory(a, false, func(src *inventory.Source) ([]statobj.Row, error) { return o.Rows(src, q) })
	if err != nil {
		return err
	}
	js := make([]any, 0, len(rows))
	tb := render.NewTable(a.Stdout, o.Columns...)
	for _, r := range rows {
		js = append(js, r.JSON)
		tb.Row(r.Cells...)
	}
	if a.Opts.JSON {
		return a.PrintJSON(js)
	}
	return tb.Flush()
}

// runQPShow is "statistic qp [show] ...".
func runQPShow(a *cmdutil.App, args []string) error {
	if len(args) > 0 && args[0] == "show" {
		args = args[1:]
	}
	return runShow(a, "statistic qp show", statobj.QPCounters, args)
}

// runStatMode is "statistic mode [show|supported] ...".
func runStatMode(a *cmdutil.App, args []string) error {
	if len(args) > 0 && args[0] == "supported" {
		return runShow(a, "statistic mode", statobj.SupportedOptionalCounters, args[1:])
	}
	if len(args) > 0 && args[0] == "show" {
		args = args[1:]
	}
	return runShow(a, "statistic mode", statobj.OptionalCounters, args)
}

// qpArgs is what statistic qp bind and unbind take, and the writer open
// on the port.
type qpArgs struct {
	dev        string
	port       uint32
	lqpn, cntn *uint32
	c          *inventory.Config
	index      uint32 // the device's
}

// parseQPArgs parses "link DEV/PORT" and the keywords need and other
// (lqpn and cntn, in the order cmd's usage names them); cmd cannot do
// without need.
func parseQPArgs(cmd string, args []string, need, other string) (qpArgs, error) {
	kw, err := cmdutil.Keywords(cmd, args, "link", need, other)
	if err != nil {
		return qpArgs{}, err
	}
	var q qpArgs
	if q.dev, q.port, err = linkArg(cmd, kw, true, true); err != nil {
		return qpArgs{}, err
	}
	n, err := optU32Arg(cmd, kw, need)
	if err != nil {
		return qpArgs{}, err
	}
	if n == nil {
		return qpArgs{}, cmdutil.UsageErrorf("%s: needs %s N", cmd, need)
	}
	o, err := optU32Arg(cmd, kw, other)
	if err != nil {
		return qpArgs{}, err
	}
	if need == "lqpn" {
		q.lqpn, q.cntn = n, o
	} else {
		q.cntn, q.lqpn = n, o
	}
	return q, nil
}

// runQPWrite parses "link DEV/PORT" and the keywords need and other
// (parseQPArgs), opens the writer on the port (openPort) and runs write
// with them and the words that name the request in an error.
func runQPWrite(a *cmdutil.App, cmd string, args []string, need, other string, write func(q qpArgs, what string) error) error {
	q, err := parseQPArgs(cmd, args, need, other)
	if err != nil {
		return err
	}
	var closeFn func()
	if q.c, q.index, closeFn, err = openPort(a, q.dev, q.port); err != nil {
		return err
	}
	defer closeFn()
	n := q.lqpn
	if need == "cntn" {
		n = q.cntn
	}
	return write(q, fmt.Sprintf("%s link %s/%d %s %d", cmd, q.dev, q.port, need, *n))
}

func optU32Arg(cmd string, kw map[string]string, key string) (*uint32, error) {
	v, ok := kw[key]
	if !ok {
		return nil, nil
	}
	n, err := cmdutil.ParseU32(cmd, key, v)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

func runQPSet(a *cmdutil.App, args []string) error {
	const cmd = "statistic qp set"
	// link DEV/PORT auto (off | CRITERIA on [optional-counters on|off])
	if len(args) < 4 || args[0] != "link" || args[2] != "auto" {
		return cmdutil.UsageErrorf("%s: needs link DEV/PORT auto type|pid|type,pid on|off", cmd)
	}
	dev, port, err := linkArg(cmd, map[string]string{"link": args[1]}, true, true)
	if err != nil {
		return err
	}
	rest := args[3:]
	var mask uint32
	var opt *bool
	switch {
	case len(rest) == 1 && rest[0] == "off":
	case len(rest) >= 2:
		crit := rest[0]
		if rest[1] == "off" {
			// rdma takes only "auto off"; "auto type off" means the same.
			if _, err := inventory.AutoMask(strings.Split(crit, ",")); err != nil {
				return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%s: %v", cmd, err))
			}
			if len(rest) != 2 {
				return cmdutil.UsageErrorf("%s: nothing may follow off", cmd)
			}
			break
		}
		if rest[1] != "on" {
			return cmdutil.UsageErrorf("%s: auto %s %q: want on or off", cmd, crit, rest[1])
		}
		m, err := inventory.AutoMask(strings.Split(crit, ","))
		if err != nil {
			return cmdutil.WithCode(cmdutil.ExitUsage, fmt.Errorf("%s: %v", cmd, err))
		}
		mask = m
		if len(rest) > 2 {
			kw, err := cmdutil.Keywords(cmd, rest[2:], "optional-counters")
			if err != nil {
				return err
			}
			b, err := cmdutil.ParseOnOff(cmd+" optional-counters", kw["optional-counters"])
			if err != nil {
				return err
			}
			opt = &b
		}
	default:
		return cmdutil.UsageErrorf("%s: auto needs off, or criteria (type, pid, type,pid) and on", cmd)
	}
	c, index, closeFn, err := openPort(a, dev, port)
	if err != nil {
		return err
	}
	defer closeFn()
	what := fmt.Sprintf("%s link %s/%d", cmd, dev, port)
	return cmdutil.WriteError(what, c.SetQPAutoMode(index, port, mask, opt), map[syscall.Errno]cmdutil.Refusal{
		syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("%s/%d has no QP counters (EOPNOTSUPP)", dev, port)},
		syscall.EBUSY:      {Code: cmdutil.ExitFailure, Msg: "QPs are bound to counters by hand (EBUSY): unbind them first (rdmactl statistic qp show)"},
		syscall.EINVAL:     {Code: cmdutil.ExitFailure, Msg: "the kernel refused (EINVAL): the port is not in auto mode, or the criteria or optional-counters are not supported"},
	})
}

// openPort opens the writer and resolves DEV/PORT to the device's index
// (exit 3 when either is unknown). closeFn releases the writer.
func openPort(a *cmdutil.App, dev string, port uint32) (c *inventory.Config, index uint32, closeFn func(), err error) {
	c, _, closeFn, err = a.OpenWrite()
	if err != nil {
		return nil, 0, nil, err
	}
	refs, err := c.Src.Targets(dev, port)
	if err != nil {
		closeFn()
		return nil, 0, nil, err
	}
	return c, *refs[0].Index, closeFn, nil
}

func runQPBind(a *cmdutil.App, args []string) error {
	return runQPWrite(a, "statistic qp bind", args, "lqpn", "cntn", func(q qpArgs, what string) error {
		_, err := q.c.BindQP(q.index, q.port, *q.lqpn, q.cntn)
		return cmdutil.WriteError(what, err, map[syscall.Errno]cmdutil.Refusal{
			syscall.ENOENT:     {Code: cmdutil.ExitNotFound, Msg: fmt.Sprintf("no QP %d on %s/%d that a counter can take, or no such counter (ENOENT)", *q.lqpn, q.dev, q.port)},
			syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("%s has no QP counters to bind to (EOPNOTSUPP)", q.dev)},
			syscall.EINVAL:     {Code: cmdutil.ExitFailure, Msg: "the kernel refused (EINVAL): the port is in auto mode, or the QP and counter do not match"},
			syscall.ENOMEM:     {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("the kernel could not make a counter (ENOMEM): %s has no QP counters to allocate", q.dev)},
		})
	})
}

func runQPUnbind(a *cmdutil.App, args []string) error {
	return runQPWrite(a, "statistic qp unbind", args, "cntn", "lqpn", func(q qpArgs, what string) error {
		why := map[syscall.Errno]cmdutil.Refusal{
			syscall.ENOENT:     {Code: cmdutil.ExitNotFound, Msg: fmt.Sprintf("no counter %d with that QP on %s/%d (ENOENT)", *q.cntn, q.dev, q.port)},
			syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("%s has no QP counters (EOPNOTSUPP)", q.dev)},
			syscall.EINVAL:     {Code: cmdutil.ExitNotFound, Msg: fmt.Sprintf("the kernel refused (EINVAL): no counter %d bound by hand on %s/%d", *q.cntn, q.dev, q.port)},
		}
		if q.lqpn != nil {
			return cmdutil.WriteError(what, q.c.UnbindQP(q.index, q.port, *q.cntn, *q.lqpn), why)
		}
		// Every QP of the counter, as rdma does: read the counter, unbind each.
		qc, err := q.c.QPCounterByID(q.index, q.port, *q.cntn)
		if err != nil {
			return cmdutil.WriteError(what, err, why)
		}
		for _, n := range qc.LQPNs {
			if err := q.c.UnbindQP(q.index, q.port, *q.cntn, n); err != nil {
				return cmdutil.WriteError(fmt.Sprintf("%s lqpn %d", what, n), err, why)
			}
		}
		return nil
	})
}

// optCounterArgs parses "link DEV/PORT optional-counters [LIST]".
func optCounterArgs(cmd string, args []string, needList bool) (string, uint32, []string, error) {
	if len(args) == 3 && !needList && args[0] == "link" && args[2] == "optional-counters" {
		dev, port, err := linkArg(cmd, map[string]string{"link": args[1]}, true, true)
		return dev, port, nil, err
	}
	kw, err := cmdutil.Keywords(cmd, args, "link", "optional-counters")
	if err != nil {
		return "", 0, nil, err
	}
	dev, port, err := linkArg(cmd, kw, true, true)
	if err != nil {
		return "", 0, nil, err
	}
	v, ok := kw["optional-counters"]
	if !needList {
		if ok {
			return "", 0, nil, cmdutil.UsageErrorf("%s: optional-counters takes no names (unset turns all of them off)", cmd)
		}
		return "", 0, nil, cmdutil.UsageErrorf("%s: needs link DEV/PORT optional-counters", cmd)
	}
	if !ok || v == "" {
		return "", 0, nil, cmdutil.UsageErrorf("%s: needs optional-counters NAME[,NAME...]", cmd)
	}
	var names []string
	for _, n := range strings.Split(v, ",") {
		if n == "" {
			return "", 0, nil, cmdutil.UsageErrorf("%s: optional-counters %q: an empty name", cmd, v)
		}
		names = append(names, n)
	}
	return dev, port, names, nil
}

func runStatSetOpt(a *cmdutil.App, args []string) error {
	const cmd = "statistic set"
	dev, port, names, err := optCounterArgs(cmd, args, true)
	if err != nil {
		return err
	}
	c, src, closeFn, err := a.OpenWrite()
	if err != nil {
		return err
	}
	defer closeFn()
	what := fmt.Sprintf("%s link %s/%d optional-counters %s", cmd, dev, port, strings.Join(names, ","))
	ocs, err := src.OptionalCounters(dev, port)
	if err != nil {
		return cmdutil.WriteError(what, err, nil)
	}
	o := ocs[0]
	if o.NoStatus || len(o.Supported) == 0 {
		return cmdutil.WithCode(cmdutil.ExitUnsupported, fmt.Errorf("%s: %s/%d has no optional counters", what, dev, port))
	}
	var idx []uint32
	for _, n := range names {
		i, ok := o.Index(n)
		if !ok {
			return cmdutil.WithCode(cmdutil.ExitNotFound, fmt.Errorf("%s: %s/%d has no optional counter %q (it has: %s)", what, dev, port, n, strings.Join(o.Supported, ", ")))
		}
		idx = append(idx, i)
	}
	return cmdutil.WriteError(what, c.SetOptionalCounters(o.DevIndex, port, idx), map[syscall.Errno]cmdutil.Refusal{
		syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("%s/%d cannot switch optional counters (EOPNOTSUPP)", dev, port)},
	})
}

func runStatUnsetOpt(a *cmdutil.App, args []string) error {
	const cmd = "statistic unset"
	dev, port, _, err := optCounterArgs(cmd, args, false)
	if err != nil {
		return err
	}
	c, index, closeFn, err := openPort(a, dev, port)
	if err != nil {
		return err
	}
	defer closeFn()
	what := fmt.Sprintf("%s link %s/%d optional-counters", cmd, dev, port)
	return cmdutil.WriteError(what, c.SetOptionalCounters(index, port, nil), map[syscall.Errno]cmdutil.Refusal{
		syscall.EOPNOTSUPP: {Code: cmdutil.ExitUnsupported, Msg: fmt.Sprintf("%s/%d has no optional counters (EOPNOTSUPP)", dev, port)},
	})
}

// keywordCompletion completes rdma's "KEY VALUE" arguments: a key not yet
// given, or the value of the key just typed (values[key], nothing for
// numbers).
func keywordCompletion(values map[string]cobra.CompletionFunc, keys ...string) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args)%2 == 1 {
			if f := values[args[len(args)-1]]; f != nil {
				return f(cmd, nil, toComplete)
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var left []string
		for _, k := range keys {
			used := false
			for i := 0; i < len(args); i += 2 {
				used = used || args[i] == k
			}
			if !used {
				left = append(left, k)
			}
		}
		return cmdutil.Prefixed(toComplete, left...), cobra.ShellCompDirectiveNoFileComp
	}
}

// objectCompletion completes o's keywords: its device's (link DEV/PORT or
// dev DEV), then its number filters.
func objectCompletion(o *statobj.Object) cobra.CompletionFunc {
	devs := map[string]cobra.CompletionFunc{"link": complete.DevPorts, "dev": complete.Devices}
	return keywordCompletion(map[string]cobra.CompletionFunc{o.DevKey: devs[o.DevKey]}, append([]string{o.DevKey}, o.Filters...)...)
}

// completeLink completes the first three words, "link DEV/PORT word";
// ok is false past them.
func completeLink(cmd *cobra.Command, args []string, toComplete, word string) (c []cobra.Completion, d cobra.ShellCompDirective, ok bool) {
	switch len(args) {
	case 0:
		return cmdutil.Prefixed(toComplete, "link"), cobra.ShellCompDirectiveNoFileComp, true
	case 1:
		c, d = complete.DevPorts(cmd, nil, toComplete)
		return c, d, true
	case 2:
		return cmdutil.Prefixed(toComplete, word), cobra.ShellCompDirectiveNoFileComp, true
	}
	return nil, cobra.ShellCompDirectiveNoFileComp, false
}

// qpSetCompletion completes "link DEV/PORT auto CRITERIA on|off
// [optional-counters on|off]".
func qpSetCompletion(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if c, d, ok := completeLink(cmd, args, toComplete, "auto"); ok {
		return c, d
	}
	nf := cobra.ShellCompDirectiveNoFileComp
	switch len(args) {
	case 3:
		return cmdutil.Prefixed(toComplete, "type", "pid", "type,pid", "off"), nf
	case 4:
		if args[3] != "off" {
			return cmdutil.Prefixed(toComplete, "on", "off"), nf
		}
	case 5:
		if args[4] == "on" {
			return cmdutil.Prefixed(toComplete, "optional-counters"), nf
		}
	case 6:
		return cmdutil.Prefixed(toComplete, "on", "off"), nf
	}
	return nil, nf
}

func statModeCompletion(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	rest := args
	var words []string
	if len(args) == 0 {
		words = append(words, "supported")
	} else if args[0] == "supported" {
		rest = args[1:]
	}
	if len(rest) == 1 && rest[0] == "link" {
		return complete.DevPorts(cmd, nil, toComplete)
	}
	if len(rest) == 0 {
		words = append(words, "link")
	}
	return cmdutil.Prefixed(toComplete, words...), cobra.ShellCompDirectiveNoFileComp
}

// optCountersCompletion completes "link DEV/PORT optional-counters
// NAME,NAME": counter names of that port, from sysfs hw_counters
// (completion never uses netlink): the optional ones are among them.
func optCountersCompletion(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if c, d, ok := completeLink(cmd, args, toComplete, "optional-counters"); ok {
		return c, d
	}
	nf := cobra.ShellCompDirectiveNoFileComp
	if len(args) == 3 {
		if cmd.Name() != "set" {
			return nil, nf
		}
		dev, port, err := cmdutil.ParseDevPort(args[1])
		if err != nil || port == 0 {
			return nil, nf
		}
		done, cur := "", toComplete
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			done, cur = toComplete[:i+1], toComplete[i+1:]
		}
		var out []cobra.Completion
		for _, n := range complete.Source(cmd, args).HWCounterNames(dev, port) {
			if strings.HasPrefix(n, cur) {
				out = append(out, done+n)
			}
		}
		return out, nf | cobra.ShellCompDirectiveNoSpace
	}
	return nil, nf
}

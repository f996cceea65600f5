package dropin

import (
	"fmt"
	"net/netip"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// rdma resource: iproute2 6.1 rdma/res.c, res.h (RES_FUNC and the valid
// filters), res-{qp,cq,mr,pd,cmid,ctx,srq}.c, and utils.c's filters.

func resHelp(r *rd) int {
	r.outf("Usage: %s resource\n", r.filename)
	for _, l := range []string{
		"resource show [DEV]",
		"resource show [qp|cm_id|pd|mr|cq|ctx|srq]",
		"resource show qp link [DEV/PORT]",
		"resource show qp link [DEV/PORT] [FILTER-NAME FILTER-VALUE]",
		"resource show cm_id link [DEV/PORT]",
		"resource show cm_id link [DEV/PORT] [FILTER-NAME FILTER-VALUE]",
		"resource show cq link [DEV/PORT]",
		"resource show cq link [DEV/PORT] [FILTER-NAME FILTER-VALUE]",
		"resource show pd dev [DEV]",
		"resource show pd dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show mr dev [DEV]",
		"resource show mr dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show ctx dev [DEV]",
		"resource show ctx dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show srq dev [DEV]",
		"resource show srq dev [DEV] [FILTER-NAME FILTER-VALUE]",
	} {
		r.outf("          %s\n", l)
	}
	return 0
}

func cmdRes(r *rd) int {
	return r.exec([]rdCmd{
		{"", resShow},
		{"show", resShow},
		{"list", resShow},
		{"help", resHelp},
	}, "resource command")
}

func resShow(r *rd) int {
	// "rdma res show DEV": one device's counts.
	if r.argc() == 1 && r.lookupDev(false) != nil {
		return r.execDev(resSummaryOne)
	}
	return r.exec([]rdCmd{
		{"", func(r *rd) int { return r.execDev(resSummaryOne) }},
		{"qp", resObject(resQP)},
		{"cm_id", resObject(resCMID)},
		{"cq", resObject(resCQ)},
		{"mr", resObject(resMR)},
		{"pd", resObject(resPD)},
		{"ctx", resObject(resCtx)},
		{"srq", resObject(resSRQ)},
	}, "parameter")
}

// resPrintU64 is res_print_u64 (and res_print_u32): the name as text,
// then " %u "; a number under the name in JSON.
func (r *rd) resPrintU64(name string, v uint64, present bool) {
	if !present {
		return
	}
	if r.p.jw != nil {
		r.p.field(name, fmt.Sprint(v))
		return
	}
	r.p.text(name)
	r.p.fp(" %d ", v)
}

func (r *rd) resPrintU32(name string, v *uint32) {
	if v != nil {
		r.resPrintU64(name, uint64(*v), true)
	}
}

// resSummaryOne prints the current device's resource counts (res.c's
// res_no_args_parse_cb on the answer to RES_GET).
func resSummaryOne(r *rd) int {
	sums, err := r.nl.ResourceSummary()
	if err != nil {
		return r.netErr(err)
	}
	for _, s := range sums {
		if s.DevIndex != r.devIdx {
			continue
		}
		r.p.openObject()
		r.p.uint(printAny, "ifindex", "%d: ", uint64(s.DevIndex))
		r.p.str(printAny, "ifname", "%s: ", s.DevName)
		for _, n := range s.Names {
			r.resPrintU64(n, s.Counts[n], true)
		}
		r.newline()
	}
	return 0
}

// resFilter is one of res.h's valid filters.
type resFilter struct {
	name     string
	isNumber bool
	isDoit   bool // the object's number: rdma asks for that one object
}

func numeric(names ...string) []resFilter {
	var out []resFilter
	for _, n := range names {
		out = append(out, resFilter{name: n, isNumber: true})
	}
	return out
}

// resKind is one object of RES_FUNC: its filters, whether it is listed by
// device (strict) or by port, and its line printer for the current
// device (and port).
type resKind struct {
	name    string
	filters []resFilter
	byDev   bool
	raw     bool // has rdma -r's raw form
	show    func(r *rd, d nldev.Device) int
}

// showRaw is res-{qp,cq,mr}.c's *_line_raw on the answers to the RAW
// commands (rdma -r): the device (a QP's link, with the port rdma is
// at), then the driver's bytes, in decimal run together as text, a
// "data" list in JSON.
func (k *resKind) showRaw(r *rd, d nldev.Device) int {
	es, err := r.nl.RawOf(k.name, []nldev.Device{d}, r.portIdx)
	for _, e := range es {
		r.p.openObject()
		if k.name == "qp" {
			var port *uint32
			if e.Port != nil {
				pi := r.portIdx
				port = &pi
			}
			r.printLink(e.DevIndex, e.DevName, port)
		} else {
			r.printDev(e.DevIndex, e.DevName)
		}
		r.p.openArray(printJSON, "data")
		for _, b := range e.Data {
			r.p.uint(printAny, "", "%d", uint64(b))
		}
		r.p.closeArray(printAny, ">")
		r.newline()
	}
	if err != nil {
		return r.netErr(err)
	}
	return 0
}

func resObject(k *resKind) func(*rd) int {
	return func(r *rd) int {
		if rc := r.buildFilter(k.filters); rc != 0 {
			return rc
		}
		show := k.show
		if r.raw && k.raw {
			// rdma -r prints raw objects unfiltered, but asks for one
			// object by number where a filter names one (and then
			// prints nothing when that fails): rdmactl does not.
			if r.doitFilter() {
				r.errf("%s: rdmactl's %s does not print -r's raw data of one object by number (use 'rdmactl res %s --raw')\n", r.filename, r.filename, k.name)
				return exitReadOnly
			}
			show = k.showRaw
		}
		if rc := r.setArgToDevname(); rc != 0 {
			return rc
		}
		cb := func(r *rd) int { return show(r, r.curDev().dev) }
		if k.byDev {
			return r.execDev(cb)
		}
		return r.execLink(cb, false)
	}
}

// buildFilter is rd_build_filter: the words left are FILTER-NAME
// FILTER-VALUE pairs.
func (r *rd) buildFilter(valid []resFilter) int {
	if valid == nil || r.argc() == 0 {
		return 0
	}
	if r.argc() == 1 {
		r.errf("No filter data was supplied to filter option %s\n", r.argv())
		return -int(syscall.EINVAL)
	}
	if r.argc()%2 != 0 {
		r.errf("There is filter option without data\n")
		return -int(syscall.EINVAL)
	}
	for i := 0; i < r.argc(); i += 2 {
		if rc := r.addFilter(r.args[i], r.args[i+1], valid); rc != 0 {
			return rc
		}
	}
	return 0
}

const filterCset = "1234567890,-"

// addFilter is add_filter: the key as typed (any prefix of a valid
// name), a number's characters checked, the value lowered.
func (r *rd) addFilter(key, value string, valid []resFilter) int {
	var f *resFilter
	for i := range valid {
		if strcmpx(key, valid[i].name) {
			f = &valid[i]
			break
		}
	}
	if f == nil {
		r.errf("Unsupported filter option: %s\n", key)
		return -int(syscall.EINVAL)
	}
	if f.isNumber && strings.Trim(value, filterCset) != "" {
		// strspn(value, cset) != strlen(value)
		r.errf("%s filter accepts \"%s\" characters only\n", key, filterCset)
		return -int(syscall.EINVAL)
	}
	low := []byte(value)
	for i, c := range low {
		if c >= 'A' && c <= 'Z' {
			low[i] = c + 'a' - 'A'
		}
	}
	r.filters = append(r.filters, filterEntry{key: key, value: string(low), isDoit: f.isDoit && strtolWhole(value)})
	return 0
}

// strtolWhole says whether strtol(s, &end, 10) takes all of s without
// overflow (as add_filter checks before marking a filter is_doit).
func strtolWhole(s string) bool {
	if s == "" {
		return true // no digits: end is s, at its NUL
	}
	d := strings.TrimPrefix(s, "-")
	if d == "" || strings.Trim(d, "0123456789") != "" {
		return false
	}
	d = strings.TrimLeft(d, "0")
	return len(d) < 19 || (len(d) == 19 && d <= "9223372036854775807")
}

// doitFilter is rd_doit_index: a filter naming one object by number.
func (r *rd) doitFilter() bool {
	for _, fe := range r.filters {
		if fe.isDoit {
			return true
		}
	}
	return false
}

// setArgToDevname is rd_set_arg_to_devname: the word after the first
// word that is a prefix of "dev" or "link" is the device; with neither,
// every device.
func (r *rd) setArgToDevname() int {
	for r.argc() > 0 {
		if strcmpx(r.argv(), "dev") || strcmpx(r.argv(), "link") {
			r.inc()
			if r.argc() == 0 {
				r.errf("No device name was supplied\n")
				return -int(syscall.EINVAL)
			}
			return 0
		}
		r.inc()
	}
	return 0
}

// strtoul10 is strtol(p, &p, 10) on digits, saturating, as rdma stores
// it in a uint32; it returns the rest of p.
func strtoul10(p string) (uint32, string) {
	var v uint64
	i := 0
	for ; i < len(p) && p[i] >= '0' && p[i] <= '9'; i++ {
		if v <= (1<<63-1)/10 {
			v = v*10 + uint64(p[i]-'0')
		} else {
			v = 1<<63 - 1
		}
		if v > 1<<63-1 {
			v = 1<<63 - 1
		}
	}
	return uint32(v), p[i:]
}

// isFiltered is rd_is_filtered_attr: with the attribute absent, any
// filter on the key hides the object; else the value must be one of the
// filter's numbers or inside one of its ranges (ends by equality).
func (r *rd) isFiltered(key string, val uint32, present bool) bool {
	for _, fe := range r.filters {
		if !strcmpx(fe.key, key) {
			continue
		}
		if !present {
			return true
		}
		p := fe.value
		var left, fv uint32
		rangeCheck := false
		for p != "" {
			if p[0] >= '0' && p[0] <= '9' {
				fv, p = strtoul10(p)
				if fv == val || (rangeCheck && left < val && val < fv) {
					return false
				}
				rangeCheck = false
			} else {
				if p[0] == '-' {
					left = fv
					rangeCheck = true
				}
				p = p[1:]
			}
		}
		return true
	}
	return false
}

// isStringFiltered is rd_is_string_filtered_attr, which looks at the
// value whether or not the kernel sent the attribute (the default's
// name then): hidden unless one of the filter's comma-separated words
// is val, ignoring case.
func (r *rd) isStringFiltered(key, val string) bool {
	for _, fe := range r.filters {
		if !strcmpx(fe.key, key) {
			continue
		}
		for _, w := range strings.Split(fe.value, ",") {
			if w != "" && len(w) == len(val) && strings.EqualFold(w, val) {
				return false
			}
		}
		return true
	}
	return false
}

// comm is the owner's name: the process's (from /proc) or the kernel
// module's.
func (r *rd) comm(h nldev.ResHead) (string, bool) {
	if h.PID != nil {
		return r.taskName(*h.PID)
	}
	if h.KernName != "" {
		return h.KernName, true
	}
	return "", false
}

// printComm is print_comm: a kernel owner in brackets in text, cut to
// 17 characters.
func (r *rd) printComm(s string, ok bool, h nldev.ResHead) {
	if !ok {
		return
	}
	if h.PID == nil && !r.json {
		s = "[" + s + "]"
	}
	if len(s) > 17 {
		s = s[:17]
	}
	r.p.str(printAny, "comm", "comm %s ", s)
}

func (r *rd) pidFiltered(h nldev.ResHead) bool {
	var pid uint32
	if h.PID != nil {
		pid = *h.PID
	}
	return r.isFiltered("pid", pid, h.PID != nil)
}

func val32(v *uint32) uint32 {
	if v == nil {
		return 0
	}
	return *v
}

func val8(v *uint8) uint8 {
	if v == nil {
		return 0
	}
	return *v
}

// printDev is print_dev: "dev NAME " (ifindex in JSON only).
func (r *rd) printDev(idx uint32, name string) {
	r.p.uint(printAny, "ifindex", "", uint64(idx))
	r.p.str(printAny, "ifname", "dev %s ", name)
}

// printLink is print_link: "link NAME/PORT " ("NAME/-" without a port).
func (r *rd) printLink(idx uint32, name string, port *uint32) {
	r.p.uint(printJSON, "ifindex", "", uint64(idx))
	r.p.str(printAny, "ifname", "", name)
	tmp := name + "/-"
	if port != nil {
		r.p.uint(printAny, "port", "", uint64(*port))
		tmp = fmt.Sprintf("%s/%d", name, int32(*port))
	}
	if !r.json {
		r.p.str(printAny, "", "link %s ", tmp)
	}
}

// beginObject opens a resource's object (JSON) or line and prints its
// device, as each of rdma's res_*_line (rdma/res-*.c) begins.
func (r *rd) beginObject(idx uint32, name string) {
	r.p.openObject()
	r.printDev(idx, name)
}

// endObject prints what each of rdma's res_*_line ends with: the comm,
// the driver's attributes and the end of the object.
func (r *rd) endObject(comm string, ok bool, h nldev.ResHead, driver []nldev.DriverAttr) {
	r.printComm(comm, ok, h)
	r.printDriverTable(driver)
	r.newline()
}

// printDriverTable is print_driver_table (rdma -dd): "drv_KEY VALUE"
// pairs, a new indented line every 80 characters or so under -p.
func (r *rd) printDriverTable(attrs []nldev.DriverAttr) {
	if !r.driverDetails || attrs == nil {
		return
	}
	if r.pretty {
		r.newlineIndent()
	}
	cc := 0
	for _, a := range attrs {
		if cc > 80 {
			if r.pretty {
				r.newlineIndent()
			}
			cc = 0
		}
		key := "drv_" + a.Key
		if a.Kind == nldev.DriverString {
			r.p.str(printAny, key, "", a.Str)
			if r.p.jw == nil {
				r.p.text(key)
			}
			r.p.text(fmt.Sprintf(" %s ", a.Str))
			continue
		}
		if r.json {
			// print_color_int: every number as a C int.
			n := int32(a.Uint)
			if a.Kind == nldev.DriverS32 || a.Kind == nldev.DriverS64 {
				n = int32(a.Int)
			}
			if r.p.jw != nil {
				r.p.field(key, fmt.Sprint(n))
			}
			continue
		}
		var s string
		switch {
		case a.Kind == nldev.DriverS32 && a.Hex:
			s = fmt.Sprintf("%s 0x%x ", key, uint32(int32(a.Int)))
		case a.Kind == nldev.DriverS32:
			s = fmt.Sprintf("%s %d ", key, int32(a.Int))
		case a.Kind == nldev.DriverU32 && a.Hex:
			s = fmt.Sprintf("%s 0x%x ", key, uint32(a.Uint))
		case a.Kind == nldev.DriverU32:
			s = fmt.Sprintf("%s %d ", key, uint32(a.Uint))
		case a.Kind == nldev.DriverS64 && a.Hex:
			s = fmt.Sprintf("%s 0x%x ", key, uint64(a.Int))
		case a.Kind == nldev.DriverS64:
			s = fmt.Sprintf("%s %d ", key, a.Int)
		case a.Hex:
			s = fmt.Sprintf("%s 0x%x ", key, a.Uint)
		default:
			s = fmt.Sprintf("%s %d ", key, a.Uint)
		}
		r.outf("%s", s)
		cc += len(s)
	}
}

var qpTypes = []string{"SMI", "GSI", "RC", "UC", "UD", "RAW_IPV6", "RAW_ETHERTYPE", "UNKNOWN", "RAW_PACKET", "XRC_INI", "XRC_TGT"}

func qpTypeName(t uint8) string {
	if int(t) < len(qpTypes) {
		return qpTypes[t]
	}
	if t == 0xff {
		return "DRIVER"
	}
	return "UNKNOWN"
}

var (
	qpStates     = []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}
	pathMigNames = []string{"MIGRATED", "REARM", "ARMED"}
	pollCtxNames = []string{"DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE"}
	cmStates     = []string{"IDLE", "ADDR_QUERY", "ADDR_RESOLVED", "ROUTE_QUERY", "ROUTE_RESOLVED",
		"CONNECT", "DISCONNECT", "ADDR_BOUND", "LISTEN", "DEVICE_REMOVAL", "DESTROYING"}
	srqTypes = []string{"BASIC", "XRC", "TM"}
)

var resQP = &resKind{
	name: "qp", raw: true,
	filters: []resFilter{{name: "link"}, {name: "lqpn", isNumber: true, isDoit: true}, {name: "rqpn", isNumber: true},
		{name: "pid", isNumber: true}, {name: "sq-psn", isNumber: true}, {name: "rq-psn", isNumber: true},
		{name: "type"}, {name: "path-mig-state"}, {name: "state"}, {name: "pdn", isNumber: true}},
	show: func(r *rd, d nldev.Device) int {
		qps, err := r.nl.QPsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, q := range qps {
			if q.LQPN == nil || q.SQPSN == nil || q.Type == nil || q.State == nil {
				continue
			}
			if val32(q.Port) != r.portIdx ||
				r.isFiltered("lqpn", *q.LQPN, true) ||
				r.isFiltered("pdn", val32(q.PDN), q.PDN != nil) ||
				r.isFiltered("rqpn", val32(q.RQPN), q.RQPN != nil) ||
				r.isFiltered("rq-psn", val32(q.RQPSN), q.RQPSN != nil) ||
				r.isFiltered("sq-psn", *q.SQPSN, true) ||
				r.isStringFiltered("path-mig-state", nameIn(pathMigNames, val8(q.PathMigState))) ||
				r.isStringFiltered("type", qpTypeName(*q.Type)) ||
				r.isStringFiltered("state", nameIn(qpStates, *q.State)) {
				continue
			}
			comm, ok := r.comm(q.ResHead)
			if r.pidFiltered(q.ResHead) {
				continue
			}
			r.p.openObject()
			r.printLink(q.DevIndex, q.DevName, q.Port)
			r.resPrintU32("lqpn", q.LQPN)
			if q.RQPN != nil {
				r.p.uint(printAny, "rqpn", "rqpn %d ", uint64(*q.RQPN))
			}
			r.p.str(printAny, "type", "type %s ", qpTypeName(*q.Type))
			r.p.str(printAny, "state", "state %s ", nameIn(qpStates, *q.State))
			if q.RQPSN != nil {
				r.p.uint(printAny, "rq-psn", "rq-psn %d ", uint64(*q.RQPSN))
			}
			r.resPrintU32("sq-psn", q.SQPSN)
			if q.PathMigState != nil {
				r.p.str(printAny, "path-mig-state", "path-mig-state %s ", nameIn(pathMigNames, *q.PathMigState))
			}
			r.resPrintU32("pdn", q.PDN)
			r.resPrintU32("pid", q.PID)
			r.endObject(comm, ok, q.ResHead, q.Driver)
		}
		return 0
	},
}

var resCQ = &resKind{
	name: "cq", raw: true, byDev: true,
	filters: []resFilter{{name: "dev"}, {name: "users", isNumber: true}, {name: "poll-ctx"},
		{name: "pid", isNumber: true}, {name: "cqn", isNumber: true, isDoit: true}, {name: "ctxn", isNumber: true}},
	show: func(r *rd, d nldev.Device) int {
		cqs, err := r.nl.CQsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, c := range cqs {
			if c.CQE == nil || c.Users == nil {
				continue
			}
			if r.isFiltered("users", uint32(*c.Users), true) ||
				r.isStringFiltered("poll-ctx", nameIn(pollCtxNames, val8(c.PollCtx))) {
				continue
			}
			comm, ok := r.comm(c.ResHead)
			if r.pidFiltered(c.ResHead) ||
				r.isFiltered("cqn", val32(c.CQN), c.CQN != nil) ||
				r.isFiltered("ctxn", val32(c.CtxN), c.CtxN != nil) {
				continue
			}
			r.beginObject(c.DevIndex, c.DevName)
			r.resPrintU32("cqn", c.CQN)
			r.resPrintU32("cqe", c.CQE)
			r.resPrintU64("users", *c.Users, true)
			if c.PollCtx != nil {
				r.p.str(printAny, "poll-ctx", "poll-ctx %s ", nameIn(pollCtxNames, *c.PollCtx))
			}
			if c.DIM != nil {
				r.p.onOff(printAny, "adaptive-moderation", "adaptive-moderation %s ", *c.DIM)
			}
			r.resPrintU32("ctxn", c.CtxN)
			r.resPrintU32("pid", c.PID)
			r.endObject(comm, ok, c.ResHead, c.Driver)
		}
		return 0
	},
}

// printKey is print_key: "NAME 0x%x" as text (the value cut to 32 bits,
// as print_color_hex takes it), "%x" as a JSON string.
func (r *rd) printKey(name string, v uint64, present bool) {
	if !present {
		return
	}
	r.p.text(name)
	r.p.hex(printAny, name, " 0x%x ", uint32(v))
}

var resMR = &resKind{
	name: "mr", raw: true, byDev: true,
	filters: []resFilter{{name: "dev"}, {name: "rkey", isNumber: true}, {name: "lkey", isNumber: true},
		{name: "mrlen", isNumber: true}, {name: "pid", isNumber: true}, {name: "mrn", isNumber: true, isDoit: true},
		{name: "pdn", isNumber: true}},
	show: func(r *rd, d nldev.Device) int {
		mrs, err := r.nl.MRsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, m := range mrs {
			if m.Len == nil {
				continue
			}
			if r.isFiltered("mrlen", uint32(*m.Len), true) {
				continue
			}
			comm, ok := r.comm(m.ResHead)
			if r.pidFiltered(m.ResHead) ||
				r.isFiltered("mrn", val32(m.MRN), m.MRN != nil) ||
				r.isFiltered("pdn", val32(m.PDN), m.PDN != nil) {
				continue
			}
			r.beginObject(m.DevIndex, m.DevName)
			r.resPrintU32("mrn", m.MRN)
			r.printKey("rkey", uint64(val32(m.RKey)), m.RKey != nil)
			r.printKey("lkey", uint64(val32(m.LKey)), m.LKey != nil)
			if m.IOVA != nil {
				r.printKey("iova", *m.IOVA, true)
			}
			r.resPrintU64("mrlen", *m.Len, true)
			r.resPrintU32("pdn", m.PDN)
			r.resPrintU32("pid", m.PID)
			r.endObject(comm, ok, m.ResHead, m.Driver)
		}
		return 0
	},
}

var resPD = &resKind{
	name: "pd", byDev: true,
	filters: append([]resFilter{{name: "dev"}}, numeric("users", "pid", "ctxn", "pdn", "ctxn")...),
	show: func(r *rd, d nldev.Device) int {
		pds, err := r.nl.PDsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, pd := range pds {
			if pd.Users == nil {
				continue
			}
			if r.isFiltered("users", uint32(*pd.Users), true) {
				continue
			}
			comm, ok := r.comm(pd.ResHead)
			if r.pidFiltered(pd.ResHead) ||
				r.isFiltered("ctxn", val32(pd.CtxN), pd.CtxN != nil) ||
				r.isFiltered("pdn", val32(pd.PDN), pd.PDN != nil) {
				continue
			}
			r.beginObject(pd.DevIndex, pd.DevName)
			r.resPrintU32("pdn", pd.PDN)
			r.printKey("local_dma_lkey", uint64(val32(pd.LocalDMALKey)), pd.LocalDMALKey != nil)
			r.resPrintU64("users", *pd.Users, true)
			r.printKey("unsafe_global_rkey", uint64(val32(pd.UnsafeGlobalRKey)), pd.UnsafeGlobalRKey != nil)
			r.resPrintU32("ctxn", pd.CtxN)
			r.resPrintU32("pid", pd.PID)
			r.endObject(comm, ok, pd.ResHead, pd.Driver)
		}
		return 0
	},
}

var resCtx = &resKind{
	name: "ctx", byDev: true,
	filters: append([]resFilter{{name: "dev"}}, numeric("pid", "ctxn")...),
	show: func(r *rd, d nldev.Device) int {
		ctxs, err := r.nl.ContextsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, c := range ctxs {
			if c.CtxN == nil {
				continue
			}
			comm, ok := r.comm(c.ResHead)
			if r.pidFiltered(c.ResHead) || r.isFiltered("ctxn", *c.CtxN, true) {
				continue
			}
			r.beginObject(c.DevIndex, c.DevName)
			r.resPrintU32("ctxn", c.CtxN)
			r.resPrintU32("pid", c.PID)
			r.endObject(comm, ok, c.ResHead, c.Driver)
		}
		return 0
	},
}

// cmPSName is res-cmid.c's cm_id_ps_to_str (RDMA_PS_IB is "IPoIB" there
// too).
func cmPSName(ps uint32) string {
	switch ps {
	case 0x0002, 0x013f:
		return "IPoIB"
	case 0x0106:
		return "TCP"
	case 0x0111:
		return "UDP"
	}
	return "---"
}

var resCMID = &resKind{
	name: "cm_id",
	filters: []resFilter{{name: "link"}, {name: "lqpn", isNumber: true}, {name: "qp-type"}, {name: "state"},
		{name: "ps"}, {name: "dev-type"}, {name: "transport-type"}, {name: "pid", isNumber: true},
		{name: "src-addr"}, {name: "src-port", isNumber: true}, {name: "dst-addr"},
		{name: "dst-port", isNumber: true}, {name: "cm-idn", isNumber: true}},
	show: func(r *rd, d nldev.Device) int {
		ids, err := r.nl.CMIDsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, c := range ids {
			if c.State == nil || c.PS == nil {
				continue
			}
			// A CM ID without a port shows under every port.
			if port := val32(c.Port); port != 0 && port != r.portIdx {
				continue
			}
			src, dst := c.SrcAddr, c.DstAddr
			if r.isFiltered("lqpn", val32(c.LQPN), c.LQPN != nil) ||
				r.isStringFiltered("qp-type", qpTypeName(val8(c.QPType))) ||
				r.isStringFiltered("ps", cmPSName(*c.PS)) ||
				r.isStringFiltered("state", nameIn(cmStates, *c.State)) ||
				r.isStringFiltered("src-addr", addrText(src)) ||
				r.isFiltered("src-port", uint32(src.Port()), src.IsValid()) ||
				r.isStringFiltered("dst-addr", addrText(dst)) ||
				r.isFiltered("dst-port", uint32(dst.Port()), dst.IsValid()) {
				continue
			}
			comm, ok := r.comm(c.ResHead)
			if r.pidFiltered(c.ResHead) || r.isFiltered("cm-idn", val32(c.CMIDN), c.CMIDN != nil) {
				continue
			}
			r.p.openObject()
			r.printLink(c.DevIndex, c.DevName, c.Port)
			r.resPrintU32("cm-idn", c.CMIDN)
			r.resPrintU32("lqpn", c.LQPN)
			if c.QPType != nil {
				r.p.str(printAny, "qp-type", "qp-type %s ", qpTypeName(*c.QPType))
			}
			r.p.str(printAny, "state", "state %s ", nameIn(cmStates, *c.State))
			r.p.str(printAny, "ps", "ps %s ", cmPSName(*c.PS))
			r.resPrintU32("pid", c.PID)
			r.printComm(comm, ok, c.ResHead)
			r.printIPAddr("src-addr", src)
			r.printIPAddr("dst-addr", dst)
			r.printDriverTable(c.Driver)
			r.newline()
		}
		return 0
	},
}

// addrText is inet_ntop's text of a's address ("" without one).
func addrText(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.Addr().String()
}

// printIPAddr is print_ipaddr: "KEY ADDR:PORT " as text, "ADDR:PORT"
// in JSON.
func (r *rd) printIPAddr(key string, a netip.AddrPort) {
	if !a.IsValid() {
		return
	}
	addr := addrText(a)
	r.p.str(printAny, key, "", fmt.Sprintf("%s:%d", addr, a.Port()))
	if r.p.jw == nil {
		r.p.text(key)
	}
	r.p.text(fmt.Sprintf(" %s:%d ", addr, a.Port()))
}

var resSRQ = &resKind{
	name: "srq", byDev: true,
	filters: []resFilter{{name: "dev"}, {name: "pid", isNumber: true}, {name: "srqn", isNumber: true},
		{name: "type"}, {name: "pdn", isNumber: true}, {name: "cqn", isNumber: true}, {name: "lqpn", isNumber: true}},
	show: func(r *rd, d nldev.Device) int {
		srqs, err := r.nl.SRQsOf([]nldev.Device{d})
		if err != nil {
			return r.netErr(err)
		}
		for _, s := range srqs {
			if s.SRQN == nil {
				continue
			}
			comm, ok := r.comm(s.ResHead)
			if r.pidFiltered(s.ResHead) ||
				r.isFiltered("srqn", *s.SRQN, true) ||
				r.isStringFiltered("type", nameIn(srqTypes, val8(s.Type))) ||
				r.isFiltered("pdn", val32(s.PDN), s.PDN != nil) ||
				r.isFiltered("cqn", val32(s.CQN), s.CQN != nil) {
				continue
			}
			qps, show := r.srqQPs(s.QPs)
			if !show {
				continue
			}
			r.beginObject(s.DevIndex, s.DevName)
			r.resPrintU32("srqn", s.SRQN)
			r.p.str(printAny, "type", "type %s ", nameIn(srqTypes, val8(s.Type)))
			if len(qps) > 0 {
				r.p.openArray(printAny, "lqpn")
				r.p.text(" ")
				for i, q := range qps {
					r.p.str(printAny, "", "%s", q)
					if i < len(qps)-1 {
						r.p.text(",")
					}
				}
				r.p.text(" ")
				r.p.closeArray(printJSON, "")
			}
			r.resPrintU32("pdn", s.PDN)
			r.resPrintU32("cqn", s.CQN)
			r.resPrintU32("pid", s.PID)
			r.endObject(comm, ok, s.ResHead, s.Driver)
		}
		return 0
	},
}

// srqQPs is res-srq.c's get_srq_qps: the SRQ's QPs left by an lqpn
// filter, as "N" and "N-M" words (the C string's 255 characters at
// most, each word cut to 15); false when the SRQ is not shown (an lqpn
// filter and no QP, or no QP left).
func (r *rd) srqQPs(ranges []nldev.QPRange) ([]string, bool) {
	if len(ranges) == 0 {
		for _, fe := range r.filters {
			if strcmpx(fe.key, "lqpn") {
				return nil, false
			}
		}
		return nil, true
	}
	var b strings.Builder
	delim := ""
	add := func(s string) {
		if len(s) > 15 {
			s = s[:15]
		}
		if room := 255 - b.Len(); len(s) > room {
			s = s[:room]
		}
		b.WriteString(s)
		delim = ","
	}
	for _, q := range ranges {
		if q.Min == q.Max {
			if r.isFiltered("lqpn", q.Min, true) {
				continue
			}
			add(fmt.Sprintf("%s%d", delim, int32(q.Min)))
			continue
		}
		var lo, hi uint32
		for qpn := q.Min; ; qpn++ {
			if r.isFiltered("lqpn", qpn, true) {
				if lo != 0 {
					if hi == 0 {
						add(fmt.Sprintf("%s%d", delim, int32(lo)))
					} else {
						add(fmt.Sprintf("%s%d-%d", delim, int32(lo), int32(hi)))
					}
					lo, hi = 0, 0
				}
			} else if lo == 0 {
				lo = qpn
			} else {
				hi = qpn
			}
			if qpn == q.Max {
				break
			}
		}
		if lo != 0 {
			if hi == 0 {
				add(fmt.Sprintf("%s%d", delim, int32(lo)))
			} else {
				add(fmt.Sprintf("%s%d-%d", delim, int32(lo), int32(hi)))
			}
		}
	}
	if b.Len() == 0 {
		return nil, false
	}
	var out []string
	for _, w := range strings.Split(b.String(), ",") {
		if w != "" {
			out = append(out, w)
		}
	}
	return out, true
}

// Package rdmagrammar translates iproute2 rdma's grammar to rdmactl's
// command line before cobra sees it, so that scripts written for rdma keep
// working:
// abbreviations ("rdma r s q"), the show/list keywords, bare objects
// ("rdma dev", "rdma res") and res's positional filters. Only lines that
// rdmactl would otherwise refuse are rewritten: a word that is already an
// rdmactl command or subcommand keeps rdmactl's meaning.
//
// Abbreviations resolve as rdma resolves them (iproute2 rdma/utils.c,
// rd_exec_cmd): the first word of the object's table, in the table's
// order, that the typed word is a prefix of. So "s" is "system" at the
// top (it comes before "statistic") and "m" is "mr" under statistic.
package rdmagrammar

import (
	"errors"
	"sort"
	"strings"

	"github.com/rdmactl/rdmactl/internal/resobj"
)

// rdmaTop is rdma.c's table, in its order.
var rdmaTop = []string{"help", "dev", "link", "resource", "system", "statistic", "monitor"}

// The per-object tables of dev.c, link.c, res.c, sys.c and stat.c.
var (
	rdmaDevCmds      = []string{"add", "delete", "show", "list", "set", "help"}
	rdmaDevSetParams = []string{"name", "netns", "adaptive-moderation"}
	rdmaLinkCmds     = []string{"add", "delete", "show", "list", "help"}
	rdmaResCmds      = []string{"show", "set", "list", "help"}
	rdmaResObjs      = []string{"qp", "cm_id", "cq", "mr", "pd", "ctx", "srq", "frmr_pools"}
	rdmaSysCmds      = []string{"show", "set", "help"}
	rdmaSysParams    = []string{"netns", "privileged-qkey", "monitor"}
	rdmaSysSetParams = []string{"help", "netns", "privileged-qkey"}
	rdmaStatCmds     = []string{"show", "list", "help", "qp", "mr", "mode", "set", "unset"}
	rdmaStatShow     = []string{"link", "mr", "help"}
	rdmaStatQPCmds   = []string{"show", "list", "mode", "set", "bind", "unbind", "help"}
	rdmaStatMode     = []string{"link", "show", "supported", "help"}
)

// rdmaMatch is rdma's strcmpx over a table: the first entry word is a
// prefix of ("" matches the first, as in rdma).
func rdmaMatch(word string, table []string) (string, bool) {
	for _, t := range table {
		if strings.HasPrefix(t, word) {
			return t, true
		}
	}
	return "", false
}

// OwnWords are the words rdmactl itself takes first, sorted.
func OwnWords() []string {
	w := make([]string, 0, len(rdmactlTop))
	for k := range rdmactlTop {
		w = append(w, k)
	}
	sort.Strings(w)
	return w
}

// rdmactlTop are the words rdmactl itself takes first: they keep their
// meaning, even where rdma would read the word differently. cmd/rdmactl's
// tests check it against the command tree (OwnWords), so a new command
// cannot be forgotten here.
var rdmactlTop = map[string]bool{
	"dev": true, "link": true, "gids": true, "counters": true, "res": true, "resource": true,
	"perf": true, "capture": true, "monitor": true, "version": true, "completion": true,
	"system": true, "sys": true, "statistic": true, "stat": true, "help": true,
	"top": true, "doctor": true, "exporter": true, "links": true,
}

// canonical is the word the translation writes for each rdmactl alias.
var canonical = map[string]string{"resource": "res", "sys": "system", "stat": "statistic"}

// Translate rewrites args written in rdma's grammar as rdmactl's command
// line; anything else is returned unchanged. Leading options (-j, -p, -d,
// --sysfs-root DIR) stay where they are. rdma reads "res show c" as device
// c's counts when there is such a device, else as "res show cm_id":
// isDevice says whether an RDMA device of that name exists.
func Translate(args []string, isDevice func(string) bool) []string {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" && args[i] != "--" {
		if args[i] == "--sysfs-root" {
			i++
		}
		i++
	}
	if i > len(args) {
		i = len(args)
	}
	if i >= len(args) || args[i] == "--" {
		return args
	}
	rest := args[i:]
	// rdma takes options only before the object: a line with a flag later
	// is rdmactl's, whatever its words.
	for _, w := range rest[1:] {
		if strings.HasPrefix(w, "-") && !isRange(w) {
			return args
		}
	}
	out := append([]string{}, args[:i]...)
	obj := rest[0]
	own := rdmactlTop[obj]
	if own && len(rest) == 1 && obj != "dev" && obj != "statistic" && obj != "stat" {
		// rdmactl's bare link, res, system... already are rdma's.
		return args
	}
	if !own {
		full, ok := rdmaMatch(obj, rdmaTop)
		if !ok || obj == "" {
			return args
		}
		obj = full
	}
	tail := rest[1:]
	var t []string
	switch obj {
	case "dev":
		t = grDev(tail)
	case "link":
		t = grLink(tail)
	case "resource", "res":
		t = grRes(tail, isDevice)
	case "system", "sys":
		t = grSys(tail)
	case "statistic", "stat":
		t = grStat(tail)
	default: // help, monitor and rdmactl's own commands
		t = append([]string{obj}, tail...)
	}
	if own && canonical[obj] == t[0] {
		t[0] = obj // "sys", "stat", "resource" stay as typed
	}
	return append(out, t...)
}

// rdmaUnsupported are rdma's options rdmactl does not have; each is
// refused with its own line rather than cobra's "unknown shorthand".
var rdmaUnsupported = map[string]string{
	"o":       "-o (rdma's one-line output) is not supported: rdmactl -j prints one JSON document",
	"oneline": "--oneline (rdma's one-line output) is not supported: rdmactl -j prints one JSON document",
	"b":       "-b (rdma's batch file) is not supported: run rdmactl once per line",
	"batch":   "--batch (rdma's batch file) is not supported: run rdmactl once per line",
	"f":       "-f (rdma's --force, for batch files) is not supported",
	"force":   "--force (rdma's, for batch files) is not supported",
	"V":       "-V is 'rdmactl version'",
}

// OptionError is the refusal of an rdma option rdmactl lacks among the
// leading options of args (as rdma takes them), or nil: a usage error.
func OptionError(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--sysfs-root" {
			i++
			continue
		}
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return nil
		}
		if strings.HasPrefix(a, "--") {
			if msg, ok := rdmaUnsupported[strings.TrimPrefix(a, "--")]; ok {
				return errors.New(msg)
			}
			continue
		}
		for _, c := range a[1:] {
			if msg, ok := rdmaUnsupported[string(c)]; ok {
				return errors.New(msg)
			}
		}
	}
	return nil
}

// isRange is a filter value such as "5-9": not an option.
func isRange(w string) bool {
	return strings.Trim(w, "0123456789,-") == "" && strings.ContainsAny(w, "0123456789")
}

// grSub resolves the first word of tail in table unless rdmactl knows it
// as it is (own); "" when nothing matches.
func grSub(tail []string, table []string, own ...string) string {
	if len(tail) == 0 {
		return ""
	}
	for _, o := range own {
		if tail[0] == o {
			return o
		}
	}
	if tail[0] == "" {
		return ""
	}
	full, _ := rdmaMatch(tail[0], table)
	return full
}

func grDev(tail []string) []string {
	if len(tail) == 0 {
		return []string{"dev", "show"}
	}
	switch grSub(tail, rdmaDevCmds, "show", "query", "hca-caps", "set") {
	case "show", "list":
		return append([]string{"dev", "show"}, tail[1:]...)
	case "set":
		return append([]string{"dev", "set"}, grDevSet(tail[1:])...)
	case "query", "hca-caps":
		return append([]string{"dev"}, tail...)
	}
	return append([]string{"dev"}, tail...)
}

// grDevSet spells out "DEV PARAM VALUE" of rdma dev set: PARAM by
// dev.c's table (name, netns, adaptive-moderation: "n" is name, "ne"
// netns), adaptive-moderation's value by its own (on, off: "o" is on).
// Words rdma would not match are left for rdmactl to refuse.
func grDevSet(args []string) []string {
	out := append([]string{}, args...)
	if len(out) < 2 || out[1] == "" {
		return out
	}
	p, ok := rdmaMatch(out[1], rdmaDevSetParams)
	if !ok {
		return out
	}
	out[1] = p
	if p == "adaptive-moderation" && len(out) > 2 && out[2] != "" {
		if v, ok := rdmaMatch(out[2], []string{"on", "off"}); ok {
			out[2] = v
		}
	}
	return out
}

func grLink(tail []string) []string {
	if len(tail) == 0 {
		return []string{"link", "show"}
	}
	switch w := grSub(tail, rdmaLinkCmds, "show", "add", "delete", "del"); w {
	case "show", "list":
		return append([]string{"link", "show"}, tail[1:]...)
	case "add", "delete", "del":
		return append([]string{"link", w}, tail[1:]...)
	}
	return append([]string{"link"}, tail...)
}

// grRes: "res [show|list] [OBJECT [FILTER VALUE]...|DEV]". rdmactl's
// own "res [OBJECT] [DEV]" has no show keyword, so a line without one
// is left alone.
func grRes(tail []string, isDevice func(string) bool) []string {
	if len(tail) == 0 {
		return []string{"res"}
	}
	if resobj.Lookup(tail[0]) != nil { // rdmactl's "res OBJECT"
		return append([]string{"res"}, tail...)
	}
	w := grSub(tail, rdmaResCmds)
	if w != "show" && w != "list" {
		return append([]string{"res"}, tail...)
	}
	args := tail[1:]
	if len(args) == 0 {
		return []string{"res"}
	}
	obj, ok := rdmaMatch(args[0], rdmaResObjs)
	if len(args) == 1 && (!ok || args[0] == "" || isDevice(args[0])) {
		// rdma res show DEV: one device's counts.
		return []string{"res", args[0]}
	}
	if !ok || args[0] == "" || obj == "frmr_pools" {
		return append([]string{"res"}, args...)
	}
	out := []string{"res", obj}
	filters := args[1:]
	for k := 0; k < len(filters); k += 2 {
		key, ok := rdmaMatch(filters[k], resFilters(obj))
		if !ok || filters[k] == "" {
			key = filters[k]
		}
		if k+1 == len(filters) {
			// A key without its value: cobra says the flag needs one.
			return append(out, "--"+key)
		}
		if key == "dev" {
			out = append(out, filters[k+1])
			continue
		}
		out = append(out, "--"+key+"="+filters[k+1])
	}
	return out
}

func grSys(tail []string) []string {
	if len(tail) == 0 {
		return []string{"system", "show"}
	}
	switch grSub(tail, rdmaSysCmds, "show", "set") {
	case "show":
		// "system show netns" prints what "system show" prints.
		if len(tail) == 2 {
			if _, ok := rdmaMatch(tail[1], rdmaSysParams); ok && tail[1] != "" {
				return []string{"system", "show"}
			}
		}
		return append([]string{"system", "show"}, tail[1:]...)
	case "set":
		out := []string{"system", "set"}
		if len(tail) > 1 {
			if p, ok := rdmaMatch(tail[1], rdmaSysSetParams); ok && tail[1] != "" && p != "help" {
				return append(append(out, p), tail[2:]...)
			}
		}
		return append(out, tail[1:]...)
	}
	return append([]string{"system"}, tail...)
}

// grStat: "statistic [show|list] [link DEV[/PORT]]" is a port's
// counters, which rdmactl prints from the same netlink source with
// "counters --source netlink"; the rest is rdmactl's statistic command
// with rdma's words spelled out.
func grStat(tail []string) []string {
	show := func(args []string) []string {
		out := []string{"counters", "--source", "netlink"}
		if len(args) == 0 {
			return out
		}
		switch k, _ := rdmaMatch(args[0], rdmaStatShow); {
		case args[0] != "" && k == "link" && len(args) == 2:
			return append(out, args[1])
		case args[0] != "" && k == "mr":
			return append([]string{"statistic", "mr"}, args[1:]...)
		}
		return append(out, args...)
	}
	if len(tail) == 0 {
		return show(nil)
	}
	switch w := grSub(tail, rdmaStatCmds); w {
	case "show", "list":
		return show(tail[1:])
	case "qp":
		out := []string{"statistic", "qp"}
		if len(tail) == 1 {
			return append(out, "show")
		}
		q := grSub(tail[1:], rdmaStatQPCmds)
		switch q {
		case "show", "list":
			return append(append(out, "show"), tail[2:]...)
		case "mode", "set", "bind", "unbind":
			return append(append(out, q), tail[2:]...)
		}
		return append(out, tail[1:]...)
	case "mode":
		out := []string{"statistic", "mode"}
		if len(tail) > 1 {
			switch m := grSub(tail[1:], rdmaStatMode); m {
			case "show":
				return append(out, tail[2:]...)
			case "supported", "link":
				return append(append(out, m), tail[2:]...)
			}
		}
		return append(out, tail[1:]...)
	case "mr", "set", "unset":
		return append([]string{"statistic", w}, tail[1:]...)
	}
	return append([]string{"statistic"}, tail...)
}

// resFilters are rdma's filters of res object obj (res.h's valid filters,
// in their order): resobj's table; "dev" and "link" become rdmactl's DEV
// argument and --link.
func resFilters(obj string) []string {
	if o := resobj.Lookup(obj); o != nil {
		return o.FilterNames()
	}
	return nil
}

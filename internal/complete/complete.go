// Package complete is rdmactl's dynamic shell completion: device names,
// DEV/PORT and GID indexes from the running system (or from
// --sysfs-root), attached to every command from its usage line and flag
// names (Attach). Completion reads sysfs only, never netlink: it must be
// fast, must work for unprivileged users and in a captured tree, and must
// never print errors into the user's command line.
package complete

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Source is what completion reads: the sysfs tree --sysfs-root
// names on the command line being completed, else the live /sys, as a
// captured tree (no netlink). For a command that parses its own flags
// (DisableFlagParsing) cobra parsed nothing and hands every word over as
// an argument, the root's --sysfs-root included, so it is looked for in
// args.
func Source(cmd *cobra.Command, args []string) *inventory.Source {
	root := ""
	if f := cmd.Flags().Lookup("sysfs-root"); f != nil {
		root = f.Value.String()
	}
	if root == "" && cmd.DisableFlagParsing {
		for i, w := range args {
			if v, ok := strings.CutPrefix(w, "--sysfs-root="); ok {
				root = v
			} else if w == "--sysfs-root" && i+1 < len(args) {
				root = args[i+1]
			}
		}
	}
	return inventory.Captured(root)
}

// Devices completes RDMA device names ("rxe0", "mlx5_0").
func Devices(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	devs, err := Source(cmd, args).DeviceNames()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, d := range devs {
		if strings.HasPrefix(d, toComplete) {
			out = append(out, d)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// DevPorts completes DEV and DEV/PORT ("rxe0", "rxe0/1"). Once the
// word holds a '/', only that device's ports are offered.
func DevPorts(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	src := Source(cmd, args)
	devs, err := src.DeviceNames()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if dev, _, ok := strings.Cut(toComplete, "/"); ok {
		devs = slices.DeleteFunc(devs, func(d string) bool { return d != dev })
	}
	var out []cobra.Completion
	for _, d := range devs {
		cands := []string{d}
		if ports, err := src.Targets(d, 0); err == nil {
			for _, p := range ports {
				cands = append(cands, fmt.Sprintf("%s/%d", d, p.Port))
			}
		}
		for _, c := range cands {
			if strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// GIDIndexes completes the populated GID indexes of one port, with
// the GID, its type and netdev as the description. The port comes from a
// DEV[/PORT] word already on the command line or from the --dev/--device/
// --ib-dev and --port/--ib-port flags; without a device nothing is offered
// (a port-less index means nothing).
func GIDIndexes(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	src := Source(cmd, args)
	dev, port := portFromCommandLine(cmd, args)
	if dev == "" {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return gidCompletions(src, dev, port, toComplete)
}

// gidCompletions lists the populated GID indexes of dev/port starting with
// toComplete, each described by its GID, kind and netdev.
func gidCompletions(src *inventory.Source, dev string, port uint32, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	tables, err := src.GIDs([]inventory.PortRef{{Dev: dev, Port: port}}, true)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, g := range tables[0] {
		idx := strconv.FormatUint(uint64(g.Index), 10)
		if g.Empty() || !strings.HasPrefix(idx, toComplete) {
			continue
		}
		desc := g.String()
		if k := g.Kind.String(); k != "" {
			desc += " " + k
		}
		if g.Netdev != "" {
			desc += " " + g.Netdev
		}
		out = append(out, cobra.CompletionWithDesc(idx, desc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// portFromCommandLine finds the device and port the user already named:
// flags first, then the first DEV[/PORT] positional argument. The port
// defaults to 1, the only port of RoCE devices.
func portFromCommandLine(cmd *cobra.Command, args []string) (dev string, port uint32) {
	port = 1
	for _, name := range []string{"dev", "device", "ib-dev"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Value.Type() == "string" && f.Value.String() != "" {
			dev = f.Value.String()
			break
		}
	}
	// --ib-port when the command has it: there --port may be a TCP port
	// (perf's exchange port, as in perftest).
	portFlag := cmd.Flags().Lookup("ib-port")
	if portFlag == nil {
		portFlag = cmd.Flags().Lookup("port")
	}
	if portFlag != nil && portFlag.Changed {
		if p, err := strconv.ParseUint(portFlag.Value.String(), 10, 32); err == nil && p > 0 {
			port = uint32(p)
		}
	}
	if dev != "" {
		if d, p, ok := strings.Cut(dev, "/"); ok {
			dev = d
			if n, err := strconv.ParseUint(p, 10, 32); err == nil && n > 0 {
				port = uint32(n)
			}
		}
		return dev, port
	}
	for _, a := range args {
		d, p, hasPort := strings.Cut(a, "/")
		if _, err := Source(cmd, args).Targets(d, 0); err != nil {
			continue
		}
		if hasPort {
			if n, err := strconv.ParseUint(p, 10, 32); err == nil && n > 0 {
				port = uint32(n)
			}
		}
		return d, port
	}
	return "", port
}

// Attach gives every command under root dynamic completion,
// chosen from its usage line and flag names, unless the command set its own:
//
//   - positional arguments, slot by slot as Use lists them: "DEV/PORT" or
//     "DEV[/PORT]" gets DevPorts, "DEV" or "DEVICE"
//     Devices, "GID" or "GID_INDEX" GIDIndexes;
//   - flags --dev, --device, --ib-dev: Devices;
//     --gid-index, --gid-idx, --gid: GIDIndexes.
//
// So a new command gets completion by writing its usage the way its help
// shows it (Use: "show [DEV[/PORT]]"), with nothing to register. run
// attaches them only when the shell asks for completions (Requested).
func Attach(root *cobra.Command) {
	walk(root, func(c *cobra.Command) {
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			if c.DisableFlagParsing {
				// Parses its own flags (perf, with perftest's letters):
				// cobra sees them as arguments.
				c.ValidArgsFunction = completeRawFlags
			} else if f := ForUsage(c.Use); f != nil {
				c.ValidArgsFunction = f
			}
		}
		// LocalFlags merges the parents' persistent flags each call, for
		// about 100 commands: only a command that declares one of the
		// names asks it, once.
		var local *pflag.FlagSet
		for name, f := range flagCompletions {
			if c.Flags().Lookup(name) == nil && c.PersistentFlags().Lookup(name) == nil {
				continue
			}
			if local == nil {
				local = c.LocalFlags()
			}
			if local.Lookup(name) == nil {
				continue
			}
			if _, has := c.GetFlagCompletionFunc(name); has {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(name, f)
		}
	})
}

// Requested: args run cobra's hidden completion command (the shell's
// script calls "rdmactl [flags] __complete ..."), the one run that needs
// the completion functions; attaching them walks the whole command tree,
// a third of the time it takes to build.
func Requested(args []string) bool {
	return slices.ContainsFunc(args, func(s string) bool {
		return s == cobra.ShellCompRequestCmd || s == cobra.ShellCompNoDescRequestCmd
	})
}

// flagCompletions: the flag names Attach completes, by name.
var flagCompletions = map[string]cobra.CompletionFunc{
	"dev": Devices, "device": Devices, "ib-dev": Devices,
	"gid-index": GIDIndexes, "gid-idx": GIDIndexes, "gid": GIDIndexes,
}

// completeRawFlags completes the values of perftest-style flags for
// commands that parse their own arguments (DisableFlagParsing), where cobra
// hands the flags over as plain arguments: -d/--ib-dev completes devices,
// -x/--gid-index the GID indexes of the -d device's -i/--ib-port port.
// Both "-d rxe0" and "--ib-dev=rxe0" are understood.
func completeRawFlags(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	name, val, inline := "", toComplete, false
	if strings.HasPrefix(toComplete, "--") {
		if n, v, ok := strings.Cut(toComplete, "="); ok {
			name, val, inline = n, v, true
		}
	}
	if !inline {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		name = args[len(args)-1]
	}
	var f cobra.CompletionFunc
	switch name {
	case "-d", "--ib-dev", "--dev", "--device":
		f = Devices
	case "-x", "--gid-index":
		f = func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			dev, port := rawDevPort(args)
			if dev == "" {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return gidCompletions(Source(cmd, args), dev, port, toComplete)
		}
	default:
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	comps, dir := f(cmd, args, val)
	if inline {
		for i := range comps {
			comps[i] = name + "=" + comps[i]
		}
	}
	return comps, dir
}

// rawDevPort finds -d/--ib-dev and -i/--ib-port values in raw arguments.
func rawDevPort(args []string) (dev string, port uint32) {
	port = 1
	for i, a := range args {
		name, val, hasVal := strings.Cut(a, "=")
		if !hasVal {
			if i+1 >= len(args) {
				continue
			}
			val = args[i+1]
		}
		switch name {
		case "-d", "--ib-dev", "--dev", "--device":
			dev = val
		case "-i", "--ib-port":
			if n, err := strconv.ParseUint(val, 10, 32); err == nil && n > 0 {
				port = uint32(n)
			}
		}
	}
	return dev, port
}

// ForUsage picks the completion for a command's positional arguments
// from its usage line: the words after the command name are the argument
// slots in order ("tgid DEV/PORT GID": the first argument is a port, the
// second a GID index); a slot ending in "..." repeats; a slot listing
// lower-case alternatives ("[qp|cq|mr]") offers them; an optional slot
// ("[...]") also offers what the next slot takes, since it may be left
// out. Nil when no slot names anything completion knows.
func ForUsage(use string) cobra.CompletionFunc {
	slots := strings.Fields(use)[1:]
	kinds := make([]cobra.CompletionFunc, len(slots))
	known := false
	for i, s := range slots {
		kinds[i] = slotCompletion(s)
		known = known || kinds[i] != nil && !isChoices(s)
	}
	if !known {
		return nil
	}
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		i := len(args)
		if i >= len(slots) {
			if len(slots) == 0 || !strings.HasSuffix(slots[len(slots)-1], "...") {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			i = len(slots) - 1
		}
		var out []cobra.Completion
		dir := cobra.ShellCompDirectiveNoFileComp
		for ; i < len(slots); i++ {
			if kinds[i] != nil {
				c, d := kinds[i](cmd, args, toComplete)
				out = append(out, c...)
				dir |= d
			}
			if !strings.HasPrefix(slots[i], "[") {
				break
			}
		}
		return out, dir
	}
}

// slotCompletion is the completion for one usage slot, or nil.
func slotCompletion(s string) cobra.CompletionFunc {
	switch {
	case strings.Contains(s, "DEV/PORT") || strings.Contains(s, "DEV[/PORT]"):
		return DevPorts
	case containsWord(s, "DEV") || containsWord(s, "DEVICE"):
		return Devices
	case containsWord(s, "GID") || containsWord(s, "GID_INDEX") || containsWord(s, "GID-INDEX"):
		return GIDIndexes
	case isChoices(s):
		choices := strings.Split(strings.Trim(s, "[]."), "|")
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, c := range choices {
				if strings.HasPrefix(c, toComplete) {
					out = append(out, c)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	return nil
}

// isChoices reports whether a usage slot lists literal alternatives:
// "[qp|cq|mr]", "show|set" (lower case: upper case words are placeholders).
func isChoices(s string) bool {
	s = strings.Trim(s, "[].")
	if !strings.Contains(s, "|") {
		return false
	}
	for _, r := range s {
		if !(r == '|' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// containsWord reports whether w appears in s delimited by anything that is
// not a letter, digit or underscore ("[DEV]", "DEV...", but not "DEVICE").
func containsWord(s, w string) bool {
	isWord := func(r byte) bool {
		return r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !isWord(s[j-1])) && (end == len(s) || !isWord(s[end])) {
			return true
		}
		i = j + 1
	}
}

func walk(c *cobra.Command, f func(*cobra.Command)) {
	f(c)
	for _, sub := range c.Commands() {
		walk(sub, f)
	}
}

package perf

import (
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rdmactl/rdmactl/internal/cmd/cmdutil"
)

// perftest parses its command line with glibc's getopt_long, which takes
// any unambiguous prefix of a long option for the option: NVIDIA's own
// multi-node certification scripts write "--report_gbit" for
// --report_gbits. pflag has no such rule, so expandLongPrefixes spells
// such prefixes out before fs parses args, as getopt_long would match
// them (glibc posix/getopt.c process_long_option): an exact name wins; a
// prefix of exactly one name is that option; a prefix of several is
// refused with getopt's "is ambiguous" diagnostic. Operands, option
// arguments and whatever follows "--" are left as they are.
func expandLongPrefixes(fs *pflag.FlagSet, args []string) ([]string, error) {
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...), nil
		case strings.HasPrefix(a, "--") && len(a) > 2:
			key, val, hasVal := strings.Cut(a[2:], "=")
			f := fs.Lookup(key)
			if f == nil {
				var match []string
				for _, n := range names {
					if strings.HasPrefix(n, key) {
						match = append(match, n)
					}
				}
				switch len(match) {
				case 0: // pflag reports it as unknown
				case 1:
					f = fs.Lookup(match[0])
					a = "--" + match[0]
					if hasVal {
						a += "=" + val
					}
				default:
					return nil, cmdutil.UsageErrorf("option '--%s' is ambiguous; possibilities: --%s", key, strings.Join(match, " --"))
				}
			}
			out = append(out, a)
			if f != nil && !hasVal && takesArg(f) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case len(a) > 1 && a[0] == '-':
			out = append(out, a)
			// A cluster of letters: the first that takes an argument
			// takes the rest of the word, or the next word.
			for j := 1; j < len(a); j++ {
				f := fs.ShorthandLookup(a[j : j+1])
				if f == nil || !takesArg(f) {
					continue
				}
				if j == len(a)-1 && i+1 < len(args) {
					i++
					out = append(out, args[i])
				}
				break
			}
		default:
			out = append(out, a)
		}
	}
	return out, nil
}

// takesArg says whether f needs an argument (pflag: no default for the
// option given bare).
func takesArg(f *pflag.Flag) bool { return f.NoOptDefVal == "" }

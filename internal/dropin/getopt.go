package dropin

import (
	"fmt"
	"strings"
)

// The reference tools parse their command lines with glibc's getopt_long,
// and scripts rely on its forms: clustered short options ("-lv"), an
// argument attached or separate ("-drxe0", "-d rxe0"), long options with
// "=" or a separate argument, unambiguous prefixes of long options
// ("--ib-d"), "--" ending the options, and operands anywhere (getopt
// permutes them to the end). Its diagnostics, on stderr, are part of
// what a script sees: glibc posix/getopt.c's wording.

// Option is one option a tool takes: its short letter (0 for none), long
// name ("" for none) and whether it takes an argument.
type Option struct {
	Short  byte
	Long   string
	HasArg bool
}

// Opt is one option found: its short letter, or for a long-only option
// its long name, and its argument.
type Opt struct {
	Name string
	Arg  string
}

// getoptError is getoptLong's diagnostic; missing is the option letter
// (getopt's optopt) when the option lacks its argument, for tools that
// print their own message instead of glibc's (optstring ":...").
type getoptError struct {
	msg     string
	missing byte
}

func (e *getoptError) Error() string { return e.msg }

// getoptLong parses args (without argv[0]) as getopt_long does with
// options opts, and returns the options in order and the operands. A bad
// option stops it with err set to glibc's diagnostic without the program
// name ("invalid option -- 'x'").
func getoptLong(args []string, opts []Option) (found []Opt, operands []string, err error) {
	name := func(o Option) string {
		if o.Short != 0 {
			return string(o.Short)
		}
		return o.Long
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return found, append(operands, args[i+1:]...), nil
		case strings.HasPrefix(a, "--"):
			key, val, hasVal := strings.Cut(a[2:], "=")
			var match []Option
			for _, o := range opts {
				if o.Long == key {
					match = []Option{o}
					break
				}
				if o.Long != "" && strings.HasPrefix(o.Long, key) {
					match = append(match, o)
				}
			}
			switch {
			case len(match) == 0:
				return found, operands, fmt.Errorf("unrecognized option '--%s'", key)
			case len(match) > 1:
				var poss strings.Builder
				for _, m := range match {
					fmt.Fprintf(&poss, " '--%s'", m.Long)
				}
				return found, operands, fmt.Errorf("option '--%s' is ambiguous; possibilities:%s", key, poss.String())
			}
			o := match[0]
			switch {
			case !o.HasArg && hasVal:
				return found, operands, fmt.Errorf("option '--%s' doesn't allow an argument", o.Long)
			case o.HasArg && !hasVal:
				if i+1 >= len(args) {
					return found, operands, &getoptError{fmt.Sprintf("option '--%s' requires an argument", o.Long), o.Short}
				}
				i++
				val = args[i]
			}
			found = append(found, Opt{Name: name(o), Arg: val})
		case len(a) > 1 && a[0] == '-':
			for j := 1; j < len(a); j++ {
				var o *Option
				for k := range opts {
					if opts[k].Short == a[j] {
						o = &opts[k]
					}
				}
				if o == nil {
					return found, operands, fmt.Errorf("invalid option -- '%c'", a[j])
				}
				if !o.HasArg {
					found = append(found, Opt{Name: name(*o)})
					continue
				}
				val := a[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return found, operands, &getoptError{fmt.Sprintf("option requires an argument -- '%c'", a[j]), a[j]}
					}
					i++
					val = args[i]
				}
				found = append(found, Opt{Name: name(*o), Arg: val})
				break
			}
		default:
			operands = append(operands, a)
		}
	}
	return found, operands, nil
}

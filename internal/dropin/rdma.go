package dropin

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// rdma is iproute2's rdma tool as Debian 12 ships it (iproute2 6.1,
// rdma/rdma.c and the files it calls): the same command line (getopt's
// options, then OBJECT COMMAND words that may be abbreviated), the same
// text and JSON (rdma -j's keys and types, not rdmactl's) and the same
// exit statuses. It reads RDMA netlink as rdma does. rdma's writes (dev
// set, link add and delete, system set, statistic set/unset/bind/unbind)
// are refused: under this name rdmactl only reads (exit 2, one line on
// stderr naming rdmactl's own command).

// rdmaVersion is what rdma -V prints after "iproute2-" (iproute2's
// version.h for 6.1.0).
const rdmaVersion = "6.1.0"

// exitReadOnly is a command's result when it is one of rdma's writes.
const exitReadOnly = -1000

// NLSource is what rdma reads over RDMA netlink: *nldev.Client, or a
// test's fake.
type NLSource interface {
	Devices() ([]nldev.Device, error)
	PortsOf(dev uint32) ([]nldev.Port, error)
	System() (*nldev.System, error)
	nldev.ResourceReader
	PortStatistics(devIndex, port uint32) ([]nldev.Counter, error)
	QPCounterMode(dev, port uint32) (*nldev.QPMode, error)
	QPCounters(dev, port uint32) ([]nldev.QPCounter, error)
	CounterStatus(dev, port uint32) ([]nldev.CounterStatus, error)
	MRStatistics(dev uint32) ([]nldev.MRStat, error)
	RawOf(obj string, devs []nldev.Device, port uint32) ([]nldev.RawEntry, error)
	Close() error
}

// DialNetlink opens the live RDMA netlink socket.
func DialNetlink() (NLSource, error) {
	c, err := nldev.Dial()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// taskName is lib/fs.c's get_task_name: /proc/PID/comm up to its
// newline; false for pid 0 or a process gone.
func taskName(pid uint32) (string, bool) {
	if pid == 0 {
		return "", false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || len(b) == 0 {
		return "", false
	}
	s := string(b)
	if len(s) > 63 { // fgets into a 64-byte buffer
		s = s[:63]
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s, true
}

// devMap is rdma's struct dev_map: a device of the first dump.
type devMap struct {
	name     string
	numPorts uint32
	idx      uint32
	dev      nldev.Device
}

// filterEntry is one FILTER-NAME FILTER-VALUE pair (utils.c's struct
// filter_entry): the key as typed, the value in lower case. rdma asks
// the kernel for one object by its number where a filter names one
// (isDoit) and dumps when that fails; the dump, filtered, prints the
// same lines, so rdmactl always dumps (but under -r, see showRaw).
type filterEntry struct {
	key, value string
	isDoit     bool
}

// rd is rdma's struct rd: the words left, the options and the state of
// the command running.
type rd struct {
	env      Env
	args     []string
	filename string

	details, driverDetails, raw bool
	json, pretty                bool

	p        *rdPrinter
	stdout   *bufio.Writer // p's output
	stderr   *bufio.Writer
	nl       NLSource
	devs     []devMap
	devIdx   uint32
	portIdx  uint32
	filters  []filterEntry
	ports    map[uint32][]nldev.Port
	taskName func(uint32) (string, bool)
}

func (r *rd) errf(format string, a ...any) {
	// stdout first, as a terminal shows them; captured apart, the order
	// does not matter.
	r.stdout.Flush()
	fmt.Fprintf(r.stderr, format, a...)
	r.stderr.Flush()
}

func (r *rd) outf(format string, a ...any) { fmt.Fprintf(r.p.out, format, a...) }

// netErr is rd_recv_msg's perror("error") for a failed request.
func (r *rd) netErr(err error) int {
	r.errf("error: %s\n", errText(err))
	return -1
}

// errText is glibc's strerror for err's errno, else err's text.
func errText(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		return strerror(en)
	}
	return err.Error()
}

var rdmaOptions = []Option{
	{Short: 'V', Long: "version"},
	{Short: 'h', Long: "help"},
	{Short: 'j', Long: "json"},
	{Short: 'p', Long: "pretty"},
	{Short: 'd', Long: "details"},
	{Short: 'r', Long: "raw"},
	{Short: 'f', Long: "force"},
	{Short: 'b', Long: "batch", HasArg: true},
}

func rdmaHelp(r *rd) int {
	r.outf("Usage: %s [ OPTIONS ] OBJECT { COMMAND | help }\n"+
		"       %s [ -f[orce] ] -b[atch] filename\n"+
		"where  OBJECT := { dev | link | resource | system | statistic | help }\n"+
		"       OPTIONS := { -V[ersion] | -d[etails] | -j[son] | -p[retty] -r[aw]}\n", r.filename, r.filename)
	return 0
}

// rdmaMain is rdma.c's main. getopt_long runs with optstring
// ":Vhdrpjfb:": glibc prints no diagnostic of its own, rdma prints its
// two; -V and -h act as soon as they are met.
func rdmaMain(env Env, argv []string) int {
	stdout := bufio.NewWriter(env.Stdout)
	defer stdout.Flush()
	r := &rd{env: env, filename: filepath.Base(argv[0]), stdout: stdout, stderr: bufio.NewWriter(env.Stderr),
		p: &rdPrinter{out: stdout}, ports: map[uint32][]nldev.Port{}, taskName: env.TaskName}
	if r.taskName == nil {
		r.taskName = taskName
	}
	opts, operands, err := getoptLong(argv[1:], rdmaOptions)
	batch := false
	for _, o := range opts {
		switch o.Name {
		case "V":
			r.outf("%s utility, iproute2-%s\n", r.filename, rdmaVersion)
			return 0
		case "h":
			rdmaHelp(r)
			return 0
		case "p":
			r.pretty = true
		case "d":
			if r.details {
				r.driverDetails = true
			} else {
				r.details = true
			}
		case "r":
			r.raw = true
		case "j":
			r.json = true
		case "b":
			batch = true
		}
	}
	if err != nil {
		var ge *getoptError
		if errors.As(err, &ge) && ge.missing != 0 {
			r.errf("-%c option requires an argument\n", ge.missing)
			return 1
		}
		r.errf("Unknown option.\n")
		rdmaHelp(r)
		return 1
	}
	r.p.pretty = r.pretty
	if batch {
		r.errf("%s: rdmactl's %s does not read batch files (-b): run each command line on its own\n", r.filename, r.filename)
		return 2
	}
	r.args = operands
	if rc := r.init(); rc != 0 {
		return 1
	}
	defer r.nl.Close()
	rc := r.exec([]rdCmd{
		{"", rdmaHelp},
		{"help", rdmaHelp},
		{"dev", cmdDev},
		{"link", cmdLink},
		{"resource", cmdRes},
		{"system", cmdSys},
		{"statistic", cmdStat},
	}, "object")
	switch {
	case rc == exitReadOnly:
		return 2
	case rc != 0:
		return 1
	}
	return 0
}

// init is rd_init: the socket and the device dump every command starts
// from.
func (r *rd) init() int {
	if r.env.Netlink == nil {
		r.errf("Failed to open NETLINK_RDMA socket\n")
		return -1
	}
	nl, err := r.env.Netlink()
	if err != nil {
		r.errf("Failed to open NETLINK_RDMA socket\n")
		return -1
	}
	devs, err := nl.Devices()
	if err != nil {
		nl.Close()
		return r.netErr(err)
	}
	r.nl = nl
	for _, d := range devs {
		m := devMap{name: d.Name, idx: d.Index, dev: d}
		if d.NumPorts != nil {
			m.numPorts = *d.NumPorts
		}
		r.devs = append(r.devs, m)
	}
	return 0
}

// rdCmd is one word of a command table; the first entry (name "") is
// what runs when no word is left.
type rdCmd struct {
	name string
	fn   func(*rd) int
}

// strcmpx is utils.c's: word matches name when it is a prefix of it
// ("" matches anything).
func strcmpx(word, name string) bool { return strings.HasPrefix(name, word) }

func (r *rd) argc() int { return len(r.args) }

func (r *rd) argv() string {
	if len(r.args) == 0 {
		return ""
	}
	return r.args[0]
}

func (r *rd) inc() {
	if len(r.args) > 0 {
		r.args = r.args[1:]
	}
}

// exec is rd_exec_cmd: the first entry whose name the next word is a
// prefix of runs; an unknown word is reported and is no failure.
func (r *rd) exec(cmds []rdCmd, what string) int {
	if r.argc() == 0 {
		return cmds[0].fn(r)
	}
	for _, c := range cmds[1:] {
		if strcmpx(r.argv(), c.name) {
			r.inc()
			return c.fn(r)
		}
	}
	r.errf("Unknown %s '%s'.\n", what, r.argv())
	return 0
}

// readOnly refuses one of rdma's writes.
func readOnly(what, instead string) func(*rd) int {
	return func(r *rd) int {
		r.errf("%s: rdmactl's %s only reads: '%s' is refused (use '%s')\n", r.filename, r.filename, what, instead)
		return exitReadOnly
	}
}

// lookupDev is dev_map_lookup: the next word as a device name, cut at
// its last '/' when a port may follow.
func (r *rd) lookupDev(allowPort bool) *devMap {
	if r.argc() == 0 {
		return nil
	}
	name := r.argv()
	if allowPort {
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[:i]
		}
	}
	for i := range r.devs {
		if r.devs[i].name == name {
			return &r.devs[i]
		}
	}
	return nil
}

func (r *rd) curDev() *devMap {
	for i := range r.devs {
		if r.devs[i].idx == r.devIdx {
			return &r.devs[i]
		}
	}
	return nil
}

// atoi is C's atoi over the digits s starts with (rdma calls it only
// after isdigit): strtol's saturation, then the cast to int.
func atoi(s string) int32 {
	var v uint64
	for i := 0; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		v = v*10 + uint64(s[i]-'0')
		if v > 1<<63-1 {
			v = 1<<63 - 1
			break
		}
	}
	return int32(v)
}

// portFromArgv is utils.c's get_port_from_argv on the next word:
// "dev" (every port), "dev/N", "dev/-" (objects without a port);
// strict wants a port other than 0.
func (r *rd) portFromArgv(strict bool) (port uint32, dumpAll bool, bad bool) {
	dumpAll = !strict
	w := r.argv()
	i := strings.IndexByte(w, '/')
	if i >= 0 {
		rest := w[i+1:]
		if strings.HasPrefix(rest, "-") {
			if strict {
				return 0, dumpAll, true
			}
			return 0, false, false
		}
		if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
			dumpAll = false
			port = uint32(atoi(rest))
		}
		if port == 0 && rest != "" {
			return port, dumpAll, true
		}
	}
	if strict && port == 0 {
		return port, dumpAll, true
	}
	return port, dumpAll, false
}

// execLink is rd_exec_link: cb for each port of each device (from port
// 0 unless strict), or of the device (and port) the next word names.
func (r *rd) execLink(cb func(*rd) int, strict bool) int {
	r.p.newJSONObj(r.json)
	defer r.p.deleteJSONObj()
	if r.argc() == 0 {
		for i := range r.devs {
			d := &r.devs[i]
			r.devIdx = d.idx
			port := uint32(0)
			if strict {
				port = 1
			}
			for ; port < d.numPorts+1; port++ {
				r.portIdx = port
				if rc := cb(r); rc != 0 {
					return rc
				}
			}
		}
		return 0
	}
	d := r.lookupDev(true)
	port, dumpAll, bad := r.portFromArgv(strict)
	if d == nil || port > d.numPorts || (port == 0 && bad) {
		r.errf("Wrong device name\n")
		return -int(syscall.ENOENT)
	}
	r.inc()
	r.devIdx = d.idx
	for r.portIdx = port; r.portIdx < d.numPorts+1; r.portIdx++ {
		if rc := cb(r); rc != 0 {
			return rc
		}
		if !dumpAll {
			break
		}
	}
	return 0
}

// execDev is rd_exec_dev: cb for each device, or for the one the next
// word names.
func (r *rd) execDev(cb func(*rd) int) int {
	r.p.newJSONObj(r.json)
	defer r.p.deleteJSONObj()
	if r.argc() == 0 {
		for i := range r.devs {
			r.devIdx = r.devs[i].idx
			if rc := cb(r); rc != 0 {
				return rc
			}
		}
		return 0
	}
	d := r.lookupDev(false)
	if d == nil {
		r.errf("Wrong device name - %s\n", r.argv())
		return -int(syscall.ENOENT)
	}
	r.inc()
	r.devIdx = d.idx
	return cb(r)
}

// newline is utils.c's: the JSON object closed, or the line ended.
func (r *rd) newline() {
	r.p.closeObject()
	r.p.text("\n")
}

func (r *rd) newlineIndent() {
	r.newline()
	r.p.text("    ")
}

// guid prints a 64-bit GUID as rdma does: four groups of 16 bits, most
// significant first.
func guid(v uint64) string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", v>>48, v>>32&0xffff, v>>16&0xffff, v&0xffff)
}

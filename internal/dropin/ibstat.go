package dropin

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rdmactl/rdmactl/internal/sysfs"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// ibstat's options: its own (infiniband-diags/ibstat.c) before the common
// ones ibdiag_process_opts (infiniband-diags/ibdiag_common.c) keeps when
// ibstat excludes "CDeGKLPsty", in that order, as getopt_long and the
// usage list them.
var ibstatOptions = []Option{
	{Short: 'l', Long: "list_of_cas"},
	{Short: 's', Long: "short"},
	{Short: 'p', Long: "port_list"},
	{Short: 'z', Long: "config", HasArg: true},
	{Short: 'v', Long: "verbose"},
	{Short: 'd', Long: "debug"},
	{Short: 'h', Long: "help"},
	{Short: 'V', Long: "version"},
}

// ibstatUsage is ibdiag_show_usage: on stderr, each option as
// "  --name, -c <arg>" padded to 24 columns, two blanks, its description
// (pretty_print wraps none of these), then the examples.
func ibstatUsage(w io.Writer, prog string) {
	arg := map[string]string{"config": " <config>"}
	desc := map[string]string{
		"list_of_cas": "list all IB devices",
		"short":       "short output",
		"port_list":   "show port list",
		"config":      "use config file, default: /etc/infiniband-diags/ibdiag.conf",
		"verbose":     "increase verbosity level",
		"debug":       "raise debug level",
		"help":        "help message",
		"version":     "show version",
	}
	fmt.Fprintf(w, "\nUsage: %s [options] <ca_name> [portnum]\n\n", prog)
	fmt.Fprintf(w, "Options:\n")
	for _, o := range ibstatOptions {
		s := fmt.Sprintf("  --%s, -%c%s", o.Long, o.Short, arg[o.Long])
		fmt.Fprintf(w, "%-24s  %s\n", s, desc[o.Long])
	}
	fmt.Fprintf(w, "\nExamples:\n")
	fmt.Fprintf(w, "  %s -l       # list all IB devices\n", prog)
	fmt.Fprintf(w, "  %s mthca0 2 # stat port 2 of 'mthca0'\n", prog)
	fmt.Fprintf(w, "\n")
}

// umadCA is what libibumad's umad_get_ca (libibumad/umad.c, get_ca and
// get_port) reads of a CA from sysfs.
type umadCA struct {
	name                 string
	nodeType             uint32
	caType, fwVer, hwVer string
	nodeGUID, sysGUID    uint64
	numPorts             int
	ports                [10]*umadPort // UMAD_CA_MAX_PORTS
	// errno is what the reads leave in errno, which ibstat's ibpanic
	// prints: ENOENT if an optional file (fw_ver, hw_rev, hca_type,
	// link_layer) is absent, as hw_rev and hca_type are on rxe; else 0.
	errno syscall.Errno
}

type umadPort struct {
	num                                     int
	state, physState, rate, lid, lmc, smLID uint32
	capMask                                 uint32
	rateText, linkLayer                     string
	portGUID                                uint64
}

// cString is a sysfs value as libibumad's sys_read_string leaves it in a
// buffer of size bytes: at most size-1 bytes.
func cString(s string, size int) string {
	if len(s) > size-1 {
		return s[:size-1]
	}
	return s
}

// errMissing is a required attribute umad_get_ca cannot read; the read
// that fails is an open, so errno is ENOENT.
var errMissing = syscall.ENOENT

// getCA reads ca as umad_get_ca does: any required attribute unreadable,
// or a port numbered 10 or more, fails the whole CA.
func getCA(f *sysfs.FS, name string) (*umadCA, error) {
	d, err := f.Device(name)
	if err != nil {
		return nil, err
	}
	ca := &umadCA{name: name, fwVer: cString(d.FWVer, 20), hwVer: cString(d.HWRev, 20), caType: cString(d.HCAType, 40)}
	for _, opt := range []string{"fw_ver", "hw_rev", "hca_type"} {
		if _, err := os.Stat(filepath.Join(f.Root(), "class", "infiniband", name, opt)); err != nil {
			ca.errno = syscall.ENOENT
		}
	}
	ng, ok1 := vocab.ParseGUID(d.NodeGUID)
	sg, ok2 := vocab.ParseGUID(d.SysImageGUID)
	if d.NodeTypeNum == nil || !ok1 || !ok2 {
		return nil, errMissing
	}
	ca.nodeType, ca.nodeGUID, ca.sysGUID = *d.NodeTypeNum, uint64(ng), uint64(sg)
	for _, n := range d.Ports {
		if n >= uint32(len(ca.ports)) {
			return nil, syscall.EIO
		}
		p, err := f.Port(name, n)
		if err != nil {
			return nil, err
		}
		if p.StateNum == nil || p.PhysStateNum == nil || p.Rate == "" || p.LID == nil ||
			p.LMC == nil || p.SMLID == nil || p.SMSL == nil || p.CapMask == nil {
			return nil, errMissing
		}
		g, err := f.GID(name, n, 0)
		if err != nil || !g.RawOK {
			return nil, errMissing
		}
		up := &umadPort{num: int(n), state: *p.StateNum, physState: *p.PhysStateNum,
			rate: uint32(strtol(p.Rate)), rateText: cString(p.Rate, 32), lid: *p.LID, lmc: *p.LMC,
			smLID: *p.SMLID, capMask: *p.CapMask, linkLayer: cString(p.LinkLayer, 20)}
		if p.LinkLayer == "" {
			// get_port assumes IB when link_layer cannot be read.
			up.linkLayer, ca.errno = "IB", syscall.ENOENT
		}
		for _, b := range g.Raw[8:] {
			up.portGUID = up.portGUID<<8 | uint64(b)
		}
		ca.ports[n] = up
		ca.numPorts = max(ca.numPorts, int(n))
	}
	return ca, nil
}

func nodeTypeName(t uint32) string {
	if names := []string{"???", "CA", "Switch", "Router", "iWARP RNIC"}; t < uint32(len(names)) {
		return names[t]
	}
	return "???"
}

// caDump is ibstat.c's ca_dump: the CA header.
func caDump(w io.Writer, ca *umadCA) {
	t := nodeTypeName(ca.nodeType)
	fmt.Fprintf(w, "%s '%s'\n", t, ca.name)
	fmt.Fprintf(w, "\t%s type: %s\n", t, ca.caType)
	fmt.Fprintf(w, "\tNumber of ports: %d\n", ca.numPorts)
	fmt.Fprintf(w, "\tFirmware version: %s\n", ca.fwVer)
	fmt.Fprintf(w, "\tHardware version: %s\n", ca.hwVer)
	fmt.Fprintf(w, "\tNode GUID: 0x%016x\n", ca.nodeGUID)
	fmt.Fprintf(w, "\tSystem image GUID: 0x%016x\n", ca.sysGUID)
}

// portDump is ibstat.c's port_dump: indented under its CA, or alone for
// "ibstat CA PORT". Rate is the number the rate file begins with, "2.5"
// for 2, with " (FDR10)" when the text before its first ')' ends in FDR10.
func portDump(w io.Writer, p *umadPort, alone bool) {
	pre, hdr := "\t\t", "\t"
	if alone {
		pre, hdr = "", ""
	}
	state, phys := "???", "???"
	if s := []string{"???", "Down", "Initializing", "Armed", "Active"}; p.state < uint32(len(s)) {
		state = s[p.state]
	}
	if s := []string{"No state change", "Sleep", "Polling", "Disabled", "PortConfigurationTraining",
		"LinkUp", "LinkErrorRecovery", "PhyTest"}; p.physState < uint32(len(s)) {
		phys = s[p.physState]
	}
	fmt.Fprintf(w, "%sPort %d:\n", hdr, p.num)
	fmt.Fprintf(w, "%sState: %s\n", pre, state)
	fmt.Fprintf(w, "%sPhysical state: %s\n", pre, phys)
	i := strings.IndexByte(p.rateText, ')')
	switch {
	case i >= 5 && strings.EqualFold(p.rateText[i-5:i], "fdr10"):
		fmt.Fprintf(w, "%sRate: %d (FDR10)\n", pre, int32(p.rate))
	case p.rate != 2:
		fmt.Fprintf(w, "%sRate: %d\n", pre, int32(p.rate))
	default:
		fmt.Fprintf(w, "%sRate: 2.5\n", pre)
	}
	fmt.Fprintf(w, "%sBase lid: %d\n", pre, int32(p.lid))
	fmt.Fprintf(w, "%sLMC: %d\n", pre, int32(p.lmc))
	fmt.Fprintf(w, "%sSM lid: %d\n", pre, int32(p.smLID))
	fmt.Fprintf(w, "%sCapability mask: 0x%08x\n", pre, p.capMask)
	fmt.Fprintf(w, "%sPort GUID: 0x%016x\n", pre, p.portGUID)
	fmt.Fprintf(w, "%sLink layer: %s\n", pre, p.linkLayer)
}

// strerror is glibc's text for errno, as %m prints it.
func strerror(e syscall.Errno) string {
	if e == 0 {
		return "Success"
	}
	s := e.Error()
	return strings.ToUpper(s[:1]) + s[1:]
}

// errnoOf is the errno behind err, or EIO.
func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, os.ErrNotExist) {
		return syscall.ENOENT
	}
	return syscall.EIO
}

// ibstat is infiniband-diags' ibstat (infiniband-diags/ibstat.c with
// libibumad/umad.c): every CA (sorted by name, node types 1 to 3) or the
// one named, with its ports or one port; -l the names, -s no ports, -p
// the port GUIDs. Messages are libibmad's IBWARN ("ibwarn: [pid] func:
// ...") and IBPANIC ("ibpanic: [pid] main: ...: %m", exit 255); the
// usage goes to stderr with exit 2, -V to stderr with exit 0. A second -d
// turns on libibumad's trace lines, printed here at the same calls.
func ibstat(env Env, argv []string) int {
	prog := argv[0]
	opts, args, err := getoptLong(argv[1:], ibstatOptions)
	listOnly, short, listPorts, debug := false, false, false, 0
	for _, o := range opts {
		switch o.Name {
		case "l":
			listOnly = true
		case "s":
			short = true
		case "p":
			listPorts = true
		case "d":
			debug++
		case "h":
			ibstatUsage(env.Stderr, prog)
			return 2
		case "V":
			// "BUILD VERSION: " PACKAGE_VERSION (rdma-core 44.0).
			fmt.Fprintf(env.Stderr, "%s BUILD VERSION: 44.0\n", prog)
			return 0
		}
		// -z reads a config file of settings ibstat does not use; -v
		// raises a verbosity ibstat does not consult.
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "%s: %v\n", prog, err)
		ibstatUsage(env.Stderr, prog)
		return 2
	}

	pid := os.Getpid()
	warn := func(fn, format string, a ...any) {
		fmt.Fprintf(env.Stderr, "ibwarn: [%d] %s: %s\n", pid, fn, fmt.Sprintf(format, a...))
	}
	trace := func(fn, format string, a ...any) {
		if debug >= 2 { // umad_debug(ibdebug - 1)
			warn(fn, format, a...)
		}
	}
	w := bufio.NewWriter(env.Stdout)
	defer w.Flush()
	ibpanic := func(e syscall.Errno, format string, a ...any) int {
		w.Flush()
		fmt.Fprintf(env.Stderr, "ibpanic: [%d] main: %s: %s\n", pid, fmt.Sprintf(format, a...), strerror(e))
		return 255
	}

	devPort := -1
	if len(args) > 1 {
		devPort = int(int32(strtol(args[1])))
	}
	trace("umad_init", "umad_init")
	src, err := env.Open()
	if err != nil {
		return ibpanic(errnoOf(err), "can't list IB device names")
	}
	defer src.Close()
	f := src.Sysfs()
	// umad_get_ca_device_list: the CAs of node type 1 to 3; no
	// /sys/class/infiniband is no CA and no error.
	names, err := f.Devices()
	if err != nil && !errors.Is(err, sysfs.ErrNoRDMA) {
		return ibpanic(errnoOf(err), "can't list IB device names")
	}
	var cas []string
	for _, n := range names {
		if d, err := f.Device(n); err == nil && d.NodeTypeNum != nil && *d.NodeTypeNum >= 1 && *d.NodeTypeNum <= 3 {
			cas = append(cas, n)
		}
	}
	trace("umad_get_ca_device_list", "return %d cas", len(cas))
	if len(args) > 0 {
		found := false
		for _, n := range cas {
			found = found || n == args[0]
		}
		if !found {
			return ibpanic(0, "'%s' IB device can't be found", args[0])
		}
		cas = []string{args[0]}
	}

	umadGetCA := func(name string) (*umadCA, error) {
		trace("umad_get_ca", "ca_name %s", name)
		ca, err := getCA(f, name)
		if err == nil {
			trace("umad_get_ca", "opened %s", name)
		}
		return ca, err
	}
	if listPorts {
		for _, name := range cas {
			trace("umad_get_ca_portguids", "ca name %s max port guids %d", name, 64)
			ca, err := umadGetCA(name)
			if err != nil {
				return ibpanic(errnoOf(err), "can't list ports")
			}
			trace("umad_get_ca_portguids", "%s: %d ports", name, ca.numPorts+1)
			for _, p := range ca.ports[:ca.numPorts+1] {
				if p != nil && p.portGUID != 0 {
					fmt.Fprintf(w, "0x%016x\n", p.portGUID)
				}
			}
		}
		return 0
	}
	for _, name := range cas {
		if listOnly {
			fmt.Fprintf(w, "%s\n", name)
			continue
		}
		// ca_stat
		ca, err := umadGetCA(name)
		if err != nil {
			return ibpanic(errnoOf(err), "stat of IB device '%s' failed", name)
		}
		if !short && devPort >= 0 {
			if devPort > ca.numPorts || ca.ports[devPort] == nil {
				warn("ca_stat", "%s: '%s' has no port number %d - max (%d)", nodeTypeName(ca.nodeType), name, devPort, ca.numPorts)
				return ibpanic(ca.errno, "stat of IB device '%s' failed", name)
			}
			fmt.Fprintf(w, "%s: '%s'\n", nodeTypeName(ca.nodeType), ca.name)
			portDump(w, ca.ports[devPort], true)
			continue
		}
		caDump(w, ca)
		if short {
			continue
		}
		for _, p := range ca.ports[:ca.numPorts+1] {
			if p != nil {
				portDump(w, p, false)
			}
		}
	}
	return 0
}

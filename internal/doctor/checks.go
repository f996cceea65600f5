package doctor

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Checks are doctor's checks, in the order it runs and prints them.
var Checks = []Check{
	{ID: "port_state", Doc: "every port ACTIVE with its physical link LINK_UP", Run: checkPortState},
	{ID: "ib_sm", Doc: "every InfiniBand port has a LID and a subnet manager (SM LID not 0)", Run: checkIBSM},
	{ID: "pcie_link", Doc: "the PCIe link of each device runs at its function's maximum speed and width", Run: checkPCIe},
	{ID: "firmware", Doc: "devices of one model (hca_type, board_id) run one firmware version", Run: checkFirmware},
	{ID: "roce_netdev", Doc: "each RoCE port has a netdev and it is up", Run: checkRoCENetdev},
	{ID: "roce_mtu", Doc: "each RoCE netdev's MTU carries a 1024-byte RDMA MTU plus RoCE's headers", Run: checkRoCEMTU},
	{ID: "roce_active_mtu", NeedsLive: true, Doc: "each RoCE port runs the largest RDMA MTU its netdev's MTU allows", Run: checkRoCEActiveMTU},
	{ID: "roce_gid", NeedsLive: true, Doc: "each RoCE netdev has an IP address and each address a RoCE v2 GID", Run: checkRoCEGID},
	{ID: "memlock", NeedsLive: true, Doc: "RLIMIT_MEMLOCK lets a benchmark pin its buffers", Run: checkMemlock},
	{ID: "uverbs_access", NeedsLive: true, Doc: "this user can open each device's /dev/infiniband/uverbsN", Run: checkUverbs},
	{ID: "kernel_modules", NeedsLive: true, Doc: "ib_uverbs and rdma_ucm are loaded", Run: checkModules},
	{ID: "error_counters", Doc: "no error, discard, retransmission, out-of-sequence or RNR counter above zero", Run: checkErrorCounters},
	{ID: "error_counters_growth", NeedsLive: true, Doc: "with --watch: no such counter grows while doctor watches", Run: checkErrorGrowth},
}

// RoCEHeaders is what RoCE adds to an RDMA MTU on the wire at most (GRH 40
// + UDP 8 + BTH 12 + XRC ETH 4 + AtomicETH 28 + ICRC 4), as the kernel's
// iboe_get_mtu subtracts (inventory.RoCEMTU).
const RoCEHeaders = 96

// MinRoCEMTU is the smallest RDMA MTU doctor accepts: 1024, what a netdev
// MTU of 1500 gives and what every RoCE NIC and rdma-core default expects.
const MinRoCEMTU = 1024

func portName(p inventory.Port) string { return fmt.Sprintf("%s/%d", p.Dev, p.Port) }

func checkPortState(e *Env) []Result {
	ports, err := e.Ports()
	if err != nil {
		return []Result{errResult("", 0, "ports", err)}
	}
	if len(ports) == 0 {
		// The one verdict on a host without RDMA: it cannot run RDMA jobs.
		return []Result{{Status: Fail, Evidence: "no RDMA ports on this host",
			Fix: "load the NIC's RDMA driver (e.g. mlx5_ib, irdma, bnxt_re), or for Soft-RoCE 'rdma link add rxe0 type rxe netdev ETH'"}}
	}
	var out []Result
	for _, p := range ports {
		r := Result{Device: p.Dev, Port: p.Port, Status: Pass,
			Evidence: fmt.Sprintf("state %s, physical state %s", orUnknown(p.State), orUnknown(p.PhysState))}
		if p.State != "ACTIVE" || p.PhysState != "LINK_UP" {
			r.Status = Fail
			switch {
			case p.LinkLayer == "Ethernet" && p.Netdev != "":
				r.Fix = fmt.Sprintf("bring %s up ('ip link set %s up') and check its cable and link partner ('ip link show %s')", p.Netdev, p.Netdev, p.Netdev)
			case p.LinkLayer == "InfiniBand" && p.PhysState == "LINK_UP":
				r.Fix = "the link is up but the port is not ACTIVE: start a subnet manager on the fabric (opensm, or the switch's)"
			default:
				r.Fix = "check the cable, the link partner and that the port is enabled ('rdmactl link show' after each step)"
			}
		}
		out = append(out, r)
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func checkIBSM(e *Env) []Result {
	ports, err := e.Ports()
	if err != nil {
		return []Result{errResult("", 0, "ports", err)}
	}
	var out []Result
	for _, p := range ports {
		if p.LinkLayer != "InfiniBand" {
			continue
		}
		r := Result{Device: p.Dev, Port: p.Port}
		switch {
		case p.SMLID == nil || p.LID == nil:
			r.Status, r.Evidence = Skip, "the port's LID or SM LID is unreadable"
		case *p.SMLID == 0:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("SM LID 0 (LID %#x): no subnet manager has configured this port", *p.LID)
			r.Fix = "start a subnet manager on the fabric (opensm on one host, or the switch's) and check that the port reaches it"
		case *p.LID == 0:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("LID 0 (SM LID %#x): the subnet manager has not assigned this port a LID", *p.SMLID)
			r.Fix = "check the subnet manager's log for this port's GUID; restart it or reset the port"
		default:
			r.Status, r.Evidence = Pass, fmt.Sprintf("LID %#x, SM LID %#x", *p.LID, *p.SMLID)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return none("InfiniBand ports")
	}
	return out
}

func checkPCIe(e *Env) []Result {
	devs, err := e.Devices()
	if err != nil {
		return []Result{errResult("", 0, "devices", err)}
	}
	if len(devs) == 0 {
		return none("RDMA devices")
	}
	var out []Result
	for _, d := range devs {
		l := e.Src.PCIeLink(d.Name)
		r := Result{Device: d.Name}
		switch {
		case l == nil:
			r.Status, r.Evidence = Skip, "no PCIe function (a software device such as rxe or siw, or no link attributes)"
		case l.CurSpeed == 0 || l.MaxSpeed == 0 || l.CurWidth == 0 || l.MaxWidth == 0:
			r.Status = Skip
			r.Evidence = fmt.Sprintf("%s reports no comparable link (current %q x%d, max %q x%d)", l.Addr, l.CurSpeedS, l.CurWidth, l.MaxSpeedS, l.MaxWidth)
		case l.CurSpeed < l.MaxSpeed || l.CurWidth < l.MaxWidth:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("%s runs %s x%d, capable of %s x%d", l.Addr, l.CurSpeedS, l.CurWidth, l.MaxSpeedS, l.MaxWidth)
			r.Fix = fmt.Sprintf("seat the card in a slot wired for x%d at %s (lspci -vv -s %s: LnkSta below LnkCap), reseat it, check the BIOS PCIe settings", l.MaxWidth, l.MaxSpeedS, l.Addr)
		default:
			r.Status, r.Evidence = Pass, fmt.Sprintf("%s runs %s x%d, its maximum", l.Addr, l.CurSpeedS, l.CurWidth)
		}
		out = append(out, r)
	}
	return out
}

func checkFirmware(e *Env) []Result {
	devs, err := e.Devices()
	if err != nil {
		return []Result{errResult("", 0, "devices", err)}
	}
	type model struct{ hca, board string }
	groups := map[model][]inventory.Device{}
	for _, d := range devs {
		if d.FW == "" || d.HCAType == "" {
			continue // software devices have no firmware
		}
		m := model{d.HCAType, d.BoardID}
		groups[m] = append(groups[m], d)
	}
	if len(groups) == 0 {
		return none("device with a firmware version and a model (hca_type)")
	}
	var out []Result
	for m, ds := range groups {
		name := m.hca
		if m.board != "" {
			name += " " + m.board
		}
		count := map[string]int{}
		for _, d := range ds {
			count[d.FW]++
		}
		for _, d := range ds {
			r := Result{Device: d.Name}
			if len(count) == 1 {
				r.Status = Pass
				if len(ds) == 1 {
					r.Evidence = fmt.Sprintf("firmware %s; the only %s", d.FW, name)
				} else {
					r.Evidence = fmt.Sprintf("firmware %s, as the other %d %s", d.FW, len(ds)-1, name)
				}
			} else {
				var others []string
				for fw, n := range count {
					if fw != d.FW {
						others = append(others, fmt.Sprintf("%s on %d", fw, n))
					}
				}
				sort.Strings(others)
				r.Status = Warn
				r.Evidence = fmt.Sprintf("firmware %s; other %s devices run %s", d.FW, name, strings.Join(others, ", "))
				r.Fix = fmt.Sprintf("update every %s to one firmware version (the vendor's tool, e.g. mlxfwmanager), then reboot or reset the devices", name)
			}
			out = append(out, r)
		}
	}
	return out
}

// rocePorts is the Ethernet ports, or the result that says why none.
func rocePorts(e *Env) ([]inventory.Port, []Result) {
	ports, err := e.Ports()
	if err != nil {
		return nil, []Result{errResult("", 0, "ports", err)}
	}
	var out []inventory.Port
	for _, p := range ports {
		if p.LinkLayer == "Ethernet" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, none("RoCE (Ethernet) ports")
	}
	return out, nil
}

// perRoCEPort is f's result for each RoCE port, or the result that says
// why there are none.
func perRoCEPort(e *Env, f func(p inventory.Port) Result) []Result {
	ports, res := rocePorts(e)
	if res != nil {
		return res
	}
	out := make([]Result, 0, len(ports))
	for _, p := range ports {
		out = append(out, f(p))
	}
	return out
}

func checkRoCENetdev(e *Env) []Result {
	return perRoCEPort(e, func(p inventory.Port) Result {
		r := Result{Device: p.Dev, Port: p.Port}
		if p.Netdev == "" {
			r.Status, r.Evidence = Fail, "the port has no netdev"
			r.Fix = "check that the Ethernet driver (e.g. mlx5_core) is loaded and the netdev is in this network namespace; for rxe, 'rdma link add' it again"
			return r
		}
		nd := e.Src.Netdev(p.Netdev)
		switch nd.OperState {
		case "up":
			r.Status, r.Evidence = Pass, fmt.Sprintf("netdev %s is up", p.Netdev)
		case "unknown":
			r.Status, r.Evidence = Pass, fmt.Sprintf("netdev %s: operstate unknown (the driver does not report it)", p.Netdev)
		case "":
			r.Status, r.Evidence = Skip, fmt.Sprintf("netdev %s: operstate unreadable (another network namespace?)", p.Netdev)
		default:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("netdev %s is %s", p.Netdev, nd.OperState)
			r.Fix = fmt.Sprintf("'ip link set %s up', and check its cable and link partner", p.Netdev)
		}
		return r
	})
}

func checkRoCEMTU(e *Env) []Result {
	return perRoCEPort(e, func(p inventory.Port) Result {
		r := Result{Device: p.Dev, Port: p.Port}
		nd := e.Src.Netdev(p.Netdev)
		switch {
		case p.Netdev == "" || nd.MTU == nil:
			r.Status, r.Evidence = Skip, "the port's netdev or its MTU is unknown"
		case *nd.MTU < MinRoCEMTU+RoCEHeaders:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("netdev %s MTU %d is below %d + %d bytes of RoCE headers: RDMA MTU at most %d", p.Netdev, *nd.MTU, MinRoCEMTU, RoCEHeaders, inventory.RoCEMTU(*nd.MTU))
			r.Fix = fmt.Sprintf("'ip link set %s mtu 1500' (or 9000 for a 4096 RDMA MTU, if the switches carry jumbo frames)", p.Netdev)
		default:
			r.Status = Pass
			r.Evidence = fmt.Sprintf("netdev %s MTU %d allows an RDMA MTU of %d", p.Netdev, *nd.MTU, inventory.RoCEMTU(*nd.MTU))
		}
		return r
	})
}

func checkRoCEActiveMTU(e *Env) []Result {
	return perRoCEPort(e, func(p inventory.Port) Result {
		r := Result{Device: p.Dev, Port: p.Port}
		nd := e.Src.Netdev(p.Netdev)
		switch {
		case p.Netdev == "" || nd.MTU == nil:
			r.Status, r.Evidence = Skip, "the port's netdev or its MTU is unknown"
		case p.ActiveMTU == nil || p.MaxMTU == nil:
			r.Status, r.Evidence = Skip, "the device did not answer QUERY_PORT (see uverbs_access)"
		default:
			want := inventory.RoCEMTU(*nd.MTU)
			if *p.MaxMTU < want {
				want = *p.MaxMTU
			}
			if *p.ActiveMTU < want {
				r.Status = Warn
				r.Evidence = fmt.Sprintf("active RDMA MTU %d; netdev %s MTU %d allows %d", *p.ActiveMTU, p.Netdev, *nd.MTU, want)
				r.Fix = "the device runs a smaller MTU than its netdev allows: check the NIC's RoCE MTU setting (vendor tool) or set the netdev MTU again to make the driver re-read it"
			} else {
				r.Status = Pass
				r.Evidence = fmt.Sprintf("active RDMA MTU %d, the largest netdev %s MTU %d allows", *p.ActiveMTU, p.Netdev, *nd.MTU)
			}
		}
		return r
	})
}

func checkRoCEGID(e *Env) []Result {
	return perRoCEPort(e, func(p inventory.Port) Result {
		r := Result{Device: p.Dev, Port: p.Port}
		if p.Netdev == "" {
			r.Status, r.Evidence = Skip, "the port has no netdev (see roce_netdev)"
			return r
		}
		addrs, err := e.Src.NetdevAddrs(p.Netdev)
		if err != nil {
			return errResult(p.Dev, p.Port, "the addresses of "+p.Netdev, err)
		}
		idx := p.DevIndex
		tables, err := e.Src.GIDs([]inventory.PortRef{{Dev: p.Dev, Port: p.Port, Index: idx}}, false)
		if err != nil {
			return errResult(p.Dev, p.Port, "the GID table", err)
		}
		v2 := map[netip.Addr]bool{}
		for _, g := range tables[0] {
			if g.RawOK && g.Kind == vocab.GIDTypeRoCEv2 {
				v2[netip.AddrFrom16(g.Raw).Unmap()] = true
			}
		}
		var routable, missing []string
		for _, a := range addrs {
			// Link-local IPv6 is left out: its GID comes from the MAC
			// (the port's default GID), not from the address, which may
			// be a privacy or stable address.
			if a.IsLinkLocalUnicast() || a.IsLoopback() {
				continue
			}
			routable = append(routable, a.String())
			if !v2[a] {
				missing = append(missing, a.String())
			}
		}
		switch {
		case len(routable) == 0:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("netdev %s has no IPv4 or global IPv6 address: no routable RoCE v2 GID", p.Netdev)
			r.Fix = fmt.Sprintf("'ip addr add ADDR/PREFIX dev %s': the kernel adds a RoCE v2 GID for each address", p.Netdev)
		case len(missing) > 0:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("%s of netdev %s without a RoCE v2 GID", strings.Join(missing, ", "), p.Netdev)
			r.Fix = fmt.Sprintf("the kernel did not add the GID: check 'rdmactl gids %s', that %s is the port's netdev (or a VLAN/bond on it), and 'ip addr' again after 'ip link set %s down; up'", portName(p), p.Netdev, p.Netdev)
		default:
			r.Status = Pass
			r.Evidence = fmt.Sprintf("every address of netdev %s has a RoCE v2 GID: %s", p.Netdev, strings.Join(routable, ", "))
		}
		return r
	})
}

const memlockFix = "raise RLIMIT_MEMLOCK: 'ulimit -l unlimited' in the shell, LimitMEMLOCK=infinity for a systemd service, memlock in /etc/security/limits.conf; or grant CAP_IPC_LOCK"

func checkMemlock(e *Env) []Result {
	m, err := e.Src.Memlock()
	if err != nil {
		return []Result{errResult("", 0, "RLIMIT_MEMLOCK", err)}
	}
	run, all := e.PerfPins.Run, e.PerfPins.All
	if run == 0 {
		return []Result{{Status: Skip, Evidence: "the memory perf pins was not given (doctor.Env.PerfPins)"}}
	}
	r := Result{}
	switch {
	case m.CapIPCLock:
		r.Status, r.Evidence = Pass, "CAP_IPC_LOCK: pinned memory is not limited"
	case m.Soft == inventory.Unlimited:
		r.Status, r.Evidence = Pass, "RLIMIT_MEMLOCK unlimited"
	case m.Soft < run:
		r.Status = Fail
		r.Evidence = fmt.Sprintf("RLIMIT_MEMLOCK %s is below the %s 'rdmactl perf write' pins (no CAP_IPC_LOCK)", kib(m.Soft), kib(run))
		r.Fix = memlockFix
	case m.Soft < all:
		r.Status = Warn
		r.Evidence = fmt.Sprintf("RLIMIT_MEMLOCK %s: enough for 'rdmactl perf write' (%s), not for its -a (%s)", kib(m.Soft), kib(run), kib(all))
		r.Fix = memlockFix
	default:
		r.Status, r.Evidence = Pass, fmt.Sprintf("RLIMIT_MEMLOCK %s covers 'rdmactl perf write -a' (%s)", kib(m.Soft), kib(all))
	}
	return []Result{r}
}

func kib(n uint64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", (n+1023)/1024)
}

func checkUverbs(e *Env) []Result {
	devs, err := e.Devices()
	if err != nil {
		return []Result{errResult("", 0, "devices", err)}
	}
	if len(devs) == 0 {
		return none("RDMA devices")
	}
	var out []Result
	for _, d := range devs {
		r := Result{Device: d.Name}
		if d.Uverbs == "" {
			r.Status, r.Evidence = Fail, "the device has no uverbs node: user space cannot use it"
			r.Fix = "'modprobe ib_uverbs' (see kernel_modules)"
			out = append(out, r)
			continue
		}
		node := "/dev/infiniband/" + d.Uverbs
		err := e.Src.UverbsAccess(d.Uverbs)
		switch {
		case err == nil:
			r.Status, r.Evidence = Pass, node+" opens read-write"
		case errors.Is(err, os.ErrPermission):
			r.Status = Fail
			r.Evidence = fmt.Sprintf("cannot open %s read-write as uid %d: permission denied", node, os.Getuid())
			r.Fix = fmt.Sprintf("give this user read-write access to %s: rdma-core's udev rules make it 0666, or add the user to its group ('ls -l %s')", node, node)
		case errors.Is(err, os.ErrNotExist):
			r.Status = Fail
			r.Evidence = node + " does not exist"
			r.Fix = "check that udev (or devtmpfs) made the node; in a container, pass /dev/infiniband in"
		default:
			r.Status = Fail
			r.Evidence = err.Error()
			r.Fix = "check the node's permissions and the kernel log"
		}
		out = append(out, r)
	}
	return out
}

// Modules doctor requires: ib_uverbs (user verbs) and rdma_ucm (rdma_cm
// from user space).
var Modules = []string{"ib_uverbs", "rdma_ucm"}

func checkModules(e *Env) []Result {
	var out []Result
	for _, m := range Modules {
		ok, err := e.Src.ModuleLoaded(m)
		r := Result{}
		switch {
		case err != nil:
			r = errResult("", 0, "module "+m, err)
		case ok:
			r.Status, r.Evidence = Pass, m+" is loaded"
		default:
			r.Status = Fail
			r.Evidence = fmt.Sprintf("%s is not loaded (no /sys/module/%s)", m, m)
			r.Fix = fmt.Sprintf("'modprobe %s'; rdma-core loads it at boot (rdma-load-modules@rdma.service)", m)
		}
		out = append(out, r)
	}
	return out
}

// badCategory: a counter of these categories above zero means something
// went wrong; congestion (CNPs, ECN) and traffic are normal.
func badCategory(name string) (vocab.Category, bool) {
	c := vocab.Counter(name).Category
	switch c {
	case vocab.CategoryErrors, vocab.CategoryDiscards, vocab.CategoryRetransmissions,
		vocab.CategoryOutOfSequence, vocab.CategoryRNR:
		return c, true
	}
	return c, false
}

// maxNamed is how many counters one line of evidence names.
const maxNamed = 6

func checkErrorCounters(e *Env) []Result {
	refs, err := e.Src.Targets("", 0)
	if err != nil {
		return []Result{errResult("", 0, "ports", err)}
	}
	if len(refs) == 0 {
		return none("RDMA ports")
	}
	sets, err := e.Src.Counters(refs, nil)
	if err != nil {
		return []Result{errResult("", 0, "counters", err)}
	}
	type key struct {
		dev  string
		port uint32
	}
	type acc struct {
		read int
		bad  []string
	}
	by := map[key]*acc{}
	var order []key
	for _, s := range sets {
		k := key{s.Dev, s.Port}
		a := by[k]
		if a == nil {
			a = &acc{}
			by[k] = a
			order = append(order, k)
		}
		for _, c := range s.Counters {
			a.read++
			if cat, bad := badCategory(c.Name); bad && c.Value > 0 {
				a.bad = append(a.bad, fmt.Sprintf("%s %d (%s)", c.Name, c.Value, cat))
			}
		}
	}
	var out []Result
	for _, k := range order {
		a := by[k]
		if a.read == 0 {
			continue // a device without device-level hw_counters
		}
		r := Result{Device: k.dev, Port: k.port}
		if len(a.bad) == 0 {
			r.Status, r.Evidence = Pass, fmt.Sprintf("none of %d counters above zero", a.read)
		} else {
			slices.Sort(a.bad)
			r.Status, r.Evidence = Warn, listSome(a.bad)
			where := k.dev
			if k.port != 0 {
				where = fmt.Sprintf("%s/%d", k.dev, k.port)
			}
			r.Fix = fmt.Sprintf("these count since boot or the last reset: 'rdmactl counters %s' shows them; 'rdmactl doctor --watch 30s' tells whether they still grow", where)
		}
		out = append(out, r)
	}
	return out
}

func listSome(s []string) string {
	if len(s) <= maxNamed {
		return strings.Join(s, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(s[:maxNamed], ", "), len(s)-maxNamed)
}

func checkErrorGrowth(e *Env) []Result {
	if e.Watch <= 0 {
		return []Result{{Status: Skip, Evidence: "not watched: run 'rdmactl doctor --watch DURATION'"}}
	}
	refs, err := e.Src.Targets("", 0)
	if err != nil {
		return []Result{errResult("", 0, "ports", err)}
	}
	if len(refs) == 0 {
		return none("RDMA ports")
	}
	a, err := e.Src.CounterSnapshot(refs, nil)
	if err != nil {
		return []Result{errResult("", 0, "counters", err)}
	}
	e.Sleep(e.Watch)
	b, err := e.Src.CounterSnapshot(refs, nil)
	if err != nil {
		return []Result{errResult("", 0, "counters", err)}
	}
	rep, err := inventory.Rates(a, b)
	if err != nil {
		return []Result{errResult("", 0, "counter rates", err)}
	}
	type key struct {
		dev  string
		port uint32
	}
	grew := map[key][]string{}
	for _, r := range rep.Rates {
		if _, bad := badCategory(r.Name); bad && r.Delta > 0 && !r.Reset {
			k := key{r.Dev, r.Port}
			grew[k] = append(grew[k], fmt.Sprintf("%s +%d", r.Name, r.Delta))
		}
	}
	var out []Result
	seen := map[key]bool{}
	for _, s := range b.Sets {
		k := key{s.Dev, s.Port}
		if seen[k] {
			continue
		}
		seen[k] = true
		r := Result{Device: k.dev, Port: k.port}
		if g := grew[k]; len(g) > 0 {
			slices.Sort(g)
			r.Status = Fail
			r.Evidence = fmt.Sprintf("%s in %v", listSome(g), rep.Interval.Round(1e6))
			r.Fix = "errors are happening now: check the cable and optics (symbol, link errors), the peer and the switch (drops, retransmissions), the receivers (RNR)"
		} else {
			r.Status, r.Evidence = Pass, fmt.Sprintf("no error counter grew in %v", rep.Interval.Round(1e6))
		}
		out = append(out, r)
	}
	return out
}

package doctor

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// Expect is what a site requires of a host before it takes jobs, as GPU
// node health checks (NVIDIA's gpud, LBNL's NHC) state it: at least Ports
// ports ACTIVE, each ACTIVE port at RateGbps or faster and with an active
// MTU of MTU bytes or more. Zero: not required.
type Expect struct {
	Ports    int
	RateGbps float64
	MTU      uint32
}

// ParseExpect reads --expect's "ports=8,rate=400,mtu=4096" (any subset,
// any order).
func ParseExpect(s string) (Expect, error) {
	var x Expect
	if strings.TrimSpace(s) == "" {
		return x, fmt.Errorf("--expect: empty; want KEY=VALUE,... with ports, rate (Gb/s), mtu (bytes)")
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return x, fmt.Errorf("--expect %q: want KEY=VALUE, not %q", s, kv)
		}
		if seen[k] {
			return x, fmt.Errorf("--expect %q: %s given twice", s, k)
		}
		seen[k] = true
		switch k {
		case "ports":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return x, fmt.Errorf("--expect ports=%s: want a count of ports, 1 or more", v)
			}
			x.Ports = n
		case "rate":
			f, err := strconv.ParseFloat(strings.TrimSuffix(strings.ToLower(v), "gbps"), 64)
			if err != nil || !(f > 0) || f > 1e6 {
				return x, fmt.Errorf("--expect rate=%s: want the least port rate in Gb/s (e.g. 400)", v)
			}
			x.RateGbps = f
		case "mtu":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil || !validMTU(uint32(n)) {
				return x, fmt.Errorf("--expect mtu=%s: want an RDMA MTU in bytes: 256, 512, 1024, 2048 or 4096", v)
			}
			x.MTU = uint32(n)
		default:
			return x, fmt.Errorf("--expect %q: unknown key %q (ports, rate, mtu)", s, k)
		}
	}
	return x, nil
}

func validMTU(n uint32) bool {
	switch n {
	case 256, 512, 1024, 2048, 4096:
		return true
	}
	return false
}

// Checks is the checks x asks for: expect_ports, expect_rate and
// expect_mtu, those of the keys given.
func (x Expect) Checks() []Check {
	var out []Check
	if x.Ports > 0 {
		out = append(out, Check{ID: "expect_ports", Doc: "--expect ports=N: at least N ports ACTIVE", Run: x.checkPorts})
	}
	if x.RateGbps > 0 {
		out = append(out, Check{ID: "expect_rate", Doc: "--expect rate=GBPS: each ACTIVE port at GBPS Gb/s or faster", Run: x.checkRate})
	}
	if x.MTU > 0 {
		// The active MTU is the device's answer only on the live system.
		out = append(out, Check{ID: "expect_mtu", NeedsLive: true, Doc: "--expect mtu=BYTES: each ACTIVE port's active MTU BYTES or more", Run: x.checkMTU})
	}
	return out
}

func (x Expect) checkPorts(e *Env) []Result {
	ports, err := e.Ports()
	if err != nil {
		return []Result{errResult("", 0, "the ports", err)}
	}
	var down []string
	for _, p := range ports {
		if p.State != "ACTIVE" {
			down = append(down, fmt.Sprintf("%s %s", portName(p), p.State))
		}
	}
	active := len(ports) - len(down)
	r := Result{Status: Pass, Evidence: fmt.Sprintf("%d of %d ports ACTIVE, %d expected", active, len(ports), x.Ports)}
	if active < x.Ports {
		r.Status = Fail
		if len(down) > 0 {
			r.Evidence += "; not ACTIVE: " + listSome(down)
		}
		r.Fix = "bring the ports up and check their cables and link partners ('rdmactl link show'); a missing device needs its driver ('rdmactl dev show')"
	}
	return []Result{r}
}

// activePorts runs f on each ACTIVE port.
func activePorts(e *Env, f func(p inventory.Port) Result) []Result {
	ports, err := e.Ports()
	if err != nil {
		return []Result{errResult("", 0, "the ports", err)}
	}
	var out []Result
	for _, p := range ports {
		if p.State == "ACTIVE" {
			r := f(p)
			r.Device, r.Port = p.Dev, p.Port
			out = append(out, r)
		}
	}
	if out == nil {
		return none("ACTIVE port")
	}
	return out
}

func (x Expect) checkRate(e *Env) []Result {
	return activePorts(e, func(p inventory.Port) Result {
		if p.RateGbps == nil {
			return Result{Status: Fail, Evidence: "the port reports no rate",
				Fix: "check the port's link ('rdmactl link show " + portName(p) + "')"}
		}
		ev := fmt.Sprintf("rate %g Gb/s, %g expected", *p.RateGbps, x.RateGbps)
		if *p.RateGbps < x.RateGbps {
			fix := "check the cable and the switch port's speed"
			if p.Netdev != "" {
				fix += " ('ethtool " + p.Netdev + "')"
			}
			return Result{Status: Fail, Evidence: ev, Fix: fix}
		}
		return Result{Status: Pass, Evidence: ev}
	})
}

func (x Expect) checkMTU(e *Env) []Result {
	return activePorts(e, func(p inventory.Port) Result {
		if p.ActiveMTU == nil {
			return Result{Status: Fail, Evidence: "the port reports no active MTU",
				Fix: "check the port ('rdmactl link show " + portName(p) + "')"}
		}
		ev := fmt.Sprintf("active MTU %d, %d expected", *p.ActiveMTU, x.MTU)
		if *p.ActiveMTU < x.MTU {
			fix := "raise the subnet's MTU (the subnet manager's partition configuration)"
			if p.LinkLayer == "Ethernet" && p.Netdev != "" {
				fix = fmt.Sprintf("raise %s's MTU to at least %d ('ip link set %s mtu 9000'), and the switch's", p.Netdev, x.MTU+RoCEHeaders, p.Netdev)
			}
			return Result{Status: Fail, Evidence: ev, Fix: fix}
		}
		return Result{Status: Pass, Evidence: ev}
	})
}

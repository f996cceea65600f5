package inventory

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// rdma's resource filters ("rdma res show qp lqpn 1-3,7 state rts"),
// applied to the lists QPs, CQs... return. As in rdma (iproute2
// rdma/utils.c): a number filter is a list of numbers and inclusive
// ranges, a string filter a list of names compared without case, and an
// object that lacks the filtered field (a kernel QP's pdn) is left out.

// Range is Min..Max inclusive; a single number has Min == Max.
type Range struct{ Min, Max uint32 }

// Ranges is "1-3,7": numbers and ranges separated by commas.
type Ranges []Range

// ParseRanges reads "N", "N-M" and comma-separated lists of them. Empty
// items, a range backwards, or anything but digits, ',' and '-' is an
// error: rdma accepts some of these and ignores them, rdmactl says so.
func ParseRanges(s string) (Ranges, error) {
	if s == "" {
		return nil, fmt.Errorf("empty list: want numbers and ranges, as in 1-3,7")
	}
	var out Ranges
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parseU32Item(lo, s)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = parseU32Item(hi, s); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("%q: range %d-%d runs backwards", s, a, b)
			}
		}
		out = append(out, Range{a, b})
	}
	return out, nil
}

func parseU32Item(x, all string) (uint32, error) {
	if x == "" || strings.Trim(x, "0123456789") != "" {
		return 0, fmt.Errorf("%q: want numbers and ranges, as in 1-3,7", all)
	}
	n, err := strconv.ParseUint(x, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: %s is not a 32-bit number", all, x)
	}
	return uint32(n), nil
}

// Has says whether n is in one of the ranges.
func (rs Ranges) Has(n uint32) bool {
	for _, r := range rs {
		if r.Min <= n && n <= r.Max {
			return true
		}
	}
	return false
}

// ResMatch is a set of rdma filters; a nil or empty field matches all.
type ResMatch struct {
	Port  *uint32           // link DEV/PORT: QPs and CM IDs of this port
	Nums  map[string]Ranges // lqpn, rqpn, pdn, cqn, mrn, ctxn, srqn, cm-idn, pid, users, mrlen, src-port, dst-port
	Names map[string][]string
}

// SetNum adds the number filter key=value (value as ParseRanges reads it).
func (m *ResMatch) SetNum(key, value string) error {
	rs, err := ParseRanges(value)
	if err != nil {
		return fmt.Errorf("%s %w", key, err)
	}
	if m.Nums == nil {
		m.Nums = map[string]Ranges{}
	}
	m.Nums[key] = rs
	return nil
}

// SetNames adds the string filter key=NAME[,NAME...].
func (m *ResMatch) SetNames(key, value string) {
	if m.Names == nil {
		m.Names = map[string][]string{}
	}
	m.Names[key] = strings.Split(value, ",")
}

func (m ResMatch) num(key string, v *uint32) bool {
	rs, ok := m.Nums[key]
	return !ok || (v != nil && rs.Has(*v))
}

// num64 matches a 64-bit field (users, mrlen) against 32-bit ranges: a
// value past 2^32-1 is in none (rdma truncates it to 32 bits first).
func (m ResMatch) num64(key string, v *uint64) bool {
	rs, ok := m.Nums[key]
	return !ok || (v != nil && *v <= 0xffffffff && rs.Has(uint32(*v)))
}

// addr matches a CM ID's address and port: KEY-addr by the address as
// inet_ntop writes it, KEY-port by number. An ID without that address
// (not yet bound or resolved) is left out by either.
func (m ResMatch) addr(key string, a netip.AddrPort) bool {
	var text string
	var port *uint32
	if a.IsValid() {
		text = a.Addr().String()
		p := uint32(a.Port())
		port = &p
	}
	return m.name(key+"-addr", text) && m.num(key+"-port", port)
}

func (m ResMatch) name(key, v string) bool {
	ns, ok := m.Names[key]
	if !ok {
		return true
	}
	for _, n := range ns {
		if v != "" && strings.EqualFold(n, v) {
			return true
		}
	}
	return false
}

func (m ResMatch) port(p *uint32) bool {
	return m.Port == nil || (p != nil && *p == *m.Port)
}

// QP says whether m keeps q.
func (m ResMatch) QP(q QP) bool {
	return m.port(q.Port) && m.num("pid", q.PID) && m.num("lqpn", q.LQPN) && m.num("rqpn", q.RQPN) &&
		m.num("pdn", q.PDN) && m.num("sq-psn", q.SQPSN) && m.num("rq-psn", q.RQPSN) &&
		m.name("type", q.TypeName()) && m.name("state", q.StateName()) && m.name("path-mig-state", q.PathMigStateName())
}

// CMID says whether m keeps c.
func (m ResMatch) CMID(c CMID) bool {
	return m.port(c.Port) && m.num("pid", c.PID) && m.num("lqpn", c.LQPN) && m.num("cm-idn", c.CMIDN) &&
		m.name("qp-type", c.QPTypeName()) && m.name("state", c.StateName()) && m.name("ps", c.PSName()) &&
		m.addr("src", c.SrcAddr) && m.addr("dst", c.DstAddr)
}

// CQ says whether m keeps c.
func (m ResMatch) CQ(c CQ) bool {
	return m.num("pid", c.PID) && m.num("cqn", c.CQN) && m.num("ctxn", c.CtxN) && m.name("poll-ctx", c.PollCtxName()) &&
		m.num64("users", c.Users)
}

// MR says whether m keeps r.
func (m ResMatch) MR(r MR) bool {
	return m.num("pid", r.PID) && m.num("mrn", r.MRN) && m.num("pdn", r.PDN) && m.num("rkey", r.RKey) && m.num("lkey", r.LKey) &&
		m.num64("mrlen", r.Len)
}

// PD says whether m keeps p.
func (m ResMatch) PD(p PD) bool {
	return m.num("pid", p.PID) && m.num("pdn", p.PDN) && m.num("ctxn", p.CtxN) && m.num64("users", p.Users)
}

// Ctx says whether m keeps x.
func (m ResMatch) Ctx(x Ctx) bool { return m.num("pid", x.PID) && m.num("ctxn", x.CtxN) }

// SRQ says whether m keeps s; lqpn keeps an SRQ with one of its QPs in range.
func (m ResMatch) SRQ(s SRQ) bool {
	if !(m.num("pid", s.PID) && m.num("srqn", s.SRQN) && m.num("pdn", s.PDN) && m.num("cqn", s.CQN) && m.name("type", s.TypeName())) {
		return false
	}
	rs, ok := m.Nums["lqpn"]
	if !ok {
		return true
	}
	for _, q := range s.QPs {
		for _, r := range rs {
			if q.Min <= r.Max && r.Min <= q.Max {
				return true
			}
		}
	}
	return false
}

package resobj

import (
	"math"
	"strings"

	"github.com/rdmactl/rdmactl/internal/nldev"
)

// rdma's filters ("rdma res show qp lqpn 1-3,7 state rts"). Each object's
// descriptor has its filter table, as iproute2's rdma/res-*.c have theirs:
// a function of one object giving, in rdma's order, each filter's name,
// the kind of value it takes and the object's value of the field it
// reads. A KindNumbers or KindNames filter is res's --NAME flag and,
// after "res show OBJECT", rdma's "NAME VALUE" (internal/rdmagrammar).
// As in rdma (rdma/utils.c), an object that lacks the filtered field (a
// kernel QP's pdn) is left out.

// Kind is the kind of value a filter takes.
type Kind uint8

const (
	// KindDev is res's DEV: the device listed (inventory.ResFilter.Dev).
	KindDev Kind = iota
	// KindLink is res's --link DEV[/PORT]: the device listed, and
	// Match.Port.
	KindLink
	// KindNumbers is a list of numbers and ranges, as "1-3,7"
	// (ParseRanges).
	KindNumbers
	// KindNames is a list of names, as "rts,init", compared without case.
	KindNames
	// KindIgnored is in rdma's table, but rdma never applies it: every
	// object passes. res refuses it rather than print everything as if it
	// had filtered; Why says why.
	KindIgnored
)

// Filter is one of rdma's filters of an object, with that object's value
// of the field it reads.
type Filter struct {
	Name string
	Kind Kind
	Why  string // KindIgnored: why res refuses it

	u32  *uint32         // KindLink: the port; KindNumbers: a 32-bit field
	u64  *uint64         // KindNumbers: a 64-bit field (users, mrlen)
	qps  []nldev.QPRange // KindNumbers: an SRQ's QPs
	text string          // KindNames: "" when the kernel did not report it
}

func dev() Filter                       { return Filter{Name: "dev", Kind: KindDev} }
func link(port *uint32) Filter          { return Filter{Name: "link", Kind: KindLink, u32: port} }
func num(name string, v *uint32) Filter { return Filter{Name: name, Kind: KindNumbers, u32: v} }

// num64 is a filter on a 64-bit field, against 32-bit ranges: a value
// past 2^32-1 is in none (rdma truncates it to 32 bits first).
func num64(name string, v *uint64) Filter { return Filter{Name: name, Kind: KindNumbers, u64: v} }

// qpList is an SRQ's lqpn: it keeps an SRQ with one of its QPs in range.
func qpList(name string, qps []nldev.QPRange) Filter {
	return Filter{Name: name, Kind: KindNumbers, qps: qps}
}

func names(name, v string) Filter     { return Filter{Name: name, Kind: KindNames, text: v} }
func ignored(name, why string) Filter { return Filter{Name: name, Kind: KindIgnored, Why: why} }

// keeps says whether the object passes f under m.
func (f Filter) keeps(m Match) bool {
	switch f.Kind {
	case KindLink:
		return m.Port == nil || (f.u32 != nil && *f.u32 == *m.Port)
	case KindNumbers:
		rs, ok := m.Nums[f.Name]
		return !ok || f.in(rs)
	case KindNames:
		ns, ok := m.Names[f.Name]
		if !ok {
			return true
		}
		for _, n := range ns {
			if f.text != "" && strings.EqualFold(n, f.text) {
				return true
			}
		}
		return false
	}
	return true // KindDev: the listing's; KindIgnored: res refuses it
}

// in says whether the field of a KindNumbers filter is in rs.
func (f Filter) in(rs Ranges) bool {
	switch {
	case f.u32 != nil:
		return rs.Has(*f.u32)
	case f.u64 != nil:
		return *f.u64 <= math.MaxUint32 && rs.Has(uint32(*f.u64))
	}
	for _, q := range f.qps {
		for _, r := range rs {
			if q.Min <= r.Max && r.Min <= q.Max {
				return true
			}
		}
	}
	return false
}

// AllFilters are the filters of every object, each name once: res's
// flags. The order is the objects' (Objects), then each table's.
func AllFilters() []Filter {
	var all []Filter
	seen := map[string]bool{}
	for _, o := range Objects {
		for _, f := range o.Filters {
			if !seen[f.Name] {
				seen[f.Name] = true
				all = append(all, f)
			}
		}
	}
	return all
}

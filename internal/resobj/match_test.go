package resobj

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/nldev"
)

func TestParseRanges(t *testing.T) {
	good := map[string]Ranges{
		"7":          {{7, 7}},
		"1-3,7":      {{1, 3}, {7, 7}},
		"5-9":        {{5, 9}},
		"0,4-4":      {{0, 0}, {4, 4}},
		"4294967295": {{4294967295, 4294967295}},
	}
	for in, want := range good {
		got, err := ParseRanges(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("ParseRanges(%q) = %v, %v; want %v", in, got, err, want)
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("ParseRanges(%q) = %v, want %v", in, got, want)
			}
		}
	}
	for _, in := range []string{"", ",", "1,", "-3", "3-", "9-5", "a", "1-2-3", "4294967296", "+1", " 1"} {
		if r, err := ParseRanges(in); err == nil {
			t.Errorf("ParseRanges(%q) = %v, want an error", in, r)
		}
	}
}

func TestRangesHas(t *testing.T) {
	rs, _ := ParseRanges("1-3,7")
	for n, want := range map[uint32]bool{0: false, 1: true, 2: true, 3: true, 4: false, 7: true, 8: false} {
		if rs.Has(n) != want {
			t.Errorf("Has(%d) = %v", n, !want)
		}
	}
}

func FuzzParseRanges(f *testing.F) {
	for _, s := range []string{"1-3,7", "5-9", "0", ",", "9-5", "4294967296", "1--2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		rs, err := ParseRanges(s)
		if err != nil {
			return
		}
		if len(rs) == 0 {
			t.Fatalf("%q: no error and no range", s)
		}
		for _, r := range rs {
			if r.Min > r.Max || !rs.Has(r.Min) || !rs.Has(r.Max) {
				t.Fatalf("%q: bad range %v", s, r)
			}
		}
	})
}

// listed is a Source of the objects given (and fakeSource's others).
type listed struct {
	fakeSource
	qps  []inventory.QP
	srqs []inventory.SRQ
	cqs  []inventory.CQ
	pds  []inventory.PD
	mrs  []inventory.MR
	ids  []inventory.CMID
}

func (l listed) QPs(inventory.ResFilter) ([]inventory.QP, error)     { return l.qps, nil }
func (l listed) SRQs(inventory.ResFilter) ([]inventory.SRQ, error)   { return l.srqs, nil }
func (l listed) CQs(inventory.ResFilter) ([]inventory.CQ, error)     { return l.cqs, nil }
func (l listed) PDs(inventory.ResFilter) ([]inventory.PD, error)     { return l.pds, nil }
func (l listed) MRs(inventory.ResFilter) ([]inventory.MR, error)     { return l.mrs, nil }
func (l listed) CMIDs(inventory.ResFilter) ([]inventory.CMID, error) { return l.ids, nil }

// kept is how many of src's objects named obj m keeps.
func kept(t *testing.T, obj string, src Source, m Match) int {
	t.Helper()
	rows, err := Lookup(obj).Rows(src, inventory.ResFilter{}, m)
	if err != nil {
		t.Fatal(err)
	}
	return len(rows)
}

// TestMatch: rdma's semantics on qp's filters: number lists and ranges,
// names in any case, the port of --link; an object without the field is
// left out.
func TestMatch(t *testing.T) {
	gsi, rc := u8(1), u8(2)
	src := listed{qps: []inventory.QP{
		{QP: nldev.QP{Port: u32(1), LQPN: u32(1), Type: gsi, State: u8(3)}},
		{QP: nldev.QP{Port: u32(1), LQPN: u32(18), RQPN: u32(0), Type: rc, State: u8(1), PDN: u32(2)}, Owner: inventory.Owner{PID: u32(244)}},
		{QP: nldev.QP{LQPN: u32(19), Type: rc, State: u8(0)}},
	}}
	cases := []struct {
		set  func(m *Match) error
		want []uint32 // lqpns kept
	}{
		{func(m *Match) error { return nil }, []uint32{1, 18, 19}},
		{func(m *Match) error { return m.SetNum("lqpn", "5-18") }, []uint32{18}},
		{func(m *Match) error { return m.SetNum("lqpn", "1,19") }, []uint32{1, 19}},
		{func(m *Match) error { m.SetNames("state", "rts,init"); return nil }, []uint32{1, 18}},
		{func(m *Match) error { m.SetNames("type", "rc"); return nil }, []uint32{18, 19}},
		// a QP without pdn (kernel GSI) or rqpn is left out, as rdma does
		{func(m *Match) error { return m.SetNum("pdn", "0-100") }, []uint32{18}},
		{func(m *Match) error { return m.SetNum("rqpn", "0") }, []uint32{18}},
		{func(m *Match) error { return m.SetNum("pid", "244") }, []uint32{18}},
		{func(m *Match) error { m.Port = u32(1); return nil }, []uint32{1, 18}},
	}
	for i, c := range cases {
		var m Match
		if err := c.set(&m); err != nil {
			t.Fatal(err)
		}
		rows, err := Lookup("qp").Rows(src, inventory.ResFilter{}, m)
		if err != nil {
			t.Fatal(err)
		}
		var got []uint32
		for _, r := range rows {
			got = append(got, r.Cells[1].(uint32))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("case %d: kept %v, want %v", i, got, c.want)
		}
	}
	var m Match
	_ = m.SetNum("lqpn", "20-30")
	srqs := func(r nldev.QPRange) listed {
		return listed{srqs: []inventory.SRQ{{SRQ: nldev.SRQ{QPs: []nldev.QPRange{r}}}}}
	}
	if kept(t, "srq", srqs(nldev.QPRange{Min: 10, Max: 19}), m) != 0 || kept(t, "srq", srqs(nldev.QPRange{Min: 25, Max: 25}), m) != 1 {
		t.Error("SRQ lqpn overlap wrong")
	}
	if err := m.SetNum("cqn", "x"); err == nil {
		t.Error("cqn x accepted")
	}
}

// TestMatchNewFilters: users and mrlen (64-bit fields against 32-bit
// ranges), and the CM ID address filters: src-addr/dst-addr by the address
// text, src-port/dst-port by number; an ID without the address is left out.
func TestMatchNewFilters(t *testing.T) {
	keep := func(obj string, src Source, set func(m *Match)) bool {
		var m Match
		set(&m)
		return kept(t, obj, src, m) == 1
	}
	num := func(k, v string) func(m *Match) { return func(m *Match) { _ = m.SetNum(k, v) } }
	names := func(k, v string) func(m *Match) { return func(m *Match) { m.SetNames(k, v) } }
	cq := listed{cqs: []inventory.CQ{{CQ: nldev.CQ{Users: u64(2)}}}}
	pd := listed{pds: []inventory.PD{{PD: nldev.PD{Users: u64(1)}}}}
	mr := listed{mrs: []inventory.MR{{MR: nldev.MR{Len: u64(4096)}}}}
	big := listed{mrs: []inventory.MR{{MR: nldev.MR{Len: u64(1<<32 + 4096)}}}}
	id := func(src, dst string) listed {
		var c inventory.CMID
		c.SrcAddr = netip.MustParseAddrPort(src)
		if dst != "" {
			c.DstAddr = netip.MustParseAddrPort(dst)
		}
		return listed{ids: []inventory.CMID{c}}
	}
	bound := id("10.77.0.1:7174", "")
	conn := id("10.77.0.2:43670", "10.77.0.1:7174")
	v6 := id("[fe80::1]:7174", "")
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"cq users 1-3", keep("cq", cq, num("users", "1-3")), true},
		{"cq users 5", keep("cq", cq, num("users", "5")), false},
		{"pd users 1", keep("pd", pd, num("users", "1")), true},
		{"pd users 0", keep("pd", pd, num("users", "0")), false},
		{"mr mrlen 4096", keep("mr", mr, num("mrlen", "4096")), true},
		{"mr mrlen 0-100", keep("mr", mr, num("mrlen", "0-100")), false},
		{"mr of 4 GiB+ mrlen 4096", keep("mr", big, num("mrlen", "4096")), false},
		{"src-addr of a bound id", keep("cm_id", bound, names("src-addr", "10.77.0.1")), true},
		{"src-addr list", keep("cm_id", conn, names("src-addr", "10.0.0.9,10.77.0.2")), true},
		{"src-addr other", keep("cm_id", bound, names("src-addr", "10.77.0.9")), false},
		{"src-port", keep("cm_id", bound, num("src-port", "7000-7200")), true},
		{"src-port other", keep("cm_id", bound, num("src-port", "7175")), false},
		{"dst-addr", keep("cm_id", conn, names("dst-addr", "10.77.0.1")), true},
		{"dst-addr of an id without one", keep("cm_id", bound, names("dst-addr", "10.77.0.1")), false},
		{"dst-port of an id without one", keep("cm_id", bound, num("dst-port", "0-65535")), false},
		{"dst-port", keep("cm_id", conn, num("dst-port", "7174")), true},
		{"ipv6 src-addr", keep("cm_id", v6, names("src-addr", "FE80::1")), true},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: kept %v, want %v", c.name, c.got, c.want)
		}
	}
}

package inventory

import (
	"net/netip"
	"testing"

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

func TestResMatch(t *testing.T) {
	u8 := func(v uint8) *uint8 { return &v }
	gsi, rc := u8(1), u8(2)
	qps := []QP{
		{QP: nldev.QP{Port: u32(1), LQPN: u32(1), Type: gsi, State: u8(3)}},
		{QP: nldev.QP{Port: u32(1), LQPN: u32(18), RQPN: u32(0), Type: rc, State: u8(1), PDN: u32(2)}, Owner: Owner{PID: u32(244)}},
		{QP: nldev.QP{LQPN: u32(19), Type: rc, State: u8(0)}},
	}
	cases := []struct {
		set  func(m *ResMatch) error
		want []uint32 // lqpns kept
	}{
		{func(m *ResMatch) error { return nil }, []uint32{1, 18, 19}},
		{func(m *ResMatch) error { return m.SetNum("lqpn", "5-18") }, []uint32{18}},
		{func(m *ResMatch) error { return m.SetNum("lqpn", "1,19") }, []uint32{1, 19}},
		{func(m *ResMatch) error { m.SetNames("state", "rts,init"); return nil }, []uint32{1, 18}},
		{func(m *ResMatch) error { m.SetNames("type", "rc"); return nil }, []uint32{18, 19}},
		// a QP without pdn (kernel GSI) or rqpn is left out, as rdma does
		{func(m *ResMatch) error { return m.SetNum("pdn", "0-100") }, []uint32{18}},
		{func(m *ResMatch) error { return m.SetNum("rqpn", "0") }, []uint32{18}},
		{func(m *ResMatch) error { return m.SetNum("pid", "244") }, []uint32{18}},
		{func(m *ResMatch) error { m.Port = u32(1); return nil }, []uint32{1, 18}},
	}
	for i, c := range cases {
		var m ResMatch
		if err := c.set(&m); err != nil {
			t.Fatal(err)
		}
		var got []uint32
		for _, q := range qps {
			if m.QP(q) {
				got = append(got, *q.LQPN)
			}
		}
		if len(got) != len(c.want) {
			t.Errorf("case %d: kept %v, want %v", i, got, c.want)
			continue
		}
		for j := range got {
			if got[j] != c.want[j] {
				t.Errorf("case %d: kept %v, want %v", i, got, c.want)
			}
		}
	}
	var m ResMatch
	_ = m.SetNum("lqpn", "20-30")
	if m.SRQ(SRQ{SRQ: nldev.SRQ{QPs: []nldev.QPRange{{Min: 10, Max: 19}}}}) || !m.SRQ(SRQ{SRQ: nldev.SRQ{QPs: []nldev.QPRange{{Min: 25, Max: 25}}}}) {
		t.Error("SRQ lqpn overlap wrong")
	}
	if err := m.SetNum("cqn", "x"); err == nil {
		t.Error("cqn x accepted")
	}
}

// TestResMatchNewFilters: users and mrlen (64-bit fields against 32-bit
// ranges), and the CM ID address filters: src-addr/dst-addr by the address
// text, src-port/dst-port by number; an ID without the address is left out.
func TestResMatchNewFilters(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	keep := func(set func(m *ResMatch), ok func(m ResMatch) bool) bool {
		var m ResMatch
		set(&m)
		return ok(m)
	}
	num := func(k, v string) func(m *ResMatch) { return func(m *ResMatch) { _ = m.SetNum(k, v) } }
	names := func(k, v string) func(m *ResMatch) { return func(m *ResMatch) { m.SetNames(k, v) } }
	cq := CQ{CQ: nldev.CQ{Users: u64(2)}}
	pd := PD{PD: nldev.PD{Users: u64(1)}}
	mr := MR{MR: nldev.MR{Len: u64(4096)}}
	big := MR{MR: nldev.MR{Len: u64(1<<32 + 4096)}}
	bound := CMID{CMID: nldev.CMID{SrcAddr: netip.MustParseAddrPort("10.77.0.1:7174")}}
	conn := CMID{CMID: nldev.CMID{SrcAddr: netip.MustParseAddrPort("10.77.0.2:43670"), DstAddr: netip.MustParseAddrPort("10.77.0.1:7174")}}
	v6 := CMID{CMID: nldev.CMID{SrcAddr: netip.MustParseAddrPort("[fe80::1]:7174")}}
	cases := []struct {
		name string
		got  bool
		want bool
	}{
		{"cq users 1-3", keep(num("users", "1-3"), func(m ResMatch) bool { return m.CQ(cq) }), true},
		{"cq users 5", keep(num("users", "5"), func(m ResMatch) bool { return m.CQ(cq) }), false},
		{"pd users 1", keep(num("users", "1"), func(m ResMatch) bool { return m.PD(pd) }), true},
		{"pd users 0", keep(num("users", "0"), func(m ResMatch) bool { return m.PD(pd) }), false},
		{"mr mrlen 4096", keep(num("mrlen", "4096"), func(m ResMatch) bool { return m.MR(mr) }), true},
		{"mr mrlen 0-100", keep(num("mrlen", "0-100"), func(m ResMatch) bool { return m.MR(mr) }), false},
		{"mr of 4 GiB+ mrlen 4096", keep(num("mrlen", "4096"), func(m ResMatch) bool { return m.MR(big) }), false},
		{"src-addr of a bound id", keep(names("src-addr", "10.77.0.1"), func(m ResMatch) bool { return m.CMID(bound) }), true},
		{"src-addr list", keep(names("src-addr", "10.0.0.9,10.77.0.2"), func(m ResMatch) bool { return m.CMID(conn) }), true},
		{"src-addr other", keep(names("src-addr", "10.77.0.9"), func(m ResMatch) bool { return m.CMID(bound) }), false},
		{"src-port", keep(num("src-port", "7000-7200"), func(m ResMatch) bool { return m.CMID(bound) }), true},
		{"src-port other", keep(num("src-port", "7175"), func(m ResMatch) bool { return m.CMID(bound) }), false},
		{"dst-addr", keep(names("dst-addr", "10.77.0.1"), func(m ResMatch) bool { return m.CMID(conn) }), true},
		{"dst-addr of an id without one", keep(names("dst-addr", "10.77.0.1"), func(m ResMatch) bool { return m.CMID(bound) }), false},
		{"dst-port of an id without one", keep(num("dst-port", "0-65535"), func(m ResMatch) bool { return m.CMID(bound) }), false},
		{"dst-port", keep(num("dst-port", "7174"), func(m ResMatch) bool { return m.CMID(conn) }), true},
		{"ipv6 src-addr", keep(names("src-addr", "FE80::1"), func(m ResMatch) bool { return m.CMID(v6) }), true},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: kept %v, want %v", c.name, c.got, c.want)
		}
	}
}

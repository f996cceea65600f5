package inventory

import (
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
	qps := []QP{
		{ResHead: ResHead{Dev: "rxe0"}, Port: u32(1), LQPN: u32(1), Type: "GSI", State: "RTS"},
		{ResHead: ResHead{Dev: "rxe0", Owner: Owner{PID: u32(244)}}, Port: u32(1), LQPN: u32(18), RQPN: u32(0), Type: "RC", State: "INIT", PDN: u32(2)},
		{ResHead: ResHead{Dev: "rxe0"}, LQPN: u32(19), Type: "RC", State: "RESET"},
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
	if m.SRQ(SRQ{QPs: []nldev.QPRange{{Min: 10, Max: 19}}}) || !m.SRQ(SRQ{QPs: []nldev.QPRange{{Min: 25, Max: 25}}}) {
		t.Error("SRQ lqpn overlap wrong")
	}
	if err := m.SetNum("cqn", "x"); err == nil {
		t.Error("cqn x accepted")
	}
}

package top

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/sysfs"
)

var t0 = time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)

func cset(dev string, port uint32, src string, kv ...any) inventory.CounterSet {
	s := inventory.CounterSet{Dev: dev, Port: port, Source: src}
	for i := 0; i < len(kv); i += 2 {
		s.Counters = append(s.Counters, sysfs.Counter{Name: kv[i].(string), Value: uint64(kv[i+1].(int))})
	}
	return s
}

func fp(v float64) *float64 { return &v }
func up(v uint32) *uint32   { return &v }

func near(p *float64, want float64) bool {
	return p != nil && math.Abs(*p-want) < 1e-9*math.Max(1, want)
}

func rates(t *testing.T, a, b *inventory.CounterSnapshot) *inventory.RateReport {
	t.Helper()
	rep, err := inventory.Rates(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// rxe counts packets, not bytes: TX/RX are packets/s, bytes null.
func TestRowsRxePackets(t *testing.T) {
	ports := []inventory.Port{{Dev: "rxe0", Port: 1, State: "ACTIVE", RateGbps: fp(10)}, {Dev: "rxe1", Port: 1, State: "ACTIVE", RateGbps: fp(10)}}
	a := &inventory.CounterSnapshot{Time: t0, Sets: []inventory.CounterSet{
		cset("rxe0", 1, inventory.SrcNetlink, "duplicate_request", 0, "rcvd_pkts", 100, "rcvd_rnr_err", 0, "sent_pkts", 50, "send_err", 0),
		cset("rxe1", 1, inventory.SrcNetlink, "rcvd_pkts", 10, "sent_pkts", 1000, "rdma_sends", 0),
	}}
	b := &inventory.CounterSnapshot{Time: t0.Add(2 * time.Second), Sets: []inventory.CounterSet{
		cset("rxe0", 1, inventory.SrcNetlink, "duplicate_request", 4, "rcvd_pkts", 20100, "rcvd_rnr_err", 2, "sent_pkts", 150, "send_err", 6),
		cset("rxe1", 1, inventory.SrcNetlink, "rcvd_pkts", 110, "sent_pkts", 21000, "rdma_sends", 30),
	}}
	rows := Rows(ports, rates(t, a, b))
	if len(rows) != 2 {
		t.Fatalf("rows %+v", rows)
	}
	r0, r1 := rows[0], rows[1]
	if !near(r0.RxPkts, 10000) || !near(r0.TxPkts, 50) || r0.TxBytes != nil || r0.RxBytes != nil || r0.TxShare != nil {
		t.Errorf("rxe0 traffic %+v", r0.Rates)
	}
	if !near(r0.Retrans, 2) || !near(r0.RNR, 1) || !near(r0.Errors, 3) || r0.CNP != nil || r0.Discards != nil {
		t.Errorf("rxe0 events %+v", r0.Rates)
	}
	if !near(r1.TxPkts, 10000) || !near(r1.RxPkts, 50) || !near(r1.Ops, 15) {
		t.Errorf("rxe1 %+v", r1.Rates)
	}
	if got := Columns[ColumnByKey("tx")].Cell(r1); got != "10kp/s" {
		t.Errorf("TX cell %q", got)
	}
}

// PMA data counters count 4-byte words; the share is of the link rate;
// device-level counters of a one-port device count for its port; CNPs and
// ECN marks are told apart, transmit-wait ticks are neither.
func TestRowsPMABytesAndCongestion(t *testing.T) {
	ports := []inventory.Port{{Dev: "mlx5_0", Port: 1, State: "ACTIVE", RateGbps: fp(100)}}
	a := &inventory.CounterSnapshot{Time: t0, Sets: []inventory.CounterSet{
		cset("mlx5_0", 0, inventory.SrcHWCounters, "np_cnp_sent", 0),
		cset("mlx5_0", 1, inventory.SrcCounters, "port_rcv_data", 0, "port_xmit_data", 0, "port_xmit_packets", 0, "port_xmit_wait", 0, "symbol_error", 0),
		cset("mlx5_0", 1, inventory.SrcNetlink, "np_ecn_marked_roce_packets", 0, "out_of_buffer", 0, "rp_cnp_handled", 0),
	}}
	b := &inventory.CounterSnapshot{Time: t0.Add(time.Second), Sets: []inventory.CounterSet{
		cset("mlx5_0", 0, inventory.SrcHWCounters, "np_cnp_sent", 7),
		cset("mlx5_0", 1, inventory.SrcCounters, "port_rcv_data", 625000000, "port_xmit_data", 1250000000, "port_xmit_packets", 1000, "port_xmit_wait", 99999, "symbol_error", 1),
		cset("mlx5_0", 1, inventory.SrcNetlink, "np_ecn_marked_roce_packets", 5, "out_of_buffer", 3, "rp_cnp_handled", 2),
	}}
	r := Rows(ports, rates(t, a, b))[0]
	if !near(r.TxBytes, 5e9) || !near(r.RxBytes, 2.5e9) || !near(r.TxShare, 0.4) || !near(r.RxShare, 0.2) || !near(r.TxPkts, 1000) || r.RxPkts != nil {
		t.Errorf("traffic %+v", r.Rates)
	}
	if !near(r.CNP, 9) || !near(r.ECN, 5) || !near(r.Discards, 3) || !near(r.Errors, 1) {
		t.Errorf("events %+v", r.Rates)
	}
	if got := Columns[ColumnByKey("tx")].Cell(r); got != "40Gb 40%" {
		t.Errorf("TX cell %q", got)
	}
	// Two ports: device-level counters belong to neither.
	ports = append(ports, inventory.Port{Dev: "mlx5_0", Port: 2})
	if r := Rows(ports, rates(t, a, b))[0]; !near(r.CNP, 2) {
		t.Errorf("two ports: CNP %v, want only rp_cnp_handled's 2", r.CNP)
	}
}

// A reset counter is noted (its figure is a lower bound); a port without
// a previous snapshot, and the first frame, have no rates.
func TestRowsResetAndNew(t *testing.T) {
	ports := []inventory.Port{{Dev: "rxe0", Port: 1}, {Dev: "rxe9", Port: 1}}
	a := &inventory.CounterSnapshot{Time: t0, Sets: []inventory.CounterSet{cset("rxe0", 1, inventory.SrcNetlink, "sent_pkts", 1<<40)}}
	b := &inventory.CounterSnapshot{Time: t0.Add(time.Second), Sets: []inventory.CounterSet{
		cset("rxe0", 1, inventory.SrcNetlink, "sent_pkts", 10), cset("rxe9", 1, inventory.SrcNetlink, "sent_pkts", 5)}}
	rep := rates(t, a, b)
	rows := Rows(ports, rep)
	if !near(rows[0].TxPkts, 10) || len(rows[0].Notes) != 1 || rows[0].Notes[0] != "reset: sent_pkts" {
		t.Errorf("reset row %+v", rows[0].Rates)
	}
	if rows[1].TxPkts != nil {
		t.Errorf("new port has a rate: %+v", rows[1].Rates)
	}
	if ev := Events(a, b, rep); len(ev) != 1 || ev[0] != "rxe9/1 netlink counters appeared" {
		t.Errorf("events %q", ev)
	}
	if r := Rows(ports, nil); r[0].TxPkts != nil || r[0].Notes == nil {
		t.Errorf("first frame %+v", r[0])
	}
}

// A renamed device keeps its rates under its new name (inventory.Rates
// matches the NLDEV index) and the rename is said.
func TestRename(t *testing.T) {
	a := &inventory.CounterSnapshot{Time: t0, Index: map[string]uint32{"rxe0": 3}, Sets: []inventory.CounterSet{cset("rxe0", 1, inventory.SrcNetlink, "sent_pkts", 0)}}
	b := &inventory.CounterSnapshot{Time: t0.Add(time.Second), Index: map[string]uint32{"roce0": 3}, Sets: []inventory.CounterSet{cset("roce0", 1, inventory.SrcNetlink, "sent_pkts", 42)}}
	rep := rates(t, a, b)
	rows := Rows([]inventory.Port{{Dev: "roce0", Port: 1}}, rep)
	if !near(rows[0].TxPkts, 42) {
		t.Errorf("renamed row %+v", rows[0].Rates)
	}
	if ev := Events(a, b, rep); len(ev) != 1 || ev[0] != "rxe0 renamed to roce0" {
		t.Errorf("events %q", ev)
	}
}

func TestViewSortAndFilter(t *testing.T) {
	rows := []Row{
		{Dev: "rxe0", Port: 1, Rates: Rates{TxPkts: fp(5), RxPkts: fp(900), Errors: fp(0)}},
		{Dev: "rxe1", Port: 1, Rates: Rates{TxPkts: fp(900), RxPkts: fp(5), Errors: fp(2)}},
		{Dev: "mlx5_0", Port: 1, Rates: Rates{TxBytes: fp(10), RxBytes: fp(0)}},
		{Dev: "new0", Port: 1},
	}
	order := func(v View) string {
		var s []string
		for _, r := range v.Apply(rows) {
			s = append(s, r.Key())
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		v    View
		want string
	}{
		{View{}, "mlx5_0/1 new0/1 rxe0/1 rxe1/1"},
		{View{Reverse: true}, "rxe1/1 rxe0/1 new0/1 mlx5_0/1"},
		{View{SortCol: ColumnByKey("tx")}, "rxe1/1 mlx5_0/1 rxe0/1 new0/1"},
		{View{SortCol: ColumnByKey("rx")}, "rxe0/1 rxe1/1 mlx5_0/1 new0/1"},
		{View{SortCol: ColumnByKey("errors")}, "rxe1/1 rxe0/1 mlx5_0/1 new0/1"},
		{View{SortCol: ColumnByKey("tx"), Reverse: true}, "rxe0/1 mlx5_0/1 rxe1/1 new0/1"},
		{View{Filter: "rxe"}, "rxe0/1 rxe1/1"},
		{View{Filter: "rxe1/1"}, "rxe1/1"},
	} {
		if got := order(c.v); got != c.want {
			t.Errorf("%+v: %s, want %s", c.v, got, c.want)
		}
	}
}

func TestSI(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.04: "0", 0.5: "0.5", 3: "3", 12: "12", 999: "999", 999.7: "1.0k", 1234: "1.2k",
		12345: "12k", 999999: "1.0M", 4.2e9: "4.2G", 1.5e13: "15T"} {
		if got := si(v); got != want {
			t.Errorf("si(%v) = %q, want %q", v, got, want)
		}
	}
}

// A frame of 128 ports and processes fits 80x24 and says what it sorts.
func TestRenderFits(t *testing.T) {
	f := &Frame{Time: t0, Interval: time.Second}
	for i := range 128 {
		f.Rows = append(f.Rows, Row{Dev: "mlx5_" + strings.Repeat("9", i%4), Port: 1, State: "ACTIVE", RateGbps: fp(400),
			Rates: Rates{TxBytes: fp(4.9e10), TxShare: fp(0.98), RxBytes: fp(1e9), RxShare: fp(0.02), Errors: fp(1234), Discards: fp(1e6),
				Retrans: fp(0), OOS: fp(0), RNR: fp(0), CNP: fp(12e3), ECN: fp(99)}})
	}
	f.Procs = []Proc{{PID: 4242, Comm: "a-very-long-command-name", Dev: "mlx5_0", QPs: 1024, CQs: 2, MRs: 3, Traffic: &Rates{TxBytes: fp(1e9), RxPkts: fp(10)}}}
	out := Render(f, View{SortCol: 3}, Plain, 80, 24)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines, want 24", len(lines))
	}
	for _, l := range lines {
		if len(l) > 80 {
			t.Errorf("line of %d columns: %q", len(l), l)
		}
	}
	if !strings.Contains(lines[0], "sort tx") || !strings.Contains(lines[2], "392Gb 98%") {
		t.Errorf("frame:\n%s", out)
	}
	out = Render(f, View{}, Plain, 0, 0)
	if !strings.Contains(out, "   4242 a-very-long-com mlx5_0        1024     2     3 8.0Gb      10p/s          -") {
		t.Errorf("process pane:\n%s", out[strings.Index(out, "    PID"):])
	}
}

// TestRenderEscapesControls: names top draws but did not choose (a
// process's comm, a captured device's name, an event line) cannot write
// escape sequences to the terminal.
func TestRenderEscapesControls(t *testing.T) {
	f := &Frame{Time: t0, Events: []string{"rxe9 renamed to \x1b]0;owned\x07"}}
	f.Rows = []Row{{Dev: "rxe\x1b[2J", Port: 1, State: "ACTIVE"}}
	f.Procs = []Proc{{PID: 7, Comm: "\x1b[1;31mPASS", Dev: "rxe0", QPs: 1}}
	out := Render(f, View{}, Plain, 0, 0)
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("control characters reached the screen:\n%q", out)
	}
	for _, want := range []string{`rxe\x1b[2J/1`, `\x1b[1;31mPASS`, `\x1b]0;owned\x07`} {
		if !strings.Contains(out, want) {
			t.Errorf("%q not shown escaped in\n%s", want, out)
		}
	}
}

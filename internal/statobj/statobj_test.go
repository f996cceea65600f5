package statobj

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

var update = flag.Bool("update", false, "write testdata/*.golden from this tree's output")

func u32(n uint32) *uint32 { return &n }
func yes(b bool) *bool     { return &b }

// fakeSource is an mlx5-like pair of ports with counters of every kind,
// and an rxe port with none. QPCounters keeps the filter it was asked
// with (the inventory applies it).
type fakeSource struct{ asked inventory.QPCounterFilter }

func (f *fakeSource) QPCounters(dev string, port uint32, flt inventory.QPCounterFilter) ([]inventory.QPCounter, error) {
	f.asked = flt
	all := []inventory.QPCounter{
		{DevIndex: 2, Dev: "mlx5_0", Port: 1, ID: 4, QPType: "RC", LQPNs: []uint32{178, 179},
			Counters: []inventory.StatValue{{Name: "rx_write_requests", Value: 12}, {Name: "out_of_sequence", Value: 0}}},
		{DevIndex: 2, Dev: "mlx5_0", Port: 1, ID: 5, Owner: inventory.Owner{PID: u32(4242), Comm: "ib_write_bw"}},
		{DevIndex: 3, Dev: "mlx5_1", Port: 1, ID: 1, QPType: "UD", LQPNs: []uint32{1 << 20}},
	}
	var out []inventory.QPCounter
	for _, c := range all {
		if (dev == "" || dev == c.Dev) && (port == 0 || port == c.Port) {
			out = append(out, c)
		}
	}
	return out, nil
}

func (*fakeSource) QPCounterModes(dev string, port uint32) ([]inventory.QPCounterMode, error) {
	return []inventory.QPCounterMode{
		{DevIndex: 2, Dev: "mlx5_0", Port: 1, Mode: "auto", Auto: []string{"type", "pid"}, OptionalCounters: yes(true)},
		{DevIndex: 3, Dev: "mlx5_1", Port: 1, Mode: "auto", Auto: []string{"type"}},
		{DevIndex: 4, Dev: "mlx5_2", Port: 1, Mode: "manual"},
		{DevIndex: 5, Dev: "rxe0", Port: 1, Mode: "none"},
		{DevIndex: 6, Dev: "mlx5_3", Port: 1, Mode: "auto", OptionalCounters: yes(false)},
	}, nil
}

func (*fakeSource) OptionalCounters(dev string, port uint32) ([]inventory.OptionalCounters, error) {
	return []inventory.OptionalCounters{
		{DevIndex: 2, Dev: "mlx5_0", Port: 1, Supported: []string{"cc_rx_ce_pkts", "cc_rx_cnp_pkts", "cc_tx_cnp_pkts"}, Enabled: []string{"cc_rx_cnp_pkts"}},
		{DevIndex: 3, Dev: "mlx5_1", Port: 1, Supported: []string{"cc_rx_ce_pkts"}, Enabled: []string{}},
		{DevIndex: 5, Dev: "rxe0", Port: 1, Supported: []string{}, Enabled: []string{}, NoStatus: true},
	}, nil
}

func (*fakeSource) MRStatistics(dev string) ([]inventory.MRStat, error) {
	return []inventory.MRStat{
		{DevIndex: 2, Dev: "mlx5_0", MRN: u32(3), Counters: []inventory.StatValue{{Name: "page_faults", Value: 2}, {Name: "page_invalidations", Value: 1}}},
		{DevIndex: 2, Dev: "mlx5_0", MRN: u32(7)},
		{DevIndex: 2, Dev: "mlx5_0"},
	}, nil
}

// goldenCases are the command lines the golden files hold, by object.
var goldenCases = []struct {
	name string
	o    *Object
	q    Query
}{
	{"qp_show", QPCounters, Query{}},
	{"qp_show_link", QPCounters, Query{Dev: "mlx5_1", Port: 1}},
	{"qp_show_none", QPCounters, Query{Dev: "rxe0"}},
	{"qp_mode", QPModes, Query{}},
	{"mode", OptionalCounters, Query{}},
	{"mode_supported", SupportedOptionalCounters, Query{}},
	{"mr", MRs, Query{}},
	{"mr_mrn", MRs, Query{Num: map[string]uint32{"mrn": 7}}},
	{"mr_mrn_none", MRs, Query{Num: map[string]uint32{"mrn": 9}}},
}

// show is what the statistic command prints of rows: the table, then the
// JSON (one line and indented).
func show(o *Object, rows []Row) string {
	var b bytes.Buffer
	tb := render.NewTable(&b, o.Columns...)
	js := make([]any, 0, len(rows))
	for _, r := range rows {
		tb.Row(r.Cells...)
		js = append(js, r.JSON)
	}
	tb.Flush()
	render.JSON(&b, js, false)
	render.JSON(&b, js, true)
	return b.String()
}

// TestGolden: each object's table and JSON over the fake source are
// testdata's, which were written by the statistic command's own code
// before these objects moved out of it (and are the output users read).
func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			rows, err := c.o.Rows(&fakeSource{}, c.q)
			if err != nil {
				t.Fatal(err)
			}
			got := show(c.o, rows)
			file := filepath.Join("testdata", c.name+".golden")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// The number filters of qp show reach the inventory, which applies them.
func TestQPCounterFilter(t *testing.T) {
	f := &fakeSource{}
	if _, err := QPCounters.Rows(f, Query{Num: map[string]uint32{"lqpn": 178, "pid": 4242, "cntn": 4}}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%v %v %v", *f.asked.LQPN, *f.asked.PID, *f.asked.CntN); got != "178 4242 4" {
		t.Errorf("asked lqpn pid cntn %s", got)
	}
	if _, err := QPCounters.Rows(f, Query{}); err != nil || f.asked.LQPN != nil || f.asked.PID != nil || f.asked.CntN != nil {
		t.Errorf("no filters: asked %+v, %v", f.asked, err)
	}
}

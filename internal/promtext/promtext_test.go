package promtext

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// reencode parses out with Prometheus's own text parser and writes it
// back with Prometheus's own encoder, families sorted by name as Write
// sorts them: our bytes must be exactly those.
func reencode(t *testing.T, out []byte) []byte {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, out)
	}
	var names []string
	for n := range mfs {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	for _, n := range names {
		if _, err := expfmt.MetricFamilyToText(&b, mfs[n]); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestWriteMatchesExpfmt(t *testing.T) {
	g := MustDesc("rdma_port_state_id", "Port state.", Gauge, "device", "port")
	c := MustDesc("rdma_hw_sent_pkts_total", "Sent \\ packets\nof a port.", Counter, "device", "port", "category")
	u := MustDesc("rdma_exporter_scrape_success", "1 if fresh.", Untyped)
	ms := []Metric{
		{g, []string{"rxe0", "1"}, 4},
		{c, []string{"rxe0", "1", "traffic_packets"}, 1234567890},
		{u, nil, 1},
		{g, []string{`we"ird\dev` + "\n", "2"}, 1},
		{c, []string{"rxe1", "1", "traffic_packets"}, 0},
		{c, []string{"rxe2", "1", "x"}, 1.5e-7},
		{c, []string{"rxe3", "1", "x"}, math.Inf(1)},
		{g, []string{"rxe3", "1"}, math.Inf(-1)},
		{g, []string{"rxe4", "1"}, math.NaN()},
		{g, []string{"rxe5", "1"}, -1},
		{g, []string{"ünï", "1"}, 18446744073709551615},
	}
	var b bytes.Buffer
	if err := Write(&b, ms); err != nil {
		t.Fatal(err)
	}
	if got, want := b.String(), string(reencode(t, b.Bytes())); got != want {
		t.Errorf("ours:\n%s\nexpfmt:\n%s", got, want)
	}
	for _, line := range []string{
		"# HELP rdma_hw_sent_pkts_total Sent \\\\ packets\\nof a port.\n# TYPE rdma_hw_sent_pkts_total counter\n",
		`rdma_hw_sent_pkts_total{device="rxe0",port="1",category="traffic_packets"} 1.23456789e+09` + "\n",
		`rdma_port_state_id{device="we\"ird\\dev\n",port="2"} 1` + "\n",
		"rdma_exporter_scrape_success 1\n# HELP rdma_hw",
		"# TYPE rdma_exporter_scrape_success untyped\n",
		`{device="rxe4",port="1"} NaN`, `{device="rxe3",port="1"} -Inf`, `} +Inf`, `} 1.5e-07`,
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("no %q in\n%s", line, b.String())
		}
	}
}

func TestWriteDuplicates(t *testing.T) {
	a := MustDesc("m", "help", Gauge, "x")
	other := MustDesc("m", "other help", Gauge, "x")
	same := MustDesc("m", "help", Gauge, "x")
	var b bytes.Buffer
	err := Write(&b, []Metric{{a, []string{"1"}, 1}, {a, []string{"1"}, 2}, {other, []string{"2"}, 3}, {same, []string{"3"}, 4}})
	if !errors.Is(err, ErrDuplicate) {
		t.Fatalf("err %v", err)
	}
	want := "# HELP m help\n# TYPE m gauge\nm{x=\"1\"} 1\nm{x=\"3\"} 4\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestDescChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		labels []string
	}{
		{"", nil}, {"0abc", nil}, {"a-b", nil}, {"ä", nil},
		{"ok", []string{"__name__"}}, {"ok", []string{"a:b"}}, {"ok", []string{"1a"}}, {"ok", []string{"a", "a"}}, {"ok", []string{""}},
	} {
		if _, err := NewDesc(tc.name, "h", Gauge, tc.labels...); err == nil {
			t.Errorf("%q %q accepted", tc.name, tc.labels)
		}
	}
	if _, err := NewDesc("a:b_1", "h", Counter, "_x", "y9"); err != nil {
		t.Error(err)
	}
	d := MustDesc("m", "h", Gauge, "a", "b")
	if _, err := NewMetric(d, 1, "x"); err == nil {
		t.Error("one value for two labels accepted")
	}
	if _, err := NewMetric(d, 1, "x", "\xff"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

// FuzzWrite: any help text, label values and value that the Desc and
// Metric checks accept give an exposition Prometheus's parser reads back
// to the same help, labels and value, byte for byte as its own encoder
// would write it. The inputs stand for kernel strings (device names,
// firmware versions, counter names) that end up in the exposition.
func FuzzWrite(f *testing.F) {
	f.Add("rdma_x_total", "help", "device", "rxe0", 1.0)
	f.Add("m", "a\\b\nc\"", "l", "v\"\\\n", math.NaN())
	f.Add("m:x", "", "_l", "", math.Copysign(0, -1))
	f.Add("m", "ü", "l", "\u2028", 1e300)
	f.Fuzz(func(t *testing.T, name, help, label, value string, v float64) {
		d, err := NewDesc(name, help, Counter, label)
		if err != nil || strings.TrimLeft(help, " \t") != help {
			return // the format has no way to keep help's leading blanks (ours are fixed texts)
		}
		m, err := NewMetric(d, v, value)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := Write(&b, []Metric{m}); err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		mfs, err := p.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("does not parse: %v\n%q", err, b.String())
		}
		mf := mfs[name]
		if mf == nil || mf.GetHelp() != help || len(mf.GetMetric()) != 1 {
			t.Fatalf("family %v from %q", mf, b.String())
		}
		got := mf.GetMetric()[0]
		if l := got.GetLabel(); len(l) != 1 || l[0].GetName() != label || l[0].GetValue() != value {
			t.Fatalf("labels %v from %q", l, b.String())
		}
		if gv := got.GetCounter().GetValue(); gv != v && !(math.IsNaN(gv) && math.IsNaN(v)) {
			t.Fatalf("value %v, want %v", gv, v)
		}
		if want := reencode(t, b.Bytes()); !bytes.Equal(b.Bytes(), want) {
			t.Fatalf("ours %q, expfmt %q", b.Bytes(), want)
		}
	})
}

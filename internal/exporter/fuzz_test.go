package exporter

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// FuzzCounterMetric: whatever name the kernel gives a counter (a sysfs
// file name, an NLDEV string), the metric name is valid in Prometheus's
// classic alphabet, carries the rdma_ prefix and _total, or is "" (no
// metric), and the multiplier is 1 or 4.
func FuzzCounterMetric(f *testing.F) {
	for _, s := range []string{"port_xmit_data", "port_rcv_data", "VL15_dropped", "sent_pkts", "rx_write_requests",
		"np_cnp_sent", "", "_", "port_", "ünïcode", "a-b.c", "0lead", strings.Repeat("x", 300), "bytes", "rx_bytes"} {
		for _, src := range []string{inventory.SrcCounters, inventory.SrcHWCounters, inventory.SrcNetlink} {
			f.Add(src, s, uint32(1))
			f.Add(src, s, uint32(0))
		}
	}
	f.Fuzz(func(t *testing.T, src, name string, port uint32) {
		m, mult := CounterMetric(src, name, port)
		if m == "" {
			if mult != 0 {
				t.Fatalf("%q: no metric but multiplier %d", name, mult)
			}
			return
		}
		if !model.LegacyValidation.IsValidMetricName(m) || !strings.HasPrefix(m, "rdma_") || !strings.HasSuffix(m, "_total") {
			t.Fatalf("%q -> %q: not a valid rdma_..._total name", name, m)
		}
		if mult != 1 && mult != 4 {
			t.Fatalf("%q -> multiplier %d", name, mult)
		}
	})
}

// TestCounterMetricNames pins the naming rules docs/exporter.md states.
func TestCounterMetricNames(t *testing.T) {
	for _, tc := range []struct {
		src, name string
		port      uint32
		want      string
		mult      uint64
	}{
		{inventory.SrcCounters, "port_xmit_data", 1, "rdma_port_xmit_data_bytes_total", 4},
		{inventory.SrcCounters, "port_rcv_packets", 1, "rdma_port_rcv_packets_total", 1},
		{inventory.SrcCounters, "symbol_error", 1, "rdma_port_symbol_error_total", 1},
		{inventory.SrcCounters, "VL15_dropped", 1, "rdma_port_vl15_dropped_total", 1},
		{inventory.SrcNetlink, "sent_pkts", 1, "rdma_hw_sent_pkts_total", 1},
		{inventory.SrcHWCounters, "sent_pkts", 1, "rdma_hw_sent_pkts_total", 1},
		{inventory.SrcHWCounters, "np_cnp_sent", 0, "rdma_device_hw_np_cnp_sent_total", 1},
		{inventory.SrcHWCounters, "--", 1, "", 0},
	} {
		m, mult := CounterMetric(tc.src, tc.name, tc.port)
		if m != tc.want || mult != tc.mult {
			t.Errorf("%s %s port %d: %q x%d, want %q x%d", tc.src, tc.name, tc.port, m, mult, tc.want, tc.mult)
		}
	}
}

package exporter

import (
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// CounterMetric is the metric name of one counter of `rdmactl counters`
// (source and name as inventory.CounterSet has them) and the multiplier
// that turns its value into the metric's unit. Counter names come from
// the kernel (file names, NLDEV strings), so the name is sanitized into
// Prometheus's alphabet; "" means no metric (an empty name).
//
//	counters/NAME        port   rdma_port_NAME_total, "port_" dropped once:
//	                            port_xmit_data -> rdma_port_xmit_data_bytes_total
//	hw_counters/NAME     port   rdma_hw_NAME_total (netlink too: the same counters)
//	hw_counters/NAME     device rdma_device_hw_NAME_total
//
// A counter whose unit is bytes (vocab) ends in _bytes_total.
func CounterMetric(source, name string, port uint32) (metric string, mult uint64) {
	base := sanitize(name)
	if base == "" {
		return "", 0
	}
	mult, _ = inventory.CounterUnit(source, name)
	var prefix string
	switch {
	case source == inventory.SrcCounters:
		prefix = "rdma_port_"
		if b, ok := strings.CutPrefix(base, "port_"); ok && b != "" {
			base = b
		}
	case port == 0:
		prefix = "rdma_device_hw_"
	default:
		prefix = "rdma_hw_"
	}
	if vocab.Counter(name).Unit == vocab.UnitBytes && !strings.HasSuffix(base, "_bytes") && !strings.HasSuffix(base, "bytes") {
		base += "_bytes"
	}
	return prefix + base + "_total", mult
}

// sanitize lowercases name and maps every byte outside [a-z0-9_] to '_'
// (Prometheus metric names are [a-zA-Z_:][a-zA-Z0-9_:]*; the prefix
// supplies the first character). Runs of '_' stay as the kernel has them.
func sanitize(name string) string {
	if len(name) > 200 {
		name = name[:200] // no kernel name is this long; keep series names sane
	}
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'A' && c <= 'Z':
			c += 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '_':
		default:
			c = '_'
		}
		b = append(b, c)
	}
	return strings.Trim(string(b), "_")
}

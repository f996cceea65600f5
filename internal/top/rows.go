// Package top is the model of `rdmactl top`: one row per port from two
// counter snapshots (inventory.Rates, so wraps, resets and devices that
// appear or vanish are handled there), a process pane from the NLDEV
// resources, sorting and filtering, and the text of a frame; and the
// terminal screen that shows the frames and reads keys (screen.go,
// RunScreen).
package top

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/vocab"
)

// Row is one port over one interval.
type Row struct {
	Dev      string   `json:"ifname"`
	Port     uint32   `json:"port"`
	State    string   `json:"state"`
	RateGbps *float64 `json:"link_gbps"`
	Rates
}

// Rates are the per-second figures of a port, or of the QP counters bound
// to a process. A nil pointer is a figure the device does not count (rxe
// counts no bytes) or one without a previous snapshot (the first frame, a
// port that just appeared).
type Rates struct {
	// TxBytes/RxBytes are bytes/s (port_xmit_data, port_rcv_data: sysfs
	// counts 4-byte words, converted here); TxShare/RxShare their share
	// of the link rate, 0..1.
	TxBytes *float64 `json:"tx_bytes_per_s"`
	RxBytes *float64 `json:"rx_bytes_per_s"`
	TxShare *float64 `json:"tx_link_share"`
	RxShare *float64 `json:"rx_link_share"`
	TxPkts  *float64 `json:"tx_packets_per_s"`
	RxPkts  *float64 `json:"rx_packets_per_s"`
	// Ops: operations (traffic counters that count requests or work
	// requests, not packets: rdma_sends, rx_write_requests...).
	Ops *float64 `json:"ops_per_s"`
	// Event rates: the sum of every counter in the category (vocab's
	// counter table), device-level counters included on a single-port
	// device. Nil when there is no such counter.
	Errors   *float64 `json:"errors_per_s"`
	Discards *float64 `json:"discards_per_s"`
	Retrans  *float64 `json:"retransmissions_per_s"`
	OOS      *float64 `json:"out_of_sequence_per_s"`
	RNR      *float64 `json:"rnr_per_s"`
	CNP      *float64 `json:"cnp_per_s"`
	ECN      *float64 `json:"ecn_marked_per_s"`
	// Notes: counters that wrapped, were reset or saturated ("reset:
	// port_rcv_data"), whose figure is then a lower bound.
	Notes []string `json:"notes"`
}

// Key is "dev/port".
func (r Row) Key() string { return fmt.Sprintf("%s/%d", r.Dev, r.Port) }

// The traffic counters, best first: a port counts each direction once, but
// may have it under two names (PMA counters/ and a driver's hw_counters);
// the first present is used so that nothing is counted twice.
var (
	txBytesNames = []string{"port_xmit_data", "port_xmit_data_64"}
	rxBytesNames = []string{"port_rcv_data", "port_rcv_data_64"}
	txPktNames   = []string{"port_xmit_packets", "sent_pkts", "tx_pkt", "tx_pkts", "unicast_xmit_packets"}
	rxPktNames   = []string{"port_rcv_packets", "rcvd_pkts", "rx_pkt", "rx_pkts", "unicast_rcv_packets"}
)

// Rows builds one row per port of ports (in that order) from the rates
// between two snapshots. rep nil (the first frame) gives rows without
// rates.
func Rows(ports []inventory.Port, rep *inventory.RateReport) []Row {
	nports := map[string]int{}
	for _, p := range ports {
		nports[p.Dev]++
	}
	type key struct {
		dev  string
		port uint32
	}
	byPort := map[key][]inventory.Rate{}
	if rep != nil {
		for _, r := range rep.Rates {
			k := key{r.Dev, r.Port}
			if r.Port == 0 { // device-level: only where it is unambiguous
				if nports[r.Dev] != 1 {
					continue
				}
				for _, p := range ports {
					if p.Dev == r.Dev {
						k.port = p.Port
					}
				}
			}
			byPort[k] = append(byPort[k], r)
		}
	}
	out := make([]Row, 0, len(ports))
	for _, p := range ports {
		row := Row{Dev: p.Dev, Port: p.Port, State: p.State, RateGbps: p.RateGbps}
		if rep != nil {
			row.Rates = RatesOf(byPort[key{p.Dev, p.Port}], p.RateGbps)
		}
		if row.Notes == nil {
			row.Notes = []string{} // JSON: [], not null
		}
		out = append(out, row)
	}
	return out
}

// RatesOf sums counter rates (of one port, or of one process's QP
// counters) into Rates; linkGbps gives the link shares.
func RatesOf(rates []inventory.Rate, linkGbps *float64) Rates {
	var row Rates
	if len(rates) == 0 {
		return row
	}
	per := func(r inventory.Rate) float64 {
		m, _ := inventory.CounterUnit(r.Source, r.Name)
		return r.PerSec * float64(m)
	}
	pick := func(names []string) *inventory.Rate {
		for _, n := range names {
			for i := range rates {
				if rates[i].Name == n {
					return &rates[i]
				}
			}
		}
		return nil
	}
	used := map[*inventory.Rate]bool{}
	// set sums the chosen counter over its sets: one for a port (the same
	// name from a second source is the same traffic), every bound counter
	// of a process.
	set := func(dst **float64, names []string) {
		first := pick(names)
		if first == nil {
			return
		}
		v := 0.0
		for i := range rates {
			r := &rates[i]
			if r.Name == first.Name && (r.Source == first.Source || isQPCounter(r.Source) && isQPCounter(first.Source)) {
				v += per(*r)
				used[r] = true
			}
		}
		*dst = &v
	}
	set(&row.TxBytes, txBytesNames)
	set(&row.RxBytes, rxBytesNames)
	set(&row.TxPkts, txPktNames)
	set(&row.RxPkts, rxPktNames)
	if linkGbps != nil && *linkGbps > 0 {
		share := func(b *float64) *float64 {
			if b == nil {
				return nil
			}
			v := *b * 8 / (*linkGbps * 1e9)
			return &v
		}
		row.TxShare, row.RxShare = share(row.TxBytes), share(row.RxBytes)
	}
	add := func(dst **float64, v float64) {
		if *dst == nil {
			*dst = new(float64)
		}
		**dst += v
	}
	for i := range rates {
		r := &rates[i]
		if r.Wrapped || r.Reset || r.Saturated {
			what := "wrapped"
			switch {
			case r.Reset:
				what = "reset"
			case r.Saturated:
				what = "saturated"
			}
			row.Notes = append(row.Notes, what+": "+r.Name)
		}
		if used[r] {
			continue
		}
		v := per(*r)
		info := vocab.Counter(r.Name)
		switch info.Category {
		case vocab.CategoryTrafficPackets:
			if info.Unit == vocab.UnitCount {
				add(&row.Ops, v)
			}
		case vocab.CategoryErrors:
			add(&row.Errors, v)
		case vocab.CategoryDiscards:
			add(&row.Discards, v)
		case vocab.CategoryRetransmissions:
			add(&row.Retrans, v)
		case vocab.CategoryOutOfSequence:
			add(&row.OOS, v)
		case vocab.CategoryRNR:
			add(&row.RNR, v)
		case vocab.CategoryCongestion:
			// CNPs and ECN marks; transmit-wait ticks are neither.
			n := strings.ToLower(r.Name)
			if strings.Contains(n, "cnp") {
				add(&row.CNP, v)
			} else if strings.Contains(n, "ecn") {
				add(&row.ECN, v)
			}
		}
	}
	slices.Sort(row.Notes)
	row.Notes = slices.Compact(row.Notes)
	return row
}

// Events are what happened to the devices between two snapshots, one line
// each: renames (same NLDEV index, new name), and counter sets that
// appeared or vanished.
func Events(prev, cur *inventory.CounterSnapshot, rep *inventory.RateReport) []string {
	var ev []string
	if prev != nil && cur != nil {
		byIdx := map[uint32]string{}
		for n, i := range prev.Index {
			byIdx[i] = n
		}
		for n, i := range cur.Index {
			if old, ok := byIdx[i]; ok && old != n {
				ev = append(ev, fmt.Sprintf("%s renamed to %s", old, n))
			}
		}
	}
	if rep != nil {
		for _, k := range rep.Vanished {
			ev = append(ev, fmt.Sprintf("%s/%d %s counters vanished", k.Dev, k.Port, k.Source))
		}
		for _, k := range rep.Appeared {
			ev = append(ev, fmt.Sprintf("%s/%d %s counters appeared", k.Dev, k.Port, k.Source))
		}
	}
	slices.Sort(ev)
	return ev
}

func isQPCounter(source string) bool { return strings.HasPrefix(source, qpCounterSource) }

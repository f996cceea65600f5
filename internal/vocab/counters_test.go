package vocab

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCapturedNamesKnown: every counter in the captured sysfs trees (rxe
// on 6.1 and the mlx5 tree, internal/sysfs/testdata) is in the table.
// rxe's NLDEV statistics carry the same names as its hw_counters
// (as rdma statistic show prints them for rxe).
func TestCapturedNamesKnown(t *testing.T) {
	var dirs []string
	for _, pat := range []string{"*/class/infiniband/*/ports/*/counters", "*/class/infiniband/*/ports/*/hw_counters",
		"*/class/infiniband/*/hw_counters"} {
		m, _ := filepath.Glob(filepath.Join("..", "sysfs", "testdata", pat))
		dirs = append(dirs, m...)
	}
	n := 0
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() == "lifespan" { // a setting, not a counter
				continue
			}
			n++
			if !Counter(e.Name()).Known {
				t.Errorf("%s/%s: not in the counter table", d, e.Name())
			}
		}
	}
	if n < 50 { // 2x15 rxe, 2x21 PMA, 2x29 mlx5 hw counters
		t.Fatalf("only %d counters found in %v: captured trees missing?", n, dirs)
	}
}

// TestCounterSpotChecks: a few names per category, each with what the
// kernel source says it counts.
func TestCounterSpotChecks(t *testing.T) {
	for _, c := range []struct {
		name string
		cat  Category
		unit Unit
		why  string
	}{
		// core/sysfs.c: PORT_PMA_ATTR(port_xmit_data, 12, 32, 192); IBA: "divided by 4".
		{"port_xmit_data", CategoryTrafficBytes, UnitBytes, "PortXmitData"},
		// mlx5/counters.c packets_op_cnts: RDMA_TX_BYTES reads the flow counter's bytes.
		{"rdma_tx_bytes", CategoryTrafficBytes, UnitBytes, "is_rdma_bytes_counter"},
		// rxe_recv.c rxe_rcv: rxe_counter_inc(rxe, RXE_CNT_RCVD_PKTS) once the ICRC checked.
		{"rcvd_pkts", CategoryTrafficPackets, UnitPackets, "RXE_CNT_RCVD_PKTS"},
		{"port_rcv_packets", CategoryTrafficPackets, UnitPackets, "PortRcvPkts"},
		// mlx5 basic_q_cnts: INIT_Q_COUNTER(rx_write_requests), requests not packets.
		{"rx_write_requests", CategoryTrafficPackets, UnitCount, "query_q_counter_out"},
		// rxe_net.c rxe_xmit_packet: on a send failure rxe_counter_inc(rxe, RXE_CNT_SEND_ERR).
		{"send_err", CategoryErrors, UnitCount, "RXE_CNT_SEND_ERR"},
		// rxe_net.c rxe_notify: NETDEV_DOWN -> rxe_counter_inc(rxe, RXE_CNT_LINK_DOWNED).
		{"link_downed", CategoryErrors, UnitCount, "RXE_CNT_LINK_DOWNED"},
		{"symbol_error", CategoryErrors, UnitCount, "SymbolErrorCounter"},
		{"req_remote_access_errors", CategoryErrors, UnitCount, "extended_err_cnts"},
		// mlx5 basic_q_cnts out_of_buffer: drops for lack of a receive WQE.
		{"out_of_buffer", CategoryDiscards, UnitPackets, "out_of_buffer"},
		{"port_xmit_discards", CategoryDiscards, UnitPackets, "PortXmitDiscards"},
		{"rx_drops", CategoryDiscards, UnitPackets, "EFA_RX_DROPS"},
		// rxe: RXE_CNT_DUP_REQ, a request the responder had already executed.
		{"duplicate_request", CategoryRetransmissions, UnitCount, "RXE_CNT_DUP_REQ"},
		{"local_ack_timeout_err", CategoryRetransmissions, UnitCount, "retrans_q_cnts"},
		{"to_retransmits", CategoryRetransmissions, UnitCount, "BNXT_RE_TO_RETRANSMITS"},
		// rxe_comp.c: AETH_NAK_PSN_SEQ_ERROR -> rxe_counter_inc(rxe, RXE_CNT_RCV_SEQ_ERR).
		{"rcvd_seq_err", CategoryOutOfSequence, UnitCount, "RXE_CNT_RCV_SEQ_ERR"},
		{"out_of_sequence", CategoryOutOfSequence, UnitPackets, "out_of_seq_q_cnts"},
		{"out_of_seq_request", CategoryOutOfSequence, UnitCount, "RXE_CNT_OUT_OF_SEQ_REQ"},
		// rxe_comp.c: case AETH_RNR_NAK: rxe_counter_inc(rxe, RXE_CNT_RCV_RNR).
		{"rcvd_rnr_err", CategoryRNR, UnitCount, "RXE_CNT_RCV_RNR"},
		// rxe_resp.c: RESPST_ERR_RNR -> rxe_counter_inc(rxe, RXE_CNT_SND_RNR), then an RNR NAK.
		{"send_rnr_err", CategoryRNR, UnitCount, "RXE_CNT_SND_RNR"},
		{"rnr_nak_retry_err", CategoryRNR, UnitCount, "retrans_q_cnts"},
		// mlx5 cong_cnts: query_cong_statistics_out np_cnp_sent / rp_cnp_handled.
		{"np_cnp_sent", CategoryCongestion, UnitPackets, "cong_cnts"},
		{"rp_cnp_handled", CategoryCongestion, UnitPackets, "cong_cnts"},
		{"np_ecn_marked_roce_packets", CategoryCongestion, UnitPackets, "cong_cnts"},
		{"RxECNMrkd", CategoryCongestion, UnitPackets, "IRDMA_HW_STAT_INDEX_RXNPECNMARKEDPKTS"},
		{"ack_deferred", CategoryOther, UnitCount, "RXE_CNT_COMPLETER_SCHED"},
	} {
		got := Counter(c.name)
		if !got.Known || got.Category != c.cat || got.Unit != c.unit {
			t.Errorf("%s (%s): %+v, want %v/%v", c.name, c.why, got, c.cat, c.unit)
		}
	}
}

func TestCounterUnknownAndScale(t *testing.T) {
	if c := Counter("no_such_counter"); c.Known || c.Category != CategoryOther || c.Unit != UnitCount || c.PMAWords {
		t.Errorf("unknown: %+v", c)
	}
	if Counter("lifespan").Known {
		t.Error("lifespan is a setting")
	}
	// Only the PMA data counters count 4-byte words (the old sysfs.UnitBytes).
	for _, n := range CounterNames() {
		want := n == "port_xmit_data" || n == "port_rcv_data" || n == "port_xmit_data_64" || n == "port_rcv_data_64"
		if Counter(n).PMAWords != want {
			t.Errorf("%s: PMAWords %v", n, !want)
		}
	}
	if c := Counter("vport_out_of_buffer"); !c.Known || c.Category != CategoryDiscards {
		t.Errorf("vport twin: %+v", c)
	}
	if Counter("vport_rx_pkts").Known {
		t.Error("vport_ only for mlx5's q counters")
	}
	for c, want := range map[Category]string{CategoryOther: "other", CategoryTrafficBytes: "traffic_bytes",
		CategoryTrafficPackets: "traffic_packets", CategoryErrors: "errors", CategoryDiscards: "discards",
		CategoryRetransmissions: "retransmissions", CategoryOutOfSequence: "out_of_sequence", CategoryRNR: "rnr",
		CategoryCongestion: "congestion", 200: "other"} {
		if c.String() != want {
			t.Errorf("Category(%d) = %q, want %q", c, c.String(), want)
		}
	}
	for u, want := range map[Unit]string{UnitCount: "count", UnitBytes: "bytes", UnitPackets: "packets"} {
		if u.String() != want {
			t.Errorf("Unit(%d) = %q", u, u.String())
		}
	}
}

// TestCounterTablesAgree: a name two drivers share (rx_pkts in bnxt_re
// and efa, out_of_buffer in mlx5 and bnxt_re) means the same in both, and
// every vport_ twin has a plain entry.
func TestCounterTablesAgree(t *testing.T) {
	seen := map[string]CounterInfo{}
	for _, m := range counterTables() {
		for n, c := range m {
			if old, ok := seen[n]; ok && old != c {
				t.Errorf("%s: %+v and %+v", n, old, c)
			}
			seen[n] = c
		}
	}
	for n := range mlx5VportTwin {
		if _, ok := counterTable()[n]; !ok {
			t.Errorf("vport twin %s has no entry", n)
		}
	}
}

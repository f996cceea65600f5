package vocab

import (
	"strings"
	"sync"
)

// Category sorts a counter by what its movement means, so that doctor,
// top, the exporter and perf's deltas group counters of every driver the
// same way.
//
// The rule, where a counter could fit two: the mechanism wins. RNR
// anything (NAKs sent or received, RNR retries exhausted) is rnr;
// timeouts, retries, duplicates and "retries exceeded" are
// retransmissions; PSN sequence errors and out-of-order packets are
// out_of_sequence; CNPs, ECN marks and transmit-wait ticks are congestion;
// packets dropped for lack of buffers or WQEs are discards; any other
// failure is errors. Operation counts (requests, work requests) are
// traffic_packets with unit count.
type Category uint8

// Categories; CategoryOther is also every unknown name.
const (
	CategoryOther Category = iota
	CategoryTrafficBytes
	CategoryTrafficPackets
	CategoryErrors
	CategoryDiscards
	CategoryRetransmissions
	CategoryOutOfSequence
	CategoryRNR
	CategoryCongestion
)

var categoryNames = [...]string{"other", "traffic_bytes", "traffic_packets", "errors", "discards",
	"retransmissions", "out_of_sequence", "rnr", "congestion"}

// String is the snake_case name JSON carries ("traffic_bytes", ...).
func (c Category) String() string {
	if int(c) < len(categoryNames) {
		return categoryNames[c]
	}
	return "other"
}

// Unit is what one step of a counter (after Scale) measures.
type Unit uint8

// Units.
const (
	UnitCount Unit = iota // events, operations, ticks
	UnitBytes
	UnitPackets
)

// String is "count", "bytes" or "packets".
func (u Unit) String() string {
	switch u {
	case UnitBytes:
		return "bytes"
	case UnitPackets:
		return "packets"
	}
	return "count"
}

// CounterInfo is what the table knows of one counter name.
type CounterInfo struct {
	Category Category
	Unit     Unit
	// PMAWords is true for port_xmit_data and port_rcv_data: in a port's
	// sysfs counters/ (the IBA PortCounters attribute) they count 32-bit
	// words, "divided by 4" (IBA 16.1.3.5), so bytes = value * 4 there.
	PMAWords bool
	// Known is false for a name the table does not have (then
	// CategoryOther, UnitCount).
	Known bool
}

// PMAWordBytes is the byte size of one port_xmit_data/port_rcv_data unit.
const PMAWordBytes = 4

// Counter looks name up; an unknown name is other/count with Known false.
// mlx5's "vport_" counters (switchdev representors) are their plain twins.
func Counter(name string) CounterInfo {
	if e, ok := counterTable()[name]; ok {
		e.Known = true
		return e
	}
	if base, ok := strings.CutPrefix(name, "vport_"); ok {
		if e, ok := counterTable()[base]; ok && mlx5VportTwin[base] {
			e.Known = true
			return e
		}
	}
	return CounterInfo{}
}

// CounterNames lists every name the table has (vport_ twins excluded),
// for tests and documentation.
func CounterNames() []string {
	out := make([]string, 0, len(counterTable()))
	for n := range counterTable() {
		out = append(out, n)
	}
	return out
}

func c(cat Category, u Unit) CounterInfo { return CounterInfo{Category: cat, Unit: u} }

var (
	bytesC   = c(CategoryTrafficBytes, UnitBytes)
	packetsC = c(CategoryTrafficPackets, UnitPackets)
	opsC     = c(CategoryTrafficPackets, UnitCount)
	errC     = c(CategoryErrors, UnitCount)
	errPktC  = c(CategoryErrors, UnitPackets)
	discardC = c(CategoryDiscards, UnitPackets)
	retransC = c(CategoryRetransmissions, UnitCount)
	oosC     = c(CategoryOutOfSequence, UnitCount)
	rnrC     = c(CategoryRNR, UnitCount)
	congC    = c(CategoryCongestion, UnitPackets)
	otherC   = c(CategoryOther, UnitCount)
)

// counterTables: the names of the kernel's counter tables, by source;
// counterTable is their union. Both are built on first use, not at package
// init: every rdmactl run pays the init of every package, and most
// commands never look a counter up.
func counterTables() []map[string]CounterInfo {
	return []map[string]CounterInfo{
		// PMA PortCounters and PortCountersExtended, ports/N/counters/
		// (drivers/infiniband/core/sysfs.c, PORT_PMA_ATTR / PORT_PMA_ATTR_EXT).
		// The _64 names are kept from rdmactl's earlier unit table.
		map[string]CounterInfo{
			"symbol_error":                    errC,
			"link_error_recovery":             errC,
			"link_downed":                     errC, // also rxe's hw counter of NETDEV_DOWN
			"port_rcv_errors":                 errPktC,
			"port_rcv_remote_physical_errors": errPktC,
			"port_rcv_switch_relay_errors":    discardC,
			"port_xmit_discards":              discardC,
			"port_xmit_constraint_errors":     errPktC,
			"port_rcv_constraint_errors":      errPktC,
			"local_link_integrity_errors":     errC,
			"excessive_buffer_overrun_errors": errC,
			"VL15_dropped":                    discardC,
			"port_xmit_data":                  {Category: CategoryTrafficBytes, Unit: UnitBytes, PMAWords: true},
			"port_rcv_data":                   {Category: CategoryTrafficBytes, Unit: UnitBytes, PMAWords: true},
			"port_xmit_data_64":               {Category: CategoryTrafficBytes, Unit: UnitBytes, PMAWords: true},
			"port_rcv_data_64":                {Category: CategoryTrafficBytes, Unit: UnitBytes, PMAWords: true},
			"port_xmit_packets":               packetsC,
			"port_rcv_packets":                packetsC,
			"port_xmit_wait":                  c(CategoryCongestion, UnitCount), // ticks with data queued and none sent
			"unicast_xmit_packets":            packetsC,
			"unicast_rcv_packets":             packetsC,
			"multicast_xmit_packets":          packetsC,
			"multicast_rcv_packets":           packetsC,
		},
		// rxe: drivers/infiniband/sw/rxe/rxe_hw_counters.c rxe_counter_name.
		map[string]CounterInfo{
			"sent_pkts":              packetsC,
			"rcvd_pkts":              packetsC,
			"duplicate_request":      retransC, // also mlx5's retrans_q_cnts
			"out_of_seq_request":     oosC,
			"rcvd_rnr_err":           rnrC,
			"send_rnr_err":           rnrC,
			"rcvd_seq_err":           oosC,
			"ack_deferred":           otherC,
			"retry_exceeded_err":     retransC,
			"retry_rnr_exceeded_err": rnrC,
			"completer_retry_err":    retransC,
			"send_err":               errC,
			"rdma_sends":             opsC,
			"rdma_recvs":             opsC,
		},
		// mlx5: drivers/infiniband/hw/mlx5/counters.c (basic, out_of_seq,
		// retrans, cong, extended_err, roce_accl, ext_ppcnt and op counters).
		map[string]CounterInfo{
			"rx_write_requests":              opsC,
			"rx_read_requests":               opsC,
			"rx_atomic_requests":             opsC,
			"rx_dct_connect":                 otherC,
			"out_of_buffer":                  discardC,
			"out_of_sequence":                c(CategoryOutOfSequence, UnitPackets),
			"rnr_nak_retry_err":              rnrC,
			"packet_seq_err":                 oosC,
			"implied_nak_seq_err":            oosC,
			"local_ack_timeout_err":          retransC,
			"rp_cnp_ignored":                 congC,
			"rp_cnp_handled":                 congC,
			"np_ecn_marked_roce_packets":     congC,
			"np_cnp_sent":                    congC,
			"resp_local_length_error":        errC,
			"resp_cqe_error":                 errC,
			"req_cqe_error":                  errC,
			"req_remote_invalid_request":     errC,
			"req_remote_access_errors":       errC,
			"resp_remote_access_errors":      errC,
			"resp_cqe_flush_error":           errC,
			"req_cqe_flush_error":            errC,
			"req_transport_retries_exceeded": retransC,
			"req_rnr_retries_exceeded":       rnrC,
			"roce_adp_retrans":               retransC,
			"roce_adp_retrans_to":            retransC,
			"roce_slow_restart":              retransC,
			"roce_slow_restart_cnps":         c(CategoryCongestion, UnitCount),
			"roce_slow_restart_trans":        retransC,
			"rx_icrc_encapsulated":           errPktC,
			"cc_rx_ce_pkts":                  congC,
			"cc_rx_cnp_pkts":                 congC,
			"cc_tx_cnp_pkts":                 congC,
			"rdma_tx_packets":                packetsC,
			"rdma_tx_bytes":                  bytesC,
			"rdma_rx_packets":                packetsC,
			"rdma_rx_bytes":                  bytesC,
		},
		// bnxt_re: drivers/infiniband/hw/bnxt_re/hw_counters.c
		// bnxt_re_stat_descs, old and new spellings (the driver renamed some
		// to mlx5's names, which are above).
		map[string]CounterInfo{
			"active_pds": otherC, "active_ahs": otherC, "active_qps": otherC, "active_srqs": otherC,
			"active_cqs": otherC, "active_mrs": otherC, "active_mws": otherC,
			"rx_pkts":                packetsC, // also efa
			"rx_bytes":               bytesC,   // also efa
			"tx_pkts":                packetsC, // also efa
			"tx_bytes":               bytesC,   // also efa
			"recoverable_errors":     errC,
			"rx_roce_errors":         errPktC,
			"rx_roce_discards":       discardC,
			"to_retransmits":         retransC,
			"seq_err_naks_rcvd":      oosC,
			"max_retry_exceeded":     retransC,
			"rnr_naks_rcvd":          rnrC,
			"missing_resp":           errC,
			"unrecoverable_err":      errC,
			"bad_resp_err":           errC,
			"local_qp_op_err":        errC,
			"local_protection_err":   errC,
			"mem_mgmt_op_err":        errC,
			"remote_invalid_req_err": errC,
			"remote_access_err":      errC,
			"remote_op_err":          errC,
			"dup_req":                retransC,
			"res_exceed_max":         errC, "res_length_mismatch": errC, "res_exceeds_wqe": errC,
			"res_opcode_err": errC, "res_rx_invalid_rkey": errC, "res_rx_domain_err": errC,
			"res_rx_no_perm": errC, "res_rx_range_err": errC, "res_tx_invalid_rkey": errC,
			"res_tx_domain_err": errC, "res_tx_no_perm": errC, "res_tx_range_err": errC,
			"res_irrq_oflow": errC, "res_unsup_opcode": errC, "res_unaligned_atomic": errC,
			"res_rem_inv_err": errC, "res_mem_err": errC, "res_srq_err": errC, "res_cmp_err": errC,
			"res_invalid_dup_rkey": errC, "res_wqe_format_err": errC, "res_cq_load_err": errC,
			"res_srq_load_err": errC, "res_tx_pci_err": errC, "res_rx_pci_err": errC,
			"oos_drop_count":     c(CategoryOutOfSequence, UnitPackets),
			"tx_atomic_req":      opsC,
			"tx_read_req":        opsC,
			"tx_read_resp":       opsC,
			"tx_write_req":       opsC,
			"tx_send_req":        opsC,
			"rx_atomic_req":      opsC,
			"rx_read_req":        opsC,
			"rx_read_resp":       opsC,
			"rx_write_req":       opsC,
			"rx_send_req":        opsC,
			"tx_roce_only_pkts":  packetsC,
			"tx_roce_only_bytes": bytesC,
			"rx_roce_only_pkts":  packetsC,
			"rx_roce_only_bytes": bytesC,
			"rx_roce_good_pkts":  packetsC,
			"rx_roce_good_bytes": bytesC,
			"rx_good_pkts":       packetsC,
			"rx_good_bytes":      bytesC,
			"rx_out_of_buffer":   discardC,
			"tx_cnp_pkts":        congC,
			"rx_cnp_pkts":        congC,
			"rx_ecn_marked_pkts": congC,
			"np_cnp_pkts":        congC,
			"pacing_reschedule":  otherC,
			"pacing_complete":    otherC,
			"pacing_alerts":      otherC,
			"db_fifo_register":   otherC,
		},
		// irdma: drivers/infiniband/hw/irdma/verbs.c irdma_hw_stat_names.
		map[string]CounterInfo{
			"ip4InDiscards": discardC, "ip4InTruncatedPkts": errPktC, "ip4OutNoRoutes": discardC,
			"ip6InDiscards": discardC, "ip6InTruncatedPkts": errPktC, "ip6OutNoRoutes": discardC,
			"tcpRetransSegs": c(CategoryRetransmissions, UnitPackets), "tcpInOptErrors": errPktC,
			"tcpInProtoErrors": errPktC, "rxVlanErrors": errPktC,
			"ip4InOctets": bytesC, "ip4InPkts": packetsC, "ip4InReasmRqd": otherC, "ip4InMcastPkts": packetsC,
			"ip4OutOctets": bytesC, "ip4OutPkts": packetsC, "ip4OutSegRqd": otherC, "ip4OutMcastPkts": packetsC,
			"ip6InOctets": bytesC, "ip6InPkts": packetsC, "ip6InReasmRqd": otherC, "ip6InMcastPkts": packetsC,
			"ip6OutOctets": bytesC, "ip6OutPkts": packetsC, "ip6OutSegRqd": otherC, "ip6OutMcastPkts": packetsC,
			"tcpInSegs": packetsC, "tcpOutSegs": packetsC,
			"iwInRdmaReads": opsC, "iwInRdmaSends": opsC, "iwInRdmaWrites": opsC,
			"iwOutRdmaReads": opsC, "iwOutRdmaSends": opsC, "iwOutRdmaWrites": opsC,
			"iwRdmaBnd": otherC, "iwRdmaInv": otherC,
			"cnpHandled": congC, "cnpIgnored": congC, "cnpSent": congC,
			"ip4InMcastOctets": bytesC, "ip4OutMcastOctets": bytesC, "ip6InMcastOctets": bytesC, "ip6OutMcastOctets": bytesC,
			"RxUDP": packetsC, "TxUDP": packetsC, "RxECNMrkd": congC,
		},
		// efa: drivers/infiniband/hw/efa/efa_verbs.c EFA_DEFINE_DEVICE_STATS
		// and EFA_DEFINE_PORT_STATS (tx/rx bytes and pkts are above).
		map[string]CounterInfo{
			"submitted_cmds": otherC, "completed_cmds": otherC, "cmds_err": errC, "no_completion_cmds": errC,
			"keep_alive_rcvd": otherC, "alloc_pd_err": errC, "create_qp_err": errC, "create_cq_err": errC,
			"reg_mr_err": errC, "alloc_ucontext_err": errC, "create_ah_err": errC, "mmap_err": errC,
			"rx_drops":   discardC,
			"send_bytes": bytesC, "send_wrs": opsC, "recv_bytes": bytesC, "recv_wrs": opsC,
			"rdma_read_wrs": opsC, "rdma_read_bytes": bytesC, "rdma_read_wr_err": errC, "rdma_read_resp_bytes": bytesC,
			"rdma_write_wrs": opsC, "rdma_write_bytes": bytesC, "rdma_write_wr_err": errC, "rdma_write_recv_bytes": bytesC,
			"retrans_bytes": c(CategoryRetransmissions, UnitBytes), "retrans_pkts": c(CategoryRetransmissions, UnitPackets),
			"retrans_timeout_events": retransC, "unresponsive_remote_events": errC, "impaired_remote_conn_events": errC,
		},
		// hns: drivers/infiniband/hw/hns/hns_roce_main.c hns_roce_port_stats_descs
		// (the DFX driver counters, then the hardware's).
		map[string]CounterInfo{
			"aeqe": otherC, "ceqe": otherC, "cmds": otherC, "posted_mbx": otherC, "polled_mbx": otherC,
			"mbx_event": otherC, "qp_create_err": errC, "qp_modify_err": errC, "cq_create_err": errC,
			"srq_create_err": errC, "xrcd_alloc_err": errC, "mr_reg_err": errC, "mr_rereg_err": errC,
			"ah_create_err": errC, "uctx_alloc_err": errC,
			"rx_rc_pkt": packetsC, "rx_uc_pkt": packetsC, "rx_ud_pkt": packetsC, "rx_xrc_pkt": packetsC,
			"rx_pkt": packetsC, "rx_err_pkt": errPktC, "rx_cnp_pkt": congC,
			"tx_rc_pkt": packetsC, "tx_uc_pkt": packetsC, "tx_ud_pkt": packetsC, "tx_xrc_pkt": packetsC,
			"tx_pkt": packetsC, "tx_err_pkt": errPktC, "tx_cnp_pkt": congC,
			"cq_cqe": otherC, "cq_poe": otherC, "cq_notify": otherC,
		},
	}
}

var counterTable = sync.OnceValue(func() map[string]CounterInfo { return merge(counterTables()...) })

// mlx5VportTwin: the q counters mlx5 also names "vport_"+name
// (INIT_VPORT_Q_COUNTER in counters.c).
var mlx5VportTwin = map[string]bool{
	"rx_write_requests": true, "rx_read_requests": true, "rx_atomic_requests": true, "rx_dct_connect": true,
	"out_of_buffer": true, "out_of_sequence": true, "duplicate_request": true, "rnr_nak_retry_err": true,
	"packet_seq_err": true, "implied_nak_seq_err": true, "local_ack_timeout_err": true,
	"resp_local_length_error": true, "resp_cqe_error": true, "req_cqe_error": true,
	"req_remote_invalid_request": true, "req_remote_access_errors": true, "resp_remote_access_errors": true,
	"resp_cqe_flush_error": true, "req_cqe_flush_error": true, "req_transport_retries_exceeded": true,
	"req_rnr_retries_exceeded": true, "roce_adp_retrans": true, "roce_adp_retrans_to": true,
	"roce_slow_restart": true, "roce_slow_restart_cnps": true, "roce_slow_restart_trans": true,
}

// merge joins the per-driver tables; a name two drivers share must mean
// the same there (checked by the tests, which see the tables apart).
func merge(ms ...map[string]CounterInfo) map[string]CounterInfo {
	out := map[string]CounterInfo{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

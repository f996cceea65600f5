package mlx5cmd

import (
	"fmt"
	"sync"
)

// QUERY_HCA_CAP (mlx5_ifc.h query_hca_cap_in_bits / _out_bits): op_mod is
// (capability type << 1) | 1 for the current values, | 0 for the device
// maximum; the answer's capability page starts at bit 0x80 (byte 16) and is
// 0x1000 bytes (union mlx5_ifc_hca_cap_union_bits).
const (
	hcaCapInBytes  = 16
	hcaCapPageOff  = 0x80 // bits
	hcaCapOutBytes = 16 + 0x1000
)

// CapType selects a capability page (MLX5_CAP_* in the mlx5 driver).
type CapType uint16

const (
	CapGeneral CapType = 0x0 // cmd_hca_cap_bits
	CapODP     CapType = 0x2 // odp_cap_bits
	CapAtomic  CapType = 0x3 // atomic_caps_bits
	CapRoCE    CapType = 0x4 // roce_cap_bits
	CapQoS     CapType = 0xc // qos_cap_bits
)

func (t CapType) String() string {
	switch t {
	case CapGeneral:
		return "general"
	case CapODP:
		return "odp"
	case CapAtomic:
		return "atomic"
	case CapRoCE:
		return "roce"
	case CapQoS:
		return "qos"
	}
	return fmt.Sprintf("cap_type_%#x", uint16(t))
}

// QueryHCACapIn is the QUERY_HCA_CAP command for page t, current values
// (what the firmware runs with) when current, else the device maximum.
func QueryHCACapIn(t CapType, current bool) []byte {
	opMod := uint32(t) << 1
	if current {
		opMod |= 1
	}
	return newIn(hcaCapInBytes, OpQueryHCACap, opMod)
}

// capFields: the fields decoded from each page, the ones `rdmactl dev
// hca-caps` shows. Offsets in bits within the page (prm_test.go cites each
// against mlx5_ifc.h). Built on first use, not at every rdmactl start (the
// ODP names are made by concatenation).
var capFields = sync.OnceValue(func() map[CapType][]Field {
	return map[CapType][]Field{
		CapGeneral: {
			{"vhca_id", 0x30, 16},
			{"log_max_srq_sz", 0x80, 8},
			{"log_max_qp_sz", 0x88, 8},
			{"log_max_qp", 0x9b, 5},
			{"log_max_srq", 0xab, 5},
			{"log_max_cq_sz", 0xc8, 8},
			{"log_max_cq", 0xdb, 5},
			{"log_max_eq_sz", 0xe0, 8},
			{"log_max_mkey", 0xea, 6},
			{"log_max_eq", 0xfc, 4},
			{"max_indirection", 0x100, 8},
			{"log_max_mrw_sz", 0x109, 7},
			{"log_max_klm_list_size", 0x11a, 6},
			{"log_max_ra_req_dc", 0x12a, 6},
			{"log_max_ra_res_dc", 0x13a, 6},
			{"log_max_ra_req_qp", 0x14a, 6},
			{"log_max_ra_res_qp", 0x15a, 6},
			{"cc_query_allowed", 0x161, 1},
			{"cc_modify_allowed", 0x162, 1},
			{"cache_line_128byte", 0x164, 1},
			{"gid_table_size", 0x170, 16},
			{"out_of_seq_cnt", 0x180, 1},
			{"vport_counters", 0x181, 1},
			{"retransmission_q_counters", 0x182, 1},
			{"max_qp_cnt", 0x186, 10},
			{"pkey_table_size", 0x190, 16},
			{"vport_group_manager", 0x1a0, 1},
			{"ib_virt", 0x1a2, 1},
			{"eth_virt", 0x1a3, 1},
			{"ets", 0x1a5, 1},
			{"nic_flow_table", 0x1a6, 1},
			{"eswitch_manager", 0x1a7, 1},
			{"device_memory", 0x1a8, 1},
			{"local_ca_ack_delay", 0x1ab, 5},
			{"enhanced_error_q_counters", 0x1b1, 1},
			{"port_type", 0x1b6, 2},
			{"num_ports", 0x1b8, 8},
			{"pps", 0x1c1, 1},
			{"log_max_msg", 0x1c3, 5},
			{"max_tc", 0x1cc, 4},
			{"dcbx", 0x1d1, 1},
			{"stat_rate_support", 0x1e0, 16},
			{"cqe_version", 0x1fc, 4},
			{"compact_address_vector", 0x200, 1},
			{"striding_rq", 0x201, 1},
			{"umr_fence", 0x20a, 2},
			{"cmdif_checksum", 0x210, 2},
			{"sigerr_cqe", 0x212, 1},
			{"wq_signature", 0x214, 1},
			{"sctr_data_cqe", 0x215, 1},
			{"dct", 0x21a, 1},
			{"qos", 0x21b, 1},
			{"eth_net_offloads", 0x21c, 1},
			{"roce", 0x21d, 1},
			{"atomic", 0x21e, 1},
			{"cq_oi", 0x220, 1},
			{"cq_resize", 0x221, 1},
			{"cq_moderation", 0x222, 1},
			{"cq_eq_remap", 0x226, 1},
			{"pg", 0x227, 1},
			{"block_lb_mc", 0x228, 1},
			{"cd", 0x22c, 1},
			{"apm", 0x22e, 1},
			{"xrc", 0x23c, 1},
			{"ud", 0x23d, 1},
			{"uc", 0x23e, 1},
			{"rc", 0x23f, 1},
			{"uar_4k", 0x240, 1},
			{"uar_sz", 0x24a, 6},
			{"log_pg_sz", 0x258, 8},
			{"bf", 0x260, 1},
			{"log_bf_reg_size", 0x26b, 5},
			{"max_wqe_sz_sq", 0x290, 16},
			{"max_wqe_sz_rq", 0x2b0, 16},
			{"max_wqe_sz_sq_dc", 0x2d0, 16},
			{"max_qp_mcg", 0x2e7, 25},
			{"log_max_mcg", 0x318, 8},
			{"log_max_transport_domain", 0x323, 5},
			{"log_max_pd", 0x32b, 5},
			{"log_max_xrcd", 0x33b, 5},
			{"log_max_rq", 0x363, 5},
			{"log_max_sq", 0x36b, 5},
			{"log_max_tir", 0x373, 5},
			{"log_max_tis", 0x37b, 5},
			{"log_max_wq_sz", 0x3db, 5},
			{"general_obj_types", 0x400, 64},
			{"log_max_uctx", 0x463, 5},
			{"log_max_umem", 0x46b, 5},
			{"max_num_eqs", 0x470, 16},
			{"log_uar_page_sz", 0x490, 16},
			{"device_frequency_mhz", 0x4c0, 32},
			{"device_frequency_khz", 0x4e0, 32},
			{"num_of_uars_per_page", 0x520, 32},
			{"cqe_compression", 0x5bf, 1},
			{"cqe_compression_timeout", 0x5c0, 16},
			{"cqe_compression_max_num", 0x5d0, 16},
			{"tag_matching", 0x5f0, 1},
			{"native_port_num", 0x608, 8},
			{"num_vhca_ports", 0x610, 8},
		},
		CapRoCE: {
			{"roce_apm", 0x0, 1},
			{"l3_type", 0x8c, 4},
			{"roce_version", 0x98, 8},
			{"r_roce_dest_udp_port", 0xb0, 16},
			{"r_roce_max_src_udp_port", 0xc0, 16},
			{"r_roce_min_src_udp_port", 0xd0, 16},
			{"roce_address_table_size", 0xf0, 16},
		},
		CapODP: odpFields(),
		CapAtomic: {
			{"atomic_req_8B_endianness_mode", 0x40, 2},
			{"atomic_operations", 0x90, 16},
			{"atomic_size_qp", 0xb0, 16},
			{"atomic_size_dc", 0xd0, 16},
		},
		CapQoS: {
			{"packet_pacing", 0x0, 1},
			{"esw_scheduling", 0x1, 1},
			{"packet_pacing_max_rate", 0x40, 32},
			{"packet_pacing_min_rate", 0x60, 32},
			{"packet_pacing_rate_table_size", 0x90, 16},
		},
	}
})

// odpFields: odp_cap_bits has sig at 0x40 and then one
// odp_per_transport_service_cap_bits (32 bits: send, receive, write, read,
// atomic, srq_receive) per transport from 0x80.
func odpFields() []Field {
	fs := []Field{{"sig", 0x40, 1}}
	for i, tr := range []string{"rc", "uc", "ud", "xrc", "dc"} {
		base := uint32(0x80 + 0x20*i)
		for j, op := range []string{"send", "receive", "write", "read", "atomic", "srq_receive"} {
			fs = append(fs, Field{tr + "_odp_caps." + op, base + uint32(j), 1})
		}
	}
	return fs
}

// CapTypes are the pages `dev hca-caps` reads, in order.
var CapTypes = []CapType{CapGeneral, CapRoCE, CapODP, CapAtomic, CapQoS}

// DecodeHCACap decodes page t from a QUERY_HCA_CAP answer (out, status
// already checked).
func DecodeHCACap(t CapType, out []byte) []Value {
	return decode(out, hcaCapPageOff, capFields()[t])
}

// QueryHCACap reads page t (current values).
func QueryHCACap(r Runner, t CapType) ([]Value, error) {
	out, err := run(r, OpQueryHCACap, QueryHCACapIn(t, true), hcaCapOutBytes)
	if err != nil {
		return nil, fmt.Errorf("QUERY_HCA_CAP(%s): %w", t, err)
	}
	return DecodeHCACap(t, out), nil
}

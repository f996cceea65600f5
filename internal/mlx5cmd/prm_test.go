package mlx5cmd

import (
	"encoding/binary"
	"errors"
	"sort"
	"testing"

	"github.com/rdmactl/rdmactl/internal/verbs/provider/mlx5"
)

// ifcSource is where every offset below was read: the kernel's mlx5
// interface definitions, include/linux/mlx5/mlx5_ifc.h in torvalds/linux
// at commit 00679b631eddaa0aa0ceba719fcb1f60c65da5a3. Offsets are bits
// from the start of the structure; fields are named "struct.field" with
// the ifc's names (mlx5_ifc_<struct>_bits). Each offset was worked out
// from the nearest reserved_at_<offset> anchor in the ifc text; later
// kernels only turn reserved bits into named fields, so these offsets
// stay valid.
const ifcSource = "torvalds/linux include/linux/mlx5/mlx5_ifc.h @ 00679b631eddaa0aa0ceba719fcb1f60c65da5a3"

type ifcField struct{ off, width uint32 }

var ifcOffsets = map[string]ifcField{
	// cmd_hca_cap_bits
	"cmd_hca_cap.vhca_id": {0x30, 0x10}, "cmd_hca_cap.log_max_srq_sz": {0x80, 0x8},
	"cmd_hca_cap.log_max_qp_sz": {0x88, 0x8}, "cmd_hca_cap.log_max_qp": {0x9b, 0x5},
	"cmd_hca_cap.log_max_srq": {0xab, 0x5}, "cmd_hca_cap.log_max_cq_sz": {0xc8, 0x8},
	"cmd_hca_cap.log_max_cq": {0xdb, 0x5}, "cmd_hca_cap.log_max_eq_sz": {0xe0, 0x8},
	"cmd_hca_cap.log_max_mkey": {0xea, 0x6}, "cmd_hca_cap.log_max_eq": {0xfc, 0x4},
	"cmd_hca_cap.max_indirection": {0x100, 0x8}, "cmd_hca_cap.log_max_mrw_sz": {0x109, 0x7},
	"cmd_hca_cap.log_max_klm_list_size": {0x11a, 0x6}, "cmd_hca_cap.log_max_ra_req_dc": {0x12a, 0x6},
	"cmd_hca_cap.log_max_ra_res_dc": {0x13a, 0x6}, "cmd_hca_cap.log_max_ra_req_qp": {0x14a, 0x6},
	"cmd_hca_cap.log_max_ra_res_qp": {0x15a, 0x6}, "cmd_hca_cap.cc_query_allowed": {0x161, 0x1},
	"cmd_hca_cap.cc_modify_allowed": {0x162, 0x1}, "cmd_hca_cap.cache_line_128byte": {0x164, 0x1},
	"cmd_hca_cap.gid_table_size": {0x170, 0x10}, "cmd_hca_cap.out_of_seq_cnt": {0x180, 0x1},
	"cmd_hca_cap.vport_counters": {0x181, 0x1}, "cmd_hca_cap.retransmission_q_counters": {0x182, 0x1},
	"cmd_hca_cap.max_qp_cnt": {0x186, 0xa}, "cmd_hca_cap.pkey_table_size": {0x190, 0x10},
	"cmd_hca_cap.vport_group_manager": {0x1a0, 0x1}, "cmd_hca_cap.ib_virt": {0x1a2, 0x1},
	"cmd_hca_cap.eth_virt": {0x1a3, 0x1}, "cmd_hca_cap.ets": {0x1a5, 0x1},
	"cmd_hca_cap.nic_flow_table": {0x1a6, 0x1}, "cmd_hca_cap.eswitch_manager": {0x1a7, 0x1},
	"cmd_hca_cap.device_memory": {0x1a8, 0x1}, "cmd_hca_cap.local_ca_ack_delay": {0x1ab, 0x5},
	"cmd_hca_cap.enhanced_error_q_counters": {0x1b1, 0x1}, "cmd_hca_cap.port_type": {0x1b6, 0x2},
	"cmd_hca_cap.num_ports": {0x1b8, 0x8}, "cmd_hca_cap.pps": {0x1c1, 0x1},
	"cmd_hca_cap.log_max_msg": {0x1c3, 0x5}, "cmd_hca_cap.max_tc": {0x1cc, 0x4},
	"cmd_hca_cap.dcbx": {0x1d1, 0x1}, "cmd_hca_cap.stat_rate_support": {0x1e0, 0x10},
	"cmd_hca_cap.cqe_version": {0x1fc, 0x4}, "cmd_hca_cap.compact_address_vector": {0x200, 0x1},
	"cmd_hca_cap.striding_rq": {0x201, 0x1}, "cmd_hca_cap.umr_fence": {0x20a, 0x2},
	"cmd_hca_cap.cmdif_checksum": {0x210, 0x2}, "cmd_hca_cap.sigerr_cqe": {0x212, 0x1},
	"cmd_hca_cap.wq_signature": {0x214, 0x1}, "cmd_hca_cap.sctr_data_cqe": {0x215, 0x1},
	"cmd_hca_cap.dct": {0x21a, 0x1}, "cmd_hca_cap.qos": {0x21b, 0x1},
	"cmd_hca_cap.eth_net_offloads": {0x21c, 0x1}, "cmd_hca_cap.roce": {0x21d, 0x1},
	"cmd_hca_cap.atomic": {0x21e, 0x1}, "cmd_hca_cap.cq_oi": {0x220, 0x1},
	"cmd_hca_cap.cq_resize": {0x221, 0x1}, "cmd_hca_cap.cq_moderation": {0x222, 0x1},
	"cmd_hca_cap.cq_eq_remap": {0x226, 0x1}, "cmd_hca_cap.pg": {0x227, 0x1},
	"cmd_hca_cap.block_lb_mc": {0x228, 0x1}, "cmd_hca_cap.cd": {0x22c, 0x1},
	"cmd_hca_cap.apm": {0x22e, 0x1}, "cmd_hca_cap.xrc": {0x23c, 0x1},
	"cmd_hca_cap.ud": {0x23d, 0x1}, "cmd_hca_cap.uc": {0x23e, 0x1}, "cmd_hca_cap.rc": {0x23f, 0x1},
	"cmd_hca_cap.uar_4k": {0x240, 0x1}, "cmd_hca_cap.uar_sz": {0x24a, 0x6},
	"cmd_hca_cap.log_pg_sz": {0x258, 0x8}, "cmd_hca_cap.bf": {0x260, 0x1},
	"cmd_hca_cap.log_bf_reg_size": {0x26b, 0x5}, "cmd_hca_cap.max_wqe_sz_sq": {0x290, 0x10},
	"cmd_hca_cap.max_wqe_sz_rq": {0x2b0, 0x10}, "cmd_hca_cap.max_wqe_sz_sq_dc": {0x2d0, 0x10},
	"cmd_hca_cap.max_qp_mcg": {0x2e7, 0x19}, "cmd_hca_cap.log_max_mcg": {0x318, 0x8},
	"cmd_hca_cap.log_max_transport_domain": {0x323, 0x5}, "cmd_hca_cap.log_max_pd": {0x32b, 0x5},
	"cmd_hca_cap.log_max_xrcd": {0x33b, 0x5}, "cmd_hca_cap.log_max_rq": {0x363, 0x5},
	"cmd_hca_cap.log_max_sq": {0x36b, 0x5}, "cmd_hca_cap.log_max_tir": {0x373, 0x5},
	"cmd_hca_cap.log_max_tis": {0x37b, 0x5}, "cmd_hca_cap.log_max_wq_sz": {0x3db, 0x5},
	"cmd_hca_cap.general_obj_types": {0x400, 0x40}, "cmd_hca_cap.log_max_uctx": {0x463, 0x5},
	"cmd_hca_cap.log_max_umem": {0x46b, 0x5}, "cmd_hca_cap.max_num_eqs": {0x470, 0x10},
	"cmd_hca_cap.log_uar_page_sz": {0x490, 0x10}, "cmd_hca_cap.device_frequency_mhz": {0x4c0, 0x20},
	"cmd_hca_cap.device_frequency_khz": {0x4e0, 0x20}, "cmd_hca_cap.num_of_uars_per_page": {0x520, 0x20},
	"cmd_hca_cap.cqe_compression": {0x5bf, 0x1}, "cmd_hca_cap.cqe_compression_timeout": {0x5c0, 0x10},
	"cmd_hca_cap.cqe_compression_max_num": {0x5d0, 0x10}, "cmd_hca_cap.tag_matching": {0x5f0, 0x1},
	"cmd_hca_cap.native_port_num": {0x608, 0x8}, "cmd_hca_cap.num_vhca_ports": {0x610, 0x8},
	// roce_cap_bits
	"roce_cap.roce_apm": {0x0, 0x1}, "roce_cap.l3_type": {0x8c, 0x4}, "roce_cap.roce_version": {0x98, 0x8},
	"roce_cap.r_roce_dest_udp_port": {0xb0, 0x10}, "roce_cap.r_roce_max_src_udp_port": {0xc0, 0x10},
	"roce_cap.r_roce_min_src_udp_port": {0xd0, 0x10}, "roce_cap.roce_address_table_size": {0xf0, 0x10},
	// atomic_caps_bits
	"atomic_caps.atomic_req_8B_endianness_mode": {0x40, 0x2}, "atomic_caps.atomic_operations": {0x90, 0x10},
	"atomic_caps.atomic_size_qp": {0xb0, 0x10}, "atomic_caps.atomic_size_dc": {0xd0, 0x10},
	// qos_cap_bits
	"qos_cap.packet_pacing": {0x0, 0x1}, "qos_cap.esw_scheduling": {0x1, 0x1},
	"qos_cap.packet_pacing_max_rate": {0x40, 0x20}, "qos_cap.packet_pacing_min_rate": {0x60, 0x20},
	"qos_cap.packet_pacing_rate_table_size": {0x90, 0x10},
	// odp_cap_bits: sig, then odp_per_transport_service_cap_bits
	// {send, receive, write, read, atomic, srq_receive, reserved_at_6[0x1a]}
	// for rc/uc/ud/xrc/dc from 0x80, 0x20 bits each.
	"odp_cap.sig": {0x40, 0x1}, "odp_cap.rc_odp_caps": {0x80, 0x20}, "odp_cap.dc_odp_caps": {0x100, 0x20},
	// query_hca_cap_in/out_bits, general header
	"query_hca_cap_in.opcode": {0x0, 0x10}, "query_hca_cap_in.op_mod": {0x30, 0x10},
	"query_hca_cap_out.status": {0x0, 0x8}, "query_hca_cap_out.syndrome": {0x20, 0x20},
	"query_hca_cap_out.capability": {0x80, 0x8000},
	// query_vport_counter_in/out_bits; traffic_counter_bits is
	// {packets[0x40], octets[0x40]}.
	"query_vport_counter_in.port_num": {0x4c, 0x4}, "query_vport_counter_in.vport_number": {0x50, 0x10},
	"query_vport_counter_in.clear": {0xc0, 0x1}, "query_vport_counter_in.size": {0, 0x100},
	"query_vport_counter_out.received_errors":           {0x80, 0x80},
	"query_vport_counter_out.transmitted_eth_multicast": {0x600, 0x80},
	"query_vport_counter_out.size":                      {0, 0x1080},
	// query_q_counter_in/out_bits
	"query_q_counter_in.clear": {0xc0, 0x1}, "query_q_counter_in.counter_set_id": {0xf8, 0x8},
	"query_q_counter_out.rx_write_requests": {0x80, 0x20}, "query_q_counter_out.out_of_sequence": {0x1c0, 0x20},
	"query_q_counter_out.local_ack_timeout_err": {0x300, 0x20}, "query_q_counter_out.resp_local_length_error": {0x3c0, 0x20},
	"query_q_counter_out.req_cqe_flush_error": {0x600, 0x20}, "query_q_counter_out.size": {0, 0x800},
	// query_cong_status_in/out_bits
	"query_cong_status_in.priority": {0x58, 0x4}, "query_cong_status_in.cong_protocol": {0x5c, 0x4},
	"query_cong_status_out.enable": {0x60, 0x1}, "query_cong_status_out.tag_enable": {0x61, 0x1},
}

var capStructs = map[CapType]string{CapGeneral: "cmd_hca_cap", CapRoCE: "roce_cap", CapAtomic: "atomic_caps", CapQoS: "qos_cap"}

func want(t *testing.T, key string, off, width uint32) {
	t.Helper()
	f, ok := ifcOffsets[key]
	if !ok {
		t.Errorf("%s: not in the ifc table (%s)", key, ifcSource)
		return
	}
	if f.off != off || f.width != width {
		t.Errorf("%s: code uses bit %#x width %#x, %s says %#x width %#x", key, off, width, ifcSource, f.off, f.width)
	}
}

// TestIFCOffsets compares every field the code reads or writes with the
// ifc table above.
func TestIFCOffsets(t *testing.T) {
	for ct, s := range capStructs {
		for _, f := range capFields()[ct] {
			want(t, s+"."+f.Name, f.Off, f.Width)
		}
	}
	for _, f := range odpFields()[1:] {
		// rc_odp_caps.send ... dc_odp_caps.srq_receive: bits 0..5 of their word.
		base := f.Off &^ 0x1f
		if base < 0x80 || base > 0x100 || f.Off-base > 5 || f.Width != 1 {
			t.Errorf("ODP field %s at %#x", f.Name, f.Off)
		}
	}
	want(t, "odp_cap.sig", odpFields()[0].Off, 1)
	want(t, "odp_cap.rc_odp_caps", odpFields()[1].Off, 0x20)
	want(t, "odp_cap.dc_odp_caps", odpFields()[len(odpFields())-6].Off, 0x20)
	want(t, "query_hca_cap_in.opcode", hdrOpcodeOff, 16)
	want(t, "query_hca_cap_in.op_mod", hdrOpModOff, 16)
	want(t, "query_hca_cap_out.status", outStatusOff, 8)
	want(t, "query_hca_cap_out.syndrome", outSyndOff, 32)
	want(t, "query_hca_cap_out.capability", hcaCapPageOff, (hcaCapOutBytes-16)*8)
	want(t, "query_vport_counter_in.port_num", vportInPortNum, 4)
	want(t, "query_vport_counter_in.vport_number", vportInVportNumber, 16)
	want(t, "query_vport_counter_in.clear", vportInClear, 1)
	want(t, "query_vport_counter_in.size", 0, vportCounterInBytes*8)
	want(t, "query_vport_counter_out.received_errors", vportCountersOff, 0x80)
	want(t, "query_vport_counter_out.transmitted_eth_multicast", vportCountersOff+0x80*uint32(len(vportCounterNames)-1), 0x80)
	want(t, "query_vport_counter_out.size", 0, vportCounterOutBytes*8)
	want(t, "query_q_counter_in.clear", qCounterInClear, 1)
	want(t, "query_q_counter_in.counter_set_id", qCounterInSetID, 8)
	want(t, "query_q_counter_out.size", 0, qCounterOutBytes*8)
	for _, f := range qCounterFields {
		if _, ok := ifcOffsets["query_q_counter_out."+f.Name]; ok {
			want(t, "query_q_counter_out."+f.Name, f.Off, f.Width)
		}
	}
	want(t, "query_cong_status_in.priority", congInPriority, 4)
	want(t, "query_cong_status_in.cong_protocol", congInProtocol, 4)
	want(t, "query_cong_status_out.enable", congOutEnable, 1)
	want(t, "query_cong_status_out.tag_enable", congOutTagEnable, 1)
}

// TestFieldsDisjoint: no two decoded fields of a page overlap and all fit
// in the 0x8000-bit page (a typo in an offset usually breaks this).
func TestFieldsDisjoint(t *testing.T) {
	for ct, fs := range capFields() {
		s := append([]Field(nil), fs...)
		sort.Slice(s, func(i, j int) bool { return s[i].Off < s[j].Off })
		for i := range s {
			if s[i].Off+s[i].Width > 0x8000 {
				t.Errorf("%v.%s beyond the page", ct, s[i].Name)
			}
			if i > 0 && s[i-1].Off+s[i-1].Width > s[i].Off {
				t.Errorf("%v: %s (%#x+%#x) overlaps %s (%#x)", ct, s[i-1].Name, s[i-1].Off, s[i-1].Width, s[i].Name, s[i].Off)
			}
			if s[i].Width < 64 && s[i].Off/32 != (s[i].Off+s[i].Width-1)/32 {
				t.Errorf("%v.%s crosses a 32-bit word", ct, s[i].Name)
			}
		}
	}
	s := append([]Field(nil), qCounterFields...)
	for i := 1; i < len(s); i++ {
		if s[i-1].Off+s[i-1].Width > s[i].Off {
			t.Errorf("Q counter %s overlaps %s", s[i-1].Name, s[i].Name)
		}
	}
}

// TestGetSet: get reads what an MLX5_SET-style write put, for every field
// of every page, with distinct values per field.
func TestGetSet(t *testing.T) {
	for ct, fs := range capFields() {
		out := make([]byte, hcaCapOutBytes)
		wantV := map[string]uint64{}
		for i, f := range fs {
			v := uint64(0x9e3779b97f4a7c15*uint64(i+1)) >> (64 - f.Width)
			if f.Width == 64 {
				binary.BigEndian.PutUint64(out[(hcaCapPageOff+f.Off)/8:], v)
			} else {
				set(out, hcaCapPageOff+f.Off, f.Width, uint32(v))
			}
			wantV[f.Name] = v
		}
		for _, v := range DecodeHCACap(ct, out) {
			if v.Value != wantV[v.Name] {
				t.Errorf("%v.%s = %#x, want %#x", ct, v.Name, v.Value, wantV[v.Name])
			}
		}
	}
	// Byte-level spot checks against the ifc bit numbering (bit 0 = MSB
	// of byte 0): roce_version at 0x98 is byte 0x13 of the page.
	out := make([]byte, hcaCapOutBytes)
	out[16+0x13] = 2
	out[16+0x16], out[16+0x17] = 0x12, 0xb7 // r_roce_dest_udp_port = 4791
	for _, v := range DecodeHCACap(CapRoCE, out) {
		switch v.Name {
		case "roce_version":
			if v.Value != 2 {
				t.Errorf("roce_version %d", v.Value)
			}
		case "r_roce_dest_udp_port":
			if v.Value != 4791 {
				t.Errorf("r_roce_dest_udp_port %d", v.Value)
			}
		}
	}
}

// fakeRunner answers one command.
type fakeRunner struct {
	in     []byte
	answer func(in, out []byte)
	err    error
}

func (f *fakeRunner) MLX5DevXOther(in, out []byte) error {
	f.in = append([]byte(nil), in...)
	if f.err != nil {
		return f.err
	}
	f.answer(in, out)
	return nil
}

func TestQueries(t *testing.T) {
	r := &fakeRunner{answer: func(in, out []byte) {
		out[16+0x1b8/8] = 2 // num_ports[0x8] at bit 0x1b8: a whole byte
	}}
	vs, err := QueryHCACap(r, CapGeneral)
	if err != nil {
		t.Fatal(err)
	}
	// Command bytes: opcode 0x0100 big-endian, op_mod (0<<1)|1.
	if binary.BigEndian.Uint16(r.in[0:]) != 0x100 || binary.BigEndian.Uint16(r.in[6:]) != 1 || len(r.in) != 16 {
		t.Errorf("QUERY_HCA_CAP in % x", r.in)
	}
	for _, v := range vs {
		if v.Name == "num_ports" && v.Value != 2 {
			t.Errorf("num_ports %d", v.Value)
		}
	}
	QueryHCACapIn(CapRoCE, false)
	if in := QueryHCACapIn(CapRoCE, true); binary.BigEndian.Uint16(in[6:]) != 9 {
		t.Errorf("RoCE current op_mod %#x, want 4<<1|1", binary.BigEndian.Uint16(in[6:]))
	}

	// Status error: one line with the opcode, name, status and syndrome.
	r.answer = func(in, out []byte) { out[0] = 0x03; binary.BigEndian.PutUint32(out[4:], 0x1234) }
	_, err = QueryHCACap(r, CapODP)
	var se *StatusError
	if !errors.As(err, &se) || err.Error() != "QUERY_HCA_CAP(odp): mlx5 command 0x100 failed: bad parameter (status 0x3, syndrome 0x1234)" {
		t.Errorf("status error: %v", err)
	}
	// Runner error passes through.
	r.err = errors.New("boom")
	if _, err := QueryCongStatus(r, CongProtocolRRoCERP, 3); err == nil || !errors.Is(err, r.err) {
		t.Errorf("runner error: %v", err)
	}
	r.err = nil

	r.answer = func(in, out []byte) { out[12] = 0xc0 }
	cs, err := QueryCongStatus(r, CongProtocolRRoCENP, 5)
	if err != nil || !cs.Enable || !cs.TagEnable {
		t.Errorf("cong status %+v %v", cs, err)
	}
	if r.in[11] != 5<<4|CongProtocolRRoCENP || binary.BigEndian.Uint16(r.in) != OpQueryCongStatus {
		t.Errorf("QUERY_CONG_STATUS in % x", r.in)
	}

	r.answer = func(in, out []byte) {
		binary.BigEndian.PutUint64(out[16:], 7)          // received_errors.packets
		binary.BigEndian.PutUint64(out[16+8:], 700)      // received_errors.octets
		binary.BigEndian.PutUint64(out[16+11*16+8:], 99) // transmitted_eth_multicast.octets
	}
	vc, err := QueryVportCounter(r, 1)
	if err != nil || vc[0] != (Value{"received_errors_packets", 7}) || vc[1].Value != 700 || vc[23] != (Value{"transmitted_eth_multicast_octets", 99}) {
		t.Errorf("vport counters %v %v", vc, err)
	}
	if r.in[9]&0x0f != 1 || len(r.in) != 32 {
		t.Errorf("QUERY_VPORT_COUNTER in % x", r.in)
	}

	r.answer = func(in, out []byte) { binary.BigEndian.PutUint32(out[0x1c0/8:], 42) }
	qc, err := QueryQCounter(r, 3)
	if err != nil || qc[5] != (Value{"out_of_sequence", 42}) || r.in[31] != 3 {
		t.Errorf("q counter %v %v in % x", qc, err, r.in)
	}
	if in := QueryQCounterIn(1, true); in[24]&0x80 == 0 {
		t.Error("clear bit not at 0xc0")
	}
}

// FuzzDecode: any answer bytes decode without panicking.
func FuzzDecode(f *testing.F) {
	f.Add(make([]byte, hcaCapOutBytes))
	f.Add([]byte{3, 0, 0, 0, 0, 0, 0x12, 0x34})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = checkOut(1, b)
		for _, ct := range CapTypes {
			DecodeHCACap(ct, b)
		}
		DecodeVportCounter(b)
		DecodeQCounter(b)
		DecodeCongStatus(b)
	})
}

// mlx5.DevX is the Runner the CLI uses.
var _ Runner = mlx5.DevX{}

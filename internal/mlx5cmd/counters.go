package mlx5cmd

import "fmt"

// QUERY_VPORT_COUNTER (query_vport_counter_in_bits / _out_bits): twelve
// traffic_counter_bits (packets[0x40], octets[0x40]) from bit 0x80.
const (
	vportCounterInBytes  = 32
	vportCounterOutBytes = 0x1080 / 8
	vportInOtherVport    = 0x40
	vportInPortNum       = 0x4c // [0x4]
	vportInVportNumber   = 0x50 // [0x10]
	vportInClear         = 0xc0
	vportCountersOff     = 0x80
)

var vportCounterNames = []string{
	"received_errors", "transmit_errors",
	"received_ib_unicast", "transmitted_ib_unicast",
	"received_ib_multicast", "transmitted_ib_multicast",
	"received_eth_broadcast", "transmitted_eth_broadcast",
	"received_eth_unicast", "transmitted_eth_unicast",
	"received_eth_multicast", "transmitted_eth_multicast",
}

// QueryVportCounterIn asks for this function's own vport counters on port
// (1-based; 0 lets the firmware pick, as the kernel does for single-port
// devices), optionally clearing them.
func QueryVportCounterIn(port uint8, clear bool) []byte {
	in := newIn(vportCounterInBytes, OpQueryVportCounter, 0)
	set(in, vportInPortNum, 4, uint32(port))
	if clear {
		set(in, vportInClear, 1, 1)
	}
	return in
}

// DecodeVportCounter returns "<name>_packets" and "<name>_octets" for each
// of the twelve counters.
func DecodeVportCounter(out []byte) []Value {
	vs := make([]Value, 0, 2*len(vportCounterNames))
	for i, n := range vportCounterNames {
		base := uint32(vportCountersOff + 0x80*i)
		vs = append(vs, Value{n + "_packets", get(out, base, 64)}, Value{n + "_octets", get(out, base+0x40, 64)})
	}
	return vs
}

// QueryVportCounter reads the vport counters of port.
func QueryVportCounter(r Runner, port uint8) ([]Value, error) {
	out, err := run(r, OpQueryVportCounter, QueryVportCounterIn(port, false), vportCounterOutBytes)
	if err != nil {
		return nil, fmt.Errorf("QUERY_VPORT_COUNTER: %w", err)
	}
	return DecodeVportCounter(out), nil
}

// QUERY_Q_COUNTER (query_q_counter_in_bits / _out_bits): 32-bit counters
// of one queue counter set. The kernel does not pass this command through
// DEVX_OTHER (it belongs to a counter object: kernel devx.c), so it is
// encoded and decoded here but only usable over a DEVX object the caller
// owns.
const (
	qCounterInBytes  = 32
	qCounterOutBytes = 0x800 / 8
	qCounterInClear  = 0xc0
	qCounterInSetID  = 0xf8 // [0x8]
)

var qCounterFields = []Field{
	{"rx_write_requests", 0x80, 32},
	{"rx_read_requests", 0xc0, 32},
	{"rx_atomic_requests", 0x100, 32},
	{"rx_dct_connect", 0x140, 32},
	{"out_of_buffer", 0x180, 32},
	{"out_of_sequence", 0x1c0, 32},
	{"duplicate_request", 0x200, 32},
	{"rnr_nak_retry_err", 0x240, 32},
	{"packet_seq_err", 0x280, 32},
	{"implied_nak_seq_err", 0x2c0, 32},
	{"local_ack_timeout_err", 0x300, 32},
	{"resp_local_length_error", 0x3c0, 32},
	{"req_local_length_error", 0x3e0, 32},
	{"resp_local_qp_error", 0x400, 32},
	{"local_operation_error", 0x420, 32},
	{"resp_local_protection", 0x440, 32},
	{"req_local_protection", 0x460, 32},
	{"resp_cqe_error", 0x480, 32},
	{"req_cqe_error", 0x4a0, 32},
	{"req_mw_binding", 0x4c0, 32},
	{"req_bad_response", 0x4e0, 32},
	{"req_remote_invalid_request", 0x500, 32},
	{"resp_remote_invalid_request", 0x520, 32},
	{"req_remote_access_errors", 0x540, 32},
	{"resp_remote_access_errors", 0x560, 32},
	{"req_remote_operation_errors", 0x580, 32},
	{"req_transport_retries_exceeded", 0x5a0, 32},
	{"cq_overflow", 0x5c0, 32},
	{"resp_cqe_flush_error", 0x5e0, 32},
	{"req_cqe_flush_error", 0x600, 32},
}

// QueryQCounterIn asks for counter set id.
func QueryQCounterIn(id uint8, clear bool) []byte {
	in := newIn(qCounterInBytes, OpQueryQCounter, 0)
	set(in, qCounterInSetID, 8, uint32(id))
	if clear {
		set(in, qCounterInClear, 1, 1)
	}
	return in
}

// DecodeQCounter decodes a QUERY_Q_COUNTER answer.
func DecodeQCounter(out []byte) []Value { return decode(out, 0, qCounterFields) }

// QueryQCounter reads counter set id (see the note above: needs a DEVX
// counter object on current kernels).
func QueryQCounter(r Runner, id uint8) ([]Value, error) {
	out, err := run(r, OpQueryQCounter, QueryQCounterIn(id, false), qCounterOutBytes)
	if err != nil {
		return nil, fmt.Errorf("QUERY_Q_COUNTER: %w", err)
	}
	return DecodeQCounter(out), nil
}

// QUERY_CONG_STATUS (query_cong_status_in_bits / _out_bits): whether a
// congestion-control protocol is enabled for a priority.
const (
	congStatusInBytes  = 16
	congStatusOutBytes = 16
	congInPriority     = 0x58 // [0x4]
	congInProtocol     = 0x5c // [0x4]
	congOutEnable      = 0x60
	congOutTagEnable   = 0x61
)

// Congestion protocols (MLX5_CONG_PROTOCOL_*).
const (
	CongProtocolQCN     = 0
	CongProtocolRRoCERP = 1 // RoCE ECN reaction point (DCQCN sender)
	CongProtocolRRoCENP = 2 // RoCE ECN notification point (CNP generator)
)

// CongStatus is the answer for one protocol and priority.
type CongStatus struct {
	Enable    bool
	TagEnable bool
}

// QueryCongStatusIn asks about protocol on priority.
func QueryCongStatusIn(protocol, priority uint8) []byte {
	in := newIn(congStatusInBytes, OpQueryCongStatus, 0)
	set(in, congInPriority, 4, uint32(priority))
	set(in, congInProtocol, 4, uint32(protocol))
	return in
}

// DecodeCongStatus decodes a QUERY_CONG_STATUS answer.
func DecodeCongStatus(out []byte) CongStatus {
	return CongStatus{Enable: get(out, congOutEnable, 1) == 1, TagEnable: get(out, congOutTagEnable, 1) == 1}
}

// QueryCongStatus reads the status of protocol on priority.
func QueryCongStatus(r Runner, protocol, priority uint8) (CongStatus, error) {
	out, err := run(r, OpQueryCongStatus, QueryCongStatusIn(protocol, priority), congStatusOutBytes)
	if err != nil {
		return CongStatus{}, fmt.Errorf("QUERY_CONG_STATUS: %w", err)
	}
	return DecodeCongStatus(out), nil
}

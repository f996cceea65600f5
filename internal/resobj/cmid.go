package resobj

import (
	"net/netip"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// cmIDObject is res cm_id (iproute2 rdma/res-cmid.c). rdma's table also
// has dev-type and transport-type, which rdma never applies (res-cmid.c
// has no check for them: every CM ID passes) and the kernel does not
// report per CM ID: res refuses them. KEY-addr is the address as
// inet_ntop writes it, KEY-port its port; an ID without that address (not
// yet bound or resolved) has neither.
var cmIDObject = desc[inventory.CMID]{
	Name: "cm_id",
	Filters: func(m inventory.CMID) []Filter {
		return []Filter{link(m.Port), num("lqpn", m.LQPN), names("qp-type", m.QPTypeName()), names("state", m.StateName()), names("ps", m.PSName()),
			ignored("dev-type", "the kernel reports no device type per CM ID (rdma accepts dev-type and filters nothing)"),
			ignored("transport-type", "the kernel reports no transport type per CM ID (rdma accepts transport-type and filters nothing)"),
			num("pid", m.PID), names("src-addr", addrText(m.SrcAddr)), num("src-port", addrPort(m.SrcAddr)),
			names("dst-addr", addrText(m.DstAddr)), num("dst-port", addrPort(m.DstAddr)), num("cm-idn", m.CMIDN)}
	},
	Columns: []string{"LINK", "CM_IDN", "LQPN", "QP_TYPE", "STATE", "PS", "SRC_ADDR", "DST_ADDR", "PID", "COMM"},
	List:    Source.CMIDs,
	Row:     cmIDRow,
}.object()

type cmIDJSON struct {
	Head
	Port    *uint32 `json:"port,omitempty"`
	CMIDN   *uint32 `json:"cm_idn,omitempty"`
	LQPN    *uint32 `json:"lqpn,omitempty"`
	QPType  string  `json:"qp_type,omitempty"`
	State   string  `json:"state,omitempty"`
	PS      string  `json:"ps,omitempty"`
	SrcAddr string  `json:"src_addr,omitempty"`
	DstAddr string  `json:"dst_addr,omitempty"`
	ownerJSON
}

func cmIDRow(m inventory.CMID) Row {
	r := cmIDJSON{Head: head(m.ResHead), Port: m.Port, CMIDN: m.CMIDN, LQPN: m.LQPN, QPType: m.QPTypeName(), State: m.StateName(), PS: m.PSName(), ownerJSON: owner(m.Owner)}
	if m.SrcAddr.IsValid() {
		r.SrcAddr = m.SrcAddr.String()
	}
	if m.DstAddr.IsValid() {
		r.DstAddr = m.DstAddr.String()
	}
	return Row{JSON: r, Driver: m.Driver, Cells: []any{Link(m.DevName, m.Port), render.Opt(r.CMIDN), render.Opt(r.LQPN), r.QPType, r.State, r.PS,
		r.SrcAddr, r.DstAddr, render.Opt(r.PID), commText(m.Owner)}}
}

func addrText(a netip.AddrPort) string {
	if !a.IsValid() {
		return ""
	}
	return a.Addr().String()
}

func addrPort(a netip.AddrPort) *uint32 {
	if !a.IsValid() {
		return nil
	}
	p := uint32(a.Port())
	return &p
}

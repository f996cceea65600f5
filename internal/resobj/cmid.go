package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// cmIDObject is res cm_id (iproute2 rdma/res-cmid.c). rdma's table also
// has dev-type and transport-type, which it never applies (every CM ID
// passes) and the kernel does not report per CM ID: res refuses them.
var cmIDObject = &Object{
	Name: "cm_id",
	Filters: []string{"link", "lqpn", "qp-type", "state", "ps", "dev-type", "transport-type", "pid", "src-addr", "src-port",
		"dst-addr", "dst-port", "cm-idn"},
	Columns: []string{"LINK", "CM_IDN", "LQPN", "QP_TYPE", "STATE", "PS", "SRC_ADDR", "DST_ADDR", "PID", "COMM"},
	rows: func(src Source, f inventory.ResFilter, m inventory.ResMatch) ([]Row, error) {
		return collect(src.CMIDs, f, m.CMID, cmIDRow)
	},
}

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

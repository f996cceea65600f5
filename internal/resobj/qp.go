package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// qpObject is res qp (iproute2 rdma/res-qp.c).
var qpObject = desc[inventory.QP]{
	Name: "qp",
	Filters: func(q inventory.QP) []Filter {
		return []Filter{link(q.Port), num("lqpn", q.LQPN), num("rqpn", q.RQPN), num("pid", q.PID), num("sq-psn", q.SQPSN),
			num("rq-psn", q.RQPSN), names("type", q.TypeName()), names("path-mig-state", q.PathMigStateName()),
			names("state", q.StateName()), num("pdn", q.PDN)}
	},
	Columns: []string{"LINK", "LQPN", "RQPN", "TYPE", "STATE", "RQ_PSN", "SQ_PSN", "PATH_MIG", "PDN", "PID", "COMM"},
	Raw:     true,
	List:    Source.QPs,
	Row:     qpRow,
}.object()

type qpJSON struct {
	Head
	Port         *uint32 `json:"port,omitempty"`
	LQPN         *uint32 `json:"lqpn,omitempty"`
	RQPN         *uint32 `json:"rqpn,omitempty"`
	Type         string  `json:"type,omitempty"`
	Subtype      string  `json:"subtype,omitempty"` // a driver QP's kind (type DRIVER)
	State        string  `json:"state,omitempty"`
	RQPSN        *uint32 `json:"rq_psn,omitempty"`
	SQPSN        *uint32 `json:"sq_psn,omitempty"`
	PathMigState string  `json:"path_mig_state,omitempty"`
	PDN          *uint32 `json:"pdn,omitempty"`
	ownerJSON
}

func qpRow(q inventory.QP) Row {
	r := qpJSON{Head: head(q.ResHead), Port: q.Port, LQPN: q.LQPN, RQPN: q.RQPN, Type: q.TypeName(), Subtype: q.Subtype, State: q.StateName(),
		RQPSN: q.RQPSN, SQPSN: q.SQPSN, PathMigState: q.PathMigStateName(), PDN: q.PDN, ownerJSON: owner(q.Owner)}
	return Row{JSON: r, Driver: q.Driver, Cells: []any{Link(q.DevName, q.Port), render.Opt(r.LQPN), render.Opt(r.RQPN), r.Type, r.State,
		render.Opt(r.RQPSN), render.Opt(r.SQPSN), r.PathMigState, render.Opt(r.PDN), render.Opt(r.PID), commText(q.Owner)}}
}

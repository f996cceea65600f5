package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// qpObject is res qp (iproute2 rdma/res-qp.c).
var qpObject = &Object{
	Name:    "qp",
	Filters: []string{"link", "lqpn", "rqpn", "pid", "sq-psn", "rq-psn", "type", "path-mig-state", "state", "pdn"},
	Columns: []string{"LINK", "LQPN", "RQPN", "TYPE", "STATE", "RQ_PSN", "SQ_PSN", "PATH_MIG", "PDN", "PID", "COMM"},
	Raw:     true,
	rows: func(src Source, f inventory.ResFilter, m inventory.ResMatch) ([]Row, error) {
		return collect(src.QPs, f, m.QP, qpRow)
	},
}

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

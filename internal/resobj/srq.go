package resobj

import (
	"fmt"
	"github.com/rdmactl/rdmactl/internal/render"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// srqObject is res srq (iproute2 rdma/res-srq.c).
var srqObject = desc[inventory.SRQ]{
	Name: "srq",
	Filters: func(s inventory.SRQ) []Filter {
		return []Filter{dev(), num("pid", s.PID), num("srqn", s.SRQN), names("type", s.TypeName()), num("pdn", s.PDN), num("cqn", s.CQN),
			qpList("lqpn", s.QPs)}
	},
	Columns: []string{"DEV", "SRQN", "TYPE", "LQPN", "PDN", "CQN", "PID", "COMM"},
	Raw:     true,
	List:    Source.SRQs,
	Row:     srqRow,
}.object()

// srqJSON: lqpn is rdma's list of QP numbers and ranges ("126-128").
type srqJSON struct {
	Head
	SRQN *uint32  `json:"srqn,omitempty"`
	Type string   `json:"type,omitempty"`
	LQPN []string `json:"lqpn,omitempty"`
	PDN  *uint32  `json:"pdn,omitempty"`
	CQN  *uint32  `json:"cqn,omitempty"`
	ownerJSON
}

func srqRow(s inventory.SRQ) Row {
	r := srqJSON{Head: head(s.ResHead), SRQN: s.SRQN, Type: s.TypeName(), PDN: s.PDN, CQN: s.CQN, ownerJSON: owner(s.Owner)}
	for _, q := range s.QPs {
		if q.Min == q.Max {
			r.LQPN = append(r.LQPN, strconv.FormatUint(uint64(q.Min), 10))
		} else {
			r.LQPN = append(r.LQPN, fmt.Sprintf("%d-%d", q.Min, q.Max))
		}
	}
	return Row{JSON: r, Driver: s.Driver, Cells: []any{s.DevName, render.Opt(r.SRQN), r.Type, strings.Join(r.LQPN, ","), render.Opt(r.PDN), render.Opt(r.CQN),
		render.Opt(r.PID), commText(s.Owner)}}
}

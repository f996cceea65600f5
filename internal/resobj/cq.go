package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// cqObject is res cq (iproute2 rdma/res-cq.c).
var cqObject = desc[inventory.CQ]{
	Name: "cq",
	Filters: func(c inventory.CQ) []Filter {
		return []Filter{dev(), num64("users", c.Users), names("poll-ctx", c.PollCtxName()), num("pid", c.PID), num("cqn", c.CQN), num("ctxn", c.CtxN)}
	},
	Columns: []string{"DEV", "CQN", "CQE", "USERS", "POLL_CTX", "ADAPTIVE_MOD", "CTXN", "PID", "COMM"},
	Raw:     true,
	List:    Source.CQs,
	Row:     cqRow,
}.object()

type cqJSON struct {
	Head
	CQN     *uint32 `json:"cqn,omitempty"`
	CQE     *uint32 `json:"cqe,omitempty"`
	Users   *uint64 `json:"users,omitempty"`
	PollCtx string  `json:"poll_ctx,omitempty"`
	DIM     *bool   `json:"adaptive_moderation,omitempty"`
	CtxN    *uint32 `json:"ctxn,omitempty"`
	ownerJSON
}

func cqRow(q inventory.CQ) Row {
	r := cqJSON{Head: head(q.ResHead), CQN: q.CQN, CQE: q.CQE, Users: q.Users, PollCtx: q.PollCtxName(), DIM: q.DIM, CtxN: q.CtxN, ownerJSON: owner(q.Owner)}
	return Row{JSON: r, Driver: q.Driver, Cells: []any{q.DevName, render.Opt(r.CQN), render.Opt(r.CQE), render.Opt(r.Users), r.PollCtx, render.OnOff(r.DIM),
		render.Opt(r.CtxN), render.Opt(r.PID), commText(q.Owner)}}
}

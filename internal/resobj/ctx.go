package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// ctxObject is res ctx (iproute2 rdma/res-ctx.c).
var ctxObject = desc[inventory.Ctx]{
	Name:    "ctx",
	Filters: func(x inventory.Ctx) []Filter { return []Filter{dev(), num("pid", x.PID), num("ctxn", x.CtxN)} },
	Columns: []string{"DEV", "CTXN", "PID", "COMM"},
	List:    Source.Contexts,
	Row:     ctxRow,
}.object()

type ctxJSON struct {
	Head
	CtxN *uint32 `json:"ctxn,omitempty"`
	ownerJSON
}

func ctxRow(x inventory.Ctx) Row {
	r := ctxJSON{Head: head(x.ResHead), CtxN: x.CtxN, ownerJSON: owner(x.Owner)}
	return Row{JSON: r, Driver: x.Driver, Cells: []any{x.DevName, render.Opt(r.CtxN), render.Opt(r.PID), commText(x.Owner)}}
}

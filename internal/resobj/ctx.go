package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// ctxObject is res ctx (iproute2 rdma/res-ctx.c).
var ctxObject = &Object{
	Name:    "ctx",
	Filters: []string{"dev", "pid", "ctxn"},
	Columns: []string{"DEV", "CTXN", "PID", "COMM"},
	rows: func(src Source, f inventory.ResFilter, m inventory.ResMatch) ([]Row, error) {
		return collect(src.Contexts, f, m.Ctx, ctxRow)
	},
}

type ctxJSON struct {
	Head
	CtxN *uint32 `json:"ctxn,omitempty"`
	ownerJSON
}

func ctxRow(x inventory.Ctx) Row {
	r := ctxJSON{Head: head(x.ResHead), CtxN: x.CtxN, ownerJSON: owner(x.Owner)}
	return Row{JSON: r, Driver: x.Driver, Cells: []any{x.DevName, render.Opt(r.CtxN), render.Opt(r.PID), commText(x.Owner)}}
}

package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// pdObject is res pd (iproute2 rdma/res-pd.c).
var pdObject = desc[inventory.PD]{
	Name: "pd",
	Filters: func(p inventory.PD) []Filter {
		return []Filter{dev(), num64("users", p.Users), num("pid", p.PID), num("ctxn", p.CtxN), num("pdn", p.PDN)}
	},
	Columns: []string{"DEV", "PDN", "LOCAL_DMA_LKEY", "USERS", "UNSAFE_GLOBAL_RKEY", "CTXN", "PID", "COMM"},
	List:    Source.PDs,
	Row:     pdRow,
}.object()

type pdJSON struct {
	Head
	PDN              *uint32 `json:"pdn,omitempty"`
	LocalDMALKey     *uint32 `json:"local_dma_lkey,omitempty"`
	Users            *uint64 `json:"users,omitempty"`
	UnsafeGlobalRKey *uint32 `json:"unsafe_global_rkey,omitempty"`
	CtxN             *uint32 `json:"ctxn,omitempty"`
	ownerJSON
}

func pdRow(p inventory.PD) Row {
	r := pdJSON{Head: head(p.ResHead), PDN: p.PDN, LocalDMALKey: p.LocalDMALKey, Users: p.Users, UnsafeGlobalRKey: p.UnsafeGlobalRKey, CtxN: p.CtxN, ownerJSON: owner(p.Owner)}
	return Row{JSON: r, Driver: p.Driver, Cells: []any{p.DevName, render.Opt(r.PDN), hex32(r.LocalDMALKey), render.Opt(r.Users), hex32(r.UnsafeGlobalRKey),
		render.Opt(r.CtxN), render.Opt(r.PID), commText(p.Owner)}}
}

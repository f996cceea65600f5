package resobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// mrObject is res mr (iproute2 rdma/res-mr.c). Keys and addresses are
// reported to root only (the kernel's choice).
var mrObject = desc[inventory.MR]{
	Name: "mr",
	Filters: func(m inventory.MR) []Filter {
		return []Filter{dev(), num("rkey", m.RKey), num("lkey", m.LKey), num64("mrlen", m.Len), num("pid", m.PID), num("mrn", m.MRN), num("pdn", m.PDN)}
	},
	Columns: []string{"DEV", "MRN", "RKEY", "LKEY", "IOVA", "MRLEN", "PDN", "PID", "COMM"},
	Raw:     true,
	List:    Source.MRs,
	Row:     mrRow,
}.object()

type mrJSON struct {
	Head
	MRN   *uint32 `json:"mrn,omitempty"`
	RKey  *uint32 `json:"rkey,omitempty"`
	LKey  *uint32 `json:"lkey,omitempty"`
	IOVA  *uint64 `json:"iova,omitempty"`
	MRLen *uint64 `json:"mrlen,omitempty"`
	PDN   *uint32 `json:"pdn,omitempty"`
	CtxN  *uint32 `json:"ctxn,omitempty"`
	ownerJSON
}

func mrRow(m inventory.MR) Row {
	r := mrJSON{Head: head(m.ResHead), MRN: m.MRN, RKey: m.RKey, LKey: m.LKey, IOVA: m.IOVA, MRLen: m.Len, PDN: m.PDN, CtxN: m.CtxN, ownerJSON: owner(m.Owner)}
	return Row{JSON: r, Driver: m.Driver, Cells: []any{m.DevName, render.Opt(r.MRN), hex32(r.RKey), hex32(r.LKey), hex64(r.IOVA), render.Opt(r.MRLen),
		render.Opt(r.PDN), render.Opt(r.PID), commText(m.Owner)}}
}

package resobj

import "github.com/rdmactl/rdmactl/internal/inventory"

// Summary is res without an object: each device's count of every kind
// (rdma resource show).
var Summary = &Object{
	Columns: []string{"IDX", "DEV", "PD", "CQ", "QP", "CM_ID", "MR", "CTX", "SRQ"},
	rows: func(src Source, f inventory.ResFilter, _ Match) ([]Row, error) {
		sums, err := src.ResSummaries(f.Dev)
		if err != nil {
			return nil, err
		}
		rows := make([]Row, 0, len(sums))
		for _, s := range sums {
			r := summaryJSON{Ifindex: s.DevIndex, Ifname: s.DevName, PD: s.Counts["pd"], CQ: s.Counts["cq"], QP: s.Counts["qp"],
				CMID: s.Counts["cm_id"], MR: s.Counts["mr"], Ctx: s.Counts["ctx"], SRQ: s.Counts["srq"]}
			rows = append(rows, Row{JSON: r, Cells: []any{r.Ifindex, r.Ifname, r.PD, r.CQ, r.QP, r.CMID, r.MR, r.Ctx, r.SRQ}, counts: true})
		}
		return rows, nil
	},
}

// summaryJSON is one device of `rdmactl -j res` (rdma -j res show).
type summaryJSON struct {
	Ifindex uint32 `json:"ifindex"`
	Ifname  string `json:"ifname"`
	PD      uint64 `json:"pd"`
	CQ      uint64 `json:"cq"`
	QP      uint64 `json:"qp"`
	CMID    uint64 `json:"cm_id"`
	MR      uint64 `json:"mr"`
	Ctx     uint64 `json:"ctx"`
	SRQ     uint64 `json:"srq"`
}

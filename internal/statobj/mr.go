package statobj

import (
	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// MRs is "statistic mr": each memory region with the driver's counters
// (iproute2 rdma/stat-mr.c; none on rxe). mrn selects one.
var MRs = desc[inventory.MRStat]{
	Name:    "mr",
	DevKey:  "dev",
	Filters: []string{"mrn"},
	Columns: []string{"DEV", "MRN", "COUNTERS"},
	List:    func(src Source, q Query) ([]inventory.MRStat, error) { return src.MRStatistics(q.Dev) },
	Row:     mrRow,
}.object()

type mrJSON struct {
	Ifindex  uint32      `json:"ifindex"`
	Ifname   string      `json:"ifname"`
	MRN      *uint32     `json:"mrn,omitempty"`
	Counters []valueJSON `json:"counters"`
}

func mrRow(m inventory.MRStat, q Query) (Row, bool) {
	if n := q.num("mrn"); n != nil && (m.MRN == nil || *m.MRN != *n) {
		return Row{}, false
	}
	r := mrJSON{Ifindex: m.DevIndex, Ifname: m.Dev, MRN: m.MRN, Counters: values(m.Counters)}
	return Row{JSON: r, Cells: []any{r.Ifname, render.Opt(r.MRN), valuesText(m.Counters)}}, true
}

package statobj

import (
	"fmt"
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// QPCounters is "statistic qp show": each QP counter, its port, id
// (cntn), the QP type or process it counts in auto mode, the QPs bound
// to it and its values (iproute2 rdma/stat.c, stat_qp_show). lqpn selects
// the counters QP N is bound to.
var QPCounters = desc[inventory.QPCounter]{
	Name:    "qp show",
	DevKey:  "link",
	Filters: []string{"lqpn", "pid", "cntn"},
	Columns: []string{"LINK", "CNTN", "QP_TYPE", "PID", "COMM", "LQPN", "COUNTERS"},
	List: func(src Source, q Query) ([]inventory.QPCounter, error) {
		return src.QPCounters(q.Dev, q.Port, inventory.QPCounterFilter{LQPN: q.num("lqpn"), PID: q.num("pid"), CntN: q.num("cntn")})
	},
	Row: qpCounterRow,
}.object()

// qpCounterJSON is one QP counter: rdma's keys (ifindex, ifname, port,
// cntn, qp-type as qp_type, pid, comm, lqpn); the counters, which rdma
// spreads as keys of their own, are a list here.
type qpCounterJSON struct {
	Ifindex  uint32      `json:"ifindex"`
	Ifname   string      `json:"ifname"`
	Port     uint32      `json:"port"`
	CntN     uint32      `json:"cntn"`
	QPType   string      `json:"qp_type,omitempty"`
	PID      *uint32     `json:"pid,omitempty"`
	Comm     string      `json:"comm,omitempty"`
	LQPN     []uint32    `json:"lqpn"`
	Counters []valueJSON `json:"counters"`
}

func qpCounterRow(c inventory.QPCounter, _ Query) (Row, bool) {
	lq := c.LQPNs
	if lq == nil {
		lq = []uint32{}
	}
	r := qpCounterJSON{Ifindex: c.DevIndex, Ifname: c.Dev, Port: c.Port, CntN: c.ID, QPType: c.QPType,
		PID: c.PID, Comm: c.Comm, LQPN: lq, Counters: values(c.Counters)}
	l := make([]string, len(lq))
	for i, n := range lq {
		l[i] = fmt.Sprint(n)
	}
	return Row{JSON: r, Cells: []any{link(r.Ifname, r.Port), r.CntN, r.QPType, render.Opt(r.PID), r.Comm,
		strings.Join(l, ","), valuesText(c.Counters)}}, true
}

package statobj

import (
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
	"github.com/rdmactl/rdmactl/internal/render"
)

// QPModes is "statistic qp mode": each port's QP counter mode (iproute2
// rdma/stat.c, stat_qp_get_mode).
var QPModes = desc[inventory.QPCounterMode]{
	Name:    "qp mode",
	DevKey:  "link",
	Columns: []string{"LINK", "MODE", "AUTO", "OPTIONAL_COUNTERS"},
	List: func(src Source, q Query) ([]inventory.QPCounterMode, error) {
		return src.QPCounterModes(q.Dev, q.Port)
	},
	Row: qpModeRow,
}.object()

// qpModeJSON is one port's QP counter mode. mode is rdma's text ("qp auto
// type on optional-counters off", "qp auto off"); counter_mode, auto and
// optional_counters are the same facts as values.
type qpModeJSON struct {
	Ifindex          uint32   `json:"ifindex"`
	Ifname           string   `json:"ifname"`
	Port             uint32   `json:"port"`
	Mode             string   `json:"mode"`
	CounterMode      string   `json:"counter_mode"`
	Auto             []string `json:"auto,omitempty"`
	OptionalCounters *bool    `json:"optional_counters,omitempty"`
}

func qpModeRow(m inventory.QPCounterMode, _ Query) (Row, bool) {
	r := qpModeJSON{Ifindex: m.DevIndex, Ifname: m.Dev, Port: m.Port, Mode: rdmaModeText(m),
		CounterMode: m.Mode, Auto: m.Auto, OptionalCounters: m.OptionalCounters}
	return Row{JSON: r, Cells: []any{link(r.Ifname, r.Port), r.CounterMode, strings.Join(r.Auto, ","), render.OnOff(r.OptionalCounters)}}, true
}

// rdmaModeText is rdma's "mode" string of a port's QP counter mode.
func rdmaModeText(m inventory.QPCounterMode) string {
	if m.Mode != "auto" || len(m.Auto) == 0 {
		return "qp auto off"
	}
	s := "qp auto " + strings.Join(m.Auto, ",") + " on"
	if m.OptionalCounters != nil {
		s += " optional-counters " + render.OnOff(m.OptionalCounters)
	}
	return s
}

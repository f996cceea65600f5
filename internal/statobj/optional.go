package statobj

import (
	"strings"

	"github.com/rdmactl/rdmactl/internal/inventory"
)

// OptionalCounters is "statistic mode": the optional counters each port
// has on; SupportedOptionalCounters is "statistic mode supported": those
// it has (iproute2 rdma/stat.c, stat_mode). As in rdma, ports
// without any (rxe) are left out.
var (
	OptionalCounters          = optionalCounters("mode", "OPTIONAL_COUNTERS", false)
	SupportedOptionalCounters = optionalCounters("mode supported", "SUPPORTED_OPTIONAL_COUNTERS", true)
)

func optionalCounters(name, column string, supported bool) *Object {
	return desc[inventory.OptionalCounters]{
		Name:    name,
		DevKey:  "link",
		Columns: []string{"LINK", column},
		List: func(src Source, q Query) ([]inventory.OptionalCounters, error) {
			return src.OptionalCounters(q.Dev, q.Port)
		},
		Row: func(o inventory.OptionalCounters, _ Query) (Row, bool) {
			r := optCountersJSON{Ifname: o.Dev, Port: o.Port}
			names := o.Enabled
			if supported {
				r.Supported, names = o.Supported, o.Supported
			} else {
				r.Enabled = o.Enabled
			}
			return Row{JSON: r, Cells: []any{link(r.Ifname, r.Port), strings.Join(names, ",")}}, len(names) > 0
		},
	}.object()
}

// optCountersJSON is one port's optional counters, those on or (supported)
// all of them.
type optCountersJSON struct {
	Ifname    string   `json:"ifname"`
	Port      uint32   `json:"port"`
	Enabled   []string `json:"optional_counters,omitempty"`
	Supported []string `json:"supported_optional_counters,omitempty"`
}

package top

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/render"
)

// Frame is what one refresh shows.
type Frame struct {
	Time     time.Time
	Interval time.Duration // 0 on the first frame (no rates yet)
	Rows     []Row
	Procs    []Proc
	Events   []string
	// ProcErr says why the process pane is empty (a captured tree has no
	// resources); "" when it was read.
	ProcErr string
}

// Column is one column of the port table. Width fits the table in 80
// columns; Sort is its sort value (nil sorts last).
type Column struct {
	Name  string
	Key   string // the --sort name
	Width int
	Cell  func(Row) string
	Sort  func(Row) *float64
}

// Columns of the port table, in order. Traffic cells show Gb/s and the
// share of the link where the device counts bytes, else packets/s (rxe).
var Columns = []Column{
	{Name: "DEV/PORT", Key: "dev", Width: 11, Cell: func(r Row) string { return r.Key() }},
	{Name: "STATE", Key: "state", Width: 6, Cell: func(r Row) string { return shortState(r.State) }},
	{Name: "LINK", Key: "link", Width: 5, Cell: func(r Row) string { return gbps(r.RateGbps) }, Sort: func(r Row) *float64 { return r.RateGbps }},
	{Name: "TX", Key: "tx", Width: 10, Cell: func(r Row) string { return traffic(r.TxBytes, r.TxShare, r.TxPkts) }, Sort: func(r Row) *float64 { return trafficSort(r.TxBytes, r.TxPkts) }},
	{Name: "RX", Key: "rx", Width: 10, Cell: func(r Row) string { return traffic(r.RxBytes, r.RxShare, r.RxPkts) }, Sort: func(r Row) *float64 { return trafficSort(r.RxBytes, r.RxPkts) }},
	{Name: "ERR", Key: "errors", Width: 4, Cell: func(r Row) string { return count(r.Errors) }, Sort: func(r Row) *float64 { return r.Errors }},
	{Name: "DISC", Key: "discards", Width: 4, Cell: func(r Row) string { return count(r.Discards) }, Sort: func(r Row) *float64 { return r.Discards }},
	{Name: "RETX", Key: "retrans", Width: 4, Cell: func(r Row) string { return count(r.Retrans) }, Sort: func(r Row) *float64 { return r.Retrans }},
	{Name: "OOS", Key: "oos", Width: 4, Cell: func(r Row) string { return count(r.OOS) }, Sort: func(r Row) *float64 { return r.OOS }},
	{Name: "RNR", Key: "rnr", Width: 4, Cell: func(r Row) string { return count(r.RNR) }, Sort: func(r Row) *float64 { return r.RNR }},
	{Name: "CNP", Key: "cnp", Width: 4, Cell: func(r Row) string { return count(r.CNP) }, Sort: func(r Row) *float64 { return r.CNP }},
	{Name: "ECN", Key: "ecn", Width: 4, Cell: func(r Row) string { return count(r.ECN) }, Sort: func(r Row) *float64 { return r.ECN }},
}

// SortKeys lists the --sort names.
func SortKeys() []string {
	out := make([]string, len(Columns))
	for i, c := range Columns {
		out[i] = c.Key
	}
	return out
}

// ColumnByKey is the index of the column with key, or -1.
func ColumnByKey(key string) int {
	return slices.IndexFunc(Columns, func(c Column) bool { return c.Key == key })
}

// View is how the frame is shown: sort column, order, device filter.
type View struct {
	SortCol int  // index in Columns
	Reverse bool // flips the column's natural order
	Filter  string
}

// Apply filters and sorts rows. Text columns sort ascending, figures
// descending (the busiest first, as top), unknown figures last; Reverse
// flips that. Ties keep DEV/PORT order.
func (v View) Apply(rows []Row) []Row {
	var out []Row
	for _, r := range rows {
		if v.Filter == "" || strings.Contains(r.Key(), v.Filter) {
			out = append(out, r)
		}
	}
	col := Columns[0]
	if v.SortCol >= 0 && v.SortCol < len(Columns) {
		col = Columns[v.SortCol]
	}
	byName := func(a, b Row) int { return cmp.Or(cmp.Compare(a.Dev, b.Dev), cmp.Compare(a.Port, b.Port)) }
	slices.SortStableFunc(out, func(a, b Row) int {
		var c int
		if col.Sort != nil {
			x, y := col.Sort(a), col.Sort(b)
			switch {
			case x == nil && y == nil:
			case x == nil:
				return 1
			case y == nil:
				return -1
			default:
				c = cmp.Compare(*y, *x)
			}
		} else if col.Key != "dev" {
			c = cmp.Compare(col.Cell(a), col.Cell(b))
		}
		if v.Reverse {
			c = -c
		}
		if c == 0 {
			c = byName(a, b)
			if v.Reverse && col.Key == "dev" {
				c = -c
			}
		}
		return c
	})
	return out
}

// Procs filters the process pane by device.
func (v View) Procs(ps []Proc) []Proc {
	var out []Proc
	for _, p := range ps {
		if v.Filter == "" || strings.Contains(p.Dev+"/", v.Filter) || strings.Contains(p.Dev, v.Filter) {
			out = append(out, p)
		}
	}
	return out
}

// Style decorates the text: the header line, a column heading, the
// sort column's heading. Plain (NO_COLOR, batch) leaves text as it is.
type Style struct {
	Header, Heading, Sorted, Alert func(string) string
}

// Plain is no decoration.
var Plain = Style{}

func (s Style) apply(f func(string) string, t string) string {
	if f == nil {
		return t
	}
	return f(t)
}

// Render is the text of a frame in width columns (0: no limit) and at
// most height lines (0: no limit): a header line, the port table, then
// the process pane with what room is left.
func Render(f *Frame, v View, st Style, width, height int) string {
	var b strings.Builder
	lines := 0
	line := func(s string) {
		if height > 0 && lines >= height {
			return
		}
		if width > 0 && len(s) > width {
			s = s[:width]
		}
		b.WriteString(s)
		b.WriteByte('\n')
		lines++
	}
	iv := "first sample"
	if f.Interval > 0 {
		iv = fmt.Sprintf("interval %.1fs", f.Interval.Seconds())
	}
	hdr := fmt.Sprintf("rdmactl top - %s  %s  sort %s", f.Time.Format("15:04:05"), iv, Columns[v.SortCol].Key)
	if v.Reverse {
		hdr += " (reversed)"
	}
	if v.Filter != "" {
		hdr += "  filter " + render.Escape(v.Filter)
	}
	line(st.apply(st.Header, pad(hdr, width)))
	for _, e := range f.Events {
		line("  " + render.Escape(e))
	}
	var h strings.Builder
	for i, c := range Columns {
		cell := pad(c.Name, c.Width)
		if i == v.SortCol {
			cell = st.apply(st.Sorted, cell)
		} else {
			cell = st.apply(st.Heading, cell)
		}
		if i > 0 {
			h.WriteByte(' ')
		}
		h.WriteString(cell)
	}
	b.WriteString(strings.TrimRight(h.String(), " ") + "\n") // not cut: escapes would count
	lines++
	rows := v.Apply(f.Rows)
	for _, r := range rows {
		var l strings.Builder
		for i, c := range Columns {
			if i > 0 {
				l.WriteByte(' ')
			}
			l.WriteString(pad(render.Escape(c.Cell(r)), c.Width))
		}
		line(strings.TrimRight(l.String(), " "))
	}
	if len(rows) == 0 {
		line("  (no port)")
	}
	line("")
	procs := v.Procs(f.Procs)
	traffic := slices.ContainsFunc(procs, func(p Proc) bool { return p.Traffic != nil })
	ph := fmt.Sprintf("%7s %-15s %-12s %5s %5s %5s", "PID", "COMMAND", "DEV", "QP", "CQ", "MR")
	if traffic {
		ph += fmt.Sprintf(" %-10s %-10s %5s", "TX", "RX", "OPS")
	}
	line(st.apply(st.Heading, pad(ph, width)))
	for _, p := range procs {
		// A process names itself (prctl PR_SET_NAME) and a capture its
		// devices: printed, never obeyed (render.Escape).
		l := fmt.Sprintf("%7d %-15s %-12s %5d %5d %5d", p.PID, trunc(render.Escape(p.Comm), 15), trunc(render.Escape(p.Dev), 12), p.QPs, p.CQs, p.MRs)
		if traffic && p.Traffic != nil {
			t := p.Traffic
			l += fmt.Sprintf(" %-10s %-10s %5s", traffic2(t.TxBytes, t.TxPkts), traffic2(t.RxBytes, t.RxPkts), count(t.Ops))
		}
		line(l)
	}
	if f.ProcErr != "" {
		line("  (" + f.ProcErr + ")")
	} else if len(procs) == 0 {
		line("  (no process holds RDMA resources)")
	}
	return b.String()
}

func traffic2(bytes, pkts *float64) string { return traffic(bytes, nil, pkts) }

func pad(s string, w int) string {
	if w <= 0 || len(s) >= w {
		return s
	}
	return s + strings.Repeat(" ", w-len(s))
}

func trunc(s string, w int) string {
	if len(s) > w {
		return s[:w]
	}
	return s
}

// shortState fits the port state in the column.
func shortState(s string) string {
	switch s {
	case "ACTIVE":
		return "ACTIVE"
	case "":
		return "-"
	}
	return trunc(s, 6)
}

func gbps(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64) + "G"
}

// traffic is "9.41G 37%" (Gb/s, share of the link) where bytes are
// counted, "812kp/s" where only packets are, "-" where neither.
func traffic(bytes, share, pkts *float64) string {
	switch {
	case bytes != nil:
		s := si(*bytes*8) + "b"
		if share != nil {
			s += fmt.Sprintf(" %.0f%%", math.Min(*share*100, 999))
		}
		return s
	case pkts != nil:
		return si(*pkts) + "p/s"
	}
	return "-"
}

func trafficSort(bytes, pkts *float64) *float64 {
	if bytes != nil {
		return bytes
	}
	return pkts
}

// count is an event rate in at most 4 characters: "0", "12", "1.2k".
func count(v *float64) string {
	if v == nil {
		return "-"
	}
	return si(*v)
}

// si is v with an SI suffix in at most 4 characters ("999", "1.2k", "12M").
func si(v float64) string {
	if v < 0.05 {
		return "0"
	}
	for _, u := range []struct {
		div float64
		suf string
	}{{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if v >= u.div*0.9995 {
			x := v / u.div
			if x < 9.95 {
				return strconv.FormatFloat(x, 'f', 1, 64) + u.suf
			}
			return strconv.FormatFloat(x, 'f', 0, 64) + u.suf
		}
	}
	if v < 9.95 {
		return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// Help is the help screen's text.
const Help = `rdmactl top: one row per port, rates per second over the interval.

  TX, RX   Gb/s and share of the link where the device counts bytes
           (port_xmit_data/port_rcv_data), else packets/s (p/s; rxe)
  ERR DISC RETX OOS RNR   errors, discards, retransmissions,
           out-of-sequence and RNR events per second
  CNP ECN  congestion notification packets, ECN-marked packets per second
  k M G    thousands, millions, billions; "-": the device has no such counter
  Process pane: PID, command, device and how many QPs, CQs, MRs it holds;
  TX RX OPS where QP counters are bound to it (rdma statistic qp, auto mode).

Keys:
  < >  or  left right   sort by the previous/next column
  t r e n               sort by TX, RX, errors, DEV/PORT
  i                     invert the sort order
  /                     device filter (Enter applies, Esc clears)
  space  p              pause/resume
  h  ?                  this help (any key closes it)
  q  Ctrl-C             quit
`

package render

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"math"

	"github.com/rdmactl/rdmactl/internal/mesh"
)

// MeshHTML writes perf mesh's report as one self-contained HTML page (no
// script, no external file): the matrix as a heat map, each cell colored
// by its share of the median (green at the median and above, through
// yellow, to red at half and below; failed cells dark red) with the
// test's figure, share and error in its title, then the failed tests,
// the slowest and the suspects. Every name is escaped: they come from
// the ranks. html rather than html/template: the latter's package
// initialization runs in every rdmactl command.
func MeshHTML(w io.Writer, r *mesh.Report, title string) error {
	bw := bufio.NewWriter(w)
	e := html.EscapeString
	eps := r.Endpoints()
	fmt.Fprintf(bw, `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%s</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;font-size:12px}
td,th{border:1px solid #ccc;padding:2px 5px;text-align:right;white-space:nowrap}
th{background:#f4f4f4;font-weight:600}
th.row{text-align:left}
td.none{background:#fafafa;color:#bbb}
td.failed{background:#7a0000;color:#fff}
.list td,.list th{text-align:left}
</style></head><body>
<h1>%s</h1>
<p>%d tests, %d failed, median %s %s. Rows send to columns; a cell's color is its share of the median.</p>
`, e(title), e(title), len(r.Tests), r.Failed, mesh.FormatFigure(r.Median), e(r.Unit))
	fmt.Fprint(bw, "<table>\n<tr><th></th>")
	for j, ep := range eps {
		fmt.Fprintf(bw, `<th title="%s">%d</th>`, e(r.Name(ep).String()), j)
	}
	fmt.Fprint(bw, "</tr>\n")
	for i, s := range eps {
		fmt.Fprintf(bw, `<tr><th class="row">%d %s</th>`, i, e(r.Name(s).String()))
		for _, d := range eps {
			tr := r.Cell(s, d)
			switch {
			case tr == nil:
				fmt.Fprint(bw, `<td class="none">.</td>`)
			case tr.Figure == nil:
				fmt.Fprintf(bw, `<td class="failed" title="%s">-</td>`, e(tr.Error))
			default:
				fmt.Fprintf(bw, `<td style="background:%s" title="%s %s, %.0f%% of the median">%s</td>`,
					shareColor(*tr.Share), mesh.FormatFigure(*tr.Figure), e(r.Unit), *tr.Share*100, mesh.FormatFigure(*tr.Figure))
			}
		}
		fmt.Fprint(bw, "</tr>\n")
	}
	fmt.Fprint(bw, "</table>\n")
	list := func(head string, cols []string, rows [][]string) {
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(bw, "<h2>%s</h2>\n<table class=\"list\"><tr>", e(head))
		for _, c := range cols {
			fmt.Fprintf(bw, "<th>%s</th>", e(c))
		}
		fmt.Fprint(bw, "</tr>\n")
		for _, row := range rows {
			fmt.Fprint(bw, "<tr>")
			for _, c := range row {
				fmt.Fprintf(bw, "<td>%s</td>", e(c))
			}
			fmt.Fprint(bw, "</tr>\n")
		}
		fmt.Fprint(bw, "</table>\n")
	}
	var failed, slowest, suspects [][]string
	for _, tr := range r.Tests {
		if tr.Figure == nil {
			failed = append(failed, []string{tr.Src.String(), tr.Dst.String(), fmt.Sprint(tr.Round), tr.Error})
		}
	}
	for _, tr := range r.Slowest {
		slowest = append(slowest, []string{tr.Src.String(), tr.Dst.String(), fmt.Sprint(tr.Round), mesh.FormatFigure(*tr.Figure), fmt.Sprintf("%.0f%%", *tr.Share*100)})
	}
	for _, s := range r.Suspects {
		suspects = append(suspects, []string{s.Endpoint.String(), fmt.Sprint(s.Bad), fmt.Sprint(s.Tests), fmt.Sprintf("%.0f%%", s.Fraction*100)})
	}
	list("Failed", []string{"Source", "Destination", "Round", "Error"}, failed)
	list("Slowest", []string{"Source", "Destination", "Round", r.Unit, "Share"}, slowest)
	list("Suspects", []string{"Endpoint", "Bad", "Tests", "Share"}, suspects)
	var absent [][]string
	for _, a := range r.Absent {
		absent = append(absent, []string{fmt.Sprint(a.Rank), a.Reason})
	}
	list("Absent ranks", []string{"Rank", "Reason"}, absent)
	fmt.Fprint(bw, "</body></html>\n")
	return bw.Flush()
}

// shareColor is a cell's background: hue 120 (green) at a share of 1 or
// more, 0 (red) at 0.5 or less, linear between.
func shareColor(share float64) string {
	x := math.Max(0, math.Min(1, (share-0.5)/0.5))
	return fmt.Sprintf("hsl(%.0f,70%%,75%%)", 120*x)
}

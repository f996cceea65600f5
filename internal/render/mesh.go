package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmactl/rdmactl/internal/mesh"
)

// MeshMatrixMax is the most endpoints perf mesh's matrix is printed for:
// 32 columns of 7 characters fill a 240-column terminal. Larger jobs get
// their matrix from --html or -j.
const MeshMatrixMax = 32

// ANSI SGR colors of the matrix's cells on a terminal.
const (
	sgrSlow   = "\x1b[33m" // yellow: below the slow share of the median
	sgrFailed = "\x1b[31m" // red: failed
	sgrReset  = "\x1b[0m"
)

// MeshReport prints perf mesh's report for people: a summary line; the
// matrix (rows send to columns: each cell the test's figure, "-" failed,
// "." not tested; on a terminal, color slow cells yellow and failed ones
// red); the failed tests with their reasons; the slowest tests; the
// suspects; the ranks that never took part. Names come from other hosts
// and are escaped.
func MeshReport(w io.Writer, r *mesh.Report, color bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%d tests, %d failed, median %s %s\n", len(r.Tests), r.Failed, mesh.FormatFigure(r.Median), r.Unit)
	eps := r.Endpoints()
	switch {
	case len(eps) == 0:
	case len(eps) > MeshMatrixMax:
		fmt.Fprintf(&b, "\n%d endpoints: too many for a matrix here; see --html FILE or -j\n", len(eps))
	default:
		meshMatrix(&b, r, eps, color)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if r.Failed > 0 {
		fmt.Fprintln(w, "\nfailed:")
		t := NewTable(w, "SRC", "DST", "ROUND", "ERROR")
		for _, tr := range r.Tests {
			if tr.Figure == nil {
				t.Row(tr.Src.String(), tr.Dst.String(), tr.Round, tr.Error)
			}
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(r.Slowest) > 0 {
		fmt.Fprintln(w, "\nslowest:")
		t := NewTable(w, "SRC", "DST", "ROUND", strings.ToUpper(r.Unit), "SHARE")
		for _, tr := range r.Slowest {
			t.Row(tr.Src.String(), tr.Dst.String(), tr.Round, mesh.FormatFigure(*tr.Figure), fmt.Sprintf("%.0f%%", *tr.Share*100))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(r.Suspects) > 0 {
		fmt.Fprintln(w, "\nsuspects (the endpoints most often in slow or failed tests):")
		t := NewTable(w, "ENDPOINT", "BAD", "TESTS", "SHARE")
		for _, s := range r.Suspects {
			t.Row(s.Endpoint.String(), s.Bad, s.Tests, fmt.Sprintf("%.0f%%", s.Fraction*100))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	for _, ab := range r.Absent {
		if _, err := fmt.Fprintf(w, "rank %d absent: %s\n", ab.Rank, Escape(ab.Reason)); err != nil {
			return err
		}
	}
	return nil
}

// meshMatrix writes the matrix: a header of column numbers, then a row
// an endpoint, "N host/device" and its cells (Report.Matrix's text, "."
// where none), right-aligned.
func meshMatrix(b *strings.Builder, r *mesh.Report, eps []mesh.Endpoint, color bool) {
	labels := make([]string, len(eps))
	lw := 0
	for i, e := range eps {
		labels[i] = strconv.Itoa(i) + " " + Escape(r.Name(e).String())
		lw = max(lw, len(labels[i]))
	}
	texts := r.Matrix(eps)
	cw := len(strconv.Itoa(len(eps) - 1))
	for i := range texts {
		for j := range texts[i] {
			if texts[i][j] == "" {
				texts[i][j] = "."
			}
			cw = max(cw, len(texts[i][j]))
		}
	}
	fmt.Fprintf(b, "\n%s, rows send to columns (- failed, . not tested):\n", r.Unit)
	fmt.Fprintf(b, "%-*s", lw, "")
	for j := range eps {
		fmt.Fprintf(b, "  %*d", cw, j)
	}
	b.WriteByte('\n')
	for i, s := range eps {
		fmt.Fprintf(b, "%-*s", lw, labels[i])
		for j, d := range eps {
			b.WriteString("  ")
			sgr := ""
			if tr := r.Cell(s, d); color && tr != nil {
				switch {
				case tr.Figure == nil:
					sgr = sgrFailed
				case r.Slow(tr):
					sgr = sgrSlow
				}
			}
			if sgr != "" {
				fmt.Fprintf(b, "%s%*s%s", sgr, cw, texts[i][j], sgrReset)
			} else {
				fmt.Fprintf(b, "%*s", cw, texts[i][j])
			}
		}
		b.WriteByte('\n')
	}
}

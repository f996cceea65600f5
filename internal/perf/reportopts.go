package perf

import (
	"errors"
	"fmt"
	"time"
)

// perftest's report options (src/perftest_parameters.c): -N/--noPeak,
// --output and -f/--margin.

// Output is perftest's --output: the whole report (OutputFull), or one
// figure per result row and nothing else.
type Output int

const (
	OutputFull    Output = iota
	OutputBW             // --output=bandwidth: the BW average
	OutputMsgRate        // --output=message_rate: the message rate
	OutputLat            // --output=latency: the average latency
)

// ParseOutput reads --output's value (perftest's names).
func ParseOutput(s string) (Output, error) {
	switch s {
	case "bandwidth":
		return OutputBW, nil
	case "message_rate":
		return OutputMsgRate, nil
	case "latency":
		return OutputLat, nil
	}
	return OutputFull, fmt.Errorf("%q: want bandwidth, message_rate or latency (as perftest)", s)
}

// ReportOpts are those options' values.
type ReportOpts struct {
	// NoPeak (-N) reports the BW peak as 0, as perftest's noPeak
	// (print_report_bw: peak_up = !noPeak * ...); the average and the
	// message rate are unchanged.
	NoPeak bool
	// Output selects perftest's one-figure output.
	Output Output
	// UserMargin says -f gave Margin (0 included).
	UserMargin bool
	// CPUUtil (--cpu_util) reports this side's CPU utilisation over the
	// measured window of a -D run (cpuutil.go).
	CPUUtil bool
	// OutJSON is the file --out_json writes perftest's report to
	// (outjson.go); "": none.
	OutJSON string
	// Both (--report-both) prints each side's figures of a
	// bidirectional run after their sum.
	Both bool
	// AsPerftest: rdmactl runs under a perftest test's name
	// (ib_write_bw...), and its header has the two lines perftest's
	// ctx_print_test_info prints about its own ways of posting and
	// registering, with rdmactl's answers (writeHeader).
	AsPerftest bool
}

// validateReport checks them as perftest's force_dependencies does.
func (p *Params) validateReport() error {
	r := &p.Report
	switch {
	case r.NoPeak && p.Test != TestBW:
		return errors.New("-N applies to bandwidth tests only (as perftest)")
	case r.Output == OutputLat && p.Test != TestLat:
		return errors.New("--output=latency: bandwidth tests print bandwidth or message_rate (as perftest)")
	case (r.Output == OutputBW || r.Output == OutputMsgRate) && p.Test != TestBW:
		return errors.New("--output: latency tests print latency (as perftest)")
	case r.Output != OutputFull && (p.Histogram || p.Unsorted):
		return errors.New("--output prints one figure; -H and -U print every sample")
	case r.Both && (!p.Bidir || p.Test != TestBW):
		return errors.New("--report-both applies to bidirectional bandwidth runs (-b), as perftest")
	case r.Both && (p.AllSizes || p.RunInfinitely):
		return errors.New("--report-both: perftest reports both sides only in a run of one size (not -a, not --run_infinitely)")
	case r.Both && p.recvComp() && p.Duration > 0:
		return errors.New("--report-both: a send or write-with-immediate -D run exchanges no reports (as perftest); each side prints its own")
	case r.Both && r.Output != OutputFull:
		return errors.New("--report-both prints report blocks; --output prints one figure")
	case r.UserMargin && p.Duration == 0:
		return errors.New("-f: the margin applies to -D runs (perftest ignores it without -D)")
	case r.UserMargin && p.Margin < 0:
		return errors.New("-f: the margin must not be negative (as perftest)")
	case r.UserMargin && p.RunInfinitely:
		return errors.New("-f: --run_infinitely counts each whole period, without margins")
	case r.UserMargin && p.Duration > 0 && p.Duration <= 2*p.Margin:
		return fmt.Errorf("-f %d: -D %d must be more than twice the margin (as perftest)", int64(p.Margin/time.Second), int64(p.Duration/time.Second))
	}
	return nil
}

// figure is the line --output prints for a BW row ("%lf\n", as perftest).
func (o Output) bwFigure(r BWResult) string {
	if o == OutputMsgRate {
		return fmt.Sprintf("%f\n", r.MsgRate)
	}
	return fmt.Sprintf("%f\n", r.BWAvg)
}

// printfAlways prints what perftest prints whatever --output says (its
// -W counters, --wait_destroy's line): to Out, or with --output to where
// the figures go.
func (s *Session) printfAlways(format string, a ...any) {
	w := s.Out
	if w == nil {
		w = s.fig
	}
	if w != nil {
		fmt.Fprintf(w, format, a...)
	}
}

// ReportBoth is what --report-both adds to a bidirectional run: each
// side's own figures (perftest's report_both: "Local results" and
// "Remote results", after the sum).
type ReportBoth struct {
	Local  BWResult `json:"local"`
	Remote BWResult `json:"remote"`
}

// printReportBoth prints --report-both's blocks after the sum row, in
// perftest's layout (write_bw.c, send_bw.c: RESULT_LINE, the title,
// RESULT_LINE, the header, the row; once for each side).
func (s *Session) printReportBoth() {
	b := s.result.ReportBoth
	if b == nil {
		return
	}
	for _, half := range []struct {
		title string
		row   BWResult
	}{{"Local", b.Local}, {"Remote", b.Remote}} {
		s.printf("%s\n %s results: \n%s%s%s", resultLine, half.title, resultLine, s.cpuHeaderEnd(bwHeader(s.P.Gbits, s.P.Report.AsPerftest)), s.cpuRowEnd(formatBWRow(half.row)))
		s.outJSONBW(half.row) // perftest's print_full_bw_report writes the file each time
	}
}

package perf

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// -N: the peak is 0 on the side that gives it (the client's row, which a
// write server prints too); without it the peak is the best rate.
func TestSessionNoPeak(t *testing.T) {
	for _, noPeak := range []bool{false, true} {
		cli := Params{Verb: VerbWrite, Test: TestBW, Iters: 300, Report: ReportOpts{NoPeak: noPeak}}
		s, c, _ := runPair(t, Params{Verb: VerbWrite, Test: TestBW, Iters: 300}, cli)
		if s.err != nil || c.err != nil {
			t.Fatalf("server: %v client: %v", s.err, c.err)
		}
		row := c.res.BW[0]
		if row.BWAvg <= 0 || row.MsgRate <= 0 || (row.BWPeak == 0) != noPeak {
			t.Fatalf("-N %v: %+v", noPeak, row)
		}
		if srow := s.res.BW[0]; srow.BWPeak != row.BWPeak {
			t.Fatalf("-N %v: the server prints peak %v, the client's is %v", noPeak, srow.BWPeak, row.BWPeak)
		}
		if noPeak && !strings.Contains(c.out.String(), fmt.Sprintf("%-7d    %-10d       %-7.2f ", row.Size, row.Iters, 0.0)) {
			t.Fatalf("-N: no row with peak 0.00:\n%s", c.out.String())
		}
	}
}

// --output: each side prints one figure per row ("%lf\n") and nothing
// else, the figure of its report row.
func TestSessionOutputFigure(t *testing.T) {
	for _, c := range []struct {
		name string
		p    Params
		fig  func(r *Result) []float64
	}{
		{"write_bw_bandwidth", Params{Verb: VerbWrite, Test: TestBW, Iters: 200, Report: ReportOpts{Output: OutputBW}},
			func(r *Result) []float64 { return []float64{r.BW[0].BWAvg} }},
		{"send_bw_all_message_rate", Params{Verb: VerbSend, Test: TestBW, Iters: 20, AllSizes: true, Report: ReportOpts{Output: OutputMsgRate}},
			func(r *Result) (f []float64) {
				for _, b := range r.BW {
					f = append(f, b.MsgRate)
				}
				return f
			}},
		{"read_lat_latency", Params{Verb: VerbRead, Test: TestLat, Iters: 100, Report: ReportOpts{Output: OutputLat}},
			func(r *Result) []float64 {
				if len(r.Lat) == 0 {
					return nil // the read server prints no report, as perftest
				}
				return []float64{r.Lat[0].Avg}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cl, _ := runPair(t, c.p, c.p)
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			for side, o := range map[string]*sideOut{"server": s, "client": cl} {
				var want strings.Builder
				figs := c.fig(o.res)
				for _, f := range figs {
					fmt.Fprintf(&want, "%f\n", f)
				}
				if got := o.out.String(); got != want.String() || side == "client" && (len(figs) == 0 || figs[len(figs)-1] <= 0) {
					t.Errorf("%s printed %q, want %q", side, got, want.String())
				}
			}
			if c.p.AllSizes && len(cl.res.BW) < 10 {
				t.Fatalf("-a: %d rows", len(cl.res.BW))
			}
		})
	}
}

// -f: the margins are left out of a -D run's figures; -f 0 measures the
// whole run.
func TestSessionMargin(t *testing.T) {
	for _, m := range []time.Duration{0, 300 * time.Millisecond} {
		p := Params{Verb: VerbWrite, Test: TestBW, Duration: time.Second, Margin: m, Report: ReportOpts{UserMargin: true}}
		s, c, _ := runPair(t, p, p)
		if s.err != nil || c.err != nil {
			t.Fatalf("-f %v: server: %v client: %v", m, s.err, c.err)
		}
		want := (time.Second - 2*m).Seconds()
		if got := c.res.BW[0].Seconds; got < want-0.1 || got > want+0.1 {
			t.Errorf("-f %v: measured %.3f s, want about %.3f s", m, got, want)
		}
	}
}

func TestReportOptsValidate(t *testing.T) {
	p := Params{Verb: VerbWrite, Test: TestBW, Server: true, Duration: 4 * time.Second, Report: ReportOpts{UserMargin: true}}
	p.Defaults()
	if p.Margin != 0 {
		t.Fatalf("-f 0 -D 4: margin %v after Defaults, want 0", p.Margin)
	}
	for _, c := range []struct {
		p    Params
		want string
	}{
		{Params{Verb: VerbWrite, Test: TestLat, Report: ReportOpts{NoPeak: true}}, "-N"},
		{Params{Verb: VerbWrite, Test: TestLat, Report: ReportOpts{Output: OutputBW}}, "--output"},
		{Params{Verb: VerbWrite, Test: TestBW, Report: ReportOpts{Output: OutputLat}}, "--output"},
		{Params{Verb: VerbWrite, Test: TestLat, Histogram: true, Report: ReportOpts{Output: OutputLat}}, "--output"},
		{Params{Verb: VerbWrite, Test: TestBW, Duration: 4 * time.Second, Margin: 2 * time.Second, Report: ReportOpts{UserMargin: true}}, "-f 2: -D 4"},
		{Params{Verb: VerbWrite, Test: TestBW, RunInfinitely: true, Margin: time.Second, Report: ReportOpts{UserMargin: true}}, "-f"},
	} {
		c.p.Server = true
		c.p.Defaults()
		if err := c.p.Validate(); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error starting %q", c.p.Report, err, c.want)
		}
	}
	if _, err := ParseOutput("bw"); err == nil {
		t.Fatal("--output=bw accepted")
	}
}

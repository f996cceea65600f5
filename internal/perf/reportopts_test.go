package perf

import (
	"fmt"
	"os"
	"path/filepath"
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
		{Params{Verb: VerbWrite, Test: TestBW, Margin: time.Second, Report: ReportOpts{UserMargin: true}}, "-f: the margin applies to -D"},
		{Params{Verb: VerbWrite, Test: TestBW, Bidir: true, AllSizes: true, Report: ReportOpts{Both: true}}, "--report-both"},
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

// --report-both: after the sum row of a bidirectional run, each side
// prints its own figures and the peer's, in perftest's blocks; the two
// add up to the sum, and one side's local row is the other's remote row.
func TestSessionReportBoth(t *testing.T) {
	for _, v := range []Verb{VerbWrite, VerbSend} {
		p := Params{Verb: v, Test: TestBW, Bidir: true, Iters: 200, Report: ReportOpts{Both: true}}
		s, c, _ := runPair(t, p, p)
		if s.err != nil || c.err != nil {
			t.Fatalf("%s: server: %v client: %v", v, s.err, c.err)
		}
		for _, o := range []*sideOut{s, c} {
			b := o.res.ReportBoth
			if b == nil || len(o.res.BW) != 1 {
				t.Fatalf("%s: %+v", v, o.res)
			}
			sum := o.res.BW[0]
			if d := b.Local.BWAvg + b.Remote.BWAvg - sum.BWAvg; d > 1e-9 || d < -1e-9 || b.Local.BWAvg <= 0 || b.Remote.BWAvg <= 0 {
				t.Fatalf("%s: local %v + remote %v != sum %v", v, b.Local.BWAvg, b.Remote.BWAvg, sum.BWAvg)
			}
			want := formatBWRow(sum) + resultLine + "\n Local results: \n" + resultLine + bwHeader(false, false) + formatBWRow(b.Local) +
				resultLine + "\n Remote results: \n" + resultLine + bwHeader(false, false) + formatBWRow(b.Remote) + resultLine
			if !strings.HasSuffix(o.out.String(), want) {
				t.Fatalf("%s: the output does not end in\n%s\n---\n%s", v, want, o.out.String())
			}
		}
		if s.res.ReportBoth.Local.BWAvg != c.res.ReportBoth.Remote.BWAvg || c.res.ReportBoth.Local.BWAvg != s.res.ReportBoth.Remote.BWAvg {
			t.Fatalf("%s: server %+v, client %+v", v, s.res.ReportBoth, c.res.ReportBoth)
		}
	}
	for _, p := range []Params{
		{Verb: VerbWrite, Test: TestBW, Report: ReportOpts{Both: true}},
		{Verb: VerbWrite, Test: TestBW, Bidir: true, AllSizes: true, Report: ReportOpts{Both: true}},
		{Verb: VerbSend, Test: TestBW, Bidir: true, Duration: 4 * time.Second, Report: ReportOpts{Both: true}},
	} {
		p.Server = true
		p.Defaults()
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--report-both") {
			t.Errorf("%+v: %v, want a --report-both error", p, err)
		}
	}
}

// With --output, what perftest prints whatever the verbosity still
// comes: -W's counter lines after the figure.
func TestSessionOutputKeepsCounters(t *testing.T) {
	dir := t.TempDir()
	p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, Report: ReportOpts{Output: OutputBW}}
	cli := p
	cli.ReportCounters = []string{"counters/port_xmit_data"}
	// The fake device has no name: the port's directory is DIR/ports/1.
	if err := os.MkdirAll(filepath.Join(dir, "ports", "1", "counters"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ports", "1", "counters", "port_xmit_data"), []byte("7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, c, _ := runPairWith(t, p, cli, 0, func(_, cl *Session) { cl.SysfsIB = dir })
	if s.err != nil || c.err != nil {
		t.Fatalf("server: %v client: %v", s.err, c.err)
	}
	lines := strings.Split(strings.TrimSuffix(c.out.String(), "\n"), "\n")
	if len(lines) < 2 || lines[0] != fmt.Sprintf("%f", c.res.BW[0].BWAvg) || !strings.Contains(c.out.String(), "port_xmit_data") {
		t.Fatalf("client printed:\n%s", c.out.String())
	}
}

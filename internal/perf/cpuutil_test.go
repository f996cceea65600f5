package perf

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseCPUStat(t *testing.T) {
	u, i, err := parseCPUStat("cpu  4705 356 584 3699 23 23 0 0 0 0\n")
	if err != nil || u != 4705 || i != 3699 {
		t.Fatalf("%d %d %v", u, i, err)
	}
	for _, bad := range []string{"cpu0 1 2 3 4\n", "cpu 1 2 3\n", "cpu x 2 3 4\n", ""} {
		if _, _, err := parseCPUStat(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if v := cpuUtil(10, 20, 110, 320); v != 25 {
		t.Fatalf("cpuUtil %v, want 25", v)
	}
	if v := cpuUtil(5, 5, 5, 5); v != 0 {
		t.Fatalf("cpuUtil of no ticks %v, want 0", v)
	}
	// The real file parses.
	if _, _, err := readCPUStat(); err != nil {
		t.Fatal(err)
	}
}

// fakeCPUStat counts 100 user and 300 idle ticks per read (25%) and
// records when it was read.
type fakeCPUStat struct {
	mu    sync.Mutex
	n     int64
	times []time.Time
}

func (f *fakeCPUStat) read() (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	f.times = append(f.times, time.Now())
	return 100 * f.n, 300 * f.n, nil
}

// --cpu_util: the side that runs the loop reads /proc/stat at the two
// edges of the measured window and prints perftest's column; a write
// server, which ran no loop, prints 0.00 after the client's figures.
func TestSessionCPUUtil(t *testing.T) {
	// A 1 s window between 500 ms margins: reads at the wrong edges
	// (the run's start or end) would be 1.5 s or more apart, so a read
	// up to 400 ms late on a loaded host still counts as the window's.
	const d, m = 2 * time.Second, 500 * time.Millisecond
	for _, c := range []struct {
		name   string
		p      Params
		header string
	}{
		{"write_bw", Params{Verb: VerbWrite, Test: TestBW}, bwHeader(false, false)},
		{"send_lat", Params{Verb: VerbSend, Test: TestLat}, latHeader},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			p.Duration, p.Margin, p.Report = d, m, ReportOpts{CPUUtil: true, UserMargin: true}
			var sf, cf fakeCPUStat
			s, cl, _ := runPairWith(t, p, p, 0, func(srv, cli *Session) { srv.cpuStat, cli.cpuStat = sf.read, cf.read })
			if s.err != nil || cl.err != nil {
				t.Fatalf("server: %v client: %v", s.err, cl.err)
			}
			if cl.res.CPUUtil == nil || *cl.res.CPUUtil != 25 {
				t.Fatalf("client's figure %v, want 25", cl.res.CPUUtil)
			}
			if len(cf.times) != 2 {
				t.Fatalf("/proc/stat read %d times", len(cf.times))
			}
			if w := cf.times[1].Sub(cf.times[0]); w < d-2*m-50*time.Millisecond || w > d-2*m+400*time.Millisecond {
				t.Errorf("read %v apart, want about the window's %v", w, d-2*m)
			}
			wantHeader := strings.TrimSuffix(c.header, "\n") + "    CPU_Util[%]\n"
			for side, o := range map[string]*sideOut{"server": s, "client": cl} {
				out := o.out.String()
				if !strings.Contains(out, wantHeader) {
					t.Errorf("%s: no CPU_Util header:\n%s", side, out)
				}
				want := "\t    25.00\n"
				if side == "server" && c.p.Verb == VerbWrite {
					want = "\t    0.00\n" // the write server ran no loop
				}
				i := strings.Index(out, wantHeader)
				if rows := out[i+len(wantHeader):]; !strings.Contains(strings.SplitAfter(rows, "\n")[0], want) {
					t.Errorf("%s: the row does not end in %q:\n%s", side, want, out)
				}
			}
		})
	}
	// Without -D, as perftest: a warning (under perftest's name after its
	// separator line) and a report without the column.
	for _, asPerftest := range []bool{false, true} {
		p := Params{Verb: VerbWrite, Test: TestBW, Iters: 50, Report: ReportOpts{CPUUtil: true, AsPerftest: asPerftest}}
		var notes [2]strings.Builder
		s, cl, _ := runPairWith(t, p, p, 0, func(srv, cli *Session) { srv.Notes, cli.Notes = &notes[0], &notes[1] })
		if s.err != nil || cl.err != nil {
			t.Fatalf("without -D: server: %v client: %v", s.err, cl.err)
		}
		want := "rdmactl: perf: --cpu_util works only with -D: the report has no CPU_Util column (as perftest)\n"
		if asPerftest {
			want = " CPU Utilization works only with Duration mode.\n"
		}
		for i, o := range []*sideOut{s, cl} {
			// The separator comes first: the server's report has none
			// of its own there ("Waiting for client to connect").
			out := o.out.String()
			if !strings.HasPrefix(notes[i].String(), want) || strings.Contains(out, "CPU_Util") || i == 0 && strings.HasPrefix(out, resultLine) != asPerftest {
				t.Errorf("as perftest %v, side %d: notes %q, report:\n%s", asPerftest, i, notes[i].String(), out)
			}
		}
	}
}

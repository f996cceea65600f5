package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// traceOf writes one message per entry of msgs: sender comm-pid, the
// cycle at which its write(2) entered, and the cycles each later step
// took (steps[1:], in order).
func traceOf(msgs []struct {
	who   string
	start uint64
	d     []uint64
}) string {
	var b strings.Builder
	name := map[string]string{"write": "sys_enter: NR 1 (8, 0, 10, 0, 0, 0)", "post": "post: (rxe_post_send+0x0/0x3d0 [rdma_rxe])",
		"copy_out": "mrcopy: (rxe_mr_copy+0x0/0x1e0 [rdma_rxe]) dir=1", "copy_in": "mrcopy: (rxe_mr_copy+0x0/0x1e0 [rdma_rxe]) dir=0"}
	for _, m := range msgs {
		t := m.start
		for i, s := range steps {
			if i > len(m.d) {
				break // an incomplete message
			}
			if i > 0 {
				t += m.d[i-1]
			}
			ev, ok := name[s]
			if !ok {
				ev = s + ": (" + s + "+0x0/0x100 [rdma_rxe])"
			}
			fmt.Fprintf(&b, "  %s     [001] .....  %d: %s\n", m.who, t, ev)
		}
		// noise within the message: another task's event, which must not
		// count (the lines need not be in time order)
		fmt.Fprintf(&b, "  ksoftirqd/1-20     [001] ..s1.  %d: rxe_rcv: (rxe_rcv+0x0/0x600 [rdma_rxe])\n", m.start+1)
	}
	return b.String()
}

func TestMessages(t *testing.T) {
	type msg = struct {
		who   string
		start uint64
		d     []uint64
	}
	ones := []uint64{10, 20, 30, 40, 50, 60, 70, 80}
	twos := []uint64{20, 40, 60, 80, 100, 120, 140, 160}
	tr := traceOf([]msg{
		{"ib_write_lat-184", 1000, ones},  // lands at 1360
		{"rdmactl-179", 2000, twos},       // user: 2000-1360
		{"ib_write_lat-184", 3000, ones},  // user: 3000-2720
		{"rdmactl-179", 5000, twos[:7:7]}, // incomplete: no copy_in
	})
	evs, err := readTrace(strings.NewReader(tr))
	if err != nil {
		t.Fatal(err)
	}
	// at 1000 MHz a cycle is a nanosecond
	got := messages(evs, 1000)
	check := func(tool, iv string, want []float64) {
		t.Helper()
		g := got[tool][iv]
		if fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("%s %q: %v, want %v", tool, iv, g, want)
		}
	}
	check("perftest", "write > post", []float64{10, 10})
	check("perftest", "rxe_responder > copy_in", []float64{80, 80})
	check("perftest", "kern", []float64{350, 350})
	check("perftest", "user", []float64{280})
	check("rdmactl", "post > rxe_requester", []float64{40})
	check("rdmactl", "kern", []float64{700})
	check("rdmactl", "user", []float64{640})
}

func TestGmean(t *testing.T) {
	g, lo, hi := gmean([]float64{1.1, 1.1, 1.1})
	if math.Abs(g-1.1) > 1e-9 || math.Abs(lo-1.1) > 1e-9 || math.Abs(hi-1.1) > 1e-9 {
		t.Fatalf("constant ratios: %v (%v-%v)", g, lo, hi)
	}
	g, lo, hi = gmean([]float64{0.5, 2})
	if math.Abs(g-1) > 1e-9 || lo >= 1 || hi <= 1 {
		t.Fatalf("0.5 and 2: %v (%v-%v)", g, lo, hi)
	}
}

func TestParseLineRejects(t *testing.T) {
	for _, s := range []string{"", "# tracer: nop", "  x-1 [000] ..... notanumber: post: (", "  x-y [000] ..... 12: post: ("} {
		if _, ok := parseLine(s); ok {
			t.Errorf("parsed %q", s)
		}
	}
}

func TestFastRuns(t *testing.T) {
	mk := func(p, m float64) run {
		return run{med: map[string]map[string]float64{"perftest": {"kern": p}, "rdmactl": {"kern": m}}}
	}
	runs := []run{mk(100, 110), mk(100, 200), mk(250, 120), mk(125, 124), mk(126, 100)}
	got := fastRuns(runs, 1.25)
	if len(got) != 2 || got[0].med["rdmactl"]["kern"] != 110 || got[1].med["rdmactl"]["kern"] != 124 {
		t.Fatalf("kept %v", got)
	}
}

func TestBoth(t *testing.T) {
	// rdmactl 10% slower as server, 10% faster as client: no tool effect.
	g, lo, hi := both([]float64{1.1, 1.12, 1.08}, []float64{1 / 1.1, 1 / 1.12, 1 / 1.08})
	if math.Abs(g-1) > 1e-9 || lo >= 1 || hi <= 1 {
		t.Fatalf("%v (%v-%v)", g, lo, hi)
	}
	if g, _, _ := both([]float64{1.1}, []float64{1, 1}); !math.IsNaN(g) {
		t.Fatalf("one run of a pairing: %v, want NaN", g)
	}
}

package mesh

import (
	"fmt"
	"strings"
	"testing"
)

func names(e Endpoint) EndpointName {
	return EndpointName{Rank: e.Rank, Host: fmt.Sprintf("h%d", e.Rank), Device: fmt.Sprintf("mlx5_%d", e.Dev)}
}

// outcomesOf runs plan with figure(t) for each test ("" error), or err(t).
func outcomesOf(plan *Plan, figure func(Test) (float64, string)) []Outcome {
	var out []Outcome
	for k := range plan.Rounds() {
		for _, t := range plan.Round(k, nil) {
			f, e := figure(t)
			out = append(out, Outcome{Test: t, Round: k, Figure: f, Err: e})
		}
	}
	return out
}

// TestReportFindsTheSlowEndpoint: one slow NIC makes every test it is
// in slow: it comes first among the suspects, with all its tests bad;
// its partners have one bad test each. With --min-share its tests are
// the ones that missed.
func TestReportFindsTheSlowEndpoint(t *testing.T) {
	plan, _ := NewPlan(Plan{Pattern: AllPairs, Ranks: 6, Devs: uniform(6, 2), Rails: true, Both: true})
	slow := Endpoint{4, 1}
	out := outcomesOf(plan, func(ts Test) (float64, string) {
		if ts.Src == slow || ts.Dst == slow {
			return 600, ""
		}
		return 1000 + float64(ts.Src.Rank), ""
	})
	r := NewReport(out, false, names, Limits{MinShare: 0.9}, nil, 5)
	if r.Median < 1000 || r.Median > 1006 {
		t.Errorf("median %v", r.Median)
	}
	if len(r.Suspects) == 0 || r.Suspects[0].Endpoint != names(slow) || r.Suspects[0].Fraction != 1 {
		t.Fatalf("suspects %+v, want %v first", r.Suspects, names(slow))
	}
	for _, s := range r.Suspects[1:] {
		if s.Fraction >= 0.5 {
			t.Errorf("suspect %+v: as bad as the slow NIC", s)
		}
	}
	for _, m := range r.Missed {
		if m.Src != names(slow) && m.Dst != names(slow) {
			t.Errorf("missed %+v does not involve the slow NIC", m)
		}
		if !strings.Contains(m.Why, "of the median") {
			t.Errorf("missed %+v: why %q", m, m.Why)
		}
	}
	if len(r.Missed) != 10 || r.Failed != 0 {
		t.Errorf("%d missed, %d failed; want 10 (5 partners, both ways), 0", len(r.Missed), r.Failed)
	}
	for _, s := range r.Slowest {
		if s.Src != names(slow) && s.Dst != names(slow) {
			t.Errorf("slowest %+v does not involve the slow NIC", s)
		}
	}
}

// TestReportFailuresAndLatency: a failed test has no figure and counts
// against both its endpoints; latencies are better lower.
func TestReportFailuresAndLatency(t *testing.T) {
	plan, _ := NewPlan(Plan{Pattern: AllPairs, Ranks: 4, Devs: uniform(4, 1)})
	out := outcomesOf(plan, func(ts Test) (float64, string) {
		if ts.Src.Rank == 3 || ts.Dst.Rank == 3 {
			return 0, "rank 3 lost at go of round 1"
		}
		if ts.Src.Rank == 1 || ts.Dst.Rank == 1 {
			return 4, ""
		}
		return 2, ""
	})
	r := NewReport(out, true, names, Limits{MaxLat: 3}, &Roster{Members: []Member{{}, {}, {}, {Hello: Hello{Rank: 3}, Absent: ""}}}, 10)
	if r.Unit != "usec" || r.Failed != 3 {
		t.Fatalf("unit %s, %d failed", r.Unit, r.Failed)
	}
	if r.Suspects[0].Endpoint.Rank != 3 || r.Suspects[0].Fraction != 1 {
		t.Errorf("suspects %+v: rank 3 (every test failed) first", r.Suspects)
	}
	var lat, failed int
	for _, m := range r.Missed {
		switch {
		case strings.HasPrefix(m.Why, "failed: rank 3"):
			failed++
		case strings.Contains(m.Why, "latency 4.00 above the limit 3.00"):
			lat++
		default:
			t.Errorf("missed %+v", m)
		}
	}
	if failed != 3 || lat != 2 {
		t.Errorf("%d failed, %d over the latency limit; want 3, 2", failed, lat)
	}
	eps := []Endpoint{{0, 0}, {1, 0}, {2, 0}, {3, 0}}
	m := r.Matrix(eps)
	cells := 0
	for i := range eps {
		for j := range eps {
			if m[i][j] != "" {
				cells++
			}
			if (i == 3 || j == 3) && m[i][j] != "" && m[i][j] != "-" {
				t.Errorf("cell %d,%d: %q, want - (failed)", i, j, m[i][j])
			}
		}
	}
	if cells != 6 {
		t.Errorf("%d cells filled, want the 6 pairs", cells)
	}
}

// TestSuspectsTieBreak: a slow NIC's partner can have all its tests
// slow as well (here rank 0's, by chance or its own fault): the endpoint
// whose tests were worst still comes first, though both have every test
// bad and as many tests.
func TestSuspectsTieBreak(t *testing.T) {
	plan, _ := NewPlan(Plan{Pattern: AllPairs, Ranks: 8, Devs: uniform(8, 1)})
	out := outcomesOf(plan, func(ts Test) (float64, string) {
		switch {
		case ts.Src.Rank == 7 || ts.Dst.Rank == 7:
			return 100, ""
		case ts.Src.Rank == 0 || ts.Dst.Rank == 0:
			return 500, ""
		}
		return 1000, ""
	})
	r := NewReport(out, false, names, Limits{}, nil, 3)
	if len(r.Suspects) < 2 || r.Suspects[0].Endpoint.Rank != 7 || r.Suspects[1].Endpoint.Rank != 0 ||
		r.Suspects[0].Fraction != 1 || r.Suspects[1].Fraction != 1 || r.Suspects[0].Bad != r.Suspects[1].Bad {
		t.Errorf("suspects %+v, want rank 7 then rank 0, all their tests bad", r.Suspects)
	}
}

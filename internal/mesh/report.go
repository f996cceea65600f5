package mesh

import (
	"fmt"
	"math"
	"sort"
)

// Report is what a cluster test found, gathered at rank 0: every test's
// figure and its share of the median, the slowest tests, the endpoints
// most often in slow or failed tests, and the tests that missed a
// threshold.
type Report struct {
	Unit     string       `json:"unit"` // "MiB/s" (bandwidth) or "usec" (latency)
	Median   float64      `json:"median"`
	Tests    []TestReport `json:"tests"`
	Slowest  []TestReport `json:"slowest"`
	Suspects []Suspect    `json:"suspects"`
	Missed   []TestReport `json:"missed"`
	Failed   int          `json:"failed"`
	Absent   []AbsentRank `json:"absent"`
	byTest   map[Test]int // index in Tests
	names    func(Endpoint) EndpointName
	limits   Limits
}

// EndpointName is an endpoint as people name it.
type EndpointName struct {
	Rank   int    `json:"rank"`
	Host   string `json:"host"`
	Device string `json:"device"`
}

// String is "host/device"; a rank that never came has neither: "rank N".
func (e EndpointName) String() string {
	if e.Host == "" && e.Device == "" {
		return fmt.Sprintf("rank %d", e.Rank)
	}
	return fmt.Sprintf("%s/%s", e.Host, e.Device)
}

// TestReport is one test in the report.
type TestReport struct {
	Src    EndpointName `json:"src"`
	Dst    EndpointName `json:"dst"`
	Round  int          `json:"round"`
	Figure *float64     `json:"figure"` // null for a failed test
	// Share is the figure against the median, 1 the median, lower worse
	// (for latency, the median over the figure).
	Share  *float64 `json:"share"`
	Error  string   `json:"error,omitempty"`
	Report any      `json:"report,omitempty"`
	// Why says which threshold a test in Missed missed.
	Why string `json:"why,omitempty"`
}

// Suspect is an endpoint and the share of its tests that were bad
// (failed, or below --min-share of the median, DefaultSlowShare without
// it). A bad NIC or cable makes
// every test it is in bad; a bad path between two endpoints one test of
// each.
type Suspect struct {
	Endpoint EndpointName `json:"endpoint"`
	Bad      int          `json:"bad"`
	Tests    int          `json:"tests"`
	Fraction float64      `json:"fraction"`
	// MeanShare is the mean share of the median of its tests, a failed
	// test counting 0: between endpoints with the same fraction of bad
	// tests, the one whose tests were worse comes first (a slow NIC's
	// partner may have all its tests slow too).
	MeanShare float64 `json:"mean_share"`
}

// AbsentRank is a rank that never took part, and why.
type AbsentRank struct {
	Rank   int    `json:"rank"`
	Reason string `json:"reason"`
}

// Limits are the thresholds: a test below MinBW (MiB/s) or above MaxLat
// (µs), or below MinShare of the median, missed (0: none).
type Limits struct {
	MinBW, MaxLat, MinShare float64
}

// NewReport builds the report of outcomes; lat says the figures are
// latencies (lower is better); names names endpoints; slowest is how many
// tests the Slowest list keeps.
func NewReport(outcomes []Outcome, lat bool, names func(Endpoint) EndpointName, lim Limits, roster *Roster, slowest int) *Report {
	r := &Report{Unit: "MiB/s", byTest: map[Test]int{}, names: names, limits: lim}
	if lat {
		r.Unit = "usec"
	}
	var figs []float64
	for _, o := range outcomes {
		if o.Err == "" {
			figs = append(figs, o.Figure)
		}
	}
	r.Median = median(figs)
	bad := map[Endpoint]int{}
	tests := map[Endpoint]int{}
	shares := map[Endpoint]float64{}
	for _, o := range outcomes {
		tr := TestReport{Src: names(o.Test.Src), Dst: names(o.Test.Dst), Round: o.Round, Error: o.Err}
		if len(o.Report) > 0 {
			tr.Report = o.Report
		}
		isBad := o.Err != ""
		if o.Err == "" {
			f := o.Figure
			tr.Figure = &f
			share := shareOf(f, r.Median, lat)
			tr.Share = &share
			if why := lim.miss(f, share, lat); why != "" {
				tr.Why = why
				r.Missed = append(r.Missed, tr)
			}
			isBad = share < lim.slowShare()
		} else {
			r.Failed++
			tr.Why = "failed: " + o.Err
			r.Missed = append(r.Missed, tr)
		}
		for _, e := range []Endpoint{o.Test.Src, o.Test.Dst} {
			tests[e]++
			if isBad {
				bad[e]++
			}
			if tr.Share != nil {
				shares[e] += *tr.Share
			}
		}
		r.byTest[o.Test] = len(r.Tests)
		r.Tests = append(r.Tests, tr)
	}
	// Slowest: the measured tests by share, worst first.
	var measured []TestReport
	for _, t := range r.Tests {
		if t.Share != nil {
			measured = append(measured, t)
		}
	}
	sort.SliceStable(measured, func(i, j int) bool { return *measured[i].Share < *measured[j].Share })
	r.Slowest = measured[:min(slowest, len(measured))]
	// Suspects: endpoints with a bad test, the largest share of bad
	// tests first, then the most bad tests.
	for e, n := range bad {
		r.Suspects = append(r.Suspects, Suspect{Endpoint: names(e), Bad: n, Tests: tests[e],
			Fraction: float64(n) / float64(tests[e]), MeanShare: shares[e] / float64(tests[e])})
	}
	sort.Slice(r.Suspects, func(i, j int) bool {
		a, b := r.Suspects[i], r.Suspects[j]
		if a.Fraction != b.Fraction {
			return a.Fraction > b.Fraction
		}
		if a.MeanShare != b.MeanShare {
			return a.MeanShare < b.MeanShare
		}
		if a.Bad != b.Bad {
			return a.Bad > b.Bad
		}
		if a.Endpoint.Rank != b.Endpoint.Rank {
			return a.Endpoint.Rank < b.Endpoint.Rank
		}
		return a.Endpoint.Device < b.Endpoint.Device
	})
	if r.Suspects == nil {
		r.Suspects = []Suspect{}
	}
	if r.Missed == nil {
		r.Missed = []TestReport{}
	}
	r.Absent = []AbsentRank{}
	if roster != nil {
		for _, m := range roster.Members {
			if m.Absent != "" {
				r.Absent = append(r.Absent, AbsentRank{Rank: m.Rank, Reason: m.Absent})
			}
		}
	}
	return r
}

// DefaultSlowShare is the share of the median below which a test counts
// as slow for the suspect ranking when --min-share is not given.
const DefaultSlowShare = 0.9

func (l Limits) slowShare() float64 {
	if l.MinShare > 0 {
		return l.MinShare
	}
	return DefaultSlowShare
}

// miss says which limit a figure missed ("" if none).
func (l Limits) miss(f, share float64, lat bool) string {
	switch {
	case !lat && l.MinBW > 0 && f < l.MinBW:
		return fmt.Sprintf("bandwidth %.2f below the limit %.2f", f, l.MinBW)
	case lat && l.MaxLat > 0 && f > l.MaxLat:
		return fmt.Sprintf("latency %.2f above the limit %.2f", f, l.MaxLat)
	case l.MinShare > 0 && share < l.MinShare:
		return fmt.Sprintf("%.0f%% of the median, below %.0f%%", share*100, l.MinShare*100)
	}
	return ""
}

// shareOf is f against the median, 1 at the median and lower when worse.
func shareOf(f, med float64, lat bool) float64 {
	switch {
	case med == 0 || f == 0:
		return 0
	case lat:
		return med / f
	}
	return f / med
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Endpoints is every endpoint of a test, by rank and device: the rows
// and columns of the matrix.
func (r *Report) Endpoints() []Endpoint {
	seen := map[Endpoint]bool{}
	var out []Endpoint
	for t := range r.byTest {
		for _, e := range []Endpoint{t.Src, t.Dst} {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rank != out[j].Rank {
			return out[i].Rank < out[j].Rank
		}
		return out[i].Dev < out[j].Dev
	})
	return out
}

// Name is how the report names e.
func (r *Report) Name(e Endpoint) EndpointName { return r.names(e) }

// Slow says whether a measured test counts as slow for the suspect
// ranking: below --min-share of the median (DefaultSlowShare without).
func (r *Report) Slow(t *TestReport) bool {
	return t.Share != nil && *t.Share < r.limits.slowShare()
}

// Cell is one cell of the matrix: src's test to dst, or nil where there
// was none.
func (r *Report) Cell(src, dst Endpoint) *TestReport {
	i, ok := r.byTest[Test{src, dst}]
	if !ok {
		return nil
	}
	return &r.Tests[i]
}

// Matrix is the endpoints in order and each cell's text: the figure, "-"
// for a failed test, "" where src did not test dst (an unordered pair
// tested one way shows in one cell).
func (r *Report) Matrix(endpoints []Endpoint) [][]string {
	out := make([][]string, len(endpoints))
	for i, s := range endpoints {
		out[i] = make([]string, len(endpoints))
		for j, d := range endpoints {
			c := r.Cell(s, d)
			switch {
			case c == nil:
			case c.Figure == nil:
				out[i][j] = "-"
			default:
				out[i][j] = FormatFigure(*c.Figure)
			}
		}
	}
	return out
}

// FormatFigure is a figure as the report prints it: whole numbers as
// they are and from 100 up, two decimals otherwise.
func FormatFigure(f float64) string {
	if f >= 100 || f == math.Trunc(f) {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

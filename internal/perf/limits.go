package perf

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Thresholds for CI: a run that misses one ends with a *LimitError (exit
// 7 in cmd/rdmactl), after printing its report as usual.
//
// -w and -y are perftest's: the BW average and the message rate of the
// figures this side prints (a write/read server prints the client's), in
// the report's unit (MiB/s, or Gb/s with --report_gbits; Mpps). As
// perftest, with -a the limit is met when any size meets it. perftest has
// no latency limit; --limit_lat is rdmactl's: the median (or the
// percentile --limit_lat_pct names) of each latency row must not exceed
// it.
type Limits struct {
	BW      float64 // -w; 0: none
	MsgRate float64 // -y; 0: none
	Lat     float64 // --limit_lat, usec; 0: none
	// LatPct is the percentile --limit_lat applies to: 50 (default, the
	// median), 99 or 99.9, the ones the report prints.
	LatPct float64
}

// LimitCheck is one limit's verdict, in the JSON's "limits".
type LimitCheck struct {
	Name   string  `json:"name"` // "bw_avg", "msg_rate", "lat_p50", "lat_p99", "lat_p99_9"
	Limit  float64 `json:"limit"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Passed bool    `json:"passed"`
}

// LimitError is a run that missed a limit: the first miss, by how much.
type LimitError struct{ Check LimitCheck }

func (e *LimitError) Error() string {
	c := e.Check
	// Figures with the report's precision (2 decimals, 6 for Mpps); the
	// limit as given.
	prec := 2
	if c.Unit == "Mpps" {
		prec = 6
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
	lim := strconv.FormatFloat(c.Limit, 'f', -1, 64)
	if flag := map[string]string{"bw_avg": "-w/--limit_bw", "msg_rate": "-y/--limit_msgrate"}[c.Name]; flag != "" {
		d := c.Limit - c.Value
		return fmt.Sprintf("%s %s %s is below %s %s by %s %s (%.1f%%)", c.Name, f(c.Value), c.Unit, flag, lim, f(d), c.Unit, 100*d/c.Limit)
	}
	d := c.Value - c.Limit
	return fmt.Sprintf("%s %s %s is above --limit_lat %s by %s %s (%.1f%%)", c.Name, f(c.Value), c.Unit, lim, f(d), c.Unit, 100*d/c.Limit)
}

// validate checks the limits against the test with one line each.
func (l *Limits) validate(t Test) error {
	switch {
	case math.IsNaN(l.BW) || math.IsInf(l.BW, 0):
		return fmt.Errorf("-w %g: want a number", l.BW)
	case math.IsNaN(l.MsgRate) || math.IsInf(l.MsgRate, 0):
		return fmt.Errorf("-y %g: want a number", l.MsgRate)
	case math.IsNaN(l.Lat) || math.IsInf(l.Lat, 0):
		return fmt.Errorf("--limit_lat %g: want a number", l.Lat)
	case l.BW < 0:
		return fmt.Errorf("-w %g: the BW limit must be positive", l.BW)
	case l.MsgRate < 0:
		return fmt.Errorf("-y %g: the message rate limit must be positive", l.MsgRate)
	case l.Lat < 0:
		return fmt.Errorf("--limit_lat %g: the latency limit must be positive (usec)", l.Lat)
	case (l.BW > 0 || l.MsgRate > 0) && t != TestBW:
		return errors.New("-w and -y apply to bandwidth tests; for --lat use --limit_lat")
	case l.Lat > 0 && t != TestLat:
		return errors.New("--limit_lat applies to latency tests (--lat); for bandwidth use -w or -y")
	case l.LatPct != 0 && l.LatPct != 50 && l.LatPct != 99 && l.LatPct != 99.9:
		return fmt.Errorf("--limit_lat_pct %g: want 50, 99 or 99.9 (the percentiles the report prints)", l.LatPct)
	case l.LatPct != 0 && l.Lat == 0:
		return errors.New("--limit_lat_pct needs --limit_lat")
	}
	return nil
}

// checkLimits judges a finished run's rows. It returns the verdicts (nil
// without limits or rows) and the first miss as a *LimitError.
func checkLimits(l *Limits, r *Result) ([]LimitCheck, error) {
	var out []LimitCheck
	if l.BW > 0 && len(r.BW) > 0 {
		out = append(out, bestBW(r.BW, l.BW, "bw_avg", r.Unit, func(b BWResult) float64 { return b.BWAvg }))
	}
	if l.MsgRate > 0 && len(r.BW) > 0 {
		out = append(out, bestBW(r.BW, l.MsgRate, "msg_rate", "Mpps", func(b BWResult) float64 { return b.MsgRate }))
	}
	if l.Lat > 0 {
		name, pick := latPick(l.LatPct)
		for _, row := range r.Lat {
			v := pick(&row.LatStats)
			out = append(out, LimitCheck{Name: name, Limit: l.Lat, Value: v, Unit: "usec", Passed: v <= l.Lat})
		}
	}
	for _, c := range out {
		if !c.Passed {
			return out, &LimitError{Check: c}
		}
	}
	return out, nil
}

// bestBW is perftest's rule for -a: the limit holds when any row meets it
// (is_bw_limit_passed |= 1), so the verdict is the best row's.
func bestBW(rows []BWResult, limit float64, name, unit string, f func(BWResult) float64) LimitCheck {
	best := f(rows[0])
	for _, b := range rows[1:] {
		best = max(best, f(b))
	}
	return LimitCheck{Name: name, Limit: limit, Value: best, Unit: unit, Passed: best >= limit}
}

func latPick(pct float64) (string, func(*LatStats) float64) {
	switch pct {
	case 99:
		return "lat_p99", func(s *LatStats) float64 { return s.P99 }
	case 99.9:
		return "lat_p99_9", func(s *LatStats) float64 { return s.P999 }
	}
	return "lat_p50", func(s *LatStats) float64 { return s.P50 }
}

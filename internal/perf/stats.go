package perf

import (
	"math"
	"math/bits"
	"slices"
)

// Latency statistics. Differences from perftest's print_report_lat, on
// purpose:
//   - Times come from the monotonic nanosecond clock (time.Since on a fixed
//     base), not TSC cycles converted with a guessed CPU frequency, so there
//     is no "Conflicting CPU frequency values" and no negative figures.
//   - No samples are dropped: perftest sorts and drops the two largest
//     (LAT_MEASURE_TAIL) and its t_max is the third largest; ours is the
//     real maximum. Ping-pong tests also time the last round trip (perftest
//     keeps iters-1 samples), so there are exactly iters samples.
//   - The standard deviation is computed in float64 (perftest truncates
//     every deviation to an int microsecond before squaring it).
//   - Percentiles use the nearest-rank definition on all samples:
//     sorted[ceil(q*n)-1].
//   - Duration mode (-D) reports the same table (perftest prints only the
//     average and transactions per second), from a log-linear histogram
//     with at most 1/128 relative error per bucket; min, max, average and
//     stdev stay exact.

// LatStats is the summary of one latency run, in microseconds.
type LatStats struct {
	Samples uint64  `json:"samples"`
	Min     float64 `json:"t_min_usec"`
	Max     float64 `json:"t_max_usec"`
	Typical float64 `json:"t_typical_usec"` // median, as perftest's t_typical
	Avg     float64 `json:"t_avg_usec"`
	Stdev   float64 `json:"t_stdev_usec"`
	P50     float64 `json:"p50_usec"`
	P99     float64 `json:"p99_usec"`
	P999    float64 `json:"p99_9_usec"`
}

// summarizeSamples computes the statistics of exact samples (ns), each
// divided by div (2 for RTT/2 ping-pong, 1 for read). It sorts samples.
func summarizeSamples(samples []int64, div float64) LatStats {
	n := len(samples)
	if n == 0 {
		return LatStats{}
	}
	slices.Sort(samples)
	us := func(ns int64) float64 { return float64(ns) / 1e3 / div }
	var sum float64
	for _, s := range samples {
		sum += us(s)
	}
	avg := sum / float64(n)
	var sq float64
	for _, s := range samples {
		d := us(s) - avg
		sq += d * d
	}
	var median float64
	if n%2 == 0 {
		median = (us(samples[n/2-1]) + us(samples[n/2])) / 2
	} else {
		median = us(samples[n/2])
	}
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(n))) - 1
		i = max(0, min(i, n-1))
		return us(samples[i])
	}
	return LatStats{
		Samples: uint64(n), Min: us(samples[0]), Max: us(samples[n-1]), Typical: median, Avg: avg,
		Stdev: math.Sqrt(sq / float64(n)), P50: rank(0.50), P99: rank(0.99), P999: rank(0.999),
	}
}

// histogram is a log-linear histogram of nanosecond values: values below
// 2^subBits are exact; above, each power of two is split in 2^subBits
// buckets. Add is allocation-free.
type histogram struct {
	counts []uint64
	n      uint64
	min    int64
	max    int64
	mean   float64 // Welford, exact
	m2     float64
}

const histSubBits = 7

func newHistogram() *histogram {
	return &histogram{counts: make([]uint64, (64-histSubBits+1)<<histSubBits), min: math.MaxInt64}
}

// histIndex and add run in the detached latency loops (detach.go), so
// they are nosplit and call nothing.
//
//go:nosplit
func histIndex(v int64) int {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	if u < 1<<histSubBits {
		return int(u)
	}
	e := bits.Len64(u) - 1 - histSubBits // >= 0
	return (e+1)<<histSubBits + int(u>>uint(e)) - 1<<histSubBits
}

// histValue is the midpoint of bucket i.
func histValue(i int) float64 {
	if i < 1<<histSubBits {
		return float64(i)
	}
	e := i>>histSubBits - 1
	m := i&(1<<histSubBits-1) + 1<<histSubBits
	lo := float64(uint64(m) << uint(e))
	return lo + float64(uint64(1)<<uint(e))/2
}

//go:nosplit
func (h *histogram) add(v int64) {
	h.counts[histIndex(v)]++
	h.n++
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	d := float64(v) - h.mean
	h.mean += d / float64(h.n)
	h.m2 += d * (float64(v) - h.mean)
}

func (h *histogram) reset() {
	clear(h.counts)
	h.n, h.min, h.max, h.mean, h.m2 = 0, math.MaxInt64, 0, 0, 0
}

// quantile returns the nearest-rank quantile q (bucket midpoint, clamped
// to the exact min/max).
func (h *histogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var c uint64
	for i, k := range h.counts {
		c += k
		if c >= rank {
			v := histValue(i)
			return math.Max(float64(h.min), math.Min(float64(h.max), v))
		}
	}
	return float64(h.max)
}

func (h *histogram) stats(div float64) LatStats {
	if h.n == 0 {
		return LatStats{}
	}
	us := func(ns float64) float64 { return ns / 1e3 / div }
	return LatStats{
		Samples: h.n, Min: us(float64(h.min)), Max: us(float64(h.max)), Typical: us(h.quantile(0.5)),
		Avg: us(h.mean), Stdev: us(math.Sqrt(h.m2 / float64(h.n))),
		P50: us(h.quantile(0.5)), P99: us(h.quantile(0.99)), P999: us(h.quantile(0.999)),
	}
}

// HistBucket is one line of --histogram.
type HistBucket struct {
	LowUsec  float64 `json:"low_usec"`
	HighUsec float64 `json:"high_usec"`
	Count    uint64  `json:"count"`
}

// coarseHistogram groups ns samples (sorted or not) into power-of-two
// microsecond-ish buckets for --histogram: 2^k/4 ns steps of ×√2 would be
// nicer; powers of two keep it short and exact.
func coarseHistogram(samplesNS []int64, h *histogram, div float64) []HistBucket {
	var counts [64]uint64
	add := func(ns int64, k uint64) {
		v := float64(ns) / div
		if v < 1 {
			v = 1
		}
		counts[bits.Len64(uint64(v))-1] += k
	}
	if samplesNS != nil {
		for _, s := range samplesNS {
			add(s, 1)
		}
	} else if h != nil {
		for i, k := range h.counts {
			if k > 0 {
				add(int64(histValue(i)), k)
			}
		}
	}
	var out []HistBucket
	for i, k := range counts {
		if k == 0 {
			continue
		}
		out = append(out, HistBucket{LowUsec: float64(uint64(1)<<uint(i)) / 1e3, HighUsec: float64(uint64(1)<<uint(i+1)) / 1e3, Count: k})
	}
	return out
}

// BWResult is one bandwidth report row, in the unit of the run (MiB/s =
// 2^20 bytes per second as perftest, or Gb/s = 10^9 bits).
type BWResult struct {
	Size    uint64  `json:"bytes"`
	Iters   uint64  `json:"iterations"`
	BWPeak  float64 `json:"bw_peak"`
	BWAvg   float64 `json:"bw_average"`
	MsgRate float64 `json:"msg_rate_mpps"`
	// Seconds is the measured interval; Bytes the payload moved in it.
	Seconds float64 `json:"seconds"`
}

func unitFactor(gbits bool) float64 {
	if gbits {
		return 125000000 // 10^9 bits
	}
	return 1 << 20
}

// bwFromEvents computes the figures of a run from its completion events
// (time ns, messages completed so far) and the time of the first post:
// the average over [first post, last completion], as perftest; the peak
// as the best rate over any stretch between two completion events that
// covers at least window messages (one pipeline's worth, so that a burst
// of completions polled together does not count as a rate), and never
// below the average. perftest instead timestamps every post and
// completion with the TSC; reading the clock per message would cost a
// system call per message on guests without a vDSO clock.
func bwFromEvents(size uint64, tFirst int64, evT []int64, evC []uint64, window uint64, gbits bool) BWResult {
	n := len(evT)
	if n == 0 {
		return BWResult{Size: size}
	}
	msgs := evC[n-1]
	r := BWResult{Size: size, Iters: msgs}
	total := float64(evT[n-1] - tFirst)
	if total <= 0 {
		total = 1
	}
	f := unitFactor(gbits)
	r.Seconds = total / 1e9
	r.BWAvg = float64(size) * float64(msgs) / r.Seconds / f
	r.MsgRate = float64(msgs) / r.Seconds / 1e6
	best := float64(msgs) / total // messages per ns
	window = max(window, 1)
	k1 := 0
	for k2 := 1; k2 < n; k2++ {
		// Advance k1 as far as the window still holds.
		for k1+1 < k2 && evC[k2]-evC[k1+1] >= window {
			k1++
		}
		if evC[k2]-evC[k1] < window {
			continue
		}
		if dt := float64(evT[k2] - evT[k1]); dt > 0 {
			if rate := float64(evC[k2]-evC[k1]) / dt; rate > best {
				best = rate
			}
		}
	}
	r.BWPeak = float64(size) * best * 1e9 / f
	return r
}

// bwFromCount is the duration-mode / receiver-side figure: n messages of
// size in ns nanoseconds (no peak, as perftest).
func bwFromCount(size, n uint64, ns int64, gbits bool) BWResult {
	r := BWResult{Size: size, Iters: n}
	if ns <= 0 || n == 0 {
		return r
	}
	r.Seconds = float64(ns) / 1e9
	r.BWAvg = float64(size) * float64(n) / r.Seconds / unitFactor(gbits)
	r.MsgRate = float64(n) / r.Seconds / 1e6
	return r
}

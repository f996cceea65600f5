package perf

import (
	"errors"
	"fmt"
	"time"
)

// perftest's rate limiter (--rate_limit, --rate_limit_type, --rate_units,
// --burst_size; src/perftest_parameters.c force_dependecies and
// src/perftest_resources.c run_iter_bw, perftest 6.06). rdmactl has its
// software limiter (SW): the sender posts a burst of burst_size messages
// (default: TX depth), then posts nothing until 1/(bursts per second)
// after the burst began, polling meanwhile, so that it sends at most
// rate_limit. Bursts per second are perftest's integers: the rate in
// packets per second, truncated, divided by the burst size.

// RateLimitType is --rate_limit_type.
type RateLimitType int

const (
	RateLimitNone RateLimitType = iota
	RateLimitSW                 // software: bursts and gaps in the loop
	RateLimitHW                 // the QP's rate (IBV_QP_RATE_LIMIT): not in rdmactl
	RateLimitPP                 // packet pacing: perftest's raw Ethernet only
)

// RateUnits is --rate_units: M (MiB/s), g (Gbit/s, the default), p
// (packets/s).
type RateUnits byte

// RateLimit is the limiter's options.
type RateLimit struct {
	Type  RateLimitType
	Rate  float64   // --rate_limit
	Units RateUnits // 0: 'g'
	Burst int       // --burst_size; 0: TX depth
}

// ParseRateLimitType reads --rate_limit_type (perftest's names).
func ParseRateLimitType(s string) (RateLimitType, error) {
	switch s {
	case "SW":
		return RateLimitSW, nil
	case "HW":
		return RateLimitHW, nil
	case "PP":
		return RateLimitPP, nil
	}
	return RateLimitNone, fmt.Errorf("%q: want SW, HW or PP (as perftest)", s)
}

// ParseRateUnits reads --rate_units.
func ParseRateUnits(s string) (RateUnits, error) {
	switch s {
	case "M", "g", "p":
		return RateUnits(s[0]), nil
	}
	return 0, fmt.Errorf("%q: want M (MiB/s), g (Gbit/s) or p (packets/s), as perftest", s)
}

// validateRateLimit is force_dependecies' part for the limiter.
func (p *Params) validateRateLimit() error {
	rl := &p.RateLimit
	switch {
	case rl.Type == RateLimitNone:
		return nil
	case rl.Type == RateLimitHW:
		return errors.New("--rate_limit_type HW (perftest's default once --rate_limit is given): the QPs' hardware rate limit is not implemented in rdmactl perf yet; give --rate_limit_type SW")
	case rl.Type == RateLimitPP:
		return errors.New("--rate_limit_type PP: packet pacing is for raw Ethernet only (as perftest)")
	case rl.Rate <= 0:
		return errors.New("--rate_limit_type SW needs --rate_limit RATE (a positive rate)")
	case p.Test != TestBW || p.Verb == VerbAtomic || p.Verb == VerbSend && p.Bidir:
		return errors.New("--rate_limit_type SW: bandwidth tests only, not atomic or bidirectional send (as perftest)")
	case p.RunInfinitely:
		return errors.New("--rate_limit_type SW: not with --run_infinitely")
	case rl.Burst < 0:
		return errors.New("--burst_size must not be negative")
	}
	return nil
}

// swGap is the software limiter's time from one burst's start to the
// next for size-byte messages (0: no limiter), and the burst, as
// run_iter_bw computes them.
func (p *Params) swGap(size uint64) (gap time.Duration, burst uint64, err error) {
	rl := &p.RateLimit
	if rl.Type != RateLimitSW {
		return 0, 0, nil
	}
	burst = uint64(rl.Burst)
	if burst == 0 {
		burst = uint64(p.TxDepth) // perftest: "Setting burst size to tx depth"
	}
	var pps float64
	switch rl.Units {
	case 'M':
		pps = rl.Rate / float64(size) * 1048576
	case 'p':
		pps = rl.Rate
	default: // 'g'
		pps = rl.Rate / float64(size*8) * 1e9
	}
	bursts := uint64(int64(pps)) / burst // perftest's int rate_limit_pps / burst_size
	if bursts == 0 {
		return 0, 0, fmt.Errorf("--rate_limit %g: %d-byte messages in bursts of %d make less than one burst a second; lower --burst_size", rl.Rate, size, burst)
	}
	return time.Duration(float64(time.Second) / float64(bursts)), burst, nil
}

package perf

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rdmactl/rdmactl/internal/verbs"
)

// perftest's rate limiter (--rate_limit, --rate_limit_type, --rate_units,
// --burst_size; src/perftest_parameters.c force_dependecies and
// src/perftest_resources.c run_iter_bw, perftest 6.06). rdmactl has its
// software limiter (SW): the sender posts a burst of burst_size messages
// (default: TX depth), then posts nothing until 1/(bursts per second)
// after the burst began, polling meanwhile, so that it sends at most
// rate_limit. Bursts per second are perftest's integers: the rate in
// packets per second, truncated, divided by the burst size.
//
// HW, perftest's default once --rate_limit is given, is the QPs' static
// rate: the address vector's IB rate enum (verbs.h enum ibv_rate) for
// the rate as written ("2.5", "5", ... "300", "MAX"), which perftest
// looks up by its text in src/perftest_parameters.h RATE_VALUES. Its
// ctx_connect (src/perftest_resources.c) keeps it only on an InfiniBand
// link whose QP took the rate; elsewhere (RoCE) it falls back to SW with
// a red line on stderr, or fails when HW was asked for by name.

// RateLimitType is --rate_limit_type.
type RateLimitType int

const (
	RateLimitNone RateLimitType = iota
	RateLimitSW                 // software: bursts and gaps in the loop
	RateLimitHW                 // the QPs' static rate (InfiniBand); SW on RoCE unless Explicit
	RateLimitPP                 // packet pacing: perftest's raw Ethernet only
)

// RateUnits is --rate_units: M (MiB/s), g (Gbit/s, the default), p
// (packets/s).
type RateUnits byte

// RateLimit is the limiter's options.
type RateLimit struct {
	Type     RateLimitType
	Rate     float64   // --rate_limit
	Text     string    // --rate_limit as written: HW looks its rate up by name
	Units    RateUnits // 0: 'g'
	Burst    int       // --burst_size; 0: TX depth
	Explicit bool      // --rate_limit_type given: HW does not fall back to SW
	HWRate   uint8     // HW: the static rate (enum ibv_rate), set by Validate
}

// hwRates are the rates HW accepts, by the text perftest compares
// (RATE_VALUES), and their enum ibv_rate (infiniband/verbs.h).
var hwRates = []struct {
	text string
	rate uint8
}{
	{"2.5", 2}, {"5", 5}, {"10", 3}, {"14", 11}, {"20", 6}, {"25", 15}, {"30", 4}, {"40", 7}, {"56", 12},
	{"60", 8}, {"80", 9}, {"100", 16}, {"112", 13}, {"120", 10}, {"168", 14}, {"200", 17}, {"300", 18}, {"MAX", 0},
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
		return p.validateHWRate()
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

// validateHWRate is force_dependecies' part for HW: not over RDMA CM,
// not in packets per second, and a rate perftest knows by name (0, HW
// without --rate_limit, is no limit: IBV_RATE_MAX).
func (p *Params) validateHWRate() error {
	rl := &p.RateLimit
	switch {
	case p.RDMACM:
		return errors.New("--rate_limit: the HW limiter (perftest's default) does not work with -R (as perftest); give --rate_limit_type SW")
	case rl.Units == 'p':
		return errors.New("--rate_units p: the HW limiter (perftest's default for --rate_limit) takes no packet rate (as perftest); give --rate_limit_type SW")
	case rl.Rate <= 0:
		rl.HWRate = 0
		return nil
	}
	for _, r := range hwRates {
		if r.text == rl.Text {
			rl.HWRate = r.rate
			return nil
		}
	}
	var names []string
	for _, r := range hwRates[:len(hwRates)-1] { // not MAX: it is no number
		names = append(names, r.text)
	}
	return fmt.Errorf("--rate_limit %s: the HW limiter (perftest's default) takes one of the InfiniBand rates %s (Gb/s, as written; perftest's list); or give --rate_limit_type SW",
		rl.Text, strings.Join(names, ", "))
}

// hwOnEthernet is ctx_connect's answer when the HW limiter meets a RoCE
// port, where the address vector's static rate does not apply: SW
// instead, unless HW was asked for by name (then an error). The SW
// limiter paces only perftest's run_iter_bw loops, so where it would
// not (latency, atomics, bidirectional send) nothing is limited, as in
// perftest. The note is for stderr.
func (p *Params) hwOnEthernet() (note string, err error) {
	rl := &p.RateLimit
	if rl.Explicit {
		err := fmt.Errorf("--rate_limit_type HW: the QP's static rate applies on InfiniBand only, and %s is Ethernet (RoCE); give --rate_limit_type SW: %w", p.portName(), verbs.ErrUnsupported)
		if p.Report.AsPerftest {
			return "\x1b[31mThe QP failed to accept HW rate limit  \x1b[0m", err
		}
		return "", err
	}
	rl.Type = RateLimitSW
	if p.Test != TestBW || p.Verb == VerbAtomic || p.Verb == VerbSend && p.Bidir {
		rl.Type = RateLimitNone
	}
	if p.Report.AsPerftest {
		return "\x1b[31mThe QP failed to accept HW rate limit, providing SW rate limit \x1b[0m", nil
	}
	return "rdmactl: perf: --rate_limit: " + p.portName() + " is Ethernet (RoCE), where the QP's static rate (perftest's default HW limiter) does not apply: limiting in software, as perftest (--rate_limit_type SW)", nil
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
